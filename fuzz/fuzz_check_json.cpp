// kvsim check's reader: a metrics.json (any JSON), then the comparison
// against itself and against a small fixed baseline.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "base/diagnostics.hpp"
#include "fuzz/fuzz_input.hpp"
#include "reports/metrics_check.hpp"
#include "sim/core/metrics_section.hpp"

// The sections that write a run's metrics pull in every engine (all of
// sim/); check only reads documents, so the harness links this stand-in.
namespace kvsim {
const std::vector<MetricsSection>& metrics_sections() {
  std::abort();
}
}  // namespace kvsim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kvsim::fuzz::MemoryFile file(data, size);
  try {
    const nlohmann::ordered_json doc = kvsim::read_metrics_file(file.path());
    const nlohmann::ordered_json baseline = {{"requests", {{"completed", 10}}},
                                             {"latency_ms", {{"ttft", {{"p50", 1.5}}}}}};
    kvsim::MetricsCheckOptions options;
    options.rel_tol = 0.01;
    const kvsim::MetricsCheckResult same = kvsim::check_metrics(doc, doc, options);
    (void)same.format(options);
    const kvsim::MetricsCheckResult other = kvsim::check_metrics(doc, baseline, options);
    (void)other.format(options);
  } catch (const kvsim::config::ConfigError&) {
  }
  return 0;
}
