// The parameters each device family's fit varies (`kvsim calibrate --fit`),
// with the value each takes when the rows leave it open and why, and which
// of them one hardware design shares across its generations.
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "cli/studies/calibration_fit.hpp"
#include "devices/device_family.hpp"

namespace kvsim {
namespace {

FitParameter efficiency(const std::string& key, double assumed, std::string why, double lo,
                        bool shared = false) {
  return FitParameter{key, assumed, std::move(why), lo, 1.0, true, "", shared};
}

}  // namespace

std::string calibration_family(const DeviceSpec& device) {
  // The device family says which devices share one design (the Hexagon
  // generations; a GPU part naming its architecture, H100 and H200:
  // nvidia-hopper); every other device is fitted on its own.
  return device_family_of(device).calibration_design(device);
}

std::string calibration_lineage(const DeviceSpec& device) {
  // "nvidia-hopper" -> "nvidia": the vendor, whose other designs inform a
  // design no row has been fitted on. Without an architecture: the kind.
  if (device.architecture.empty()) return device.kind;
  return device.architecture.substr(0, device.architecture.find('-'));
}

std::vector<FitParameter> fit_parameters(const DeviceSpec& device) {
  if (device_family_of(device).graph_executor(device) != nullptr) {
    // Per device: weight streaming (its own LPDDR part and controller) and
    // the HMX rate (clock, width). Shared by the family: how the pass shape
    // moves the HMX's efficiency, the attention kernels (masked attention
    // over the cache buffer, KV read through the same DMA path), the HVX
    // kernels and the fixed cost of one graph execution.
    return {
        efficiency("efficiency.gemm.memory", 0.7,
                   "A: LPDDR weight streaming at ~70% of peak, as phone SoCs sustain", 0.3),
        efficiency("efficiency.attention.memory", 0.7,
                   "A: KV columns stream like weights, ~70% of LPDDR peak", 0.05, true),
        efficiency("efficiency.gemm.compute", 0.4,
                   "A: HMX nominal rate is no vendor figure; 0.4 of it as a first guess", 0.01),
        efficiency("efficiency.attention.compute", 0.1,
                   "A: masked attention over the whole cache buffer runs far below the GEMMs",
                   0.002, true),
        efficiency("efficiency.elementwise.compute", 0.5,
                   "A: HVX softmax/norm kernels at half the nominal rate", 0.01, true),
        FitParameter{"matrix_tokens_exponent", 0.0,
                     "A: no pass-shape dependence until rows at two pass sizes show one", -1.0, 1.0,
                     false, "", true},
        FitParameter{"step_overhead", 0.5,
                     "A: one Genie graph execution (several context-binary parts) ~0.5 ms", 0.01,
                     50.0, true, "ms", true},
    };
  }
  if (!device.architecture.empty()) {
    // A GPU design: every efficiency is the silicon's and its kernels',
    // shared by the parts of the design (the H200 is the H100's die with
    // HBM3e). The per-step host work is the engine's, priced from its own
    // source (configs/calibration/engine_step_overheads.csv), not fitted.
    return {
        efficiency("efficiency.gemm.memory", 0.8,
                   "A: weight streaming in decode reaches ~80% of HBM peak on GPUs", 0.3, true),
        efficiency("efficiency.attention.memory", 0.7,
                   "A: paged KV reads gather blocks, below streaming efficiency", 0.05, true),
        efficiency("efficiency.gemm.compute", 0.7,
                   "A: large GEMMs reach 60-80% of tensor-core peak", 0.1, true),
        efficiency("efficiency.attention.compute", 0.5,
                   "A: FlashAttention-style kernels reach about half of tensor-core peak", 0.05,
                   true),
        FitParameter{"matrix_tokens_exponent", 0.0,
                     "A: no batch-shape dependence until rows at two batch sizes show one", -1.0,
                     1.0, false, "", true},
        // What a tensor-parallel all-reduce costs beyond its bytes over the
        // link (NCCL/RCCL's launch, synchronisation and protocol steps): two
        // per layer per step, so rows at several tensor-parallel sizes see it
        // apart from the bytes; rows at tp 1 do not.
        FitParameter{"device_link_latency", 0.01,
                     "A: one small-message all-reduce over NVLink/Infinity Fabric costs about ten "
                     "microseconds, the device files' assumed value",
                     0.001, 1.0, true, "ms", true},
    };
  }
  return {
      efficiency("efficiency.gemm.memory", 0.8,
                 "A: weight streaming in decode reaches ~80% of HBM peak on NPUs and GPUs", 0.3),
      efficiency("efficiency.attention.memory", 0.7,
                 "A: paged KV reads gather blocks, below streaming efficiency", 0.05),
      efficiency("efficiency.gemm.compute", 0.7, "A: large GEMMs on a cube reach 60-80% of peak",
                 0.1),
      efficiency("efficiency.attention.compute", 0.5,
                 "A: FlashAttention-style kernels reach about half of cube peak", 0.05),
      FitParameter{"matrix_tokens_exponent", 0.0,
                   "A: no batch-shape dependence until rows at two batch sizes show one", -1.0, 1.0,
                   false, ""},
      FitParameter{"step_overhead", 1.0,
                   "A: per step host work (scheduling, input preparation) ~1 ms in vLLM-style "
                   "servers",
                   0.01, 100.0, true, "ms"},
  };
}

double get_fit_parameter(const DeviceSpec& d, const std::string& key) {
  for (size_t c = 0; c < kOpClassCount; ++c) {
    const std::string base = fmt::format("efficiency.{}.", op_class_name(static_cast<OpClass>(c)));
    if (key == base + "compute") return d.compute_efficiency[c];
    if (key == base + "memory") return d.memory_efficiency[c];
  }
  if (key == "matrix_tokens_exponent") return d.matrix_tokens_exponent;
  if (key == "step_overhead") return static_cast<double>(d.step_overhead) / 1e6;
  if (key == "device_link_latency") return static_cast<double>(d.device_link_latency) / 1e6;
  throw std::logic_error("not a fit parameter: " + key);
}

void set_fit_parameter(DeviceSpec& d, const std::string& key, double value) {
  for (size_t c = 0; c < kOpClassCount; ++c) {
    const std::string base = fmt::format("efficiency.{}.", op_class_name(static_cast<OpClass>(c)));
    if (key == base + "compute") {
      d.compute_efficiency[c] = value;
      return;
    }
    if (key == base + "memory") {
      d.memory_efficiency[c] = value;
      return;
    }
  }
  if (key == "matrix_tokens_exponent") {
    d.matrix_tokens_exponent = value;
    return;
  }
  if (key == "step_overhead") {
    d.step_overhead = static_cast<TimeNs>(std::llround(value * 1e6));
    return;
  }
  if (key == "device_link_latency") {
    d.device_link_latency = static_cast<TimeNs>(std::llround(value * 1e6));
    return;
  }
  throw std::logic_error("not a fit parameter: " + key);
}

std::string fit_state_key(const DeviceSpec& d) {
  // The device's name, then every field set_fit_parameter writes, bit for
  // bit (0.0 and -0.0, or two NaNs, stay apart: a memo keyed on it never
  // answers for a device it was not computed on).
  std::string key = d.name;
  key += '\0';
  auto add = [&key](uint64_t bits) {
    for (int b = 0; b < 8; ++b) key += static_cast<char>((bits >> (8 * b)) & 0xff);
  };
  for (const double v : d.compute_efficiency) add(std::bit_cast<uint64_t>(v));
  for (const double v : d.memory_efficiency) add(std::bit_cast<uint64_t>(v));
  add(std::bit_cast<uint64_t>(d.matrix_tokens_exponent));
  add(static_cast<uint64_t>(d.step_overhead));
  add(static_cast<uint64_t>(d.device_link_latency));
  return key;
}

}  // namespace kvsim
