#pragma once
// `numerics.mode: sampled` on the paged policy (SPEC 8): the checker follows
// one sequence in sample_every for its whole life, so its cost scales with
// the sample, not with the batch. A chat session is sampled whole (its
// later turns read the blocks its earlier turns wrote, through the prefix
// cache); a single-shot request by its id.
//
// A followed sequence's K/V is written into the shadow pool through the
// policy's real block table every step it runs, and checked where a fault
// would first show: its first step (it reads its prefix hits), the first
// after a swap-in, whenever one of its blocks fills (a wrong table entry is
// read at every later check), and its last step. A check runs the paged
// decode kernel for the probe query (one for the whole run) per layer,
// through the real table, over every block of the sequence the kernel has
// not yet shown to hold what this sequence expects there: its partly
// filled last block, blocks written since, and blocks whose content record
// is not the sequence's own tokens there (a stale prefix block, a wrong
// table entry, a lost swap copy all land here). A block the kernel has
// confirmed since its last write, holding the reader's content, is not
// read again: a check extends what is known instead of recomputing it.
// A full block the kernel has confirmed gives its shadow slot back: its rows
// follow from its record and are rebuilt if it is ever read again, so the
// shadow holds the blocks being written and checked, not every block a
// followed sequence ever filled.
// The kernel's output over those blocks is compared with the incremental
// reference (kernels/attention_incremental.hpp): per block, the online-
// softmax state of the probe over the block's expected K/V, kept by content
// address so a block shared by several followed readers is folded once,
// and merged for the blocks the check reads.
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
// content derived from the record, which the check then rejects.
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
  // Only followed sequences need every step: an unfollowed one's writes
  // inside a block record nothing (record_writes), so the engine may
  // advance it in bulk between the steps it starts or fills a block.
  bool watches_selectively() const override { return true; }
  bool watches(const Sequence& seq) const override { return follows(seq); }
  void report(RunMetrics& metrics) const override;

  uint64_t checks() const { return checks_; }
  double max_abs_err() const { return max_abs_err_; }
  // Chat turns by their session, so a followed session's later turns find
  // its earlier turns' blocks checked; other requests by their id.
  bool follows(const Sequence& seq) const {
    const uint64_t key = seq.request.session != 0 ? seq.request.session : seq.request.id;
    return every_.remainder(key) == 0;
  }
  // Tokens the kernel read in checks so far (the checker's main cost).
  uint64_t checked_tokens() const { return checked_tokens_; }
  // Shadow slots handed out so far: the shadow's memory, in blocks.
  int32_t shadow_slots() const { return fresh_slots_; }

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
    std::vector<uint64_t> address;  // per full block of the table: its content address
    std::vector<double> tail;       // reference state of the partly written last block
    int64_t tail_rows = 0;          // rows of that block folded into `tail`
    // Positions written on the device but not yet in the shadow and the
    // reference, all in block `pending_block` at table index
    // `pending_index`: decode steps add one each, and they are applied
    // together, before anything reads the block or writes it.
    int64_t pending_from = 0, pending_to = 0, pending_index = 0;
    int32_t pending_block = -1;
    uint32_t pending_writes = 0;  // the block's device writes when they began
    bool check_due = false;       // swapped in since its last step
  };

  // Positions [first, first + n) of the sequence written through `table`:
  // into the pending range, applied when their block fills or changes.
  void write_tokens(const Sequence& seq, Followed& f, std::span<const int32_t> table, int64_t first,
                    int64_t n);
  // Applies the pending range: rows into the shadow, folded into the tail
  // (a block written by someone else since they were written still lags).
  void flush(const Sequence& seq, Followed& f);
  // The shadow slot holding `block` (given one on first use). Slots of
  // blocks overwritten by unfollowed requests are recycled, so the shadow
  // touches memory for what followed sequences read, not for every block.
  // `read`: for reading (a block without rows yet reads as zeros).
  int32_t slot(int32_t block, bool read);
  void release_slot(int32_t block);
  // The content address of the sequence's full block `index` (kept).
  uint64_t address_of(const Sequence& seq, Followed& f, int64_t index);
  // Brings the shadow of `block`, at `index` of the sequence's table, up to
  // what the device holds (from its record); with `state`, also the
  // reference state of the sequence's own content there, from the same rows.
  void catch_up_block(const Sequence& seq, Followed& f, int64_t index, int32_t block,
                      double* state);
  // Writes rows of content other than the reader's into `block`.
  void store_other(int32_t block, int64_t index);
  void check(const Sequence& seq, Followed& f, std::span<const int32_t> table);
  // An unfollowed sequence's step: blocks it starts or fills are recorded.
  void record_writes(const Sequence& seq, const KvCachePolicy& policy, int64_t first,
                     int64_t computed);
  void record_block(const TokenView& tokens, int64_t index, int32_t block, bool full);
  uint64_t content_address(const TokenView& tokens, int64_t index);
  // Rows of tokens ids_[0, n) at positions [first, first + n), every layer,
  // into the scratch rows ([layer][token][kv_heads * head_dim]), and their
  // dtype round trip into the reference rows when `reference`.
  void token_rows(int64_t first, int64_t n, bool reference);
  // Stores scratch rows [from, from + n) into `block`'s slot from row `row`,
  // and with `reference` their dtype round trip into the reference rows.
  void store_rows(int32_t block, int64_t row, int64_t from, int64_t n, bool reference);
  // Tokens ids_[0, n) at positions [first, first + n): their rows stored
  // into `block`'s slot from row `row` and what storage made of them
  // folded into `state` (store_rows and fold of token_rows' rows, the same
  // bits, made a layer and a few tokens at a time).
  void store_and_fold(int32_t block, int64_t row, int64_t first, int64_t n, double* state);
  // Folds reference rows [from, from + n) into a state of every layer.
  void fold(double* state, int64_t from, int64_t n);
  // The cached reference state of a full block's content, or nullptr.
  const double* cached_state(uint64_t address) const;
  void cache_state(uint64_t address, const double* state);
  void clear_state(double* state) const;

  CheckerParams p_;
  kernels::KvPool pool_;
  kernels::RopeTable rope_;
  FastDivisor every_, block_;
  // The probe: one query per layer for every check of the run, and the
  // reference that folds keys against it.
  std::vector<float> probe_;                         // [layers, q_heads, head_dim]
  std::vector<kernels::OnlineSoftmax> softmax_;      // per layer
  int64_t state_size_ = 0;                           // doubles per state, all layers
  std::unordered_map<uint64_t, Followed> followed_;  // by request id
  // Per block: writes so far, the write the shadow holds, the content
  // address, and the write at which a check confirmed that content.
  std::vector<uint32_t> device_writes_, shadow_writes_, confirmed_;
  std::vector<uint64_t> content_;
  std::vector<int32_t> slot_of_, free_slots_;
  int32_t fresh_slots_ = 0;
  // Reference states of full blocks by content address, bounded (a miss
  // only costs folding the block again).
  std::unordered_map<uint64_t, std::vector<double>> states_;
  size_t max_states_ = 0;
  // Scratch reused every step (no allocation per step once grown).
  std::vector<int32_t> table_scratch_, ids_, check_table_, check_blocks_;
  std::vector<int64_t> check_index_;
  std::vector<float> k_rows_, v_rows_;  // [layers, tokens, kv_heads * head_dim]
  std::vector<float> k_ref_, v_ref_;    // the same after the dtype's round trip
  int64_t rows_ = 0;                    // tokens in the scratch rows
  std::vector<double> merged_, scratch_state_;
  std::vector<float> out_, ref_out_;
  uint64_t step_ = 0;
  uint64_t checks_ = 0;
  uint64_t checked_tokens_ = 0;
  double max_abs_err_ = 0.0;
};

}  // namespace kvsim::numerics
