#pragma once
// llama-bench's results (`kind: llama_bench`, workloads/llama_bench_workload.cpp):
// each test with the times of its timed runs, whichever engine ran it (the
// dialog engine on an NPU graph executor, the serving engine's llama_cells
// on every other device); and the section that writes metrics.json
// `llama_bench` (only for a run that had tests).
#include <cstdint>
#include <string>
#include <vector>

#include "base/units.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {

struct LlamaBenchMetrics {
  struct Test {
    std::string name, key;
    int64_t n_prompt = 0, n_gen = 0, n_depth = 0;
    std::vector<TimeNs> samples_ns;  // llama-bench's samples_ns, in run order
  };
  std::vector<Test> tests;  // in the workload's order
};

// llama-bench's statistics of one test (tools/llama-bench/llama-bench.cpp,
// ggml-org/llama.cpp 0104b151: get_ts, avg_ts, stdev_ts): t/s of each run is
// 1e9 * (n_prompt + n_gen) / ns; the mean, and the sample standard deviation
// (0 for a single run).
struct BenchRate {
  double mean = 0, stdev = 0;
};
BenchRate bench_rate(const LlamaBenchMetrics::Test& t);

MetricsSection llama_bench_metrics_section();

}  // namespace kvsim
