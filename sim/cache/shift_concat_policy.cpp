// SHIFT_CONCAT (seed 002): "physically shift buffer, append new tokens".
// The valid columns sit at the right end of every K row and V head (left
// padded); an update memmoves the kept columns left by n_update and memcpys
// the new ones into the freed right end.
//
// Closed form of one AR-1 decode step (n_update = 1, p = n_past before the
// update, no window), L layers, H KV heads, D head_dim, b dtype bytes:
//   bytes_shifted = 2 L H D b p       (K: H*D rows of p columns; V: H heads of p*D)
//   bytes_copied  = 2 L H D b
//   bytes_moved   = 2 L H D b (p + 1) -- grows with the cache; ctx_size C only
//                                        bounds it (p <= C - 1).
// Modelling decision: the seed's memmove covers the whole row
// (n_iter * iter_size - copy_size, pads included); we price only the valid
// columns, as a memmove restricted to them leaves the same buffer (the pad
// region is constant), so the cost grows with n_past, not with C.
//
// Rewind of r tokens (the n_update < 0 path of seed 002): memmove the kept
// p - r columns right by r, memset the r freed left columns to the pad value:
//   bytes_shifted = 2 L H D b (p - r), pad_bytes = 2 L H D b r.
// Window eviction of e oldest tokens: memset their columns to the pad value
// (the left-padded layout stays "pad, then valid"): pad_bytes = 2 L H D b e.
// Clear: memset the p valid columns: pad_bytes = 2 L H D b p.
// Attention reads the whole cache dim (the static shape, pads included:
// genie_mode_policy.hpp), of which p columns are valid: read = C - n, useful = p.
#include "sim/cache/genie_mode_policy.hpp"

namespace kvsim {
namespace {

class ShiftConcatPolicy final : public GenieModePolicy {
 public:
  using GenieModePolicy::GenieModePolicy;
  std::string_view name() const override { return "shift_concat"; }

 protected:
  void price_clear(GenieState& s, KvUpdatePlan& plan) const override {
    plan.pad_bytes += s.held * column_bytes();
  }
  void price_evict(GenieState&, int64_t tokens, KvUpdatePlan& plan) const override {
    plan.pad_bytes += tokens * column_bytes();
  }
  void price_rewind(GenieState& s, int64_t tokens, KvUpdatePlan& plan) const override {
    plan.bytes_shifted += (s.held - tokens) * column_bytes();
    plan.pad_bytes += tokens * column_bytes();
  }
  void price_append(GenieState& s, int64_t tokens, KvUpdatePlan& plan) const override {
    plan.bytes_shifted += s.held * column_bytes();
    plan.bytes_copied += tokens * column_bytes();
  }
};

}  // namespace

std::unique_ptr<GenieModePolicy> make_shift_concat_policy(const GenieCacheShape& shape) {
  return std::make_unique<ShiftConcatPolicy>(shape);
}

}  // namespace kvsim
