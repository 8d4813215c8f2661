#pragma once
// vLLM's engine-argument names accepted at the top of a scenario, where they
// mean what kvsim's own key means (SPEC 11: users bring the names they know).
// `gpu_memory_utilization: 0.9` is read as `kv_cache.memory_fraction: 0.9`,
// `swap_space: 4` as `kv_cache.swap_space: 4GiB` (vLLM's swap_space is in
// GiB), and so on. The rename happens on the YAML document before any
// component reads it, so the component's own checks, ranges and messages
// apply; errors still point at the line (or the --set) the user wrote.
#include <string>
#include <vector>

#include "base/reader.hpp"

namespace kvsim {

struct VllmName {
  std::string vllm;   // the vLLM engine argument, e.g. "tensor_parallel_size"
  std::string kvsim;  // the kvsim key path it stands for, e.g. "parallel.tensor"
  std::string note;   // how the value converts, when it does ("GiB when bare")
};

// Every vLLM name kvsim accepts, in the order the docs list them.
const std::vector<VllmName>& vllm_names();

// Moves each vLLM-named top-level key of `doc` to the kvsim key it stands
// for. Giving both the vLLM name and the kvsim key is an error at the vLLM
// name (which value would win is not obvious).
void apply_vllm_names(YAML::Node& doc, const std::string& file, config::LoadContext& ctx);

}  // namespace kvsim
