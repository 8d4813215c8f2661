// A Hugging Face config.json, read leniently as load_model_file reads one
// (unknown keys ignored, text_config, quantization_config, torch_dtype). A
// model that reads cleanly must give representable derived sizes.
#include <cstddef>
#include <cstdint>

#include "base/reader.hpp"
#include "fuzz/fuzz_input.hpp"
#include "models/model_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kvsim::fuzz::MemoryFile file(data, size);
  kvsim::config::LoadContext ctx;
  const YAML::Node doc = kvsim::config::load_file(file.path(), ctx);
  if (!doc.IsDefined()) return 0;
  const kvsim::ModelSpec m =
      kvsim::parse_model(kvsim::config::Node(doc, "", file.path(), &ctx), true);
  if (ctx.diagnostics.empty()) {
    for (int64_t tp : {1, 2, 8}) {
      (void)m.weight_bytes_per_rank(tp);
      (void)m.kv_bytes_per_token(2, tp);
      (void)m.kv_bytes_for_context(m.max_position_embeddings, 4, tp);
    }
    (void)m.parameter_count();
  }
  return 0;
}
