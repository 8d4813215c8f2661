#include "sim/scenario/scenario_sections.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/core/metrics.hpp"
#include "sim/scenario/metrics_document.hpp"

namespace kvsim {
using config::MapReader;
using config::Node;

void read_expect_section(MapReader& top, ScenarioSpec& s) {
  const Node ex = top.child("expect");
  if (!ex.defined()) return;
  if (!ex.is_map()) {
    ex.error("expected a map of metric: bounds", "expect: {latency_ms.ttft.p99: {max: 800}}");
    return;
  }
  const auto keys = metric_key_names();
  for (auto it = ex.raw().begin(); it != ex.raw().end(); ++it) {
    const std::string metric = it->first.Scalar();
    Node key_node(it->first, "expect." + metric, ex.file(), &ex.context());
    if (std::find(keys.begin(), keys.end(), metric) == keys.end()) {
      const std::string near = config::closest_match(metric, keys);
      key_node.error(near.empty()
                         ? fmt::format("unknown metric '{}'", metric)
                         : fmt::format("unknown metric '{}', did you mean '{}'?", metric, near),
                     "a numeric key of metrics.json");
      continue;
    }
    Expectation e;
    e.metric = metric;
    e.where = key_node.location();
    MapReader b(Node(it->second, "expect." + metric, ex.file(), &ex.context()));
    auto opt = [&](const char* k) -> std::optional<double> {
      if (!b.has(k)) {
        b.ignore({k});
        return std::nullopt;
      }
      return b.number(k, 0.0, -1e300, 1e300);
    };
    e.min = opt("min");
    e.max = opt("max");
    e.equals = opt("equals");
    e.approx = opt("approx");
    e.rel = b.number("rel", 0.0, 0.0, 1e9);
    e.abs = b.number("abs", 0.0, 0.0, 1e300);
    b.finish();
    if (!e.min && !e.max && !e.equals && !e.approx) {
      b.node().error("no bound given", "min, max, equals, or approx with rel/abs");
    }
    // No value meets min above max: the expectation could only ever fail.
    if (e.min && e.max && *e.min > *e.max)
      b.node().error(fmt::format("min {} is above max {}: no value can meet both", *e.min, *e.max),
                     "min <= max");
    s.expect.push_back(e);
  }
}

}  // namespace kvsim
