#include "sim/served_metrics.hpp"

namespace kvsim {

LatencySummary summarize_latency(const LatencyHistogram& h) {
  const auto ms = [](double ns) { return ns / 1e6; };
  LatencySummary s;
  if (h.count() == 0) return s;
  s.mean = ms(h.mean());
  s.p50 = ms(h.percentile(50));
  s.p90 = ms(h.percentile(90));
  s.p99 = ms(h.percentile(99));
  s.max = ms(static_cast<double>(h.max()));
  return s;
}

void fill_served_metrics(const ServedRequests& served, RunMetrics& m) {
  m.latency_ms.ttft = summarize_latency(served.ttft);
  m.latency_ms.tpot = summarize_latency(served.tpot);
  m.latency_ms.e2e = summarize_latency(served.e2e);
  const double span_s = static_cast<double>(served.last_completion) / 1e9;
  if (span_s > 0) {
    m.throughput.output_tokens_per_s = static_cast<double>(served.output_tokens) / span_s;
    m.throughput.total_tokens_per_s =
        static_cast<double>(served.output_tokens + served.prompt_tokens) / span_s;
    m.throughput.requests_per_s = static_cast<double>(served.completed) / span_s;
  }
}

}  // namespace kvsim
