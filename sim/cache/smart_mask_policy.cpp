// SMART_MASK (seed 002): "fixed buffer with attention mask". New entries are
// written in place at the next free column (left aligned: token i at column
// i), nothing already cached ever moves, and the attention mask selects the
// valid columns. Under a sliding window the columns form a ring: evicting the
// oldest only advances ring_start, and new entries wrap into the freed
// columns (positions are already in the keys through RoPE, and attention over
// a set of columns does not depend on their order).
//
// Closed form of one AR-1 decode step (n_update = 1), L layers, H KV heads,
// D head_dim, b dtype bytes:
//   bytes_moved = bytes_copied = 2 L H D b    (independent of n_past p and C)
// Rewind, window eviction and clear: 0 bytes (only the mask changes).
//
// Attention: read = cache_dim (C - n for AR-n) whatever n_past is, and
// useful = p, as in every mode (the static shapes of genie_mode_policy.hpp);
// the mask that selects the valid columns is rewritten before each pass in
// every mode too, so SMART_MASK's only per-step host work is the copy.
#include "sim/cache/genie_mode_policy.hpp"

namespace kvsim {
namespace {

class SmartMaskPolicy final : public GenieModePolicy {
 public:
  using GenieModePolicy::GenieModePolicy;
  std::string_view name() const override { return "smart_mask"; }

 protected:
  void price_clear(GenieState&, KvUpdatePlan&) const override {}
  void price_evict(GenieState& s, int64_t tokens, KvUpdatePlan&) const override {
    s.ring_start = (s.ring_start + tokens) % cache_dim(s.variant);
  }
  void price_rewind(GenieState&, int64_t, KvUpdatePlan&) const override {}
  void price_append(GenieState&, int64_t tokens, KvUpdatePlan& plan) const override {
    plan.bytes_copied += tokens * column_bytes();
  }
};

}  // namespace

std::unique_ptr<GenieModePolicy> make_smart_mask_policy(const GenieCacheShape& shape) {
  return std::make_unique<SmartMaskPolicy>(shape);
}

}  // namespace kvsim
