#include "sim/scenario/scenario_sections.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "kernels/llama2_model.hpp"
#include "sim/core/metrics.hpp"
#include "sim/scenario/metrics_document.hpp"

namespace kvsim {
namespace fs = std::filesystem;
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
    // A llama_bench run names its own keys after its tests
    // (llama_bench.ts.pp512); one no test has fails the check as missing.
    const bool bench_key = metric.rfind("llama_bench.ts.", 0) == 0 && metric.size() > 15;
    if (!bench_key && std::find(keys.begin(), keys.end(), metric) == keys.end()) {
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

// numerics.reuse_quality: {checkpoint_path, requests, generated_tokens}; the
// checkpoint's path is relative to the YAML file's folder (like a trace's)
// and is opened before anything is written.
void read_reuse_quality_section(const Node& node, NumericsConfig& n) {
  if (!node.defined()) return;
  MapReader q(node);
  const Node path = q.child("checkpoint_path");
  n.quality_requests = q.integer("requests", 8, 1, 4096);
  n.quality_generated = q.integer("generated_tokens", 8, 1, 256);
  q.finish();
  n.quality_key_path = path.path();
  if (!path.defined()) {
    node.error("checkpoint_path is required",
               "checkpoint_path: a llama2.c .bin such as "
               "../../../shared/data/models/stories260K/stories260K.bin");
    return;
  }
  const auto text = path.as_string();
  if (!text) return;
  fs::path file(*text);
  if (file.is_relative()) file = fs::path(path.file()).parent_path() / file;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    path.error(fmt::format("no file at '{}'", file.lexically_normal().string()),
               "a llama2.c checkpoint (.bin), relative to the YAML file's folder");
    return;
  }
  // Read it now, so a file that is no checkpoint fails before anything runs.
  try {
    const kernels::Llama2Weights w = kernels::load_llama2_checkpoint(file.string());
    if (2 * n.quality_generated >= w.config.seq_len)
      node.error(fmt::format("generated_tokens {} leaves too few of the model's {} positions "
                             "for the prompt",
                             n.quality_generated, w.config.seq_len),
                 fmt::format("generated_tokens below {}", w.config.seq_len / 2));
  } catch (const std::runtime_error& e) {
    path.error(e.what(), "a llama2.c checkpoint (.bin), such as stories260K.bin");
    return;
  }
  n.quality_checkpoint = file.lexically_normal().string();
}

}  // namespace kvsim
