#pragma once
// A device as a file: every number with its unit and a `source:` note
// (SPEC 4b/7, non-negotiable 7). Parsed once into integers.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/reader.hpp"
#include "base/units.hpp"
#include "devices/htp_spec.hpp"
#include "models/step_ops.hpp"

namespace kvsim {

// Execution engines a step's operators run on. Each engine is an in-order
// stream: two ops on one engine never overlap; ops on different engines may.
enum class Engine : uint8_t { matrix, vector, dma, device_link, host_link, count };
constexpr size_t kEngineCount = static_cast<size_t>(Engine::count);
std::string_view engine_name(Engine e);

// Classes of operator that share an efficiency figure.
enum class OpClass : uint8_t { gemm, attention, elementwise, transfer, collective, count };
constexpr size_t kOpClassCount = static_cast<size_t>(OpClass::count);
std::string_view op_class_name(OpClass c);

struct DeviceSpec {
  std::string name;
  std::string kind;  // the device family's name (devices/device_family.hpp): "accelerator", "htp"
  std::string description;
  std::string notes;  // optional free text: calibration fits and their error (shared/data README)
  // The silicon design the part shares with its siblings ("nvidia-hopper":
  // H100 and H200): calibration fits one set of efficiencies for all of
  // them. Empty: the part is fitted alone.
  std::string architecture;
  // What the device link is (nvlink, infinity_fabric, hccs, pcie); empty
  // when the file does not say. `pcie`: the part has no peer fabric.
  std::string device_link_fabric;
  // The CPU device file (kind cpu) of the host the device sits in (the
  // Atlas 800 A2's Kunpeng, a phone's Oryon cores); empty when the file
  // names none. llama.cpp runs on that CPU what the device's backend does
  // not (sim/cache/llama_backend.hpp); the scenario loader reads it into
  // `host`.
  std::string host_cpu;
  std::shared_ptr<const DeviceSpec> host;

  Bytes memory_bytes = 0;             // device memory (HBM) per device
  int64_t memory_bandwidth = 0;       // bytes/s
  int64_t matrix_fp16_ops = 0;        // cube peak, FLOP/s, fp16/bf16
  int64_t matrix_int8_ops = 0;        // cube peak, OP/s, int8 (w8a8)
  int64_t matrix_fp8_ops = 0;         // tensor-core peak, FLOP/s, fp8 (0: the part has none)
  int64_t matrix_fp4_ops = 0;         // tensor-core peak, FLOP/s, fp4 (0: the part has none)
  int64_t vector_fp16_ops = 0;        // vector unit peak, FLOP/s
  int64_t device_link_bandwidth = 0;  // bytes/s per direction (HCCS), for all-reduce
  TimeNs device_link_latency = 0;     // per collective step
  int64_t host_link_bandwidth = 0;    // bytes/s (PCIe), for swap
  TimeNs host_link_latency = 0;       // per transfer (optional in the file; KV transfer)
  // The device's own network port (RoCE), for KV between instances of a
  // cluster; optional in the file (0: the device names none).
  int64_t network_link_bandwidth = 0;  // bytes/s per direction
  TimeNs network_link_latency = 0;     // per transfer
  // Host DRAM of the CPU socket driving the device; optional in the file
  // (0: the device names none): host-side step work (ATB block tables).
  int64_t host_memory_bandwidth = 0;  // bytes/s
  // Host DRAM of the server the device sits in (0: the device names none):
  // what a host-side cache may hold at most (llama-server's --cache-ram).
  Bytes host_memory_bytes = 0;
  TimeNs kernel_launch = 0;         // per operator launch
  TimeNs step_overhead = 0;         // per engine step (scheduling, host prep)
  int64_t max_tensor_parallel = 1;  // devices one node can group (HCCS domain)

  // Fraction of peak an op class reaches, per resource: compute and memory.
  // memory_efficiency[gemm] is the weight-streaming efficiency and
  // memory_efficiency[attention] the KV-read efficiency: the two are fitted
  // apart (a model without GQA reads far more KV per weight byte).
  std::array<double, kOpClassCount> compute_efficiency{};
  std::array<double, kOpClassCount> memory_efficiency{};
  // How the matrix unit's efficiency depends on the pass shape: the matrix
  // ops' compute efficiency is multiplied by (tokens / 128) ^ exponent, tokens
  // being what one pass or step computes (an AR-n graph's n, a serving step's
  // batched tokens), and capped at 1. 0 (the default): no shape dependence.
  double matrix_tokens_exponent = 0.0;
  static constexpr double kMatrixTokensReference = 128.0;
  // The matrix efficiency multiplier for a pass of `tokens` tokens.
  double matrix_shape_factor(int64_t tokens) const;

  // The htp family only (devices/htp_spec.hpp).
  std::optional<HtpSpec> htp;

  // key path -> source note, for reports and `kvsim list devices`.
  std::map<std::string, std::string> sources;
};

DeviceSpec parse_device(const config::Node& node);

// Loads and parses a device file (key paths are relative to the file's root,
// e.g. `efficiency.gemm.compute`). Errors go to ctx; the caller decides when
// to throw (ctx.diagnostics.throw_if_any()).
DeviceSpec load_device_file(const std::string& path, config::LoadContext& ctx);

// The provenance label a source note starts with: "V" vendor datasheet, "D"
// derived, "M" measured, "3P" third party, "A" assumed; "" when the note
// carries none of them (user files may use free text).
std::string_view source_label(std::string_view source);
// The kind of source a labelled note is, in words: "a datasheet" (V), "a
// derivation (its formula)" (D), "a fit on named calibration rows" (M, when
// the note says fitted), "a measurement" (M), "a third party's figure" (3P),
// "an assumption (why, to be calibrated)" (A); "" without a label.
std::string_view source_kind(std::string_view source);

}  // namespace kvsim
