// sliding_window (seed 002 "Sliding Window Cache", window-size): keeps the
// last `window` tokens on top of one of the Genie update modes
// (kv_cache.update_mode). A decorator, not a fourth mode (DESIGN practice
// 10): it keeps the logical position, turns each request into elementary
// steps of the wrapped mode and lets that mode price them:
//   forward by n:  append a = min(n, window) entries, after evicting the
//                  e = max(0, held + a - window) oldest (the shrink of seed
//                  002 done before the append); the n - a entries of a pass
//                  longer than the window never enter and count as evicted.
//   rewind by r:   drop min(r, held) newest (evicted tokens cannot come back,
//                  so a rewind past the window leaves fewer than `window`).
//   n_past 0:      clear.
// Costs per mode are those of the wrapped mode's file; in steady AR-1
// decoding at a full window W (each step evicts 1, appends 1):
//   shift_concat:  pad 1 column + shift W - 1 + copy 1 = 2 L H D b (W + 1)
//   pointer_shift: copy 1 = 2 L H D b, plus a compaction of W - 1 columns
//                  whenever the offset runs past the headroom
//   smart_mask:    copy 1 = 2 L H D b (the ring wraps in place)
//   native_kv:     copy 1 = 2 L H D b (its ring wraps in place, as smart_mask's)
// sliding_window_policy_checks (sliding_window_policy_checks.cpp) requires window <=
// ctx_size - largest variant, so `window` tokens fit every variant's cache dim.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/cache/genie_mode_policy.hpp"

namespace kvsim {
namespace {

class SlidingWindowPolicy final : public GenieKvPolicy {
 public:
  SlidingWindowPolicy(std::unique_ptr<GenieModePolicy> base, int64_t window)
      : base_(std::move(base)), window_(window) {
    if (window_ < 1) throw std::invalid_argument("sliding_window: window must be at least 1");
  }

  std::string_view name() const override { return "sliding_window"; }

  KvUpdatePlan plan_update(const KvUpdateRequest& r) const override {
    if (r.n_past < 0) throw std::invalid_argument("sliding_window: negative n_past");
    const int64_t held = base_->state().held;
    GenieStep step;
    step.variant = r.variant;
    KvDispatch d = KvDispatch::update_and_set;
    int64_t never_entered = 0;
    if (r.n_past == 0) {
      d = KvDispatch::clear_cache;
      step.clear = true;
    } else if (r.n_past == position_) {
      d = KvDispatch::set_variant;
    } else if (r.n_past < position_) {
      d = KvDispatch::rewind;
      step.rewind = std::min(position_ - r.n_past, held);
    } else {
      const int64_t n = r.n_past - position_;
      step.append = std::min(n, window_);
      never_entered = n - step.append;
      step.evict = std::max<int64_t>(0, held + step.append - window_);
    }
    // A keep-mask chooses the pass's entries by position; of those, the
    // oldest never_entered do not enter a window shorter than the update.
    check_keep_mask(r.selected, d, r.n_past - position_, base_->variant());
    KvUpdatePlan plan = base_->plan_step(step);
    plan.dispatch = d;
    plan.n_past_before = position_;
    plan.n_past_after = r.n_past;
    plan.n_update = r.n_past - position_;
    plan.evicted_tokens += never_entered;
    plan.selected = r.selected;
    return plan;
  }

  void apply_update(const KvUpdatePlan& plan) override {
    if (plan.n_past_before != position_)
      throw std::logic_error("sliding_window: the update was planned against another n_past");
    base_->install(plan);
    position_ = plan.n_past_after;
  }

  AttentionSpan attention_span() const override { return base_->attention_span(); }
  Bytes attention_mask_bytes() const override { return base_->attention_mask_bytes(); }
  int64_t n_past() const override { return position_; }
  int64_t tokens_held() const override { return base_->state().held; }
  bool makes_room() const override { return true; }
  int64_t variant() const override { return base_->variant(); }
  int64_t capacity_tokens(int64_t variant) const override {
    return std::min(window_, base_->capacity_tokens(variant));
  }
  int64_t view_offset() const override { return base_->view_offset(); }
  Bytes saved_bytes() const override { return base_->saved_bytes(); }
  GenieAccounting accounting() const override { return base_->accounting(); }

  const GenieModePolicy& base() const { return *base_; }

 private:
  std::unique_ptr<GenieModePolicy> base_;
  int64_t window_;
  int64_t position_ = 0;
};

}  // namespace

std::unique_ptr<GenieKvPolicy> make_sliding_window_policy(std::unique_ptr<GenieModePolicy> base,
                                                          int64_t window) {
  return std::make_unique<SlidingWindowPolicy>(std::move(base), window);
}

}  // namespace kvsim
