#pragma once
// Rotary position embedding in both conventions, chosen by the model file
// (`rope_style`): adjacent pairs (x[2i], x[2i+1]) as llama2.c and GPT-J, or
// rotate-half pairs (x[i], x[i + d/2]) as Hugging Face Llama. Pair i turns by
// position * theta^(-2i/d). Rotations compose, so re-rotating a cached key
// by a position delta equals rotating it at the target position: seed 003's
// remap of a cached chunk to its real position.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kvsim::kernels {

enum class RopeStyle : uint8_t { adjacent_pairs, rotate_half };
std::optional<RopeStyle> parse_rope_style(std::string_view name);

// x: one token's [heads, head_dim], rotated in place to `position`.
void apply_rope(float* x, int64_t heads, int64_t head_dim, int64_t position, float theta,
                RopeStyle style);
// Keys rotated at position p become keys rotated at p + delta (delta may be negative).
void rerotate_rope(float* x, int64_t heads, int64_t head_dim, int64_t delta, float theta,
                   RopeStyle style);

// apply_rope with each position's cos and sin computed once and kept: the
// angles are computed exactly as apply_rope computes them, so the rotated
// values are the same bits (a checker that rotates the same positions for
// many tokens pays for the trigonometry once per position).
class RopeTable {
 public:
  RopeTable(int64_t head_dim, float theta, RopeStyle style);
  void apply(float* x, int64_t heads, int64_t position);
  // apply for `tokens` consecutive tokens' rows, x [tokens, heads, head_dim],
  // at positions first, first + 1, ...
  void apply_run(float* x, int64_t tokens, int64_t heads, int64_t first);
  // Per position from `first` for `tokens` positions (first >= 0), the
  // head's half cosines then half sines, [position][head_dim]: the same
  // angles as apply_run's rows in half the bytes, for callers that rotate
  // rows as they make them (their sign and pair layout is the caller's).
  const float* half_cos_sin(int64_t first, int64_t tokens) {
    if (first + tokens > positions_) grow_to(first + tokens);
    return half_cos_sin_.data() + first * head_dim_;
  }
  // Per position from `first` for `tokens` positions (first >= 0), apply_
  // run's own table rows: the cos, then the sin signed as the scalar formula
  // uses it, of every value, [position][2][head_dim]. For callers that
  // rotate rows as they make them with apply_run's operations (the same bits).
  const float* cos_sin(int64_t first, int64_t tokens) {
    if (first + tokens > positions_) grow_to(first + tokens);
    return cos_sin_.data() + first * 2 * head_dim_;
  }
  RopeStyle style() const { return style_; }

 private:
  void grow_to(int64_t positions);

  int64_t head_dim_;
  float theta_;
  RopeStyle style_;
  std::vector<float> freq_;
  // Per position, [cos, sin] over the head's values: out = x * cos + x's
  // pair partner * sin, the sin negated where the scalar formula subtracts
  // (the same bits: a - b is a + (-b)), so a head rotates with two
  // multiplies and an add per value, eight values at a time.
  std::vector<float> cos_sin_;       // [position][2][head_dim]
  std::vector<float> half_cos_sin_;  // [position][cos of each pair, then sin]
  int64_t positions_ = 0;
};

}  // namespace kvsim::kernels
