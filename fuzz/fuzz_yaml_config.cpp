// The strict YAML reader on model and device files: parse, duplicate keys,
// UTF-8, every typed getter, the cross-field checks. The first byte picks
// the reader (even: model, odd: device); the rest is the document. Bad
// input must end in collected diagnostics, never a crash or a sanitizer
// report.
#include <cstddef>
#include <cstdint>

#include "base/reader.hpp"
#include "devices/device_spec.hpp"
#include "fuzz/fuzz_input.hpp"
#include "models/model_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool device = (data[0] & 1) != 0;
  const kvsim::fuzz::MemoryFile file(data + 1, size - 1);
  kvsim::config::LoadContext ctx;
  const YAML::Node doc = kvsim::config::load_file(file.path(), ctx);
  if (!doc.IsDefined()) return 0;
  const kvsim::config::Node root(doc, "", file.path(), &ctx);
  if (device) {
    (void)kvsim::parse_device(root);
  } else {
    const kvsim::ModelSpec m = kvsim::parse_model(root, false);
    // Derived sizes of a model that read cleanly must be computable.
    if (ctx.diagnostics.empty()) {
      (void)m.weight_bytes();
      (void)m.kv_bytes_per_token(2, 1);
    }
  }
  return 0;
}
