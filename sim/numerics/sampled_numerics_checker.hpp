#pragma once
// `numerics.mode: sampled` on the paged policy (SPEC 8): the checker follows
// one request in sample_every for its whole life, so its cost scales with
// the sample, not with the batch.
//
// A followed sequence's K/V is written into the shadow pool through the
// policy's real block table every step it runs, and checked where a fault
// would first show: its first step (it reads its prefix hits), the first
// after a swap-in, whenever one of its blocks fills (a wrong table entry is
// read at every later check), and its last step. A check runs the paged
// decode kernel for a fixed probe query per layer over every cached token,
// through the real table, and compares it with an incremental reference
// (kernels/attention_incremental.hpp) that has folded in the sequence's
// own expected K/V one token at a time: no dense recompute per check.
//
// Blocks a followed sequence reads but did not write (a prefix block an
// unfollowed request filled, a block a swap-in copy should have restored)
// must still carry what the device would hold. So the checker keeps, per
// block, a count of writes and a content address: the hash of the token ids
// and first position of the last full write (0 when only partly written).
// Unfollowed requests cost one hash per block they fill and nothing per
// decode token. When a followed sequence reads a block the shadow has not
// caught up with, the block is written from its record: the reader's own
// rows if the address matches its own tokens there, otherwise rows of other
// content derived from the record, which the check then rejects (a stale
// prefix block, a corrupted table entry, a lost swap copy).
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kernels/attention_incremental.hpp"
#include "kernels/kv_pool.hpp"
#include "kernels/rope.hpp"
#include "sim/numerics/numerics_checker.hpp"
#include "sim/numerics/synthetic_kv.hpp"
#include "sim/serve/step_observer.hpp"

namespace kvsim::numerics {

// n / d and n % d by a multiply (exact for n and d below 2^32: Lemire, Kaser
// and Kurz, "Faster remainder by direct computation", 2019), for the checks
// the checker runs on every scheduled sequence every step.
class FastDivisor {
 public:
  explicit FastDivisor(uint64_t d) : d_(d), m_(UINT64_MAX / d + 1) {}
  uint64_t quotient(uint64_t n) const {
    if (n >> 32) return n / d_;
    return static_cast<uint64_t>((static_cast<__uint128_t>(m_) * n) >> 64);
  }
  uint64_t remainder(uint64_t n) const { return n - quotient(n) * d_; }

 private:
  uint64_t d_, m_;
};

class SampledNumericsChecker : public StepObserver {
 public:
  explicit SampledNumericsChecker(const CheckerParams& params);

  // Throws CheckFailed naming the request, step and error on a failed check.
  void on_step_done(const ScheduledBatch& batch, const KvCachePolicy& policy, TimeNs now) override;
  void on_release(const Sequence& seq) override;
  void report(RunMetrics& metrics) const override;

  uint64_t checks() const { return checks_; }
  double max_abs_err() const { return max_abs_err_; }
  bool follows(const Sequence& seq) const { return every_.remainder(seq.request.id) == 0; }

 protected:
  // The block table the checker reads for a sequence (`scratch` may hold
  // it): every step of a followed one, the steps an unfollowed one starts
  // or fills a block. Tests override it to inject a fault.
  virtual std::span<const int32_t> block_table_of(const Sequence& seq, const KvCachePolicy& policy,
                                                  std::vector<int32_t>& scratch) const;
  // Whether the copy of a swapped-in sequence's block `index` reaches the
  // device. Tests override it to lose one.
  virtual bool swap_copy_arrives(const Sequence& seq, size_t index) const {
    (void)seq;
    (void)index;
    return true;
  }

 private:
  struct Followed {
    std::vector<int32_t> table;                    // as of its last step: what a swap-out copies
    std::vector<std::vector<uint8_t>> host_bytes;  // while swapped out
    std::vector<std::vector<kernels::Int8Params>> host_params;
    std::vector<kernels::IncrementalAttention> reference;  // per layer
    bool check_due = false;                                // swapped in since its last step
  };

  void follow(const Sequence& seq, Followed& f);
  // Writes positions [first, first + n) of the sequence into the shadow
  // through `table` and folds them into its reference.
  void write_tokens(const Sequence& seq, Followed& f, std::span<const int32_t> table, int64_t first,
                    int64_t n);
  // Brings the shadow of the table's first `blocks` entries up to what the
  // device holds (from the records), for `seq` reading them.
  void catch_up(const Sequence& seq, std::span<const int32_t> table, int64_t blocks);
  // Whether the device's content of `block`, at `index` of the sequence's
  // table, is the sequence's own tokens there (by the record's address).
  bool holds_own(const Sequence& seq, int32_t block, int64_t index);
  // Writes rows of content other than the reader's into `block`.
  void store_other(int32_t block, int64_t index);
  void check(const Sequence& seq, Followed& f, std::span<const int32_t> table);
  // An unfollowed sequence's step: blocks it starts or fills are recorded.
  void record_writes(const Sequence& seq, const KvCachePolicy& policy, int64_t first,
                     int64_t computed);
  void record_block(const TokenView& tokens, int64_t index, int32_t block, bool full);
  uint64_t content_address(const TokenView& tokens, int64_t index);
  // One token's K and V rows at every layer into the scratch rows.
  void token_rows(int32_t token, int64_t position);
  void store_token(int32_t block, int64_t row_in_block);

  CheckerParams p_;
  kernels::KvPool pool_;
  kernels::RopeTable rope_;
  FastDivisor every_, block_;
  std::unordered_map<uint64_t, Followed> followed_;  // by request id
  // Per block: writes so far, the write the shadow holds, the content address.
  std::vector<uint32_t> device_writes_, shadow_writes_;
  std::vector<uint64_t> content_;
  // Scratch reused every step (no allocation per step once grown).
  std::vector<int32_t> table_scratch_, ids_;
  std::vector<float> k_rows_, v_rows_;  // [layers, kv_heads, head_dim] of one token
  std::vector<float> k_ref_, v_ref_;    // the same after the dtype's round trip
  std::vector<float> probe_, out_, ref_out_;
  uint64_t step_ = 0;
  uint64_t checks_ = 0;
  double max_abs_err_ = 0.0;
};

}  // namespace kvsim::numerics
