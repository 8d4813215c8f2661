#pragma once
// Numerics for the on-device update modes (SPEC 8, seed 002): replays an
// GenieKvPolicy's update plans on real Genie buffers
// (kernels::GenieKvBuffer, one per shadow layer, in the policy's mode) and,
// after every update, checks that
//   1. attention of a fresh query through the buffers (their own layout,
//      offsets, ring and mask) equals dense attention over the tokens the
//      cache should hold: the last tokens_held_after positions of the
//      history (windowed dense under sliding_window), within `tolerance`;
//   2. the bytes the kernel really moved (memmove, memcpy, memset,
//      realignment) equal the plan's bytes_moved(), in columns (the plan is
//      priced at the model's width, the kernel runs at the shadow width).
// K/V are synthetic: a deterministic function of (position, write epoch,
// layer, head), so entries rewritten after a rewind differ from the
// rejected ones and a stale column shows up as a wrong output.
//
// The dialog engine calls it for `numerics: {mode: full | sampled}`:
//   auto checker = GenieNumericsChecker(genie_numerics_params(scenario));
//   ... after policy.apply_update(plan):
//   checker.apply(plan, fmt::format("turn {} pass {}", turn, pass));  // throws CheckFailed
// `sampled` still applies every plan (the buffers must follow the cache)
// but checks attention only every `sample_every` updates: pass check=false.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/genie_kv_buffer.hpp"
#include "sim/cache/genie_policy.hpp"

namespace kvsim {
struct InstanceSpec;
struct RunMetrics;
}  // namespace kvsim

namespace kvsim::numerics {

struct GenieNumericsParams {
  // Shadow geometry (layers, kv_heads, head_dim at the reduced width;
  // ctx_size, ar_variants, headroom and window as the policy's; `mode`, the
  // update mode whose buffers its plans drive).
  GenieCacheShape shape;
  kernels::GenieUpdateMode mode = kernels::GenieUpdateMode::pointer_shift;  // whose buffers
  int64_t q_heads = 4;  // grouped-query heads per check (a multiple of kv_heads)
  // Bytes of one column at the policy's (full) width, to compare plans with
  // the kernel's bytes in columns; 0: the shadow's own (tests at full width).
  Bytes plan_column_bytes = 0;
  kernels::KvDtype dtype = kernels::KvDtype::fp16;
  double tolerance = 1e-4;
  uint64_t seed = 42;
  bool check_bytes = true;
};

// numerics.shadow and tolerance of the scenario, the policy's ctx_size,
// variants, headroom, window and mode, the KV dtype (int8 uses one
// tensor-wide scale and offset, pad = offset, as QNN's quantParam[0]).
GenieNumericsParams genie_numerics_params(const InstanceSpec& scenario);

// Drives one layer's buffer through an update plan, in the plan's order:
// clear, evict the oldest, rewind the newest, realign to the next variant,
// append. `new_k` / `new_v` [plan.n_update, heads, head_dim] are the pass's
// new entries (under a window only the last plan.appended_tokens enter).
// Throws std::length_error when the buffer cannot follow the plan.
void replay_update(const KvUpdatePlan& plan, kernels::GenieKvBuffer& buffer, const float* new_k,
                   const float* new_v);

class GenieNumericsChecker {
 public:
  explicit GenieNumericsChecker(const GenieNumericsParams& params);

  // Drives the buffers through `plan` (clear, evict, rewind, realign,
  // append the pass's new entries) and, when `check`, compares attention
  // with the dense reference. Throws kvsim::CheckFailed naming `where`, the
  // dispatch and the error on a mismatch (attention or bytes).
  void apply(const KvUpdatePlan& plan, const std::string& where, bool check = true);

  uint64_t checks() const { return checks_; }
  double max_abs_err() const { return max_abs_err_; }
  uint64_t kernel_bytes_moved() const;  // at the shadow width, all layers
  int64_t tokens_held() const { return held_; }
  // numerics.{checks, max_abs_err} (adds to what is there).
  void report(RunMetrics& metrics) const;

  // Attention of one query through layer `layer`'s buffer and through the
  // dense reference (tests).
  double attention_error(int64_t layer, int64_t position) const;

 private:
  void write_rows(int64_t position, int64_t layer, float* k, float* v) const;
  float row_value(int64_t position, uint64_t epoch, int64_t layer, int64_t head, int64_t dim,
                  uint32_t tensor) const;

  GenieNumericsParams p_;
  kernels::Int8Params int8_;
  std::vector<kernels::GenieKvBuffer> buffers_;  // one per shadow layer
  std::vector<uint64_t> epoch_of_position_;      // write epoch of each position in the history
  uint64_t epoch_ = 0;
  int64_t n_past_ = 0, held_ = 0;
  uint64_t checks_ = 0;
  double max_abs_err_ = 0.0;
};

}  // namespace kvsim::numerics
