#pragma once
// `parallel.data` and `parallel.devices`: how a deployment's dies split into
// data-parallel attention ranks (vLLM's data_parallel_size x
// tensor_parallel_size, as vllm-ascend's DeepSeek tutorials launch them:
// dp4 x tp4 on one Atlas 800 A3 node, dp32 x tp1 over two for decode), and
// where the ranks of the expert group sit (the device file's
// max_tensor_parallel dies to a node, ranks filling nodes in order).
#include <cstdint>
#include <optional>

#include "base/reader.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

// First pass, on the `parallel:` values alone: `devices` (when given) is
// data x tensor x pipeline, `tensor` defaults to devices / data, and with
// data > 1 a MoE model's expert group is data x tensor ranks (vLLM's
// enable_expert_parallel). Problems go to ctx at the key to change.
void read_data_parallel_layout(InstanceSpec& s, std::optional<int64_t> devices, bool tensor_given,
                               bool expert_given, config::LoadContext& ctx);

// Second pass, with the device and the model (s.dp > 1): every rank's
// tensor group inside one node, a network link when the ranks span nodes,
// and what the data-parallel step barrier does not compose with.
void data_parallel_checks(InstanceSpec& s, config::LoadContext& ctx);

}  // namespace kvsim
