#include "sim/scenario/expect.hpp"

#include <fmt/format.h>

#include <cmath>

#include "sim/core/metrics.hpp"

namespace kvsim {

std::vector<std::string> check_expectations(const std::vector<Expectation>& expect,
                                            const nlohmann::ordered_json& metrics) {
  std::vector<std::string> failures;
  for (const Expectation& e : expect) {
    const std::string where =
        fmt::format("{}:{}:{}: expect.{}", e.where.file, e.where.line, e.where.col, e.metric);
    const std::optional<double> v = metric_value(metrics, e.metric);
    if (!v) {
      const auto* node = find_metric(metrics, e.metric);
      failures.push_back(node != nullptr && node->is_null()
                             ? fmt::format("{}: has no value (none: no request completed, so no "
                                           "latency was measured)",
                                           where)
                             : fmt::format("{}: metric is missing from metrics.json", where));
      continue;
    }
    if (e.min && *v < *e.min)
      failures.push_back(fmt::format("{}: {} is below min {}", where, *v, *e.min));
    if (e.max && *v > *e.max)
      failures.push_back(fmt::format("{}: {} is above max {}", where, *v, *e.max));
    if (e.equals && *v != *e.equals)
      failures.push_back(fmt::format("{}: {} is not equal to {}", where, *v, *e.equals));
    if (e.approx) {
      const double tol = std::max(e.abs, e.rel * std::fabs(*e.approx));
      if (std::fabs(*v - *e.approx) > tol) {
        failures.push_back(fmt::format("{}: {} is not within {} of {} (rel {}, abs {})", where, *v,
                                       tol, *e.approx, e.rel, e.abs));
      }
    }
  }
  return failures;
}

}  // namespace kvsim
