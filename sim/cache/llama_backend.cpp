#include "sim/cache/llama_backend.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "devices/device_family.hpp"

namespace kvsim {
namespace {

constexpr std::array<std::pair<LlamaBackend, std::string_view>, 4> kNames = {{
    {LlamaBackend::cpu, "cpu"},
    {LlamaBackend::cann, "cann"},
    {LlamaBackend::cuda, "cuda"},
    {LlamaBackend::hexagon, "hexagon"},
}};

// The GGUF type a model's weights are stored in, as kvsim names weight
// formats (models/model_spec.hpp): 16-bit checkpoints (fp16, bf16) become
// F16, convert_hf_to_gguf.py's default --outtype; w8a8 is Q8_0, w4a16
// and w4 Q4_0 (one 4-bit storage: GGUF has no activation format), fp4 MXFP4; fp8 has no GGUF type a
// llama.cpp backend multiplies (empty).
std::string_view gguf_weight_type(const std::string& weights) {
  if (weights == "fp32") return "f32";
  if (weights == "fp16" || weights == "bf16") return "f16";
  if (weights == "w8a8") return "q8_0";
  if (int4_weights(weights)) return "q4_0";
  if (weights == "fp4") return "mxfp4";
  return "";
}

constexpr std::array<OpKind, 4> kLayerGemms = {OpKind::qkv_proj, OpKind::o_proj,
                                               OpKind::mlp_gate_up, OpKind::mlp_down};

void move(LlamaOpMap& m, OpKind k, std::string why) {
  if (m.on_host[static_cast<size_t>(k)]) return;
  m.on_host[static_cast<size_t>(k)] = true;
  m.why.push_back(fmt::format("{}: {}", op_kind_name(k), why));
}

// ggml-cann.cpp (fc8d13e6) ggml_backend_cann_supports_op, for the ops of a
// dense llama layer. The 310P build (ASCEND_310P) takes no Q8_0/Q4_0
// matmul and no FLASH_ATTN_EXT.
void cann_map(LlamaOpMap& m, const DeviceSpec& d, const ModelSpec& model,
              const LlamaCellsShape& llama) {
  const bool is_310p = d.name.find("310p") != std::string::npos;
  const std::string_view w = gguf_weight_type(model.weights_dtype);
  const bool quant_w = w == "q8_0" || w == "q4_0";
  if (!(w == "f16" || w == "f32" || (quant_w && !is_310p))) {
    const std::string why =
        quant_w ? fmt::format("MUL_MAT of {} weights is not built for the 310P", w)
                : fmt::format("MUL_MAT takes F16, F32, Q8_0 or Q4_0 weights, not {}",
                              w.empty() ? model.weights_dtype : std::string(w));
    for (OpKind k : kLayerGemms) move(m, k, why);
    move(m, OpKind::lm_head, why);
  }
  const bool f16_kv = llama.type_k == "f16" && llama.type_v == "f16";
  if (!llama.v_trans) {
    if (!f16_kv)
      move(m, OpKind::attention,
           fmt::format("FLASH_ATTN_EXT takes F16 K and V only, not {} / {}", llama.type_k,
                       llama.type_v));
    else if (is_310p)
      move(m, OpKind::attention, "FLASH_ATTN_EXT is not built for the 310P");
  } else if (!(llama.type_k == "f16" || llama.type_k == "f32")) {
    // Without flash attention KQ is a MUL_MAT over a view of the K cache:
    // a quantized view is not contiguous, a BF16 one not a type it takes.
    move(m, OpKind::attention,
         fmt::format("MUL_MAT over a {} view of the K cache is not taken", llama.type_k));
  }
  for (const std::string& t : {llama.type_k, llama.type_v}) {
    if (t != "f16" && t != "f32") {
      move(m, OpKind::kv_store, fmt::format("SET_ROWS writes F32 or F16 rows only, not {}", t));
      break;
    }
  }
  if (model.head_dim > 896)
    move(m, OpKind::rope, fmt::format("ROPE takes at most 896 dims, not {}", model.head_dim));
}

// ggml-hexagon.cpp (afaeb543) ggml_backend_hexagon_device_supports_op.
void hexagon_map(LlamaOpMap& m, const ModelSpec& model, const LlamaCellsShape& llama) {
  const std::string_view w = gguf_weight_type(model.weights_dtype);
  const bool taken = w == "f16" || w == "q8_0" || w == "q4_0" || w == "mxfp4";
  if (!taken) {
    const std::string why = fmt::format("MUL_MAT takes Q4_0, Q8_0, MXFP4 or F16 weights, not {}",
                                        w.empty() ? model.weights_dtype : std::string(w));
    for (OpKind k : kLayerGemms) move(m, k, why);
  }
  if (!taken || (w != "f16" && model.vocab_size > 16 * 1024))
    move(m, OpKind::lm_head,
         taken ? fmt::format("a quantized MUL_MAT of {} rows (> 16384) is too large for VTCM",
                             model.vocab_size)
               : fmt::format("MUL_MAT does not take {} weights", model.weights_dtype));
  move(m, OpKind::attention,
       "FLASH_ATTN_EXT is not in its supports_op, and the non-flash KQ MUL_MAT takes no "
       "permuted (non-contiguous) Q");
  move(m, OpKind::kv_store, "SET_ROWS is not in its supports_op");
  m.gemm_on_vector = llama.hexagon_matmul != "hmx";
}

}  // namespace

std::string_view llama_backend_name(LlamaBackend b) {
  for (const auto& [k, n] : kNames)
    if (k == b) return n;
  return "?";
}

std::optional<LlamaBackend> parse_llama_backend(std::string_view name) {
  for (const auto& [k, n] : kNames)
    if (n == name) return k;
  return std::nullopt;
}

std::vector<std::string> llama_backend_choices() {
  std::vector<std::string> out = {"auto"};
  for (const auto& [k, n] : kNames) out.emplace_back(n);
  return out;
}

std::vector<LlamaBackend> llama_backends_of(const DeviceSpec& device) {
  std::vector<LlamaBackend> out;
  const DeviceFamily* f = find_device_family(device.kind);
  if (f == nullptr) return out;
  for (const std::string& n : f->llama_cpp_backends(device))
    if (auto b = parse_llama_backend(n)) out.push_back(*b);
  return out;
}

std::optional<LlamaBackend> resolve_llama_backend(std::string_view name, const DeviceSpec& device) {
  const std::vector<LlamaBackend> offered = llama_backends_of(device);
  if (offered.empty()) return std::nullopt;
  if (name == "auto") return offered.front();
  const auto b = parse_llama_backend(name);
  if (!b || std::find(offered.begin(), offered.end(), *b) == offered.end()) return std::nullopt;
  return b;
}

bool LlamaOpMap::any() const {
  return std::any_of(on_host.begin(), on_host.end(), [](bool b) { return b; });
}

LlamaOpMap llama_op_map(LlamaBackend backend, const DeviceSpec& device, const ModelSpec& model,
                        const LlamaCellsShape& llama) {
  LlamaOpMap m;
  m.backend = backend;
  switch (backend) {
    case LlamaBackend::cann:
      cann_map(m, device, model, llama);
      break;
    case LlamaBackend::hexagon:
      hexagon_map(m, model, llama);
      break;
    case LlamaBackend::cpu:
    case LlamaBackend::cuda:
      break;
  }
  return m;
}

}  // namespace kvsim
