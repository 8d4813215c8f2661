// The sweep and search file reader (kvsim sweep / kvsim search): the strict
// YAML, the dotted-key maps (set, grid, ranges), sample, metrics, the search
// section, then the variant count (overflow checked, bounded) and, for a
// grid small enough to expand quickly, the expansion and its samples. The
// first byte's low bit allows a `search:` section. Bad input must end in a
// config::ConfigError, never a crash, a sanitizer report or memory without
// bound.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/diagnostics.hpp"
#include "cli/studies/sweep_spec.hpp"
#include "fuzz/fuzz_input.hpp"
#include "sim/core/metrics.hpp"
#include "sim/core/metrics_section.hpp"

// The scenario loader and the engines' metrics sections (all of sim/) are
// not linked: a sweep's `base:` is resolved against the repository's
// configs/ folder by these stand-ins, and its `metrics:` are checked against
// the keys sim/core/metrics.cpp writes itself (the components' keys read as
// unknown).
namespace kvsim {
std::vector<std::string> metric_key_names() {
  RunMetrics sample;
  sample.requests.completed = 1;  // latency keys are null without a completed request
  nlohmann::ordered_json doc;
  run_metrics_section().write(sample, doc);
  return metric_leaf_keys(doc, /*numeric_only=*/true);
}
std::string find_configs_dir(const std::string&) {
  return KVSIM_FUZZ_CONFIGS_DIR;
}
std::vector<std::string> list_config_names(const std::string&, const std::string&) {
  return {"default"};
}
}  // namespace kvsim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool allow_search = (data[0] & 1) != 0;
  const kvsim::fuzz::MemoryFile file(data + 1, size - 1);
  try {
    const kvsim::SweepSpec spec = kvsim::load_sweep(file.path(), allow_search);
    const size_t n = kvsim::sweep_variant_count(spec);
    if (n > kvsim::kMaxSweepVariants) std::abort();  // the bound must hold
    if (n <= 4096) {
      const auto variants = kvsim::expand_sweep(spec);
      if (variants.size() != n) std::abort();
      for (const auto& v : variants)
        if (v.axis_values.size() != kvsim::sweep_axis_keys(spec).size()) std::abort();
    }
  } catch (const kvsim::config::ConfigError&) {
  }
  return 0;
}
