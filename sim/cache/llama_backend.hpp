#pragma once
// Which llama.cpp backend runs llama_cells on a device, and which of a
// step's operators it leaves to the CPU backend. ggml's scheduler gives an
// op to the first backend whose supports_op takes it and to the CPU backend
// otherwise (ggml/src/ggml-backend.cpp); llama.cpp places a weight whose
// matmul the device does not take in host memory. The tables below follow
// each backend's supports_op for the ops of a dense llama layer:
//   cann     ggml-org/llama.cpp ggml/src/ggml-cann/ggml-cann.cpp at fc8d13e6:
//            MUL_MAT takes F16/F32 weights and contiguous Q8_0/Q4_0 (not on
//            the 310P); FLASH_ATTN_EXT takes F16 K and V only (not on the
//            310P); SET_ROWS writes F32/F16 rows only; ROPE up to 896 dims.
//   hexagon  ggml-org/llama.cpp ggml/src/ggml-hexagon/ggml-hexagon.cpp at
//            afaeb543: MUL_MAT takes repacked Q4_0/Q8_0/MXFP4 weights of at
//            most 16384 rows (the LM head of a larger vocabulary stays on
//            the CPU: "too large for VTCM") and F16 (not F32), with an F32 contiguous
//            src1 (a permuted Q of the non-flash attention is not);
//            FLASH_ATTN_EXT, SET_ROWS, GET_ROWS and CPY are not in its
//            supports_op: attention and the K/V stores run on the CPU.
//   cuda     ggml-cuda (CUDA, and HIP for AMD parts) takes every op of a
//            dense llama layer for these types [assumption A: not checked
//            op by op here].
//   cpu      the CPU backend is the device: nothing moves.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devices/device_spec.hpp"
#include "models/model_spec.hpp"
#include "models/step_ops.hpp"
#include "sim/cache/genie_policy.hpp"

namespace kvsim {

enum class LlamaBackend : uint8_t { cpu, cann, cuda, hexagon };

std::string_view llama_backend_name(LlamaBackend b);
std::optional<LlamaBackend> parse_llama_backend(std::string_view name);
// Every name `backend` takes: auto (the device family's own), then the backends.
std::vector<std::string> llama_backend_choices();
// The backends llama.cpp runs on `device` (its family's, devices/device_family.hpp).
std::vector<LlamaBackend> llama_backends_of(const DeviceSpec& device);
// `name` resolved on `device`: auto is the family's first; nullopt when the
// family does not offer it.
std::optional<LlamaBackend> resolve_llama_backend(std::string_view name, const DeviceSpec& device);

// Where each op kind of a device layer runs: true for the CPU backend, with
// one sentence per op kind moved (what the backend's supports_op refuses).
struct LlamaOpMap {
  LlamaBackend backend = LlamaBackend::cpu;
  std::array<bool, kOpKindCount> on_host{};
  std::vector<std::string> why;
  // The backend's GEMMs run on the NPU's vector units, not its matrix
  // engine (Hexagon's HVX kernels: HtpPass::gemm_on_vector).
  bool gemm_on_vector = false;
  bool any() const;
};
LlamaOpMap llama_op_map(LlamaBackend backend, const DeviceSpec& device, const ModelSpec& model,
                        const LlamaCellsShape& llama);

}  // namespace kvsim
