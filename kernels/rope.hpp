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

namespace kvsim::kernels {

enum class RopeStyle : uint8_t { adjacent_pairs, rotate_half };
std::optional<RopeStyle> parse_rope_style(std::string_view name);

// x: one token's [heads, head_dim], rotated in place to `position`.
void apply_rope(float* x, int64_t heads, int64_t head_dim, int64_t position, float theta,
                RopeStyle style);
// Keys rotated at position p become keys rotated at p + delta (delta may be negative).
void rerotate_rope(float* x, int64_t heads, int64_t head_dim, int64_t delta, float theta,
                   RopeStyle style);

}  // namespace kvsim::kernels
