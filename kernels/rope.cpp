#include "kernels/rope.hpp"

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

void rerotate_rope(float* x, int64_t heads, int64_t head_dim, int64_t delta, float theta,
                   RopeStyle style) {
  apply_rope(x, heads, head_dim, delta, theta, style);
}

}  // namespace kvsim::kernels
