#include "sim/core/llama_bench_metrics.hpp"

#include <cmath>

#include "sim/core/metrics.hpp"

namespace kvsim {

BenchRate bench_rate(const LlamaBenchMetrics::Test& t) {
  std::vector<double> ts;
  for (TimeNs ns : t.samples_ns)
    if (ns > 0)
      ts.push_back(1e9 * static_cast<double>(t.n_prompt + t.n_gen) / static_cast<double>(ns));
  BenchRate r;
  if (ts.empty()) return r;
  double sum = 0;
  for (double v : ts) sum += v;
  r.mean = sum / static_cast<double>(ts.size());
  if (ts.size() > 1) {
    double sq = 0;
    for (double v : ts) sq += (v - r.mean) * (v - r.mean);
    r.stdev = std::sqrt(sq / static_cast<double>(ts.size() - 1));
  }
  return r;
}

namespace {

// metrics.json `llama_bench`: llama-bench's per-test list, and each test's
// mean t/s by key for `expect:` (llama_bench.ts.pp512, ...).
void write_llama_bench_metrics(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const LlamaBenchMetrics* found = m.parts.find<LlamaBenchMetrics>();
  if (found == nullptr || found->tests.empty()) return;
  nlohmann::ordered_json tests = nlohmann::ordered_json::array();
  nlohmann::ordered_json ts = nlohmann::ordered_json::object();
  for (const auto& t : found->tests) {
    const BenchRate rate = bench_rate(t);
    nlohmann::ordered_json e;
    e["test"] = t.name;
    e["n_prompt"] = t.n_prompt;
    e["n_gen"] = t.n_gen;
    e["n_depth"] = t.n_depth;
    e["avg_ts"] = rate.mean;
    e["stdev_ts"] = rate.stdev;
    e["samples_ns"] = t.samples_ns;
    tests.push_back(e);
    ts[t.key] = rate.mean;
  }
  nlohmann::ordered_json o;
  o["tests"] = std::move(tests);
  o["ts"] = std::move(ts);
  MetricsObject(doc).after("workload").put("llama_bench", std::move(o));
}

}  // namespace

MetricsSection llama_bench_metrics_section() {
  return {"llama_bench", write_llama_bench_metrics};
}

}  // namespace kvsim
