#pragma once
// Finding a model's shape from the name a user gives it (SPEC 4b): the Hugging
// Face repository name (`Llama-3.2-1B-Instruct`, `Qwen/Qwen2.5-7B-Instruct`,
// `vllm-ascend/Qwen3-32B-W8A8`), optionally ending in a weights format
// (`-w4a16`, `-W8A8`), resolves to ONE shape file per model under
// configs/models/ (HF config.json keys with their source), and the weights
// format is applied on top: there is no file per (model, format) pair.
//
// Lookup of a name, case-insensitive, first hit wins:
//   1. configs/models/<name>.yaml|.json as written (existing files keep working)
//   2. the organisation ("meta-llama/") dropped
//   3. a trailing weights format split off ("-w8a8", "-int4-awq" is not one)
//   4. fine-tuning suffixes dropped, repeatedly: -instruct, -chat, -it, -hf, -base
//   5. a leading "meta-" dropped (Meta-Llama-3-8B -> llama-3-8b)
// Instruction-tuned variants share their base model's shape, which is why
// step 4 is allowed: the tuning changes weights, never the config keys kvsim
// reads.
#include <optional>
#include <string>
#include <vector>

#include "models/model_spec.hpp"

namespace kvsim {

struct ModelLookup {
  std::string path;                // the shape file found ("" when none)
  std::string weights;             // the weights format the name carried ("" when none)
  std::vector<std::string> tried;  // every file looked for, in order (for messages)
};

// Resolves `name` against `configs_dir`/models. Never throws; path is empty
// when nothing matched.
ModelLookup find_model(const std::string& name, const std::string& configs_dir);

// A model's shape stored in another weights format: `weights` is one of
// kWeightsDtypeNames; any quantization_config read from the file is dropped
// (the format replaces it). The name becomes `display_name` when not empty.
ModelSpec with_weights_format(ModelSpec model, const std::string& weights,
                              const std::string& display_name = "");

// The weights format at the end of `name` ("-w4a16", case-insensitive), or
// nullopt. `stem` receives the name without it.
std::optional<std::string> split_weights_suffix(const std::string& name, std::string* stem);

// Loads the model `name` (as find_model) in `weights` format (empty: the
// name's own suffix, else the file's). Throws std::runtime_error naming the
// files looked for when none exists, or the file, line and key at fault when
// the shape file is malformed.
ModelSpec load_model_by_name(const std::string& name, const std::string& weights,
                             const std::string& configs_dir);

}  // namespace kvsim
