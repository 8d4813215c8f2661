// The Qualcomm Hexagon NPU (`kind: htp`, SPEC 7, seed 002, shared/data README
// "Snapdragon"): the common numbers a phone has (LPDDR size and bandwidth,
// HMX as matrix_*, HVX as vector_fp16, per-graph-execution overhead,
// efficiencies), then an `htp:` map of what only an HTP has
// (devices/htp_spec.hpp). Links, host PCIe and tensor parallelism do not exist
// on a phone and are not accepted (max_tensor_parallel is 1). Passes are
// priced by devices/htp_timing.cpp from the same op graph as a serving step.
#include <fmt/format.h>

#include <array>
#include <stdexcept>

#include "devices/device_family.hpp"
#include "devices/device_file_reader.hpp"
#include "devices/plausibility_bounds.hpp"

namespace kvsim {
namespace {

// Indexed by OpKind (models/step_ops.hpp order). HMX runs the matrix ops,
// HVX the element-wise ones; the KV write-back is a copy. No host link nor
// device link exists on a phone: swap and all-reduce never run (their
// entries only keep the table total).
constexpr OpPlacementTable kHtpPlacement = {{
    {Engine::vector, OpClass::elementwise},      // embedding: HVX gathers the rows
    {Engine::host_link, OpClass::transfer},      // swap_in: never on a phone
    {Engine::host_link, OpClass::transfer},      // swap_out: never on a phone
    {Engine::vector, OpClass::elementwise},      // kv_rerope
    {Engine::dma, OpClass::transfer},            // kv_copy
    {Engine::vector, OpClass::elementwise},      // input_norm
    {Engine::matrix, OpClass::gemm},             // qkv_proj: HMX
    {Engine::vector, OpClass::elementwise},      // rope
    {Engine::dma, OpClass::transfer},            // kv_store: the graph writes the new K/V out
    {Engine::matrix, OpClass::attention},        // attention: QK^T and PV on HMX, softmax on HVX
    {Engine::matrix, OpClass::gemm},             // o_proj
    {Engine::device_link, OpClass::collective},  // attn_allreduce: never on a phone
    {Engine::vector, OpClass::elementwise},      // post_norm
    {Engine::matrix, OpClass::gemm},             // mlp_gate_up
    {Engine::vector, OpClass::elementwise},      // mlp_act
    {Engine::matrix, OpClass::gemm},             // mlp_down
    {Engine::device_link, OpClass::collective},  // mlp_allreduce: never on a phone
    {Engine::vector, OpClass::elementwise},      // final_norm
    {Engine::matrix, OpClass::gemm},             // lm_head
    {Engine::vector, OpClass::elementwise},      // sampling
    {Engine::device_link, OpClass::collective},  // moe_dispatch: never on a phone
    {Engine::device_link, OpClass::collective},  // moe_combine: never on a phone
}};

const OpPlacement& htp_placement(OpKind kind) {
  return placement_of(kHtpPlacement, kind);
}

using device_bounds::kMaxBandwidth;
using device_bounds::kMinBandwidth;
using device_bounds::kMinMemory;

std::vector<config::ParamSpec> htp_params() {
  using namespace config;
  return {
      citing("V: the SoC's Hexagon architecture (Qualcomm's or QAIRT's SoC table)",
             choice_param("hexagon_version", std::nullopt, {"68", "69", "73", "75", "79", "81"},
                          "Hexagon NPU version: 73 (8 Gen 2), 75 (8 Gen 3), 79 (8 Elite)")),
      citing("V: the VTCM size of this Hexagon version (Hexagon SDK, QAIRT HTP docs)",
             bytes_param("vtcm", std::nullopt, Bytes{64} << 10, Bytes{1} << 30,
                         "VTCM (the NPU's tightly coupled memory)")),
      citing("V: Hexagon SDK HAP_compute_res (the VTCM window feature, v79 on)",
             bool_param("vtcm_windows", std::nullopt,
                        "v79+: confine a process to a VTCM window (default: true from v79)")),
      citing("V: Hexagon SDK HAP_compute_res (the window size granularity)",
             bytes_param("vtcm_window_granule", std::nullopt, 1, Bytes{1} << 30,
                         "VTCM window size granularity (required with windows)")),
      citing("V: the NPU process's address-space limit (QAIRT HTP docs)",
             bytes_param("address_space", std::nullopt, kMinMemory, Bytes{1} << 40,
                         "NPU process address-space limit")),
      citing("M: a measured memcpy rate of one CPU core on the phone's LPDDR",
             bandwidth_param("cpu_memcpy_bandwidth", std::nullopt, kMinBandwidth, kMaxBandwidth,
                             "memcpy rate of one CPU KV-update thread")),
      citing("V: the SoC's CPU cores Genie's update thread pool may use",
             int_param("max_update_threads", std::nullopt, 1, 64, "threads",
                       "CPU threads Genie's KV update may use")),
      citing("M: a measured switch between AR-n graphs (a QNN profile, named)",
             duration_param("graph_switch", std::nullopt, 0, kNsPerS,
                            "switching the executing AR-n graph")),
      citing("V: the storage part's (UFS) datasheet sequential write rate",
             bandwidth_param("storage_bandwidth", std::nullopt, kMinBandwidth, kMaxBandwidth,
                             "storage (UFS) rate for cache save/restore")),
      citing("M: fitted on rows ... (kvsim calibrate --fit), or A: an assumption, why",
             number_param("vtcm_spill_factor", std::nullopt, 0.0, 100.0, "",
                          "DDR traffic multiplier per unit of VTCM taken away")),
      citing("D: vector loads per packet x HVX contexts x clock (Hexagon HVX PRM)",
             optional_param(
                 bandwidth_param("vtcm_bandwidth", std::nullopt, kMinBandwidth, kMaxBandwidth,
                                 "rate at which a pass reads KV resident in VTCM (optional; "
                                 "needed by htp.kv_vtcm placements)"))),
  };
}

config::ComponentInfo htp_family_info() {
  config::ComponentInfo info;
  info.kind = "device family";
  info.name = "htp";
  info.doc = "Qualcomm Hexagon NPU (Snapdragon): HMX, HVX, LPDDR, VTCM; runs Genie dialogs";
  info.params = common_device_params();
  info.params.push_back(config::optional_param(config::string_param(
      "host", std::nullopt,
      "the CPU device file (kind cpu) of the phone's own cores, which run what llama.cpp's "
      "Hexagon backend leaves on the CPU")));
  for (auto& p : efficiency_params()) info.params.push_back(std::move(p));
  for (auto p : htp_params()) {
    p.key = "htp." + p.key;
    info.params.push_back(std::move(p));
  }
  return info;
}

void read_htp_map(config::MapReader& r, DeviceSpec& spec) {
  static const std::vector<config::ParamSpec> params = htp_params();
  config::Node htp_node = r.child("htp");
  HtpSpec htp;
  if (!htp_node.defined()) {
    if (r.valid()) {
      r.node().context().diagnostics.error(
          r.node().location(), htp_node.path(), "is required but missing for kind: htp",
          "htp: {hexagon_version, vtcm, address_space, cpu_memcpy_bandwidth, max_update_threads, "
          "graph_switch, storage_bandwidth, vtcm_spill_factor}, each {value, source}");
    }
    spec.htp = htp;
    return;
  }
  config::MapReader hr(htp_node);
  SourcedReader h(hr, spec, "htp.");
  const config::ParamSpec& version_spec = declared(params, "hexagon_version");
  config::Node version = h.value(version_spec);
  if (version.defined()) {
    if (auto v = version.as_choice(version_spec.choices)) htp.hexagon_version = std::stoll(*v);
  }
  htp.vtcm_bytes = h.integer(declared(params, "vtcm"));
  // VTCM windows exist from v79 (HAP_compute_res "VTCM window feature"); the
  // key may turn them off on v79+ but cannot invent them on older parts.
  htp.vtcm_windows = htp.hexagon_version >= 79;
  if (hr.has("vtcm_windows")) {
    config::Node w = h.value(declared(params, "vtcm_windows"));
    if (w.defined()) {
      if (auto b = w.as_bool()) {
        if (*b && htp.hexagon_version < 79) {
          w.error(fmt::format("VTCM windows need Hexagon v79 or later (this is v{})",
                              htp.hexagon_version),
                  "false, or leave the key out");
        } else {
          htp.vtcm_windows = *b;
        }
      }
    }
  }
  if (hr.has("vtcm_window_granule") || htp.vtcm_windows) {
    config::ParamSpec granule = declared(params, "vtcm_window_granule");
    granule.max = static_cast<double>(htp.vtcm_bytes > 0 ? htp.vtcm_bytes : 1);  // within VTCM
    htp.vtcm_window_granule = h.integer(granule);
  }
  htp.address_space_bytes = h.integer(declared(params, "address_space"));
  htp.cpu_memcpy_bandwidth = h.integer(declared(params, "cpu_memcpy_bandwidth"));
  htp.max_update_threads = h.integer(declared(params, "max_update_threads"));
  htp.graph_switch = h.integer(declared(params, "graph_switch"));
  htp.storage_bandwidth = h.integer(declared(params, "storage_bandwidth"));
  htp.vtcm_spill_factor = h.number(declared(params, "vtcm_spill_factor"));
  if (hr.has("vtcm_bandwidth")) htp.vtcm_bandwidth = h.integer(declared(params, "vtcm_bandwidth"));
  hr.finish();
  spec.htp = htp;
}

class HtpFamily final : public DeviceFamily {
 public:
  const config::ComponentInfo& info() const override {
    static const config::ComponentInfo i = htp_family_info();
    return i;
  }
  // Genie's dialog first (its graphs), then the serving engine (a
  // dynamic-shape runtime over the same NPU, as llama.cpp's backend runs).
  std::vector<std::string_view> engines() const override { return {"genie", "serving"}; }
  const HtpSpec* graph_executor(const DeviceSpec& device) const override {
    return device.htp ? &*device.htp : nullptr;
  }
  // The Hexagon NPU generations (v73, v75, v79) are one design: the same HMX
  // tile engine, the same VTCM-fed attention kernels in Genie's AR-n graphs,
  // the same graph executor. What differs between SoCs is the LPDDR part and
  // the HMX clock and width.
  std::string calibration_design(const DeviceSpec& device) const override {
    (void)device;
    return "hexagon-htp";
  }

