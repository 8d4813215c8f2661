// A cluster's metrics: the keys every run reports, over all its instances
// (requests and latencies as the cluster's clients see them: a disaggregated
// request's TTFT runs from its arrival to its first token at the decode
// instance), and cluster.* (the instances, the routers, the KV moved between
// prefill and decode instances).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "sim/cache/tiers/kv_tier.hpp"
#include "sim/cache/tiers/tier_metrics.hpp"
#include "sim/cluster/cluster_metrics.hpp"
#include "sim/cluster/cluster_run.hpp"
#include "sim/core/link_metrics.hpp"
#include "sim/serve/data_parallel_metrics.hpp"
#include "sim/serve/serving_metrics.hpp"
#include "sim/serve/session_retention_metrics.hpp"
#include "sim/serve/speculative_metrics.hpp"

namespace kvsim {

RunMetrics ClusterRun::collect(std::vector<RunMetrics> per) {
  int64_t steps = 0;
  for (const RunMetrics& p : per) steps += p.sim.steps;
  RunMetrics m = shell_.common_metrics(per.front().policy, steps, sim_.now());
  m.workload.skipped_records = source_->skipped_records();
  const PoolSizing first = instances_.front()->engine->memory_plan();
  ServingPoolMetrics& pool = m.part<ServingPoolMetrics>();
  const ServingPoolMetrics& first_pool = per.front().parts.get_or_zero<ServingPoolMetrics>();
  pool.block_bytes = first.block_bytes;
  pool.block_size = first_pool.block_size;
  m.kv_cache.kv_bytes_per_token = first.kv_bytes_per_token;
  m.memory.device_bytes = per.front().memory.device_bytes;
  pool.activation_reserve_bytes = first_pool.activation_reserve_bytes;
  int64_t hit_tokens = 0, query_tokens = 0;
  double frag_weighted = 0, frag_weight = 0;
  for (size_t i = 0; i < per.size(); ++i) {
    const RunMetrics& p = per[i];
    const ServingPoolMetrics& p_pool = p.parts.get_or_zero<ServingPoolMetrics>();
    const Instance& inst = *instances_[i];
    m.requests.preempted += p.requests.preempted;
    add_session_retention(p, m);  // scheduler.session_retention's counters, when on
    m.requests.preemptions += p.requests.preemptions;
    // Pools side by side: capacities and usage add up (the peak is the sum of
    // each pool's own peak, an upper bound of the cluster's simultaneous one).
    pool.num_blocks += p_pool.num_blocks;
    m.kv_cache.capacity_tokens += p.kv_cache.capacity_tokens;
    m.kv_cache.peak_used_bytes += p.kv_cache.peak_used_bytes;
    m.kv_cache.mean_used_bytes += p.kv_cache.mean_used_bytes;
    m.kv_cache.bytes_moved += p.kv_cache.bytes_moved;
    m.kv_cache.pointer_updates += p.kv_cache.pointer_updates;
    pool.evictions += p_pool.evictions;
    pool.swapped_bytes += p_pool.swapped_bytes;
    m.kv_cache.window_evicted_tokens += p.kv_cache.window_evicted_tokens;
    frag_weighted += p_pool.fragmentation * p.kv_cache.mean_used_bytes;
    frag_weight += p.kv_cache.mean_used_bytes;
    m.memory.weights_bytes += p.memory.weights_bytes;
    m.memory.kv_bytes += p.memory.kv_bytes;
    // The hit rate of the prompts the cluster was asked: a decode instance
    // looks up prompts whose KV came over the link, not from its cache.
    if (inst.group->role != InstanceRole::decode) {
      if (const KvCachePolicy* cache = inst.engine->cache_policy()) {
        const CacheAccounting acc = cache->accounting();
        hit_tokens += acc.prefix_hit_tokens;
        query_tokens += acc.prefix_query_tokens;
      }
    }
  }
  pool.fragmentation = frag_weight > 0 ? frag_weighted / frag_weight : 0.0;
  pool.prefix_hit_rate =
      query_tokens > 0 ? static_cast<double>(hit_tokens) / static_cast<double>(query_tokens) : 0;
  collect_tiers(per, query_tokens, hit_tokens, m);

  ClusterMetrics c;
  c.instances = static_cast<int64_t>(instances_.size());
  c.prefill_instances = cluster_.instances_of(InstanceRole::prefill);
  c.decode_instances = cluster_.instances_of(InstanceRole::decode);
  c.router = cluster_.router.policy;
  c.decode_router = c.decode_instances > 0 ? cluster_.decode_router.policy : "";
  int64_t front_max = 0, front_sum = 0;
  for (size_t i : front_) {
    front_max = std::max(front_max, per[i].requests.arrived);
    front_sum += per[i].requests.arrived;
  }
  c.load_imbalance = front_sum > 0
                         ? static_cast<double>(front_max) * static_cast<double>(front_.size()) /
                               static_cast<double>(front_sum)
                         : 0.0;
  c.transfer.requests = transfers_;
  c.transfer.bytes = transfer_bytes_;
  c.transfer.time_s = static_cast<double>(transfer_time_) / 1e9;
  c.transfer.mean_ms =
      transfers_ > 0 ? static_cast<double>(transfer_time_) / 1e6 / static_cast<double>(transfers_)
                     : 0.0;
  c.transfer.max_ms = static_cast<double>(transfer_max_) / 1e6;
  if (pool_) {
    c.global_pool.capacity_bytes = pool_->params().capacity;
    c.global_pool.capacity_blocks = pool_->capacity_blocks();
    c.global_pool.instances = static_cast<int64_t>(front_.size());
    c.global_pool.puts = pool_->puts();
  }
  for (size_t i = 0; i < per.size(); ++i) {
    const RunMetrics& p = per[i];
    const ServingPoolMetrics& p_pool = p.parts.get_or_zero<ServingPoolMetrics>();
    const Instance& inst = *instances_[i];
    ClusterInstanceMetrics e;
    e.group = inst.group->name;
    e.role = std::string(instance_role_name(inst.group->role));
    e.arrived = p.requests.arrived;
    e.completed = p.requests.completed;
    e.rejected = p.requests.rejected;
    e.preemptions = p.requests.preemptions;
    e.steps = p.sim.steps;
    e.prefix_hit_rate = p_pool.prefix_hit_rate;
    e.ttft_p50_ms = p.latency_ms.ttft.p50;
    e.ttft_p99_ms = p.latency_ms.ttft.p99;
    e.peak_used_bytes = p.kv_cache.peak_used_bytes;
    e.devices = inst.group->spec->tp * std::max<int64_t>(inst.group->spec->pp, 1);
    e.kv_bytes_per_device = p.memory.kv_bytes;
    e.weights_bytes_per_device = p.memory.weights_bytes;
    c.per_instance.push_back(std::move(e));
  }
  m.part<ClusterMetrics>() = std::move(c);
  collect_links(per, m);
  if (!dp_groups_.empty()) {
    std::vector<const DataParallelGroup*> groups;
    for (const auto& g : dp_groups_) groups.push_back(g.get());
    m.part<DataParallelMetrics>() = data_parallel_metrics(groups);
  }
  collect_speculative(per, m);
  return m;
}

// speculative.* over the instances: counts summed, the rates and means
// taken again from the sums (each instance's per-position counts), step
// times as means over every instance's steps.
void ClusterRun::collect_speculative(const std::vector<RunMetrics>& per, RunMetrics& m) const {
  SpeculativeMetrics out;
  bool any = false;
  double verify_ms = 0, draft_ms = 0, steps = 0;
  for (const RunMetrics& p : per) {
    const SpeculativeMetrics* s = p.find<SpeculativeMetrics>();
    if (s == nullptr) continue;
    if (!any) {
      out.method = s->method;
      out.num_speculative_tokens = s->num_speculative_tokens;
      out.drafter_weights_bytes = s->drafter_weights_bytes;
      out.drafter_kv_bytes_per_token = s->drafter_kv_bytes_per_token;
      out.proposed_per_position.assign(s->proposed_per_position.size(), 0);
      out.accepted_per_position.assign(s->accepted_per_position.size(), 0);
    }
    any = true;
    out.verifies += s->verifies;
    out.draft_tokens += s->draft_tokens;
    out.accepted_tokens += s->accepted_tokens;
    for (size_t i = 0; i < s->proposed_per_position.size() && i < out.proposed_per_position.size();
         ++i) {
      out.proposed_per_position[i] += s->proposed_per_position[i];
      out.accepted_per_position[i] += s->accepted_per_position[i];
    }
    const double n = static_cast<double>(p.sim.steps);
    verify_ms += s->verify_ms_per_step * n;
    draft_ms += s->draft_ms_per_step * n;
    steps += n;
  }
  if (!any) return;
  for (size_t i = 0; i < out.proposed_per_position.size(); ++i)
    out.acceptance_rate_per_position.push_back(
        out.proposed_per_position[i] > 0 ? static_cast<double>(out.accepted_per_position[i]) /
                                               static_cast<double>(out.proposed_per_position[i])
                                         : 0.0);
  out.mean_accepted_length = out.verifies > 0 ? 1.0 + static_cast<double>(out.accepted_tokens) /
                                                          static_cast<double>(out.verifies)
                                              : 0.0;
  out.acceptance_rate = out.draft_tokens > 0 ? static_cast<double>(out.accepted_tokens) /
                                                   static_cast<double>(out.draft_tokens)
                                             : 0.0;
  out.verify_ms_per_step = steps > 0 ? verify_ms / steps : 0.0;
  out.draft_ms_per_step = steps > 0 ? draft_ms / steps : 0.0;
  m.part<SpeculativeMetrics>() = std::move(out);
}

// kv_tiers.* over the instances: hits as shares of the prompts the cluster
// was asked (the denominator of prefix_hit_rate), bytes, load, store-wait
// and lookup times summed; a tier each instance owns adds its evictions and
// blocks, the shared pool counts its own once; pinned_peak_blocks is the
// most one instance's stores held.
void ClusterRun::collect_tiers(const std::vector<RunMetrics>& per, int64_t query_tokens,
                               int64_t hit_tokens, RunMetrics& m) const {
  auto rate = [&](int64_t tokens) {
    return query_tokens > 0 ? static_cast<double>(tokens) / static_cast<double>(query_tokens) : 0.0;
  };
  KvTiersMetrics& tiers = m.part<KvTiersMetrics>();
  int64_t lower = 0;
  for (const std::string& name : kv_tier_names()) {
    KvTierMetrics& out = *tiers.tier(name);
    out = {};
    for (size_t i = 0; i < per.size(); ++i) {
      const KvTierMetrics& t = *per[i].parts.get_or_zero<KvTiersMetrics>().tier(name);
      if (instances_[i]->group->role != InstanceRole::decode) out.hit_tokens += t.hit_tokens;
      out.bytes_read += t.bytes_read;
      out.bytes_written += t.bytes_written;
      out.evictions += t.evictions;
      out.blocks_held += t.blocks_held;
      // Pins are an instance's own device blocks: the most one instance held.
      out.pinned_peak_blocks = std::max(out.pinned_peak_blocks, t.pinned_peak_blocks);
    }
    if (pool_ && name == pool_->name()) {
      out.evictions = pool_->evictions();
      out.blocks_held = pool_->blocks_held();
    }
    out.hit_rate = rate(out.hit_tokens);
    lower += out.hit_tokens;
  }
  tiers.device_hit_rate = rate(hit_tokens - lower);
  tiers.load_time_s = tiers.store_wait_s = tiers.lookup_time_s = 0;
  for (const RunMetrics& p : per) {
    const KvTiersMetrics& t = p.parts.get_or_zero<KvTiersMetrics>();
    tiers.load_time_s += t.load_time_s;
    tiers.store_wait_s += t.store_wait_s;
    tiers.lookup_time_s += t.lookup_time_s;
  }
}

// kv_movement.links: each instance's port and its engine's tier ports,
// named after it as its port is ("replica3.kv_tiers.dram.read"), then the
// links instances share (cluster.links).
void ClusterRun::collect_links(const std::vector<RunMetrics>& per, RunMetrics& m) const {
  std::vector<LinkMetrics>& out = m.part<KvMovementMetrics>().links;
  out.clear();
  std::map<const InstanceGroup*, int64_t> seen;
  for (size_t i = 0; i < per.size(); ++i) {
    const Instance& inst = *instances_[i];
    const std::string prefix = fmt::format("{}{}.", inst.group->name, seen[inst.group]++);
    if (inst.port) out.push_back(link_metrics(*inst.port));
    for (LinkMetrics l : per[i].parts.get_or_zero<KvMovementMetrics>().links) {
      l.name = prefix + l.name;
      out.push_back(std::move(l));
    }
  }
  for (const auto& [name, link] : links_->links()) out.push_back(link_metrics(*link));
}

namespace {

void write_cluster(const RunMetrics& m, nlohmann::ordered_json& j) {
  const ClusterMetrics* found = m.find<ClusterMetrics>();
  if (found == nullptr) return;  // one instance: its file keeps exactly its keys
  const ClusterMetrics& c = *found;
  auto& o = j["cluster"];
  o["instances"] = c.instances;
  o["prefill_instances"] = c.prefill_instances;
  o["decode_instances"] = c.decode_instances;
  o["router"] = c.router;
  o["decode_router"] = c.decode_router;
  o["load_imbalance"] = c.load_imbalance;
  auto& t = o["transfer"];
  t["requests"] = c.transfer.requests;
  t["bytes"] = c.transfer.bytes;
  t["time_s"] = c.transfer.time_s;
  t["mean_ms"] = c.transfer.mean_ms;
  t["max_ms"] = c.transfer.max_ms;
  auto& g = o["global_pool"];
  g["capacity_bytes"] = c.global_pool.capacity_bytes;
  g["capacity_blocks"] = c.global_pool.capacity_blocks;
  g["instances"] = c.global_pool.instances;
  g["puts"] = c.global_pool.puts;
  auto list = nlohmann::ordered_json::array();
  for (const ClusterInstanceMetrics& i : c.per_instance) {
    nlohmann::ordered_json e;
    e["group"] = i.group;
    e["role"] = i.role;
    e["arrived"] = i.arrived;
    e["completed"] = i.completed;
    e["rejected"] = i.rejected;
    e["preemptions"] = i.preemptions;
    e["steps"] = i.steps;
    e["prefix_hit_rate"] = i.prefix_hit_rate;
    e["ttft_p50_ms"] = i.ttft_p50_ms;
    e["ttft_p99_ms"] = i.ttft_p99_ms;
    e["peak_used_bytes"] = i.peak_used_bytes;
    e["devices"] = i.devices;
    e["kv_bytes_per_device"] = i.kv_bytes_per_device;
    e["weights_bytes_per_device"] = i.weights_bytes_per_device;
    list.push_back(std::move(e));
  }
  o["per_instance"] = std::move(list);
}

}  // namespace

MetricsSection cluster_metrics_section() {
  return {"cluster", write_cluster};
}

}  // namespace kvsim
