// The generic HBM accelerator (`kind: accelerator`, old name `ascend`): a
// matrix unit, a vector unit and a copy engine on device memory, a device
// link for tensor-parallel all-reduce and a host link for swap, each op priced
// by a roofline (devices/timing_model.hpp). The Ascend 910B/310P files are of
// this family; a GPU of the same shape (H100: HBM3, NVLink, PCIe) is a device
// file of it too (configs/devices/h100-sxm5.yaml and its siblings). A part
// with fp8 (fp4) tensor cores gives `matrix_fp8` (`matrix_fp4`); fp8 weights
// run their projections there, and a part without the key refuses them at
// scenario load (devices/device_formats.hpp).
#include <fmt/format.h>

#include <array>
#include <stdexcept>

#include "devices/device_family.hpp"
#include "devices/device_file_reader.hpp"
#include "devices/plausibility_bounds.hpp"

namespace kvsim {
namespace {

// Indexed by OpKind (models/step_ops.hpp order).
constexpr OpPlacementTable kAcceleratorPlacement = {{
    {Engine::vector, OpClass::elementwise},      // embedding: a gather, vector unit moving rows
    {Engine::host_link, OpClass::transfer},      // swap_in
    {Engine::host_link, OpClass::transfer},      // swap_out
    {Engine::vector, OpClass::elementwise},      // kv_rerope: seed 003's rotation, vector math on K
    {Engine::dma, OpClass::transfer},            // kv_copy
    {Engine::vector, OpClass::elementwise},      // input_norm
    {Engine::matrix, OpClass::gemm},             // qkv_proj
    {Engine::vector, OpClass::elementwise},      // rope
    {Engine::dma, OpClass::transfer},            // kv_store: scatter by slot mapping (seed 001)
    {Engine::matrix, OpClass::attention},        // attention: QK^T and PV on the cube
    {Engine::matrix, OpClass::gemm},             // o_proj
    {Engine::device_link, OpClass::collective},  // attn_allreduce
    {Engine::vector, OpClass::elementwise},      // post_norm
    {Engine::matrix, OpClass::gemm},             // mlp_gate_up
    {Engine::vector, OpClass::elementwise},      // mlp_act
    {Engine::matrix, OpClass::gemm},             // mlp_down
    {Engine::device_link, OpClass::collective},  // mlp_allreduce
    {Engine::vector, OpClass::elementwise},      // final_norm
    {Engine::matrix, OpClass::gemm},             // lm_head
    {Engine::vector, OpClass::elementwise},      // sampling
    {Engine::device_link, OpClass::collective},  // moe_dispatch: expert all-to-all
    {Engine::device_link, OpClass::collective},  // moe_combine: expert all-to-all
}};

const OpPlacement& accelerator_placement(OpKind kind) {
  return placement_of(kAcceleratorPlacement, kind);
}

using device_bounds::kMaxBandwidth;
using device_bounds::kMaxOpsRate;
using device_bounds::kMinBandwidth;
using device_bounds::kMinOpsRate;

const std::vector<std::string> kFabrics = {"nvlink", "infinity_fabric", "hccs", "pcie"};

config::ComponentInfo accelerator_family_info() {
  using namespace config;
  ComponentInfo info;
  info.kind = "device family";
  info.name = "accelerator";
  info.doc =
      "HBM accelerator (Ascend 910B/310P, a GPU): matrix, vector, copy engine, device and host "
      "links; `ascend` is its old name";
  info.params = common_device_params();
  info.params.push_back(optional_param(
      string_param("architecture", std::nullopt,
                   "the silicon design the part shares with its siblings (nvidia-hopper: H100 "
                   "and H200); calibration fits one set of efficiencies for all of them")));
  info.params.push_back(optional_param(
      string_param("host", std::nullopt,
                   "the CPU device file (kind cpu) of the server the part sits in, which runs what "
                   "llama.cpp's backend leaves on the host")));
  info.params.push_back(citing(
      "V: the datasheet's dense fp8 peak",
      optional_param(ops_rate_param(
          "matrix_fp8", std::nullopt, kMinOpsRate, kMaxOpsRate,
          "matrix unit peak, fp8 (dense); absent: the part has no fp8, and fp8 weights or KV are "
          "refused"))));
  info.params.push_back(
      citing("V: the datasheet's dense fp4 peak",
             optional_param(ops_rate_param(
                 "matrix_fp4", std::nullopt, kMinOpsRate, kMaxOpsRate,
                 "matrix unit peak, fp4 (dense); absent: fp4 weights are refused"))));
  info.params.push_back(optional_param(
      choice_param("device_link_fabric", std::nullopt, kFabrics,
                   "what the device link is; pcie: no peer fabric, so the device link is "
                   "the PCIe link and no faster than host_link_bandwidth")));
  info.params.push_back(
      citing("V: the fabric's per-direction datasheet rate (HCCS, NVLink), or M: a measured "
             "all-reduce bus bandwidth",
             bandwidth_param("device_link_bandwidth", std::nullopt, kMinBandwidth, kMaxBandwidth,
                             "effective per-direction device link (HCCS, NVLink)")));
  info.params.push_back(
      citing("M: a measured small-message collective latency (nccl-tests, hccl_test)",
             duration_param("device_link_latency", std::nullopt, 0, kNsPerS,
                            "latency of one collective step")));
  info.params.push_back(
      citing("V: the PCIe generation x lanes, or M: a measured host-to-device copy rate",
             bandwidth_param("host_link_bandwidth", std::nullopt, kMinBandwidth, kMaxBandwidth,
                             "host link (PCIe), for swap")));
  // Optional: only a cluster moving KV between instances over them reads these.
  info.params.push_back(
      citing("M: a measured host-link transfer's fixed cost",
             optional_param(duration_param(
                 "host_link_latency", std::nullopt, 0, kNsPerS,
                 "fixed cost of one transfer over the host link (KV between instances)"))));
  info.params.push_back(
      citing("V: the NIC port's datasheet rate (RoCE)",
             optional_param(bandwidth_param(
                 "network_link_bandwidth", std::nullopt, kMinBandwidth, kMaxBandwidth,
                 "per-direction network port (RoCE) of one device, for KV between instances"))));
  info.params.push_back(
      citing("M: a measured network transfer's fixed cost",
             optional_param(duration_param("network_link_latency", std::nullopt, 0, kNsPerS,
                                           "fixed cost of one network transfer"))));
  // Optional: only kv_cache.layout atb reads it (its per-layer block tables
  // are built on the host every step, seed 000).
  info.params.push_back(citing(
      "V: the socket's DRAM datasheet rate, or D: channels x transfer rate x 8 B",
      optional_param(bandwidth_param(
          "host_memory_bandwidth", std::nullopt, kMinBandwidth, kMaxBandwidth,
          "host DRAM bandwidth of one CPU socket serving the device, for host-side step work"))));
  // Optional: only a host-side cache's capacity check reads it.
  info.params.push_back(
      citing("V: the server's DRAM (its specification sheet)",
             optional_param(bytes_param(
                 "host_memory", std::nullopt, 1, Bytes{1} << 50,
                 "host DRAM of the server the device is in, for a host-side cache's size"))));
  info.params.push_back(citing("V: the devices one node holds (the server's specification sheet)",
                               int_param("max_tensor_parallel", std::nullopt, 1, 1024, "devices",
                                         "devices one node can group for tensor parallelism")));
  for (auto& p : efficiency_params()) info.params.push_back(std::move(p));
  return info;
}

class AcceleratorFamily final : public DeviceFamily {
 public:
  const config::ComponentInfo& info() const override {
    static const config::ComponentInfo i = accelerator_family_info();
    return i;
  }
  std::vector<std::string> old_names() const override { return {"ascend"}; }
  std::vector<std::string_view> engines() const override { return {"serving"}; }

