#include "kernels/rope.hpp"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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
  // Up to the position asked for, in steps of kGrowPositions: each angle
  // costs a cos and a sin, and doubling would compute up to twice the
  // positions a run reaches (the vector's storage still grows geometrically).
  constexpr int64_t kGrowPositions = 512;
  const int64_t n = (positions + kGrowPositions - 1) / kGrowPositions * kGrowPositions;
  const auto half = static_cast<int64_t>(freq_.size());
  const int64_t d = head_dim_;
  cos_sin_.resize(static_cast<size_t>(n * 2 * d));
  half_cos_sin_.resize(static_cast<size_t>(n * d));
  for (int64_t p = positions_; p < n; ++p) {
    float* c = cos_sin_.data() + p * 2 * d;
    float* s = c + d;
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(p) * freq_[static_cast<size_t>(i)];
      const float ci = std::cos(angle), si = std::sin(angle);
      half_cos_sin_[static_cast<size_t>(p * d + i)] = ci;
      half_cos_sin_[static_cast<size_t>(p * d + half + i)] = si;
      const int64_t a = style_ == RopeStyle::adjacent_pairs ? 2 * i : i;
      const int64_t b = style_ == RopeStyle::adjacent_pairs ? 2 * i + 1 : i + half;
      c[a] = c[b] = ci;
      s[a] = -si;
      s[b] = si;
    }
  }
  positions_ = n;
}

namespace {

#if defined(__x86_64__)
// x * c + partner(x) * s, eight values at a time: no fused multiply-add
// (AVX only), so each value is the scalar expression's bits. `tokens`
// consecutive tokens' rows, each with the next position's table row.
__attribute__((target("avx"))) void rotate_rows_avx(float* x, int64_t tokens, int64_t heads,
                                                    int64_t d, RopeStyle style, const float* c) {
  const int64_t half = d / 2;
  for (int64_t t = 0; t < tokens; ++t, c += 2 * d) {
    const float* s = c + d;
    for (int64_t h = 0; h < heads; ++h, x += d) {
      if (style == RopeStyle::adjacent_pairs) {
        for (int64_t i = 0; i < d; i += 8) {
          const __m256 v = _mm256_loadu_ps(x + i);
          const __m256 partner = _mm256_permute_ps(v, 0xB1);  // swaps each pair
          _mm256_storeu_ps(x + i, _mm256_add_ps(_mm256_mul_ps(v, _mm256_loadu_ps(c + i)),
                                                _mm256_mul_ps(partner, _mm256_loadu_ps(s + i))));
        }
        continue;
      }
      for (int64_t i = 0; i < half; i += 8) {
        const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + half + i);
        _mm256_storeu_ps(x + i, _mm256_add_ps(_mm256_mul_ps(a, _mm256_loadu_ps(c + i)),
                                              _mm256_mul_ps(b, _mm256_loadu_ps(s + i))));
        _mm256_storeu_ps(x + half + i,
                         _mm256_add_ps(_mm256_mul_ps(b, _mm256_loadu_ps(c + half + i)),
                                       _mm256_mul_ps(a, _mm256_loadu_ps(s + half + i))));
      }
    }
  }
}

bool avx_available() {
  static const bool ok = __builtin_cpu_supports("avx");
  return ok;
}
#endif

}  // namespace

void RopeTable::apply(float* x, int64_t heads, int64_t position) {
  apply_run(x, 1, heads, position);
}

void RopeTable::apply_run(float* x, int64_t tokens, int64_t heads, int64_t first) {
  const int64_t d = head_dim_, half = d / 2;
  if (first < 0) {
    for (int64_t t = 0; t < tokens; ++t)
      apply_rope(x + t * heads * d, heads, d, first + t, theta_, style_);
    return;
  }
  if (tokens <= 0) return;
  if (first + tokens > positions_) grow_to(first + tokens);
  const float* c = cos_sin_.data() + first * 2 * d;
#if defined(__x86_64__)
  const int64_t lanes = style_ == RopeStyle::adjacent_pairs ? d : half;
  if (lanes % 8 == 0 && avx_available()) {
    rotate_rows_avx(x, tokens, heads, d, style_, c);
    return;
  }
#endif
  // x0 c - x1 s is x0 c + x1 (-s) exactly, and x0 s + x1 c is x1 c + x0 s.
  for (int64_t t = 0; t < tokens; ++t, c += 2 * d) {
    const float* s = c + d;
    for (int64_t h = 0; h < heads; ++h, x += d) {
      for (int64_t i = 0; i < half; ++i) {
        const int64_t a = style_ == RopeStyle::adjacent_pairs ? 2 * i : i;
        const int64_t b = style_ == RopeStyle::adjacent_pairs ? 2 * i + 1 : i + half;
        const float x0 = x[a], x1 = x[b];
        x[a] = x0 * c[a] + x1 * s[a];
        x[b] = x1 * c[b] + x0 * s[b];
      }
    }
  }
}

void rerotate_rope(float* x, int64_t heads, int64_t head_dim, int64_t delta, float theta,
                   RopeStyle style) {
  apply_rope(x, heads, head_dim, delta, theta, style);
}

}  // namespace kvsim::kernels
