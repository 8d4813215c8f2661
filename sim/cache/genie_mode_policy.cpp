#include "sim/cache/genie_mode_policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/cache/genie_buffer_sizing.hpp"

namespace kvsim {

std::string_view kv_dispatch_name(KvDispatch d) {
  switch (d) {
    case KvDispatch::clear_cache:
      return "clear_cache";
    case KvDispatch::set_variant:
      return "set_variant";
    case KvDispatch::rewind:
      return "rewind";
    case KvDispatch::update_and_set:
      return "update_and_set";
  }
  return "?";
}

GenieModePolicy::GenieModePolicy(const GenieCacheShape& shape) : shape_(shape) {
  if (shape_.ctx_size < 2) throw std::invalid_argument("genie: ctx_size must be at least 2");
  if (shape_.ar_variants.empty()) shape_.ar_variants = {1};
  std::sort(shape_.ar_variants.begin(), shape_.ar_variants.end());
  for (int64_t v : shape_.ar_variants) {
    if (v < 1 || v > shape_.ctx_size)
      throw std::invalid_argument(
          fmt::format("genie: AR-{} variant outside 1..ctx_size {}", v, shape_.ctx_size));
  }
  state_.variant = shape_.ar_variants.front();
}

int64_t GenieModePolicy::cache_dim(int64_t variant) const {
  // seed 002: in_cache_dim = (m == n_ctx) ? n_ctx : n_ctx - m.
  return variant == shape_.ctx_size ? shape_.ctx_size : shape_.ctx_size - variant;
}

bool GenieModePolicy::variant_shipped(int64_t variant) const {
  // The BERT variant (n == ctx_size) is always there; AR-n ones as listed.
  return variant == shape_.ctx_size ||
         std::find(shape_.ar_variants.begin(), shape_.ar_variants.end(), variant) !=
             shape_.ar_variants.end();
}

Bytes GenieModePolicy::buffer_bytes() const {
  // The closed form of genie_buffer_sizing.hpp, from the shape: cache rows
  // of row_columns() plus the output buffer of the largest variant.
  const int64_t max_variant = shape_.ar_variants.back();
  return column_bytes() * (row_columns() + std::min(max_variant, shape_.ctx_size));
}

void GenieModePolicy::price_realign(GenieState& s, int64_t variant, KvUpdatePlan& plan) const {
  plan.realign_bytes += s.held * column_bytes();
  s.variant = variant;
  s.offset = 0;
  s.ring_start = 0;
}

KvUpdatePlan GenieModePolicy::plan_step(const GenieStep& step) const {
  if (!variant_shipped(step.variant))
    throw std::invalid_argument(
        fmt::format("genie: the model ships no AR-{} variant (ar_variants: [{}])", step.variant,
                    fmt::join(shape_.ar_variants, ", ")));
  KvUpdatePlan plan;
  plan.variant_before = state_.variant;
  plan.variant_after = step.variant;
  plan.tokens_held_before = state_.held;
  GenieState s = state_;
  if (step.clear) {
    price_clear(s, plan);
    s.held = 0;
    s.offset = 0;
    s.ring_start = 0;
  }
  if (step.evict < 0 || step.rewind < 0 || step.append < 0 || step.evict + step.rewind > s.held)
    throw std::invalid_argument(
        fmt::format("genie: cannot drop {} oldest and {} newest of {} tokens", step.evict,
                    step.rewind, s.held));
  if (step.evict > 0) {
    price_evict(s, step.evict, plan);
    s.held -= step.evict;
  }
  if (step.rewind > 0) {
    price_rewind(s, step.rewind, plan);
    s.held -= step.rewind;
  }
  if (s.variant != step.variant) {
    if (s.held > cache_dim(step.variant))
      throw std::invalid_argument(
          fmt::format("genie: {} tokens do not fit AR-{}'s cache dim {} (ctx_size {})", s.held,
                      step.variant, cache_dim(step.variant), shape_.ctx_size));
    price_realign(s, step.variant, plan);
  }
  if (step.append > 0) {
    if (s.held + step.append > cache_dim(s.variant))
      throw std::invalid_argument(
          fmt::format("genie: {} + {} tokens exceed AR-{}'s cache dim {} (ctx_size {})", s.held,
                      step.append, s.variant, cache_dim(s.variant), shape_.ctx_size));
    price_append(s, step.append, plan);
    s.held += step.append;
  }
  // seed 002 updateKey: n_iter rows of copy_size each, per K tensor (its
  // heads' head_dim rows); updateValue: one run per head. Per-head tensors
  // split the same rows among more tensors, so the count does not change.
  if (step.append > 0)
    plan.copy_calls =
        static_cast<uint64_t>(shape_.layers * shape_.kv_heads * (shape_.head_dim + 1));
  plan.pointer_updates = pointer_updates_per_update();
  plan.tensor_registrations = registrations_per_update();
  plan.registration_time = static_cast<TimeNs>(plan.tensor_registrations) * shape_.register_cost;
  plan.appended_tokens = step.append;
  plan.rewound_tokens = step.rewind;
  plan.evicted_tokens = step.evict;
  plan.tokens_held_after = s.held;
  plan.view_offset_after = s.offset;
  plan.ring_start_after = s.ring_start;
  return plan;
}

void check_keep_mask(const std::vector<bool>& selected, KvDispatch dispatch, int64_t n_update,
                     int64_t pass_variant) {
  if (selected.empty()) return;
  // nsp-kvmanager updateKey/updateValue (seed 002) copy each chosen entry of
  // the output buffer into the next column, so the mask covers the entries
  // one pass computed and keeps as many as the forward update adds.
  const auto kept = std::count(selected.begin(), selected.end(), true);
  if (dispatch != KvDispatch::update_and_set || kept != n_update)
    throw std::invalid_argument(
        fmt::format("genie: a keep-mask of {} entries keeps {}, not the {} the update adds",
                    selected.size(), kept, n_update));
  if (static_cast<int64_t>(selected.size()) > pass_variant)
    throw std::invalid_argument(
        fmt::format("genie: a keep-mask of {} entries is longer than the AR-{} pass's output",
                    selected.size(), pass_variant));
}

KvUpdatePlan GenieModePolicy::plan_update(const KvUpdateRequest& r) const {
  if (r.n_past < 0) throw std::invalid_argument("genie: negative n_past");
  // seed 002 dispatchUpdate.
  GenieStep step;
  step.variant = r.variant;
  KvDispatch d = KvDispatch::update_and_set;
  if (r.n_past == 0) {
    d = KvDispatch::clear_cache;
    step.clear = true;
  } else if (r.n_past == state_.held) {
    d = KvDispatch::set_variant;
  } else if (r.n_past < state_.held) {
    d = KvDispatch::rewind;
    step.rewind = state_.held - r.n_past;
  } else {
    step.append = r.n_past - state_.held;
  }
  check_keep_mask(r.selected, d, r.n_past - state_.held, state_.variant);
  KvUpdatePlan plan = plan_step(step);
  plan.dispatch = d;
  plan.n_past_before = state_.held;
  plan.n_past_after = r.n_past;
  plan.n_update = r.n_past - state_.held;
  plan.selected = r.selected;
  return plan;
}

void GenieModePolicy::install(const KvUpdatePlan& plan) {
  if (plan.tokens_held_before != state_.held || plan.variant_before != state_.variant)
    throw std::logic_error("genie: the update was planned against another cache state");
  state_.held = plan.tokens_held_after;
  state_.variant = plan.variant_after;
  state_.offset = plan.view_offset_after;
  state_.ring_start = plan.ring_start_after;
  acc_.bytes_moved += plan.bytes_moved();
  acc_.pointer_updates += plan.pointer_updates;
  acc_.tensor_registrations += plan.tensor_registrations;
  acc_.compactions += plan.compaction ? 1 : 0;
  acc_.variant_switches += plan.variant_before != plan.variant_after ? 1 : 0;
  acc_.rewinds += plan.dispatch == KvDispatch::rewind ? 1 : 0;
  acc_.window_evicted_tokens += plan.evicted_tokens;
}

void GenieModePolicy::apply_update(const KvUpdatePlan& plan) {
  if (plan.n_past_before != state_.held)
    throw std::logic_error("genie: the update was planned against another n_past");
  install(plan);
}

AttentionSpan GenieModePolicy::attention_span() const {
  // The static shape, in every mode: the AR-n graph's past input of
  // ctx_size - n columns (0 for the BERT variant n == ctx_size, which takes
  // no past and whose cache dim is that of its output).
  return {shape_.ctx_size - state_.variant, state_.held};
}

Bytes GenieModePolicy::attention_mask_bytes() const {
  const int64_t n = state_.variant;
  const int64_t elements = n * shape_.ctx_size + n * state_.held + n * (n + 1) / 2;
  return elements * shape_.dtype_bytes;
}

GenieAccounting GenieModePolicy::accounting() const {
  GenieAccounting a = acc_;
  a.buffer_bytes = buffer_bytes();
  return a;
}

}  // namespace kvsim
