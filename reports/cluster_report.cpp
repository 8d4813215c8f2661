// A cluster run's parts of its reports: the serving engine's parts with
// each figure labelled by what it sums over (the cluster, one instance, one
// device), its groups and instances as tables, and its charts
// (reports/cluster_charts.hpp).
#include "reports/cluster_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "reports/cluster_charts.hpp"
#include "reports/html_page.hpp"
#include "reports/run_report_sections.hpp"
#include "sim/cluster/cluster_metrics.hpp"
#include "sim/cluster/cluster_spec.hpp"
#include "sim/serve/serving_metrics.hpp"
#include "sim/serve/session_retention_metrics.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {
namespace {

std::string layout_of(const InstanceSpec& g) {
  return g.pp > 1 ? fmt::format("TP {} x PP {}", g.tp, g.pp) : fmt::format("TP {}", g.tp);
}

const ClusterMetrics& cluster_of(const RunMetrics& m) {
  static const ClusterMetrics none;
  const ClusterMetrics* c = m.find<ClusterMetrics>();
  return c != nullptr ? *c : none;
}

// The figures kv_cache.* and memory.kv_bytes sum over the instances are
// one device's share of each instance: the cluster's whole when every
// instance is one device.
std::string kv_scope(const ClusterMetrics& c) {
  const bool one_device_each =
      std::all_of(c.per_instance.begin(), c.per_instance.end(),
                  [](const ClusterInstanceMetrics& i) { return i.devices == 1; });
  return one_device_each
             ? fmt::format("{} instances together", c.instances)
             : fmt::format("{} instances together, one device's share of each", c.instances);
}

// The first instance of each group: its devices and what each holds.
struct GroupLine {
  const InstanceGroup* group;
  const ClusterInstanceMetrics* first;
};
std::vector<GroupLine> group_lines(const ScenarioSpec& s, const ClusterMetrics& c) {
  std::vector<GroupLine> out;
  if (!s.cluster) return out;
  size_t at = 0;
  for (const InstanceGroup& g : s.cluster->groups) {
    out.push_back({&g, at < c.per_instance.size() ? &c.per_instance[at] : nullptr});
    at += static_cast<size_t>(g.count);
  }
  return out;
}

std::string cluster_summary_lines(const ScenarioSpec& s, const RunMetrics& m) {
  const ServingPoolMetrics& pool = m.parts.get_or_zero<ServingPoolMetrics>();
  const ClusterMetrics& c = cluster_of(m);
  std::string out = fmt::format(
      "KV cache, {}: {} blocks, {} ({} tokens); peak used {} ({:.1f}%, each instance's peak "
      "summed), mean {}\n",
      kv_scope(c), pool.num_blocks, format_bytes(m.memory.kv_bytes), m.kv_cache.capacity_tokens,
      format_bytes(m.kv_cache.peak_used_bytes),
      m.memory.kv_bytes > 0 ? 100.0 * static_cast<double>(m.kv_cache.peak_used_bytes) /
                                  static_cast<double>(m.memory.kv_bytes)
                            : 0.0,
      format_bytes(static_cast<Bytes>(m.kv_cache.mean_used_bytes)));
  out += fmt::format(
      "          prefix hit rate {:.3f} (of the prompts the cluster was asked), fragmentation "
      "{:.3f}, evictions {}, swapped {}\n",
      pool.prefix_hit_rate, pool.fragmentation, pool.evictions, format_bytes(pool.swapped_bytes));
  for (const GroupLine& g : group_lines(s, c)) {
    if (g.first == nullptr) continue;
    out += fmt::format("memory per device, {} ({} x {}): {} total, weights {}, KV {}\n",
                       g.group->name, g.group->count, layout_of(*g.group->spec),
                       format_bytes(g.group->spec->device.memory_bytes),
                       format_bytes(g.first->weights_bytes_per_device),
                       format_bytes(g.first->kv_bytes_per_device));
  }
  int64_t fewest = -1, most = 0;
  for (const ClusterInstanceMetrics& i : c.per_instance) {
    if (i.role == "decode") continue;
    fewest = fewest < 0 ? i.arrived : std::min(fewest, i.arrived);
    most = std::max(most, i.arrived);
  }
  out += fmt::format(
      "cluster: router {}, requests per instance {} to {} (load imbalance {:.2f}, the busiest "
      "over the mean)\n",
      c.router, std::max<int64_t>(fewest, 0), most, c.load_imbalance);
  if (c.transfer.requests > 0)
    out += fmt::format(
        "KV transfers, prefill to decode: {} requests, {} (all devices), mean {:.2f} ms, max "
        "{:.2f} ms (link queueing included)\n",
        c.transfer.requests, format_bytes(c.transfer.bytes), c.transfer.mean_ms, c.transfer.max_ms);
  if (c.global_pool.capacity_bytes > 0)
    out += fmt::format("global pool: {} ({} blocks), shared by {} instances, {} blocks put\n",
                       format_bytes(c.global_pool.capacity_bytes), c.global_pool.capacity_blocks,
                       c.global_pool.instances, c.global_pool.puts);
  out += session_retention_summary(m);  // summed over the instances
  return out;
}

// report.md: the KV row of the memory plan (one device of the first
// instance), then the groups and the instances.
std::string cluster_markdown(const ScenarioSpec& s, const RunMetrics& m, const PoolSizing& sizing) {
  const ClusterMetrics& c = cluster_of(m);
  std::string out = fmt::format("| KV pool ({} blocks x {}) | {} | {} |\n\n", sizing.num_blocks,
                                sizing.block_bytes, sizing.num_blocks * sizing.block_bytes,
                                format_bytes(sizing.num_blocks * sizing.block_bytes));
  out += fmt::format("## Cluster ({})\n\n", cluster_deployment(s));
  out +=
      "| group | role | instances | devices each | device memory | weights per device | KV per "
      "device |\n| --- | --- | ---: | --- | ---: | ---: | ---: |\n";
  for (const GroupLine& g : group_lines(s, c)) {
    if (g.first == nullptr) continue;
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", g.group->name, g.first->role,
                       g.group->count, layout_of(*g.group->spec),
                       format_bytes(g.group->spec->device.memory_bytes),
                       format_bytes(g.first->weights_bytes_per_device),
                       format_bytes(g.first->kv_bytes_per_device));
  }
  out +=
      "\n| instance | group | role | arrived | completed | rejected | preemptions | steps | "
      "prefix hit rate | TTFT p50 ms | TTFT p99 ms | peak KV per device |\n"
      "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (size_t i = 0; i < c.per_instance.size(); ++i) {
    const ClusterInstanceMetrics& e = c.per_instance[i];
    out += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {:.3f} | {:.2f} | {:.2f} | {} |\n", i, e.group,
        e.role, e.arrived, e.completed, e.rejected, e.preemptions, e.steps, e.prefix_hit_rate,
        e.ttft_p50_ms, e.ttft_p99_ms, format_bytes(e.peak_used_bytes));
  }
  return out + "\n";
}