  // A GPU (a part whose `architecture` names an NVIDIA or AMD design) runs
  // ggml-cuda (HIP for AMD); the family's other parts are Ascend NPUs,
  // which run ggml-cann.
  std::vector<std::string> llama_cpp_backends(const DeviceSpec& d) const override {
    const bool gpu = d.architecture.rfind("nvidia", 0) == 0 || d.architecture.rfind("amd", 0) == 0;
    return {gpu ? "cuda" : "cann"};
  }

  void read(config::MapReader& r, DeviceSpec& spec) const override {
    const auto& params = info().params;
    SourcedReader n(r, spec, "");
    read_common_numbers(n, params, spec);
    spec.architecture = r.string("architecture", std::string());
    spec.host_cpu = r.string("host", std::string());
    for (auto [key, field] : {std::pair{"matrix_fp8", &DeviceSpec::matrix_fp8_ops},
                              std::pair{"matrix_fp4", &DeviceSpec::matrix_fp4_ops}}) {
      if (r.has(key))
        spec.*field = n.integer(declared(params, key));
      else
        r.ignore({key});
    }
    if (r.has("device_link_fabric"))
      spec.device_link_fabric = r.choice("device_link_fabric", std::nullopt, kFabrics);
    else
      r.ignore({"device_link_fabric"});
    spec.device_link_bandwidth = n.integer(declared(params, "device_link_bandwidth"));
    spec.device_link_latency = n.integer(declared(params, "device_link_latency"));
    spec.host_link_bandwidth = n.integer(declared(params, "host_link_bandwidth"));
    for (auto [key, field] :
         {std::pair{"host_link_latency", &DeviceSpec::host_link_latency},
          std::pair{"network_link_bandwidth", &DeviceSpec::network_link_bandwidth},
          std::pair{"network_link_latency", &DeviceSpec::network_link_latency},
          std::pair{"host_memory_bandwidth", &DeviceSpec::host_memory_bandwidth},
          std::pair{"host_memory", &DeviceSpec::host_memory_bytes}}) {
      if (r.has(key))
        spec.*field = n.integer(declared(params, key));
      else
        r.ignore({key});
    }
    spec.max_tensor_parallel = n.integer(declared(params, "max_tensor_parallel"));
    read_efficiencies(r, spec);
    // A PCIe-only part all-reduces over PCIe: a device link faster than its
    // host link is an NVLink (or HCCS) figure on a part that has none.
    if (spec.device_link_fabric == "pcie" && spec.host_link_bandwidth > 0 &&
        spec.device_link_bandwidth > spec.host_link_bandwidth) {
      r.child("device_link_bandwidth")
          .error(fmt::format("{:.1f} GB/s is faster than the part's PCIe link ({:.1f} GB/s, "
                             "host_link_bandwidth): an NVLink-class figure on a part whose "
                             "device_link_fabric is pcie",
                             static_cast<double>(spec.device_link_bandwidth) / 1e9,
                             static_cast<double>(spec.host_link_bandwidth) / 1e9),
                 "at most host_link_bandwidth, or device_link_fabric: nvlink | "
                 "infinity_fabric | hccs for a part with a peer fabric");
    }
  }

