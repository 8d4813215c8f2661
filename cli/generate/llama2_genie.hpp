#pragma once
// stories260K with its KV in Genie's on-device buffers (seed 002):
// one GenieKvBuffer per layer in the chosen update mode, driven only by an
// GenieKvPolicy's update plans. The prompt is prefilled in AR-32 passes
// (the last one padded), decoding runs AR-1 passes; each pass attends to the
// cache's valid columns (through the buffer's own layout, offset, ring and
// mask) plus its own new K/V causally, and the update dispatched after the
// pass (clear, set variant, rewind, update and set) copies the new K/V in.
#include <cstdint>
#include <vector>

#include "cli/generate/llama2_generate.hpp"
#include "kernels/genie_kv_buffer.hpp"

namespace kvsim::kernels {

// The prompt's passes run the AR-32 graph, decoding AR-1 (as the genie
// engine's default variants).
constexpr int64_t kGeniePrefillVariant = 32;

// Runs tokens[0..n) at positions pos0.. against `layers` (not changed: the
// update comes after the pass); returns the last token's logits and the
// pass's new K/V per layer, [n, kv_heads, head_size] each.
std::vector<float> llama2_forward_genie(const Llama2Weights& w,
                                        const std::vector<GenieKvBuffer>& layers,
                                        const int32_t* tokens, int64_t n, int64_t pos0,
                                        std::vector<std::vector<float>>& new_k,
                                        std::vector<std::vector<float>>& new_v);

// generate_greedy for a Genie mode (options.policy, or options.update_mode
// under a window of options.window tokens; options.context_reset resets a
// full context). With int8 KV, each
// layer's tensor-wide (scale, offset) comes from an fp32 calibration run of
// the same positions, as QNN calibrates quantParam offline.
GenerateResult generate_greedy_genie(const Llama2Weights& weights, const Llama2Tokenizer& tokenizer,
                                     const GenerateOptions& options);

}  // namespace kvsim::kernels
