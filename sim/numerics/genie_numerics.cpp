#include "sim/numerics/genie_numerics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/attention.hpp"
#include "sim/core/metrics.hpp"
#include "sim/numerics/synthetic_kv.hpp"
#include "sim/serve/step_observer.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim::numerics {
namespace {

SyntheticShape synthetic_shape(const GenieNumericsParams& p) {
  SyntheticShape s;
  s.layers = p.shape.layers;
  s.kv_heads = p.shape.kv_heads;
  s.q_heads = p.q_heads;
  s.head_dim = p.shape.head_dim;
  return s;
}

// The token a (position, write epoch) stands for: rewritten positions get
// other content, so a column left over from a rejected draft is detectable.
int32_t synthetic_token(uint64_t seed, int64_t position, uint64_t epoch) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL ^ (epoch << 32) ^ static_cast<uint64_t>(position);
  x = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ULL;
  return static_cast<int32_t>((x ^ (x >> 29)) & 0x7fffffff);
}

}  // namespace

void replay_update(const KvUpdatePlan& plan, kernels::GenieKvBuffer& b, const float* new_k,
                   const float* new_v) {
  if (plan.dispatch == KvDispatch::clear_cache) b.clear();
  // Forward under a window, entries of a pass longer than the window never
  // enter; the rest of evicted_tokens left the cache.
  const int64_t never_entered =
      plan.dispatch == KvDispatch::update_and_set ? plan.n_update - plan.appended_tokens : 0;
  const int64_t evict = plan.evicted_tokens - never_entered;
  if (evict > 0) b.evict_oldest(evict);
  if (plan.rewound_tokens > 0) b.rewind(plan.rewound_tokens);
  if (plan.variant_after != b.variant()) b.switch_variant(plan.variant_after);
  if (plan.appended_tokens > 0 && !plan.selected.empty()) {
    // The pass's whole output, of which the keep-mask chooses the entries;
    // under a window shorter than the update the oldest chosen ones never
    // enter.
    std::vector<bool> enter = plan.selected;
    for (size_t i = 0, skip = static_cast<size_t>(never_entered); i < enter.size() && skip > 0; ++i)
      if (enter[i]) {
        enter[i] = false;
        --skip;
      }
    b.append_selected(new_k, new_v, enter);
  } else if (plan.appended_tokens > 0) {
    const int64_t row = b.heads() * b.head_dim();
    b.append(new_k + never_entered * row, new_v + never_entered * row, plan.appended_tokens);
  }
}

GenieNumericsParams genie_numerics_params(const InstanceSpec& s) {
  GenieNumericsParams p;
  // The policy says which update mode's buffers its plans drive.
  const DeviceBufferContract* buffers = s.policy().device_buffers();
  const std::optional<kernels::GenieUpdateMode> mode =
      buffers != nullptr ? buffers->numerics_mode() : std::nullopt;
  if (!mode)
    throw std::invalid_argument(fmt::format(
        "genie numerics: '{}' drives no Genie update mode's buffers", s.policy().display_name()));
  const GenieCacheShape full = buffers->shape(s.model, s.kv.dtype_bytes());
  p.shape = full;
  p.mode = *mode;
  const NumericsConfig& n = s.numerics;
  p.shape.layers = std::min(n.shadow_layers, full.layers);
  p.shape.kv_heads = std::min(n.shadow_heads, full.kv_heads);
  p.shape.head_dim = n.shadow_head_dim;
  const int64_t group =
      std::clamp<int64_t>(s.model.num_attention_heads / std::max<int64_t>(1, full.kv_heads), 1, 4);
  p.q_heads = p.shape.kv_heads * group;
  p.plan_column_bytes = full.column_bytes();
  p.dtype = kernels::parse_kv_dtype(s.kv.dtype).value_or(kernels::KvDtype::fp16);
  p.tolerance = n.tolerance;
  p.seed = s.seed;
  return p;
}

GenieNumericsChecker::GenieNumericsChecker(const GenieNumericsParams& params) : p_(params) {
  // One tensor-wide (scale, offset) as QNN's quantParam[0] (seed 002),
  // covering the synthetic rows after RoPE ([-sqrt 2, sqrt 2]); pad = 128.
  int8_ = kernels::Int8Params{3.0f / 255.0f, -128};
  const auto variants =
      p_.shape.ar_variants.empty() ? std::vector<int64_t>{1} : p_.shape.ar_variants;
  const int64_t first_variant = *std::min_element(variants.begin(), variants.end());
  for (int64_t l = 0; l < p_.shape.layers; ++l)
    buffers_.emplace_back(p_.shape.ctx_size, p_.shape.kv_heads, p_.shape.head_dim, p_.dtype,
                          p_.mode, first_variant, int8_, p_.shape.pointer_shift_headroom,
                          kernels::NativeKvTiles{p_.shape.k_tile, p_.shape.v_tile});
}

uint64_t GenieNumericsChecker::kernel_bytes_moved() const {
  uint64_t b = 0;
  for (const auto& buf : buffers_) b += buf.bytes_moved();
  return b;
}

void GenieNumericsChecker::write_rows(int64_t position, int64_t layer, float* k, float* v) const {
  const SyntheticShape shape = synthetic_shape(p_);
  const int32_t token =
      synthetic_token(p_.seed, position, epoch_of_position_[static_cast<size_t>(position)]);
  synthetic_rows(shape, Tensor::key, token, position, layer, k);
  synthetic_rows(shape, Tensor::value, token, position, layer, v);
}

