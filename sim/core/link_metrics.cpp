// kv_movement.* in metrics.json (link_metrics.hpp has the definitions).
#include "sim/core/link_metrics.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {

double ms(double ns) {
  return ns / 1e6;
}

// A link's object sits at the path its dotted name spells
// (kv_movement.links.node0.node_nic.rx), so an `expect:` or `compare` key
// names a link as its trace track does.
nlohmann::ordered_json& link_node(nlohmann::ordered_json& links, const std::string& name) {
  nlohmann::ordered_json* cur = &links;
  size_t start = 0;
  while (true) {
    const size_t dot = name.find('.', start);
    const std::string part = name.substr(start, dot == std::string::npos ? dot : dot - start);
    cur = &(*cur)[part];
    if (!cur->is_null() && !cur->is_object())
      throw std::logic_error(fmt::format("link name {} runs into another link's keys", name));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!cur->is_null())
    throw std::logic_error(fmt::format("link {} reported twice, or is a prefix of another", name));
  return *cur;
}

void write_kv_movement(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const KvMovementMetrics& k = m.parts.get_or_zero<KvMovementMetrics>();
  MetricsObject o = metrics_object(doc, "kv_movement");
  o.at_end().put("request_wait_ms", nlohmann::ordered_json{{"mean", k.request_wait_ms.mean},
                                                           {"p50", k.request_wait_ms.p50},
                                                           {"p99", k.request_wait_ms.p99},
                                                           {"max", k.request_wait_ms.max}});
  nlohmann::ordered_json links = nlohmann::ordered_json::object();
  for (const LinkMetrics& l : k.links)
    link_node(links, l.name) =
        nlohmann::ordered_json{{"transfers", l.transfers},
                               {"bytes", l.bytes},
                               {"busy_s", static_cast<double>(l.busy) / 1e9},
                               {"utilisation", link_utilisation(l, m.sim.simulated_s)},
                               {"queue_delay_ms",
                                {{"mean", l.delay_mean_ms},
                                 {"p50", l.delay_p50_ms},
                                 {"p99", l.delay_p99_ms},
                                 {"max", l.delay_max_ms}}}};
  o.put("links", std::move(links));
}

}  // namespace

LinkMetrics link_metrics(const SharedLink& link, const std::string& prefix) {
  const LinkCounters& c = link.counters();
  const LatencyHistogram& d = link.delays();
  LinkMetrics l;
  l.name = prefix + link.name();
  l.transfers = c.transfers;
  l.bytes = c.bytes;
  l.busy = c.busy;
  l.delay_mean_ms = ms(d.mean());
  l.delay_p50_ms = ms(d.percentile(50));
  l.delay_p99_ms = ms(d.percentile(99));
  l.delay_max_ms = ms(static_cast<double>(c.max_delay));
  return l;
}

double link_utilisation(const LinkMetrics& link, double simulated_s) {
  return simulated_s > 0 ? static_cast<double>(link.busy) / 1e9 / simulated_s : 0.0;
}

MetricsSection kv_movement_metrics_section() {
  return {"kv_movement", write_kv_movement};
}

}  // namespace kvsim