  Engine engine_of(OpKind kind) const override { return accelerator_placement(kind).engine; }
  OpClass class_of(OpKind kind) const override { return accelerator_placement(kind).cls; }

  // w8a8 runs its projections on the int8 matrix unit (twice the fp16 rate
  // on Ascend), fp8 (fp4) weights on the fp8 (fp4) tensor cores where the
  // part has them, with activations quantised to the same format as
  // TensorRT-LLM's and vLLM's fp8 GEMMs do; a part without them dequantises
  // into 16-bit GEMMs (a scenario refuses that pairing; the fallback keeps a
  // bare DeviceSpec timeable). Attention stays on the 16-bit rate: paged KV
  // kernels dequantise fp8 KV into 16-bit math. Transfers and collectives do
  // their little arithmetic (the all-reduce sum) on the vector unit.
  int64_t compute_peak(OpKind kind, const DeviceSpec& d, const ModelSpec& model,
                       Bytes /*kv_dtype_bytes*/) const override {
    const OpPlacement& p = accelerator_placement(kind);
    if (p.engine != Engine::matrix) return d.vector_fp16_ops;
    if (p.cls != OpClass::gemm) return d.matrix_fp16_ops;
    if (model.weights_dtype == "w8a8") return d.matrix_int8_ops;
    if (model.weights_dtype == "fp8" && d.matrix_fp8_ops > 0) return d.matrix_fp8_ops;
    if (model.weights_dtype == "fp4" && d.matrix_fp4_ops > 0) return d.matrix_fp4_ops;
    return d.matrix_fp16_ops;
  }

  std::vector<std::string> problems(const DeviceSpec& d) const override {
    return rate_problems(d, {{d.memory_bandwidth, "memory_bandwidth"},
                             {d.matrix_fp16_ops, "matrix_fp16"},
                             {d.matrix_int8_ops, "matrix_int8"},
                             {d.vector_fp16_ops, "vector_fp16"},
                             {d.device_link_bandwidth, "device_link_bandwidth"},
                             {d.host_link_bandwidth, "host_link_bandwidth"}});
  }
};

}  // namespace

const DeviceFamily& accelerator_family() {
  static const AcceleratorFamily family;
  return family;
}

}  // namespace kvsim
