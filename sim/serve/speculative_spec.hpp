#pragma once
// `speculative:` (vLLM's speculative_config, accepted under that name too:
// sim/scenario/vllm_names.cpp): its keys, and the reader that turns them
// into the SpeculativeConfig the serving engine runs (sim/serve/speculation.hpp).
#include <functional>
#include <optional>

#include "base/params.hpp"
#include "base/reader.hpp"
#include "sim/spec/speculative_config.hpp"

namespace kvsim {

config::ComponentInfo speculative_info();
config::ComponentInfo speculative_acceptance_info();

// Reads `speculative:` of `top` for the target `target`. `load_model`
// resolves a `model:` value (a name under configs/models/, a path, a
// Hugging Face folder) as the scenario's `model:` is resolved; nullopt after
// recording its error. Errors (a rate outside [0, 1], a per-position list
// longer than K, mtp on a model without MTP layers, a draft model of another
// vocabulary) are recorded at their key.
SpeculativeConfig read_speculative_section(
    config::MapReader& top, const ModelSpec& target,
    const std::function<std::optional<ModelSpec>(const config::Node&)>& load_model);

}  // namespace kvsim
