#pragma once
// A hand-made device and model with round figures, shared by the timing and
// pipeline tests: their arithmetic can be checked by hand and does not move
// when a shipped device or model file is refitted.
#include <cstdint>

#include "devices/device_spec.hpp"
#include "models/model_spec.hpp"

namespace kvsim::testing {

inline DeviceSpec round_device() {
  DeviceSpec d;
  d.name = "round-npu";
  d.kind = "accelerator";
  d.memory_bytes = int64_t{64} << 30;
  d.memory_bandwidth = 1'000'000'000'000;     // 1 TB/s
  d.matrix_fp16_ops = 100'000'000'000'000;    // 100 TFLOPS
  d.matrix_int8_ops = 200'000'000'000'000;    // 200 TOPS
  d.vector_fp16_ops = 10'000'000'000'000;     // 10 TFLOPS
  d.device_link_bandwidth = 100'000'000'000;  // 100 GB/s
  d.device_link_latency = 10'000;             // 10 us
  d.host_link_bandwidth = 25'000'000'000;     // 25 GB/s
  d.network_link_bandwidth = 25'000'000'000;  // 25 GB/s
  d.network_link_latency = 20'000;            // 20 us
  d.kernel_launch = 2'000;                    // 2 us
  d.step_overhead = 100'000;                  // 100 us
  d.max_tensor_parallel = 8;
  d.compute_efficiency.fill(0.5);
  d.memory_efficiency.fill(0.8);
  return d;
}

// A Llama-shaped model: 16 query heads over 4 KV heads of 64, fp16 weights.
inline ModelSpec round_model(int64_t layers = 4) {
  ModelSpec m;
  m.name = "round";
  m.model_type = "llama";
  m.hidden_size = 1024;
  m.num_hidden_layers = layers;
  m.num_attention_heads = 16;
  m.num_key_value_heads = 4;
  m.head_dim = 64;
  m.intermediate_size = 4096;
  m.vocab_size = 32000;
  m.max_position_embeddings = 65536;
  m.weights_dtype = "fp16";
  return m;
}

}  // namespace kvsim::testing