std::vector<std::string> cluster_bytes_row(const std::string& name, Bytes b) {
  return {name, std::to_string(b), format_bytes(b)};
}

std::string cluster_html_tables(const ScenarioSpec& s, const RunMetrics& m,
                                const PoolSizing& sizing) {
  const ServingPoolMetrics& pool = m.parts.get_or_zero<ServingPoolMetrics>();
  const ClusterMetrics& c = cluster_of(m);
  std::string body = "<h2>KV cache (" + html_escape(kv_scope(c)) + ")</h2>\n";
  body += html_table(
      {"metric", "value"},
      {{"blocks", std::to_string(pool.num_blocks)},
       {"capacity", format_bytes(m.memory.kv_bytes)},
       {"capacity tokens", std::to_string(m.kv_cache.capacity_tokens)},
       {"peak used (each instance's peak, summed)", format_bytes(m.kv_cache.peak_used_bytes)},
       {"mean used", format_bytes(static_cast<Bytes>(m.kv_cache.mean_used_bytes))},
       {"prefix hit rate (prompts the cluster was asked)",
        fmt::format("{:.3f}", pool.prefix_hit_rate)},
       {"fragmentation", fmt::format("{:.3f}", pool.fragmentation)},
       {"evictions", std::to_string(pool.evictions)},
       {"swapped", format_bytes(pool.swapped_bytes)}});
  body += "<h2>Memory plan (per device of instance 0)</h2>\n";
  body += html_table(
      {"item", "bytes", ""},
      {cluster_bytes_row("device memory", m.memory.device_bytes),
       cluster_bytes_row(fmt::format("budget (x {})", s.kv.memory_fraction), sizing.budget),
       cluster_bytes_row("weights", sizing.weights_bytes),
       cluster_bytes_row("activation reserve", sizing.activation_reserve),
       cluster_bytes_row(
           fmt::format("KV pool ({} blocks x {})", sizing.num_blocks, sizing.block_bytes),
           sizing.num_blocks * sizing.block_bytes)});
  body += "<h2>Cluster: " + html_escape(cluster_deployment(s)) + "</h2>\n";
  std::vector<std::vector<std::string>> groups;
  for (const GroupLine& g : group_lines(s, c)) {
    if (g.first == nullptr) continue;
    groups.push_back({g.group->name, g.first->role, std::to_string(g.group->count),
                      layout_of(*g.group->spec), format_bytes(g.group->spec->device.memory_bytes),
                      format_bytes(g.first->weights_bytes_per_device),
                      format_bytes(g.first->kv_bytes_per_device)});
  }
  body += html_table({"group", "role", "instances", "devices each", "device memory",
                      "weights per device", "KV per device"},
                     groups);
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < c.per_instance.size(); ++i) {
    const ClusterInstanceMetrics& e = c.per_instance[i];
    rows.push_back({std::to_string(i), e.group, e.role, std::to_string(e.arrived),
                    std::to_string(e.completed), std::to_string(e.rejected),
                    std::to_string(e.preemptions), std::to_string(e.steps),
                    fmt::format("{:.3f}", e.prefix_hit_rate), fmt::format("{:.2f}", e.ttft_p50_ms),
                    fmt::format("{:.2f}", e.ttft_p99_ms), format_bytes(e.peak_used_bytes)});
  }
  body += "<h3>Instances</h3>\n";
  body +=
      html_table({"instance", "group", "role", "arrived", "completed", "rejected", "preemptions",
                  "steps", "prefix hit rate", "TTFT p50 ms", "TTFT p99 ms", "peak KV per device"},
                 rows);
  return body;
}

}  // namespace

