#pragma once
// The state and dispatch the three Genie update modes share (seed 002,
// nsp-kvmanager dispatchUpdate): one cache of `ctx_size` columns per layer,
// the AR-n variant's cache dim (ctx_size - n, ctx_size for the BERT variant
// n == ctx_size), the tokens held, and one update per pass. What differs
// between the modes is only how each elementary step is paid for and where
// the valid columns end up; each mode's file (shift_concat_policy.cpp,
// pointer_shift_policy.cpp, smart_mask_policy.cpp) implements the hooks
// below and writes its closed form next to them.
//
// An update is a sequence of elementary steps, always in this order:
//   clear (n_past 0) | evict the oldest (sliding window) -> rewind the newest
//   -> realign to the next variant -> append the pass's new entries.
// Appending after the realignment means a pass may fill the new variant's
// cache dim (an AR-128 prefill followed by AR-1 decoding holds up to
// ctx_size - 1 tokens, not ctx_size - 128).
//
// What the graph reads is the same in every mode: a QNN graph is compiled
// with static input shapes, so an AR-n pass's attention reads its whole
// cache dim (ctx_size - n columns of every K row and V head), pad or masked
// columns included (seed 002's layout: `| pad | pad | key_0 | key_1 |`, the
// pointer offset moving inside a fixed-size window). The modes differ only
// in the host's work between passes: the bytes each update moves, the
// tensors pointer_shift re-registers, and the attention mask every mode
// rewrites before a pass (attention_mask_bytes()).
#include <memory>
#include <vector>

#include "sim/cache/genie_policy.hpp"

namespace kvsim {

// Where the valid columns are: the state a plan leads to.
struct GenieState {
  int64_t held = 0;        // tokens in the cache
  int64_t variant = 1;     // AR-n graph the next pass runs
  int64_t offset = 0;      // pointer_shift: view offset in columns
  int64_t ring_start = 0;  // smart_mask: column of the oldest token (moves under a window)
};

// One update as elementary steps (built by plan_update or by sliding_window).
struct GenieStep {
  bool clear = false;
  int64_t evict = 0;   // oldest tokens dropped
  int64_t rewind = 0;  // newest tokens dropped
  int64_t append = 0;  // new entries copied in
  int64_t variant = 1;
};

// dispatchUpdate's `selected` keep-mask (seed 002) against the update it
// rides on: a forward update adding exactly as many entries as it keeps,
// no longer than the AR-n pass that computed them. Empty: no mask, fine.
// Throws std::invalid_argument otherwise.
void check_keep_mask(const std::vector<bool>& selected, KvDispatch dispatch, int64_t n_update,
                     int64_t pass_variant);

class GenieModePolicy : public GenieKvPolicy {
 public:
  explicit GenieModePolicy(const GenieCacheShape& shape);

  KvUpdatePlan plan_update(const KvUpdateRequest& request) const override;
  void apply_update(const KvUpdatePlan& plan) override;
  AttentionSpan attention_span() const override;
  // qualla's setupAttentionMask (nsp-model.cpp) before every pass, whatever
  // the mode: fill the [n, ctx_size] mask with the masked value, then set
  // the n_valid past columns and the causal new ones of each of the n rows;
  // its elements have the KV tensors' width (the mask values follow d_kv):
  //   b (n C + n p + n (n + 1) / 2),  p = tokens held, n = the variant.
  Bytes attention_mask_bytes() const override;
  // KV tensors of the graph: one K and one V per layer (past_key_{l}_in,
  // past_value_{l}_in) or, exported per head, per layer and KV head
  // (past_key_{l}_h{h}_in; seed 002's naming).
  int64_t kv_tensors() const {
    return 2 * shape_.layers * (shape_.per_head_tensors ? shape_.kv_heads : 1);
  }
  int64_t n_past() const override { return state_.held; }
  int64_t variant() const override { return state_.variant; }
  int64_t capacity_tokens(int64_t variant) const override { return cache_dim(variant); }
  int64_t view_offset() const override { return state_.offset; }
  Bytes saved_bytes() const override { return state_.held * shape_.column_bytes(); }
  GenieAccounting accounting() const override;

  // Prices the elementary steps against the current state (the dispatch and
  // the n_past fields are left for the caller). Throws std::invalid_argument
  // when the variant is not shipped or the tokens do not fit its cache dim.
  KvUpdatePlan plan_step(const GenieStep& step) const;
  // Installs a plan without the logical-position check (sliding_window keeps
  // its own position); apply_update() checks, then calls it.
  void install(const KvUpdatePlan& plan);

  const GenieCacheShape& shape() const { return shape_; }
  const GenieState& state() const { return state_; }
  // seed 002 switchKeyVariant: in/out cache dim of the AR-n variant
  // (native_kv: its cache budget).
  virtual int64_t cache_dim(int64_t variant) const;
  // Columns per row of the physical buffer (pointer_shift adds headroom).
  virtual int64_t row_columns() const { return shape_.ctx_size; }
  Bytes buffer_bytes() const;
  bool variant_shipped(int64_t variant) const;

 protected:
  Bytes column_bytes() const { return shape_.column_bytes(); }
  // The mode's price of each elementary step, updating `s` (the state after
  // the step) and adding its bytes to `plan`.
  virtual void price_clear(GenieState& s, KvUpdatePlan& plan) const = 0;
  virtual void price_evict(GenieState& s, int64_t tokens, KvUpdatePlan& plan) const = 0;
  virtual void price_rewind(GenieState& s, int64_t tokens, KvUpdatePlan& plan) const = 0;
  virtual void price_append(GenieState& s, int64_t tokens, KvUpdatePlan& plan) const = 0;
  // switchKeyVariant, the same for every mode: each valid column of every K
  // row and V head moves once into the out-cache-dim layout, 2 L H D b per
  // token; the valid columns land at the right end of the new view (offset
  // 0) or, for smart_mask, at its left end.
  virtual void price_realign(GenieState& s, int64_t variant, KvUpdatePlan& plan) const;
  // registerPointerOffset calls per update (pointer_shift: 1).
  virtual uint64_t pointer_updates_per_update() const { return 0; }
  // KV tensors those calls re-register at the new offset (pointer_shift:
  // every one of the graph's).
  virtual uint64_t registrations_per_update() const { return 0; }

  GenieCacheShape shape_;
  GenieState state_;
  GenieAccounting acc_;
};

std::unique_ptr<GenieModePolicy> make_shift_concat_policy(const GenieCacheShape& shape);
std::unique_ptr<GenieModePolicy> make_pointer_shift_policy(const GenieCacheShape& shape);
std::unique_ptr<GenieModePolicy> make_smart_mask_policy(const GenieCacheShape& shape);
std::unique_ptr<GenieModePolicy> make_native_kv_policy(const GenieCacheShape& shape);
// sliding_window over a Genie mode (seed 002): keeps the last `window`
// tokens of `base`'s buffers.
std::unique_ptr<GenieKvPolicy> make_sliding_window_policy(std::unique_ptr<GenieModePolicy> base,
                                                          int64_t window);

}  // namespace kvsim