  // ggml-hexagon (ggml/src/ggml-hexagon): the NPU; the phone's cores are a
  // device of their own (kind cpu, the device file's `host`).
  std::vector<std::string> llama_cpp_backends(const DeviceSpec&) const override {
    return {"hexagon"};
  }

  void read(config::MapReader& r, DeviceSpec& spec) const override {
    SourcedReader n(r, spec, "");
    read_common_numbers(n, info().params, spec);
    spec.host_cpu = r.string("host", std::string());
    spec.max_tensor_parallel = 1;
    read_efficiencies(r, spec);
    read_htp_map(r, spec);
  }

  Engine engine_of(OpKind kind) const override { return htp_placement(kind).engine; }
  OpClass class_of(OpKind kind) const override { return htp_placement(kind).cls; }

  // HMX runs integer-quantised GEMMs (w4a16: int4 weights, int16
  // activations; w8a8) on its int8 path, and attention over an int8 KV
  // cache too; HVX does the rest. A w4 export keeps fp16 activations (AI
  // Hub's _configure_quant_sim sets every activation quantizer to float16,
  // qualcomm/ai-hub-models qai_hub_models/models/_shared/llm/model.py),
  // so its GEMMs are fp16 matmuls: HTP runs those (HtpOpDefSupplement
  // MatMul, as Qualcomm answered in qualcomm/aimet#4016) on HMX's fp16 path,
  // the int4 weights dequantised to fp16 on their way in. The weights'
  // bytes are w4a16's; kvsim prices no separate dequantisation op (no
  // published figure separates it from the GEMM; an assumption).
  int64_t compute_peak(OpKind kind, const DeviceSpec& d, const ModelSpec& model,
                       Bytes kv_dtype_bytes) const override {
    const OpPlacement& p = htp_placement(kind);
    if (p.engine != Engine::matrix) return d.vector_fp16_ops;
    if (p.cls == OpClass::attention)
      return kv_dtype_bytes == 1 ? d.matrix_int8_ops : d.matrix_fp16_ops;
    const bool int_path = model.weights_dtype == "w4a16" || model.weights_dtype == "w8a8";
    return int_path ? d.matrix_int8_ops : d.matrix_fp16_ops;
  }

  std::vector<std::string> problems(const DeviceSpec& d) const override {
    std::vector<std::string> out = rate_problems(d, {{d.memory_bandwidth, "memory_bandwidth"},
                                                     {d.matrix_fp16_ops, "matrix_fp16"},
                                                     {d.matrix_int8_ops, "matrix_int8"},
                                                     {d.vector_fp16_ops, "vector_fp16"}});
    if (!d.htp) out.push_back(fmt::format("device '{}' has no htp: section", d.name));
    return out;
  }
};

}  // namespace

const DeviceFamily& htp_family() {
  static const HtpFamily family;
  return family;
}

}  // namespace kvsim
