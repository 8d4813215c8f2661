#include "reports/run_report_sections.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

#include "sim/cluster/cluster_metrics.hpp"

namespace kvsim {
namespace {

const std::vector<EngineReport>& engine_reports() {
  static const std::vector<EngineReport> reports = {genie_engine_report(), serving_engine_report()};
  return reports;
}

}  // namespace

std::vector<std::string> engine_report_names() {
  std::vector<std::string> names;
  for (const EngineReport& r : engine_reports()) names.emplace_back(r.engine);
  return names;
}

const EngineReport& engine_report(const RunMetrics& m) {
  static const EngineReport cluster = cluster_engine_report();
  if (m.find<ClusterMetrics>() != nullptr) return cluster;
  for (const EngineReport& r : engine_reports())
    if (r.engine == m.engine) return r;
  throw std::logic_error(fmt::format("no report parts for engine '{}' (there are: {})", m.engine,
                                     fmt::join(engine_report_names(), ", ")));
}

}  // namespace kvsim
