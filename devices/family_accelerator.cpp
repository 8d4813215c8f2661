// The generic HBM accelerator (`kind: accelerator`, old name `ascend`): a
// matrix unit, a vector unit and a copy engine on device memory, a device
// link for tensor-parallel all-reduce and a host link for swap, each op priced
// by a roofline (devices/timing_model.hpp). The Ascend 910B/310P files are of
// this family; a GPU of the same shape (H100: HBM3, NVLink, PCIe) is a device
// file of it too (tests/test_device_families.cpp loads one).
#include <fmt/format.h>

#include <array>
#include <stdexcept>

#include "devices/device_family.hpp"
#include "devices/device_file_reader.hpp"

namespace kvsim {
namespace {

// Indexed by OpKind (models/step_ops.hpp order).
constexpr OpPlacementTable kPlacement = {{
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

const OpPlacement& placement(OpKind kind) {
  return placement_of(kPlacement, kind);
}

constexpr int64_t kMinBandwidth = 1'000'000;              // 1 MB/s
constexpr int64_t kMaxBandwidth = 1'000'000'000'000'000;  // 1 PB/s

config::ComponentInfo make_info() {
  using namespace config;
  ComponentInfo info;
  info.kind = "device family";
  info.name = "accelerator";
  info.doc =
      "HBM accelerator (Ascend 910B/310P, a GPU): matrix, vector, copy engine, device and host "
      "links; `ascend` is its old name";
  info.params = common_device_params();
  info.params.push_back(bandwidth_param("device_link_bandwidth", std::nullopt, kMinBandwidth,
                                        kMaxBandwidth,
                                        "effective per-direction device link (HCCS, NVLink)"));
  info.params.push_back(duration_param("device_link_latency", std::nullopt, 0, kNsPerS,
                                       "latency of one collective step"));
  info.params.push_back(bandwidth_param("host_link_bandwidth", std::nullopt, kMinBandwidth,
                                        kMaxBandwidth, "host link (PCIe), for swap"));
  // Optional: only a cluster moving KV between instances over them reads these.
  info.params.push_back(optional_param(
      duration_param("host_link_latency", std::nullopt, 0, kNsPerS,
                     "fixed cost of one transfer over the host link (KV between instances)")));
  info.params.push_back(optional_param(bandwidth_param(
      "network_link_bandwidth", std::nullopt, kMinBandwidth, kMaxBandwidth,
      "per-direction network port (RoCE) of one device, for KV between instances")));
  info.params.push_back(optional_param(duration_param(
      "network_link_latency", std::nullopt, 0, kNsPerS, "fixed cost of one network transfer")));
  info.params.push_back(int_param("max_tensor_parallel", std::nullopt, 1, 1024, "devices",
                                  "devices one node can group for tensor parallelism"));
  for (auto& p : efficiency_params()) info.params.push_back(std::move(p));
  return info;
}

class AcceleratorFamily final : public DeviceFamily {
 public:
  const config::ComponentInfo& info() const override {
    static const config::ComponentInfo i = make_info();
    return i;
  }
  std::vector<std::string> old_names() const override { return {"ascend"}; }
  std::vector<std::string_view> engines() const override { return {"serving"}; }

  void read(config::MapReader& r, DeviceSpec& spec) const override {
    const auto& params = info().params;
    SourcedReader n(r, spec, "");
    read_common_numbers(n, params, spec);
    spec.device_link_bandwidth = n.integer(declared(params, "device_link_bandwidth"));
    spec.device_link_latency = n.integer(declared(params, "device_link_latency"));
    spec.host_link_bandwidth = n.integer(declared(params, "host_link_bandwidth"));
    for (auto [key, field] :
         {std::pair{"host_link_latency", &DeviceSpec::host_link_latency},
          std::pair{"network_link_bandwidth", &DeviceSpec::network_link_bandwidth},
          std::pair{"network_link_latency", &DeviceSpec::network_link_latency}}) {
      if (r.has(key))
        spec.*field = n.integer(declared(params, key));
      else
        r.ignore({key});
    }
    spec.max_tensor_parallel = n.integer(declared(params, "max_tensor_parallel"));
    read_efficiencies(r, spec);
  }

  Engine engine_of(OpKind kind) const override { return placement(kind).engine; }
  OpClass class_of(OpKind kind) const override { return placement(kind).cls; }

  // w8a8 runs its projections on the int8 matrix unit (twice the fp16 rate
  // on Ascend); attention stays fp16 because the KV cache and activations do.
  // Transfers and collectives do their little arithmetic (the all-reduce sum)
  // on the vector unit.
  int64_t compute_peak(OpKind kind, const DeviceSpec& d, const ModelSpec& model,
                       Bytes /*kv_dtype_bytes*/) const override {
    const OpPlacement& p = placement(kind);
    if (p.engine != Engine::matrix) return d.vector_fp16_ops;
    return model.weights_dtype == "w8a8" && p.cls == OpClass::gemm ? d.matrix_int8_ops
                                                                   : d.matrix_fp16_ops;
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
