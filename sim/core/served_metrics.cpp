#include "sim/core/served_metrics.hpp"

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
  s.p95 = ms(h.percentile(95));
  s.std = ms(h.stddev());
  return s;
}

bool SloTargets::met(TimeNs ttft, TimeNs tpot, TimeNs e2e) const {
  const auto within = [](const std::optional<double>& target_ms, TimeNs value) {
    return !target_ms || static_cast<double>(value) <= *target_ms * 1e6;
  };
  return within(ttft_ms, ttft) && (tpot < 0 || within(tpot_ms, tpot)) && within(e2e_ms, e2e);
}

void fill_served_metrics(const ServedRequests& served, RunMetrics& m) {
  m.latency_ms.ttft = summarize_latency(served.ttft);
  m.latency_ms.tpot = summarize_latency(served.tpot);
  m.latency_ms.e2e = summarize_latency(served.e2e);
  m.latency_ms.itl = summarize_latency(served.itl);
  m.goodput.requests = served.met_slo;
  if (served.arrived > 0)
    m.goodput.fraction = static_cast<double>(served.met_slo) / static_cast<double>(served.arrived);
  const double span_s = static_cast<double>(served.last_completion) / 1e9;
  if (span_s > 0) {
    m.throughput.output_tokens_per_s = static_cast<double>(served.output_tokens) / span_s;
    m.throughput.total_tokens_per_s =
        static_cast<double>(served.output_tokens + served.prompt_tokens) / span_s;
    m.throughput.requests_per_s = static_cast<double>(served.completed) / span_s;
    m.goodput.requests_per_s = static_cast<double>(served.met_slo) / span_s;
  }
}

}  // namespace kvsim
