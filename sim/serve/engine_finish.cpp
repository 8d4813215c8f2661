// The end of a serving run: every request out and every block back, then
// the run's metrics from the shell's common ones, the pool's geometry and
// accounting, the pipeline's layout and the policy's own counters.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/core/link_metrics.hpp"
#include "sim/core/llama_bench_metrics.hpp"
#include "sim/serve/engine.hpp"
#include "sim/serve/pipeline_metrics.hpp"
#include "sim/serve/serving_metrics.hpp"
#include "workloads/dialog_workload_spec.hpp"

namespace kvsim {

RunMetrics ServingEngine::finish() {
  if (scheduler_->num_running() + scheduler_->num_waiting() + scheduler_->num_swapped() != 0 ||
      step_in_flight_) {
    throw std::logic_error(fmt::format(
        "the run ended with requests in flight: {} running, {} waiting, {} swapped",
        scheduler_->num_running(), scheduler_->num_waiting(), scheduler_->num_swapped()));
  }
  // Pins left (a run stopped before its last expiry) go first: every block
  // must be back in the pool with no reference: fail loudly.
  if (retention_) retention_->close();
  policy_->check_drained();
  observe(sim_.now(), 0, 0, /*force_row=*/true);

  const TimeNs total = sim_.now();
  RunMetrics m = shell_.common_metrics(std::string(policy_->name()), steps_, total);
  if (scenario_.workload) {
    if (const auto* d = std::get_if<DialogWorkloadSpec>(&scenario_.workload->body); d && d->bench) {
      LlamaBenchMetrics& b = m.part<LlamaBenchMetrics>();
      bench_samples_.resize(std::max(bench_samples_.size(), d->bench->tests.size()));
      for (size_t i = 0; i < d->bench->tests.size(); ++i) {
        const LlamaBenchTest& t = d->bench->tests[i];
        b.tests.push_back({t.name, t.key, t.n_prompt, t.n_gen, t.n_depth, bench_samples_[i]});
      }
    }
  }
  m.requests.preempted = preempted_requests_;
  m.requests.preemptions = static_cast<int64_t>(scheduler_->preemptions());
  const CacheAccounting acc = policy_->accounting();
  ServingPoolMetrics& pool = m.part<ServingPoolMetrics>();
  pool.block_bytes = sizing_.block_bytes;
  pool.block_size = pool_.block_size();
  pool.num_blocks = sizing_.num_blocks;
  m.kv_cache.capacity_tokens = sizing_.capacity_tokens;
  m.kv_cache.kv_bytes_per_token = sizing_.kv_bytes_per_token;
  m.kv_cache.peak_used_bytes = kv_used_.peak();
  m.kv_cache.mean_used_bytes = kv_used_.mean(static_cast<double>(total));
  pool.fragmentation = frag_time_ > 0 ? frag_integral_ / frag_time_ : 0.0;
  pool.prefix_hit_rate = acc.prefix_query_tokens > 0
                             ? static_cast<double>(acc.prefix_hit_tokens) /
                                   static_cast<double>(acc.prefix_query_tokens)
                             : 0.0;
  pool.recompute_hit_rate = acc.recompute_query_tokens > 0
                                ? static_cast<double>(acc.recompute_hit_tokens) /
                                      static_cast<double>(acc.recompute_query_tokens)
                                : 0.0;
  m.kv_cache.bytes_moved = acc.bytes_moved;
  m.kv_cache.pointer_updates = acc.pointer_updates;
  pool.evictions = acc.evictions;
  pool.swapped_bytes = acc.swapped_bytes;
  m.kv_cache.window_evicted_tokens = acc.window_evicted_tokens;
  m.memory.device_bytes = scenario_.device.memory_bytes;
  m.memory.weights_bytes = sizing_.weights_bytes;
  m.memory.kv_bytes = sizing_.num_blocks * sizing_.block_bytes;
  pool.activation_reserve_bytes = sizing_.activation_reserve;
  if (timing_->stages() > 1) {
    PipelineMetrics& p = m.part<PipelineMetrics>();
    p.stages = timing_->stages();
    p.micro_batches = scenario_.micro_batches;
    p.devices = scenario_.tp * scenario_.pp;
    for (const PipelineStage& stage : timing_->stage_layout()) {
      if (!p.layers.empty()) p.layers += ',';
      p.layers += std::to_string(stage.layers);
    }
    p.link = scenario_.pipeline_network_link ? "network" : "device";
    p.binding_stage = sizing_.binding_stage;
    p.binding_stage_layers = sizing_.stage_layers;
    p.binding_stage_weights_bytes = sizing_.weights_bytes;
    p.stage_link_bytes = stage_link_bytes_;
  }
  if (speculation_)
    m.part<SpeculativeMetrics>() =
        speculation_->metrics(sizing_.drafter_weights_bytes, sizing_.drafter_kv_bytes_per_token);
  if (retention_) m.part<SessionRetentionMetrics>() = retention_->metrics(total);
  // Each tier port's traffic (kv_movement.links); a cluster adds the
  // links its instances share.
  for (const auto& link : tier_links_)
    m.part<KvMovementMetrics>().links.push_back(link_metrics(*link));
  policy_->report(m);  // the policy's own counters (kv_cache.chunk_*, memory pools)
  if (numerics_) numerics_->report(m);
  if (layout_cost_) layout_cost_->report(m);
  if (host_work_) host_work_->report(m);
  return m;
}

}  // namespace kvsim
