#pragma once
// The numerics checker (SPEC 8, `numerics.mode: full | sampled`): after
// every engine step it writes the step's synthetic K/V into a shadow KvPool
// through the policy's real block tables and slot mappings, moves swapped
// sequences' blocks out to a host buffer and back into their new blocks,
// and runs paged varlen attention for the last few new tokens of each
// followed sequence and compares it with a dense reference computed from
// the sequence's own token history. The shadow pool has all num_blocks
// blocks of the real pool, in the Ksana layout, at the shadow width
// (numerics.shadow). The kernels address it through the view of the
// policy's kv_cache.layout (sim/numerics/checker_kv_view.hpp): under `atb`
// they are handed each layer's ATB block table and read the kcache/vcache
// view of the same bytes (seed 000).
//
// `full` follows every sequence and checks it every step; with every_step
// false it checks every sequence one step in sample_every (chunk_lru's
// `sampled`, whose chunk placement writes every sequence's shadow). The
// paged policy's `sampled` follows a sample of whole sequences instead:
// sim/numerics/sampled_numerics_checker.hpp.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/kv_pool.hpp"
#include "sim/numerics/checker_kv_view.hpp"
#include "sim/numerics/synthetic_kv.hpp"
#include "sim/serve/step_observer.hpp"

namespace kvsim::numerics {

struct CheckerParams {
  int64_t num_blocks = 0;
  int64_t block_size = 0;
  kernels::KvDtype dtype = kernels::KvDtype::fp16;
  // kv_cache.kv_scale per_tensor on an fp8 cache: the one scale of every
  // row (0: each row its own).
  float fp8_tensor_scale = 0.0f;
  SyntheticShape shape;
  bool every_step = true;  // full; otherwise one step in sample_every
  int64_t sample_every = 16;
  // sampled: follow one request in sample_every, every step (instead of
  // checking every sequence one step in sample_every): SampledNumericsChecker.
  bool sample_sequences = false;
  double tolerance = 1e-4;
  int64_t queries_per_check = 4;  // the last new tokens of each sequence
  // kv_cache.layout: how `full` hands the kernels its block ids (the
  // sampled checker reads the Ksana view).
  std::string layout = "ksana";
};

CheckerParams checker_params(const InstanceSpec& scenario, const PoolSizing& sizing);

class NumericsChecker : public StepObserver {
 public:
  explicit NumericsChecker(const CheckerParams& params);
  // With a view of its own instead of params.layout's (tests inject faults).
  NumericsChecker(const CheckerParams& params, std::unique_ptr<CheckerKvView> view);

  // Throws std::runtime_error naming the request, step and error on a failed check.
  void on_step_done(const ScheduledBatch& batch, const KvCachePolicy& policy, TimeNs now) override;
  void on_release(const Sequence& seq) override;
  void report(RunMetrics& metrics) const override;

  uint64_t checks() const { return checks_; }
  double max_abs_err() const { return max_abs_err_; }
  // FNV-1a over the bits of every attention output checked, in order: two
  // runs whose kernels gave the same outputs bit for bit have the same.
  uint64_t output_digest() const { return output_digest_; }
  const CheckerKvView& view() const { return *view_; }
  const kernels::KvPool& pool() const { return pool_; }

 protected:
  // The block table the checker reads for a held sequence. Tests override
  // it to inject a fault (a corrupted entry must fail the check).
  virtual std::vector<int32_t> block_table_of(const Sequence& seq,
                                              const KvCachePolicy& policy) const;
  // Whether the copy of a swapped-in sequence's block `index` reaches the
  // device. Tests override it to lose one (the check must notice).
  virtual bool swap_copy_arrives(const Sequence& seq, size_t index) const {
    (void)seq;
    (void)index;
    return true;
  }
  // For checkers of policies that place KV outside the step's own tokens
  // (chunk_lru's remap, sim/numerics/chunk_numerics_checker.hpp).
  kernels::KvPool& shadow_pool() { return pool_; }
  const CheckerParams& params() const { return p_; }

 private:
  struct Shadow {
    std::vector<int32_t> table;                    // as of the sequence's last step
    std::vector<std::vector<uint8_t>> host_bytes;  // while swapped out
    std::vector<std::vector<kernels::Int8Params>> host_params;
    // The dense reference's K/V of positions [0, ref_len) per layer, as the
    // cache's dtype stores them: built from the token history, never read
    // from the pool, and extended as the sequence grows.
    std::vector<std::vector<float>> ref_k, ref_v;
    int64_t ref_len = 0;
  };
  void extend_reference(const Sequence& seq, Shadow& shadow, int64_t k_len) const;
  void write_new_tokens(const Sequence& seq, const std::vector<int32_t>& table, int64_t first,
                        int64_t n);
  void check(const Sequence& seq, Shadow& shadow, const std::vector<int32_t>& table,
             int64_t new_tokens);

  CheckerParams p_;
  kernels::KvPool pool_;
  std::unique_ptr<CheckerKvView> view_;
  uint64_t output_digest_ = 0xcbf29ce484222325ULL;
  std::unordered_map<uint64_t, Shadow> shadows_;  // by request id
  uint64_t step_ = 0;
  uint64_t checks_ = 0;
  double max_abs_err_ = 0.0;
};

}  // namespace kvsim::numerics
