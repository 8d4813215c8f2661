#pragma once
// Prices what one Genie dialog does on an HTP (seed 002): an AR-n graph pass
// over the model, the CPU-side KV update after it (split over update
// threads), a variant (graph) switch with its realignment, and a cache
// save/restore to storage. Pure: durations in, nothing scheduled.
//
// CONTRACT between the HTP device work and the dialog engine; the
// implementation lives in devices/htp_timing.cpp.
#include <cstdint>

#include "base/units.hpp"
#include "devices/device_spec.hpp"
#include "models/model_spec.hpp"

namespace kvsim {

struct HtpPass {
  int64_t variant = 1;  // AR-n: tokens the graph computes (a short last prefill pass is padded)
  int64_t useful_tokens = 1;  // real tokens among them
  int64_t kv_cols_read = 0;   // KV columns attention reads per layer and KV head
  Bytes vtcm_requested = 0;   // what the session asked for
  Bytes vtcm_granted = 0;     // what it runs with (less: DDR spill)
  // Fraction of the past KV the pass reads from VTCM instead of DDR (layers
  // resident there: sim/cache/kv_vtcm/), at htp.vtcm_bandwidth.
  double kv_vtcm_share = 0;
  // The GEMMs run on HVX, not HMX: llama.cpp's Hexagon backend, whose
  // matmul kernels are HVX dot products unless built for HMX (see
  // price_pass). false: Genie's graphs, GEMMs on HMX.
  bool gemm_on_vector = false;
};

struct HtpPassTiming {
  TimeNs latency = 0;
  TimeNs compute = 0;    // HMX/HVX roofline part
  TimeNs memory = 0;     // DDR part (weights + KV + spill)
  double ddr_bytes = 0;  // after the VTCM spill factor
  double kv_bytes_read = 0;
  double kv_vtcm_bytes = 0;  // ... of which from VTCM (not in ddr_bytes)
  TimeNs kv_vtcm = 0;        // reading them at htp.vtcm_bandwidth (in memory)
  double flops = 0;
};

// Which rows of an AR-n pass the exported graph computes logits for. AI
// Hub's Genie exports trace the Hugging Face forward, which applies the LM
// head to every row (Genie's speculative and lookahead modes read them all);
// its 2024 Llama 2 / Llama 3 prompt processors kept the last row only
// (quic/ai-hub-models, llama_v2_7b_chat and llama_v3_8b_chat_quantized
// model.py: num_logits_to_return = 1), as llama.cpp does for a prompt.
enum class GraphLogits : uint8_t { every_row, last_row };

// Saving or restoring `bytes` of cache at the device's storage_bandwidth
// (seed 002 dumpCache / loadCache; also `kvsim generate --save-session`).
TimeNs htp_storage_time(const HtpSpec& htp, Bytes bytes);

class HtpTimingModel {
 public:
  // Throws std::invalid_argument when `device` is not kind htp.
  HtpTimingModel(const DeviceSpec& device, const ModelSpec& model, Bytes kv_dtype_bytes,
                 GraphLogits logits = GraphLogits::every_row);

  HtpPassTiming price_pass(const HtpPass& pass) const;
  // A KV update moving `bytes` on the CPU, split over `threads` (seed 002's
  // runKVUpdateJob splits the KV tensors between threads).
  TimeNs cpu_copy_time(Bytes bytes, int64_t threads) const;
  // Switching the executing AR-n graph (realignment bytes priced separately
  // with cpu_copy_time).
  TimeNs variant_switch_time() const;
  // Saving or restoring `bytes` of cache to storage.
  TimeNs storage_time(Bytes bytes) const;

  const DeviceSpec& device() const { return device_; }
  const ModelSpec& model() const { return model_; }

 private:
  DeviceSpec device_;
  ModelSpec model_;
  Bytes kv_dtype_bytes_;
  GraphLogits logits_;
};

}  // namespace kvsim
