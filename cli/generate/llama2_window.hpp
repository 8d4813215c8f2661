#pragma once
// stories260K past its context: through sliding_window (seed 002's
// window-size) over paged or a Genie update mode, and through a Genie
// context reset. The KV really evicts as the policy plans (paged: the
// blocks sliding_window frees are reused by the pool, sized for the window
// alone; Genie: the wrapped mode's buffers evict the oldest columns), and
// each run is compared with the references of cli/generate/
// llama2_recompute.hpp: a recompute from the kept tokens, and the
// full-context run (llama2.c's text).
#include <string>
#include <vector>

#include "cli/generate/llama2_generate.hpp"

namespace kvsim::kernels {

// The policies sliding_window wraps (its update_mode key's choices).
std::vector<std::string> sliding_window_bases();

// generate_greedy for policy sliding_window: options.update_mode and
// options.window; result.window holds the comparisons.
GenerateResult generate_greedy_sliding_window(const Llama2Weights& weights,
                                              const Llama2Tokenizer& tokenizer,
                                              const GenerateOptions& options);

// generate_greedy for a Genie mode with options.context_reset, compared the
// same way (result.window).
GenerateResult generate_greedy_context_reset(const Llama2Weights& weights,
                                             const Llama2Tokenizer& tokenizer,
                                             const GenerateOptions& options);

}  // namespace kvsim::kernels