std::string cluster_deployment(const ScenarioSpec& s) {
  if (!s.cluster || s.cluster->groups.empty()) return {};
  const auto& groups = s.cluster->groups;
  const InstanceSpec& first = *groups.front().spec;
  const bool alike = std::all_of(groups.begin(), groups.end(), [&](const InstanceGroup& g) {
    return g.spec->tp == first.tp && g.spec->pp == first.pp &&
           g.spec->device.name == first.device.name;
  });
  const int64_t n = s.cluster->instances();
  if (alike) {
    std::string out = fmt::format("{} instances x {}", n, layout_of(first));
    if (groups.size() > 1) {
      std::string parts;
      for (const InstanceGroup& g : groups)
        parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", g.count, g.name);
      out += " (" + parts + ")";
    }
    return out;
  }
  std::string out;
  for (const InstanceGroup& g : groups) {
    out +=
        fmt::format("{}{} {} x {}", out.empty() ? "" : " + ", g.count, g.name, layout_of(*g.spec));
    if (g.spec->device.name != s.device.name) out += " on " + g.spec->device.name;
  }
  return out + fmt::format(" ({} instances)", n);
}

std::string deployment_phrase(const ScenarioSpec& s) {
  return s.cluster ? cluster_deployment(s) : fmt::format("tensor parallel {}", s.tp);
}

// A cluster's instances are serving engines: their cache's geometry reads
// as one instance's does; the figures and charts are the cluster's.
EngineReport cluster_engine_report() {
  EngineReport r = serving_engine_report();
  r.summary_lines = cluster_summary_lines;
  r.markdown = cluster_markdown;
  r.html_tables = cluster_html_tables;
  r.charts = cluster_charts;
  return r;
}

}  // namespace kvsim
