#include "kernels/rope.hpp"

#include <algorithm>
#include <cmath>

namespace kvsim::kernels {

std::optional<RopeStyle> parse_rope_style(std::string_view name) {
  if (name == "adjacent_pairs") return RopeStyle::adjacent_pairs;
  if (name == "rotate_half") return RopeStyle::rotate_half;
  return std::nullopt;
}

void apply_rope(float* x, int64_t heads, int64_t head_dim, int64_t position, float theta,
                RopeStyle style) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    // llama2.c computes the angle in float: keep it so generation matches it.
    const float freq =
        1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(head_dim));
    const float angle = static_cast<float>(position) * freq;
    const float c = std::cos(angle), s = std::sin(angle);
    for (int64_t h = 0; h < heads; ++h) {
      float* xh = x + h * head_dim;
      const int64_t a = style == RopeStyle::adjacent_pairs ? 2 * i : i;
      const int64_t b = style == RopeStyle::adjacent_pairs ? 2 * i + 1 : i + half;
      const float x0 = xh[a], x1 = xh[b];
      xh[a] = x0 * c - x1 * s;
      xh[b] = x0 * s + x1 * c;
    }
  }
}

RopeTable::RopeTable(int64_t head_dim, float theta, RopeStyle style)
    : head_dim_(head_dim), theta_(theta), style_(style) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i)
    freq_.push_back(1.0f /
                    std::pow(theta_, static_cast<float>(2 * i) / static_cast<float>(head_dim)));
}

void RopeTable::grow_to(int64_t positions) {
  // Doubling: a run that reaches a context of n rebuilds the table log(n) times.
  const int64_t n = std::max<int64_t>(positions, 2 * positions_);
  const auto half = static_cast<int64_t>(freq_.size());
  cos_sin_.resize(static_cast<size_t>(n * half * 2));
  for (int64_t p = positions_; p < n; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(p) * freq_[static_cast<size_t>(i)];
      cos_sin_[static_cast<size_t>((p * half + i) * 2)] = std::cos(angle);
      cos_sin_[static_cast<size_t>((p * half + i) * 2 + 1)] = std::sin(angle);
    }
  }
  positions_ = n;
}

void RopeTable::apply(float* x, int64_t heads, int64_t position) {
  if (position < 0) {
    apply_rope(x, heads, head_dim_, position, theta_, style_);
    return;
  }
  if (position >= positions_) grow_to(position + 1);
  const auto half = static_cast<int64_t>(freq_.size());
  const float* cs = cos_sin_.data() + position * half * 2;
  for (int64_t i = 0; i < half; ++i) {
    const float c = cs[2 * i], s = cs[2 * i + 1];
    for (int64_t h = 0; h < heads; ++h) {
      float* xh = x + h * head_dim_;
      const int64_t a = style_ == RopeStyle::adjacent_pairs ? 2 * i : i;
      const int64_t b = style_ == RopeStyle::adjacent_pairs ? 2 * i + 1 : i + half;
      const float x0 = xh[a], x1 = xh[b];
      xh[a] = x0 * c - x1 * s;
      xh[b] = x0 * s + x1 * c;
    }
  }
}

void rerotate_rope(float* x, int64_t heads, int64_t head_dim, int64_t delta, float theta,
                   RopeStyle style) {
  apply_rope(x, heads, head_dim, delta, theta, style);
}

}  // namespace kvsim::kernels
