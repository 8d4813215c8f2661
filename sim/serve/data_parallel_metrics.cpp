#include "sim/serve/data_parallel_metrics.hpp"

#include <algorithm>

#include "sim/core/metrics.hpp"

namespace kvsim {

DataParallelMetrics data_parallel_metrics(const std::vector<const DataParallelGroup*>& groups) {
  DataParallelMetrics m;
  m.groups = static_cast<int64_t>(groups.size());
  if (groups.empty()) return m;
  m.ranks = static_cast<int64_t>(groups.front()->ranks());
  double step_ns = 0, wait_ns = 0, rank_time = 0, ratio = 0;
  bool first = true;
  for (const DataParallelGroup* g : groups) {
    const DataParallelGroupMetrics& gm = g->metrics();
    m.steps += gm.steps;
    step_ns += gm.step_ns;
    wait_ns += gm.wait_ns;
    ratio += gm.max_over_mean;
    rank_time += gm.step_ns * static_cast<double>(gm.ranks);
    for (const DataParallelRankMetrics& r : gm.per_rank) {
      DataParallelRankSummary s;
      s.steps = r.steps;
      const double n = r.steps > 0 ? static_cast<double>(r.steps) : 1.0;
      s.mean_batch = r.seqs / n;
      s.mean_tokens = r.tokens / n;
      s.wait_fraction = gm.step_ns > 0 ? r.wait_ns / gm.step_ns : 0.0;
      m.rank_mean_batch_min = first ? s.mean_batch : std::min(m.rank_mean_batch_min, s.mean_batch);
      m.rank_mean_batch_max = first ? s.mean_batch : std::max(m.rank_mean_batch_max, s.mean_batch);
      first = false;
      m.per_rank.push_back(s);
    }
  }
  const double steps = m.steps > 0 ? static_cast<double>(m.steps) : 1.0;
  m.step_ms_mean = step_ns / steps / 1e6;
  m.wait_fraction = rank_time > 0 ? wait_ns / rank_time : 0.0;
  m.slowest_over_mean = m.steps > 0 ? ratio / steps : 0.0;
  return m;
}

namespace {

void write_data_parallel(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const DataParallelMetrics* found = m.find<DataParallelMetrics>();
  if (found == nullptr) return;
  const DataParallelMetrics& d = *found;
  auto ranks = nlohmann::ordered_json::array();
  for (const DataParallelRankSummary& r : d.per_rank) {
    nlohmann::ordered_json e;
    e["steps"] = r.steps;
    e["mean_batch"] = r.mean_batch;
    e["mean_tokens"] = r.mean_tokens;
    e["wait_fraction"] = r.wait_fraction;
    ranks.push_back(std::move(e));
  }
  MetricsObject o = metrics_object(doc, "data_parallel");
  o.put("groups", d.groups)
      .put("ranks", d.ranks)
      .put("steps", d.steps)
      .put("step_ms_mean", d.step_ms_mean)
      .put("wait_fraction", d.wait_fraction)
      .put("slowest_over_mean", d.slowest_over_mean)
      .put("rank_mean_batch_min", d.rank_mean_batch_min)
      .put("rank_mean_batch_max", d.rank_mean_batch_max)
      .put("per_rank", std::move(ranks));
}

}  // namespace

MetricsSection data_parallel_metrics_section() {
  return {"data_parallel", write_data_parallel};
}

}  // namespace kvsim
