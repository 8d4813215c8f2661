#pragma once
// What llama.cpp runs on the host CPU of a step that llama_cells prices on
// its device: the ops the device's backend does not take in the device's
// layers (sim/cache/llama_backend.hpp) and every op of the layers left on
// the host by an n_gpu_layers split (llama.cpp -ngl: the first
// n_layer - ngl layers, weights and KV in host memory, run by the CPU
// backend). ggml's scheduler runs a graph's splits one after another, so
// the host's time adds to the device's:
//   host    = sum over op kinds k of t_cpu(k) x (host layers + (k moved ? device layers : 0)) / L
//             (t_cpu(k): k's time over all L layers on the host CPU device,
//             devices/timing_model.hpp; a once-per-step op counts whole)
//   device  = the device's step without those ops: its latency less their
//             device time, each scaled the same way (never below the step
//             overhead)
//   link    = bytes that cross the host link (a discrete device only; a
//             phone's NPU and cores share LPDDR): the activations at the
//             split point, and for each moved op of a device layer its
//             activations in and out plus the K/V it reads or writes in
//             device memory, over host_link_bandwidth.
#include <array>
#include <memory>
#include <optional>

#include "base/units.hpp"
#include "devices/htp_timing.hpp"
#include "devices/timing_model.hpp"
#include "sim/cache/llama_backend.hpp"

namespace kvsim {

struct RunMetrics;

struct LlamaHostShare {
  TimeNs host = 0;          // the CPU's part
  TimeNs link = 0;          // the host link's part
  TimeNs device_saved = 0;  // device time of the work moved off it
  Bytes link_bytes = 0;
};

class LlamaBackendCost {
 public:
  // Throws std::invalid_argument when there is host work but `device` names
  // no host CPU (device.host).
  LlamaBackendCost(const DeviceSpec& device, const ModelSpec& model, Bytes kv_dtype_bytes,
                   LlamaOpMap map, int64_t host_layers);

  // The instance's cost, nullptr when the device runs everything (no op
  // moved, no layer on the host): such runs are priced as before.
  static std::unique_ptr<LlamaBackendCost> make(const DeviceSpec& device, const ModelSpec& model,
                                                Bytes kv_dtype_bytes, const LlamaCellsShape& llama);

  // The host's share of `work` (the device's part from `device_op_time`,
  // its per-kind times over all layers).
  LlamaHostShare share(const StepWork& work,
                       const std::array<TimeNs, kOpKindCount>& device_op_time) const;

  // A serving step the device priced at `device_latency` (counted).
  TimeNs serve_step(const StepWork& work, TimeNs device_latency);
  // An HTP pass (the dialog engine) priced on the NPU alone: the device part
  // scaled to its layers (the pass's per-layer share, less the KV read of an
  // attention the backend moved), plus the host's (counted).
  HtpPassTiming htp_pass(const HtpTimingModel& htp, const HtpPass& pass, HtpPassTiming t);

  const LlamaOpMap& map() const { return map_; }
  int64_t host_layers() const { return host_layers_; }
  void report(RunMetrics& m) const;

 private:
  DeviceSpec device_;
  ModelSpec model_;
  Bytes kv_dtype_bytes_;
  LlamaOpMap map_;
  int64_t host_layers_, layers_;
  std::optional<TimingModel> host_timing_, device_timing_;
  TimeNs host_ns_ = 0, link_ns_ = 0;
  Bytes link_bytes_ = 0;
  int64_t steps_ = 0;
  TimeNs scaled(TimeNs all_layers, int64_t layers) const;
};

}  // namespace kvsim
