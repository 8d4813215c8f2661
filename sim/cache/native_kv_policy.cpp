// NativeKV: the mode newer Genie releases keep beside SMART_MASK, in which
// the QNN compiler chooses the KV tensors' layout (HMX weight layout: K and
// V tiled in 32 x 32 blocks, kernels/native_kv_layout.hpp) and qualla's
// NativeKV cache manager writes into it (Genie/src/qualla/engines/qnn-htp/
// KVCache/native-kv.cpp, kvmanager.cpp, context-manager.cpp; read at
// kyungraekim/qnn commit be158f55a350, examples/Genie/Genie/...). Its
// bookkeeping is SMART_MASK's (context-manager.cpp ContextManager::
// processUpdate: the kept entries go to columns n_valid, n_valid + 1, ...;
// nothing cached moves; the attention mask selects the valid columns), with
// four differences that change what the host pays:
//   - budget: an AR-n pass leaves ctx_size - round_up(n, 32) columns for the
//     past (getCacheBudget; prepareInferenceStrategy's cacheBoundary), since
//     its new entries start at a block-aligned column (getIndexForNewKV
//     rounds n_valid up to 32). AR-1 therefore holds ctx_size - 32, not
//     ctx_size - 1.
//   - variant switch: every AR-n graph takes the same ctx_size-column
//     tensors, so switching variants at one ctx_size moves nothing
//     (reshapeCache returns early); only a ring that a sliding window wrapped
//     past the new budget is re-packed (each valid entry moved once).
//   - rewind: reduceKV writes 0 over every removed entry of K and V.
//   - clear: memset of the whole buffer, ctx_size columns of every row.
// The copy itself (updateKV) moves the same bytes as SMART_MASK's, element
// by element through the tiled layout, or in whole 1024-element blocks when
// an update starts at a block-aligned column and counts a multiple of 32
// (the block-aligned fast path); the bytes are the same either way.
// Attention reads ctx_size - n columns per variant, as in every mode (the
// static shape of genie_mode_policy.hpp). qualla runs NativeKV on 8-bit KV
// only ("Native KV only supports uint8", completeInit): the spec checks it.
//
// Closed form of one AR-1 decode step (n_update = 1), L layers, H KV heads,
// D head_dim, b = 1 byte:
//   bytes_moved = bytes_copied = 2 L H D b      (independent of n_past and C)
//   an AR-m -> AR-n switch at one ctx_size:   0 bytes (no wrapped ring)
//   rewind of r:   pad_bytes = 2 L H D b r;   clear: pad_bytes = 2 L H D b C
#include <algorithm>

#include "kernels/native_kv_layout.hpp"
#include "sim/cache/genie_mode_policy.hpp"

namespace kvsim {
namespace {

class NativeKvPolicy final : public GenieModePolicy {
 public:
  using GenieModePolicy::GenieModePolicy;
  std::string_view name() const override { return "native_kv"; }
  int64_t cache_dim(int64_t variant) const override {
    return kernels::native_kv_budget(shape_.ctx_size, variant);
  }

 protected:
  void price_clear(GenieState& s, KvUpdatePlan& plan) const override {
    plan.pad_bytes += shape_.ctx_size * column_bytes();
    s.ring_start = 0;
  }
  void price_evict(GenieState& s, int64_t tokens, KvUpdatePlan&) const override {
    s.ring_start = (s.ring_start + tokens) % cache_dim(s.variant);
  }
  void price_rewind(GenieState&, int64_t tokens, KvUpdatePlan& plan) const override {
    plan.pad_bytes += tokens * column_bytes();
  }
  void price_append(GenieState&, int64_t tokens, KvUpdatePlan& plan) const override {
    plan.bytes_copied += tokens * column_bytes();
  }
  void price_realign(GenieState& s, int64_t variant, KvUpdatePlan& plan) const override {
    if (s.ring_start + s.held > std::min(cache_dim(s.variant), cache_dim(variant))) {
      plan.realign_bytes += s.held * column_bytes();
      s.ring_start = 0;
    }
    s.variant = variant;
    s.offset = 0;
  }
};

}  // namespace

std::unique_ptr<GenieModePolicy> make_native_kv_policy(const GenieCacheShape& shape) {
  return std::make_unique<NativeKvPolicy>(shape);
}

}  // namespace kvsim
