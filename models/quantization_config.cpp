// Hugging Face `quantization_config` -> how linear weights are stored
// (WeightQuant) and the compute format devices see (weights_dtype). The block
// is read leniently even in a strict YAML model file: quantisers add keys with
// every release (damp_percent, true_sequential, modules_to_not_convert, ...)
// and none of them changes a size. An unknown quant_method is an error: it
// would otherwise be priced as 16-bit weights, a silently wrong answer.
#include <fmt/format.h>

#include <map>

#include "models/model_spec.hpp"

namespace kvsim {

namespace {

constexpr int64_t kMaxGroup = int64_t{1} << 24;

// What decides the compute format besides the weight width.
struct ComputeHints {
  bool int8_activations = false;
  bool float_weights = false;
};

// 4-bit weights run as w4a16 (dequantised into 16-bit matmuls), 8-bit
// integer weights with 8-bit activations as w8a8; other 8-bit weights keep
// 16-bit compute ("fp8", "w8a16"), which no device prices as int8.
std::string compute_format(int64_t bits, bool int8_activations, bool float_weights) {
  if (bits == 4) return "w4a16";
  if (bits == 8 && int8_activations && !float_weights) return "w8a8";
  return float_weights ? "fp8" : "w8a16";
}

// A HF group_size of -1 (GPTQ, AWQ) means one scale per output channel.
int64_t group_of(config::MapReader& r, const char* key, int64_t def) {
  const int64_t g = r.integer(key, def, -1, kMaxGroup);
  return g <= 0 ? 0 : g;
}

int64_t bits_of(config::MapReader& r, const char* key, int64_t def) {
  const config::Node c = r.child(key);
  const int64_t bits = r.integer(key, def, 2, 8);
  if (c.defined() && bits != 4 && bits != 8)
    c.error(fmt::format("{}-bit weights are not modelled", bits), "4 or 8");
  return bits;
}

// AutoAWQ (TheBloke, Qwen *-AWQ): per group of group_size (128) weights an
// fp16 scale and, with zero_point (asymmetric, the default), a packed 4-bit
// zero in qzeros. Older AutoAWQ exports spell them w_bit / q_group_size.
void read_awq(config::MapReader& r, WeightQuant& q, ComputeHints&) {
  q.bits = bits_of(r, r.child("w_bit").defined() ? "w_bit" : "bits", 4);
  q.group_size =
      group_of(r, r.child("q_group_size").defined() ? "q_group_size" : "group_size", 128);
  q.scale_bytes = 2;
  q.zero_point = r.boolean("zero_point", true);
}

// AutoGPTQ / GPTQModel: fp16 scales per group, and the qzeros tensor is
// stored whether or not `sym` is set (sym only fixes its values), so the
// checkpoint's bytes include a packed zero per group either way. g_idx
// (one int32 per input row, ~0.01% of a 7B model) is left out.
void read_gptq(config::MapReader& r, WeightQuant& q, ComputeHints&) {
  q.bits = bits_of(r, "bits", 4);
  q.group_size = group_of(r, "group_size", 128);
  q.scale_bytes = 2;
  q.zero_point = true;
  r.boolean("sym", true);
}

// DeepSeek-V3's own fp8 checkpoint: e4m3 weights with one fp32 scale_inv
// per weight_block_size block (128 x 128); without blocks, one scale per
// tensor.
void read_fp8(config::MapReader& r, WeightQuant& q, ComputeHints& hints) {
  hints.float_weights = true;
  q.bits = 8;
  q.scale_bytes = 4;
  const config::Node block = r.child("weight_block_size");
  if (block.defined()) {
    const auto dims = block.items();
    if (!block.is_sequence() || dims.size() != 2) {
      block.error("must be two block dimensions", "e.g. [128, 128]");
      return;
    }
    q.group_size =
        dims[0].as_int(1, kMaxGroup).value_or(1) * dims[1].as_int(1, kMaxGroup).value_or(1);
  }
}

// llm-compressor exports: the first config group's `weights` entry gives
// num_bits, type (int | float), symmetric and strategy (group | channel |
// tensor | block); `input_activations` present means W8A8.
void read_compressed_tensors(config::MapReader& r, WeightQuant& q, ComputeHints& hints) {
  const config::Node groups = r.child("config_groups");
  if (!groups.defined() || !groups.is_map() || groups.raw().size() == 0) {
    groups.error("compressed-tensors needs config_groups with a weights scheme",
                 "config_groups: {group_0: {weights: {num_bits: 4, ...}}}");
    return;
  }
  const std::string first = groups.raw().begin()->first.as<std::string>();
  config::MapReader group(groups.child_at(first));
  const config::Node weights = group.child("weights");
  if (!weights.defined()) {
    weights.error("a config group needs a weights scheme", "weights: {num_bits: 4, ...}");
    return;
  }
  config::MapReader w(weights);
  q.bits = bits_of(w, "num_bits", 8);
  hints.float_weights = w.choice("type", "int", {"int", "float"}) == "float";
  q.zero_point = !w.boolean("symmetric", true);
  const std::string strategy =
      w.choice("strategy", "tensor", {"tensor", "channel", "group", "tensor_group", "block"});
  q.group_size =
      strategy == "group" || strategy == "tensor_group" ? group_of(w, "group_size", 128) : 0;
  q.scale_bytes = 2;
  const config::Node act = group.child("input_activations");
  hints.int8_activations = act.defined();
}

// bitsandbytes: 4-bit NF4/FP4 in blocks of 64 with an fp32 absmax each, or
// with double quantisation an 8-bit absmax plus one fp32 per 256 blocks;
// 8-bit (LLM.int8) keeps per-row scales, a rounding error.
void read_bitsandbytes(config::MapReader& r, WeightQuant& q, ComputeHints&) {
  const bool four = r.boolean("load_in_4bit", false);
  const bool eight = r.boolean("load_in_8bit", false);
  if (four == eight) {
    r.node().error("bitsandbytes needs exactly one of load_in_4bit and load_in_8bit true",
                   "load_in_4bit: true | load_in_8bit: true");
    return;
  }
  q.bits = four ? 4 : 8;
  if (four) {
    q.group_size = 64;
    q.scale_bytes = r.boolean("bnb_4bit_use_double_quant", false) ? 1.0 + 4.0 / 256.0 : 4.0;
  }
}

using QuantReader = void (*)(config::MapReader&, WeightQuant&, ComputeHints&);

// quant_method -> its reader, one per checkpoint format.
const std::map<std::string, QuantReader>& quant_readers() {
  static const std::map<std::string, QuantReader> readers = {
      {"awq", read_awq},
      {"bitsandbytes", read_bitsandbytes},
      {"compressed-tensors", read_compressed_tensors},
      {"fp8", read_fp8},
      {"gptq", read_gptq},
  };
  return readers;
}

std::string quant_method_names() {
  std::string names;
  for (const auto& [name, reader] : quant_readers()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace

void read_quantization_config(const config::Node& node, ModelSpec& m) {
  config::MapReader r(node);
  if (!r.valid()) return;
  const config::Node method_node = r.child("quant_method");
  const std::string method = r.string("quant_method", std::nullopt);
  if (method.empty()) return;
  const auto reader = quant_readers().find(method);
  if (reader == quant_readers().end()) {
    method_node.error(fmt::format("quant_method '{}' is not one kvsim can size", method),
                      quant_method_names());
    return;
  }
  WeightQuant q;
  q.method = method;
  ComputeHints hints;
  reader->second(r, q, hints);
  m.quant = q;
  m.weights_dtype = compute_format(q.bits, hints.int8_activations, hints.float_weights);
}

}  // namespace kvsim
