#pragma once
// metrics.json as a whole (SPEC 9): every component's section, in the order
// they write (sim/core/metrics_section.hpp), over a run's metrics. The list
// is the assembly's: it names each component's section.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "sim/core/metrics.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {

// Every section, in the order they write (later ones anchor on earlier keys).
const std::vector<MetricsSection>& metrics_sections();
// Ordered JSON (keys in SPEC order) so that files compare byte for byte.
nlohmann::ordered_json metrics_to_json(const RunMetrics& m);
// Every numeric metric key, dotted (for `expect` validation and `check`),
// those of sections written only for their own runs (a cluster's, a
// pipeline's, llama_cells') included.
std::vector<std::string> metric_key_names();

}  // namespace kvsim
