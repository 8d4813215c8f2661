// A host CPU (`kind: cpu`): the cores run every operator of a step, one
// after another (the matrix ops on the cores' matrix extensions, AMX or
// SME; the rest on their vector units), against the socket's DRAM. No device
// link, no host link (the KV lives in host memory already): one socket runs
// one instance, as llama.cpp's CPU backend does. A new kind of hardware is
// this file and one line in device_family.cpp's table.
#include <fmt/format.h>

#include "devices/device_family.hpp"
#include "devices/device_file_reader.hpp"

namespace kvsim {
namespace {

// Every op on the cores (Engine::matrix as the one in-order stream: a
// core's GEMM and its norms do not overlap), each with its efficiency
// class. Swap and the collectives never run on one socket.
constexpr OpPlacementTable kCpuPlacement = {{
    {Engine::matrix, OpClass::elementwise},      // embedding: rows gathered by the cores
    {Engine::host_link, OpClass::transfer},      // swap_in: never (the KV is in host memory)
    {Engine::host_link, OpClass::transfer},      // swap_out: never
    {Engine::matrix, OpClass::elementwise},      // kv_rerope
    {Engine::matrix, OpClass::transfer},         // kv_copy: memcpy by the cores
    {Engine::matrix, OpClass::elementwise},      // input_norm
    {Engine::matrix, OpClass::gemm},             // qkv_proj
    {Engine::matrix, OpClass::elementwise},      // rope
    {Engine::matrix, OpClass::transfer},         // kv_store: the cores write the cells
    {Engine::matrix, OpClass::attention},        // attention
    {Engine::matrix, OpClass::gemm},             // o_proj
    {Engine::device_link, OpClass::collective},  // attn_allreduce: never (one socket)
    {Engine::matrix, OpClass::elementwise},      // post_norm
    {Engine::matrix, OpClass::gemm},             // mlp_gate_up
    {Engine::matrix, OpClass::elementwise},      // mlp_act
    {Engine::matrix, OpClass::gemm},             // mlp_down
    {Engine::device_link, OpClass::collective},  // mlp_allreduce: never
    {Engine::matrix, OpClass::elementwise},      // final_norm
    {Engine::matrix, OpClass::gemm},             // lm_head
    {Engine::matrix, OpClass::elementwise},      // sampling
    {Engine::device_link, OpClass::collective},  // moe_dispatch: never
    {Engine::device_link, OpClass::collective},  // moe_combine: never
}};

const OpPlacement& cpu_placement(OpKind kind) {
  return placement_of(kCpuPlacement, kind);
}

config::ComponentInfo cpu_family_info() {
  config::ComponentInfo info;
  info.kind = "device family";
  info.name = "cpu";
  info.doc =
      "a host CPU socket: its cores run every op (matrix extensions for the GEMMs, vector units "
      "for the rest) on its DRAM; one socket, no links";
  info.params = common_device_params();
  for (auto& p : efficiency_params()) info.params.push_back(std::move(p));
  return info;
}

class CpuFamily final : public DeviceFamily {
 public:
  const config::ComponentInfo& info() const override {
    static const config::ComponentInfo i = cpu_family_info();
    return i;
  }
  std::vector<std::string_view> engines() const override { return {"serving"}; }

  // ggml's CPU backend.
  std::vector<std::string> llama_cpp_backends(const DeviceSpec&) const override { return {"cpu"}; }

  void read(config::MapReader& r, DeviceSpec& spec) const override {
    SourcedReader n(r, spec, "");
    read_common_numbers(n, info().params, spec);
    spec.max_tensor_parallel = 1;
    read_efficiencies(r, spec);
  }

  Engine engine_of(OpKind kind) const override { return cpu_placement(kind).engine; }
  OpClass class_of(OpKind kind) const override { return cpu_placement(kind).cls; }

  // GEMMs on the matrix extension (int8 for w8a8 weights), attention on
  // it too; the rest on the vector units.
  int64_t compute_peak(OpKind kind, const DeviceSpec& d, const ModelSpec& model,
                       Bytes /*kv_dtype_bytes*/) const override {
    const OpPlacement& p = cpu_placement(kind);
    if (p.cls == OpClass::gemm)
      return model.weights_dtype == "w8a8" ? d.matrix_int8_ops : d.matrix_fp16_ops;
    if (p.cls == OpClass::attention) return d.matrix_fp16_ops;
    return d.vector_fp16_ops;
  }

  std::vector<std::string> problems(const DeviceSpec& d) const override {
    return rate_problems(d, {{d.memory_bandwidth, "memory_bandwidth"},
                             {d.matrix_fp16_ops, "matrix_fp16"},
                             {d.matrix_int8_ops, "matrix_int8"},
                             {d.vector_fp16_ops, "vector_fp16"}});
  }
};

}  // namespace

const DeviceFamily& cpu_family() {
  static const CpuFamily family;
  return family;
}

}  // namespace kvsim