void GenieNumericsChecker::apply(const KvUpdatePlan& plan, const std::string& where, bool check) {
  auto fail = [&](const std::string& what) {
    throw CheckFailed(fmt::format("numerics: {}: {} (n_past {} -> {}, AR-{} -> AR-{}): {}", where,
                                  kv_dispatch_name(plan.dispatch), plan.n_past_before,
                                  plan.n_past_after, plan.variant_before, plan.variant_after,
                                  what));
  };
  if (plan.n_past_before != n_past_) fail(fmt::format("the checker is at n_past {}", n_past_));
  ++epoch_;
  const uint64_t bytes_before = kernel_bytes_moved();
  const int64_t kvw = p_.shape.kv_heads * p_.shape.head_dim;
  if (plan.dispatch == KvDispatch::clear_cache) epoch_of_position_.clear();
  epoch_of_position_.resize(static_cast<size_t>(plan.n_past_after), epoch_);
  try {
    // The pass's new entries: positions [n_past_before, n_past_after); under
    // a keep-mask, the pass's whole output, the kept entries carrying those
    // positions in order and the others content no position has (a kernel
    // that kept a wrong entry then attends to it and fails the check).
    const int64_t n_new = plan.selected.empty() ? std::max<int64_t>(0, plan.n_update)
                                                : static_cast<int64_t>(plan.selected.size());
    std::vector<float> k(static_cast<size_t>(n_new * kvw)), v(k.size());
    const SyntheticShape shape = synthetic_shape(p_);
    for (int64_t l = 0; l < p_.shape.layers; ++l) {
      for (int64_t i = 0, kept = 0; i < n_new; ++i) {
        float* kr = &k[static_cast<size_t>(i * kvw)];
        float* vr = &v[static_cast<size_t>(i * kvw)];
        if (plan.selected.empty() || plan.selected[static_cast<size_t>(i)]) {
          write_rows(plan.n_past_before + kept++, l, kr, vr);
        } else {
          const int32_t dropped = synthetic_token(p_.seed, plan.n_past_before + i, ~epoch_);
          synthetic_rows(shape, Tensor::key, dropped, plan.n_past_before + i, l, kr);
          synthetic_rows(shape, Tensor::value, dropped, plan.n_past_before + i, l, vr);
        }
      }
      replay_update(plan, buffers_[static_cast<size_t>(l)], k.data(), v.data());
    }
  } catch (const std::length_error& e) {
    fail(fmt::format("the buffers cannot follow the plan: {}", e.what()));
  }
  n_past_ = plan.n_past_after;
  held_ = buffers_.front().n_valid();
  if (held_ != plan.tokens_held_after)
    fail(fmt::format("the buffers hold {} tokens, the plan {}", held_, plan.tokens_held_after));
  if (p_.check_bytes) {
    const Bytes shadow_col = p_.shape.column_bytes();
    const Bytes plan_col = p_.plan_column_bytes > 0 ? p_.plan_column_bytes : shadow_col;
    const auto kernel_cols =
        static_cast<double>(kernel_bytes_moved() - bytes_before) / static_cast<double>(shadow_col);
    const double plan_cols =
        static_cast<double>(plan.bytes_moved()) / static_cast<double>(plan_col);
    if (kernel_cols != plan_cols)
      fail(fmt::format("the kernel moved {} columns, the plan prices {}", kernel_cols, plan_cols));
  }
  if (!check || held_ == 0) return;
  for (int64_t l = 0; l < p_.shape.layers; ++l) {
    const double err = attention_error(l, n_past_);
    ++checks_;
    max_abs_err_ = std::max(max_abs_err_, err);
    if (!(err <= p_.tolerance))
      fail(
          fmt::format("layer {}: attention differs from the dense reference by {:.3g} (tolerance "
                      "{:.3g})",
                      l, err, p_.tolerance));
  }
}

double GenieNumericsChecker::attention_error(int64_t layer, int64_t position) const {
  const SyntheticShape shape = synthetic_shape(p_);
  const int64_t d = p_.shape.head_dim, kvw = p_.shape.kv_heads * d;
  // The dense reference: the last held_ positions of the history, stored
  // and loaded as the cache's dtype stores them.
  std::vector<float> k(static_cast<size_t>(held_ * kvw)), v(k.size());
  for (int64_t i = 0; i < held_; ++i)
    write_rows(n_past_ - held_ + i, layer, &k[static_cast<size_t>(i * kvw)],
               &v[static_cast<size_t>(i * kvw)]);
  for (float* row : {k.data(), v.data()}) {
    if (p_.dtype == kernels::KvDtype::int8) {
      for (size_t i = 0; i < k.size(); ++i)
        row[i] = kernels::dequantize_int8(kernels::quantize_int8(row[i], int8_), int8_);
    } else {
      kernels::round_trip_row(p_.dtype, row, static_cast<int64_t>(k.size()), row);
    }
  }
  std::vector<float> q(static_cast<size_t>(p_.q_heads * d)), ref(q.size()), out(q.size());
  synthetic_rows(shape, Tensor::query, synthetic_token(p_.seed, position, epoch_), position, layer,
                 q.data());
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  kernels::dense_attention_reference(q.data(), 1, k.data(), v.data(), held_, p_.q_heads,
                                     p_.shape.kv_heads, d, scale, ref.data());
  buffers_[static_cast<size_t>(layer)].attend(q.data(), p_.q_heads, scale, out.data());
  double err = 0;
  for (size_t i = 0; i < out.size(); ++i)
    err = std::max(err, static_cast<double>(std::fabs(out[i] - ref[i])));
  if (std::isnan(err)) return INFINITY;
  return err;
}

void GenieNumericsChecker::report(RunMetrics& m) const {
  m.numerics.checks += static_cast<int64_t>(checks_);
  m.numerics.max_abs_err = std::max(m.numerics.max_abs_err, max_abs_err_);
}

}  // namespace kvsim::numerics
