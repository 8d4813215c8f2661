// Clusters on one clock (sim/cluster/): routers choosing on hand-built
// states, a disaggregated request's TTFT priced step by step, blocks back in
// every instance's pool, one instance behind a router serving exactly what
// it serves alone, and the `cluster:` section's errors.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "base/diagnostics.hpp"
#include "devices/timing_model.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/tiers/tier_config.hpp"
#include "sim/cluster/cluster_run.hpp"
#include "sim/cluster/cluster_spec.hpp"
#include "sim/cluster/kv_link.hpp"
#include "sim/cluster/routing_registry.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::CapturingSink;
using testing::scenario_from_text;

const char* kBase = R"(
name: cluster-test
seed: 7
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 16}
scheduler: {max_batched_tokens: 4096}
workload:
  kind: synthetic
  requests: 60
  arrival: {process: poisson, rate_per_s: 40}
  input_tokens: {dist: uniform, min: 64, max: 512}
  output_tokens: {dist: uniform, min: 4, max: 48}
  shared_prefix: {groups: 3, tokens: 128, popularity: uniform}
)";

std::string with(const std::string& extra) {
  return std::string(kBase) + extra;
}

Request request_of(std::vector<int32_t> prompt, uint64_t session = 0) {
  Request r;
  r.prompt = std::move(prompt);
  r.output = std::vector<int32_t>{1, 2};
  r.session = session;
  return r;
}

TEST(Routers, RoundRobinCyclesWhateverTheLoad) {
  auto rr = make_routing_policy("round_robin", routing_policy_defaults("round_robin"));
  std::vector<InstanceView> v(3);
  v[0].outstanding_tokens = 1000;
  const Request r = request_of({1, 2, 3});
  EXPECT_EQ(rr->pick(r, v), 0u);
  EXPECT_EQ(rr->pick(r, v), 1u);
  EXPECT_EQ(rr->pick(r, v), 2u);
  EXPECT_EQ(rr->pick(r, v), 0u);
}

TEST(Routers, LeastLoadedCountsTokensOrRequestsAndBreaksTiesLow) {
  std::vector<InstanceView> v(3);
  v[0] = {1, 900, nullptr};
  v[1] = {3, 300, nullptr};
  v[2] = {1, 900, nullptr};
  const Request r = request_of({1, 2, 3});
  auto by_tokens = make_routing_policy("least_loaded", routing_policy_defaults("least_loaded"));
  EXPECT_EQ(by_tokens->pick(r, v), 1u);
  config::ParamValues p = routing_policy_defaults("least_loaded");
  p.set("by", std::string("requests"), true);
  EXPECT_EQ(make_routing_policy("least_loaded", p)->pick(r, v), 0u);  // 0 and 2 tie: lowest
}

// Two paged caches of 64 blocks of 16 tokens; `warm` gets `prompt` computed
// and released, so its blocks sit in the cache, free and reusable.
struct TwoCaches {
  TwoCaches() {
    const ScenarioSpec s = scenario_from_text(kBase);
    PoolSizing sizing = s.pool_sizing();
    sizing.num_blocks = 64;
    for (auto& c : caches) c = s.policy().block_pool()->make(s, sizing);
  }
  void warm(size_t i, const std::vector<int32_t>& prompt) {
    KvCachePolicy& c = *caches[i];
    const TokenView t{prompt.data(), static_cast<int64_t>(prompt.size()), nullptr, 0};
    PrefixHit hit = c.lookup_prefix(t);
    const int64_t need = t.size() - hit.cached_tokens;
    const AdmitPlan plan = c.plan_admit(std::move(hit), need);
    ASSERT_TRUE(plan.fits);
    const SeqSlot slot = c.apply_admit(plan);
    c.commit(slot, t, t.size());
    c.release(slot);
  }
  std::unique_ptr<KvCachePolicy> caches[3];
};

std::vector<int32_t> prompt_of(int32_t seed, int64_t n) {
  std::vector<int32_t> p;
  for (int64_t i = 0; i < n; ++i) p.push_back(static_cast<int32_t>(seed * 1000 + i));
  return p;
}

TEST(Routers, PrefixAwarePicksTheLongestCachedPrefixWithinTheLoadBound) {
  TwoCaches c;
  const std::vector<int32_t> shared = prompt_of(1, 160);  // 10 blocks
  c.warm(1, shared);
  c.warm(2, std::vector<int32_t>(shared.begin(), shared.begin() + 64));  // 4 blocks
  std::vector<InstanceView> v(3);
  for (size_t i = 0; i < 3; ++i) v[i] = {1, 500, c.caches[i].get()};
  std::vector<int32_t> asked = shared;
  for (int32_t t = 0; t < 40; ++t) asked.push_back(9000 + t);
  const Request r = request_of(asked);
  auto pa = make_routing_policy("prefix_aware", routing_policy_defaults("prefix_aware"));
  EXPECT_EQ(pa->pick(r, v), 1u);  // 160 cached tokens against 64 and 0

  // Instance 1 over the bound (1.5 x the mean): the next longest prefix wins.
  v[1].outstanding_tokens = 5000;
  EXPECT_EQ(pa->pick(r, v), 2u);

  // A prompt nobody holds goes to the least loaded instance.
  v[0].outstanding_tokens = 100;
  EXPECT_EQ(pa->pick(request_of(prompt_of(7, 100)), v), 0u);

  // With a looser bound the longest prefix wins again.
  config::ParamValues loose = routing_policy_defaults("prefix_aware");
  loose.set("load_bound", 10.0, true);
  EXPECT_EQ(make_routing_policy("prefix_aware", loose)->pick(r, v), 1u);
}

// A prefix every instance reaches through the shared pool says nothing about
// where to go: the instance holding it on its device wins over a less
// loaded one that would read it from the pool.
TEST(Routers, PrefixAwareRanksWhatAnInstanceHoldsOverTheSharedPool) {
  const ScenarioSpec s = scenario_from_text(kBase);
  PoolSizing sizing = s.pool_sizing();
  sizing.num_blocks = 64;
  KvTierParams gp;
  gp.name = "global";
  gp.capacity = 64 * sizing.block_bytes;
  gp.read_bandwidth = gp.write_bandwidth = 25'000'000'000;
  gp.store = kStoreOnCompute;
  KvTiersConfig tiers;
  tiers.tiers.push_back(gp);
  auto pool = std::make_shared<KvTier>(gp, sizing.block_bytes);
  std::unique_ptr<KvCachePolicy> caches[2];
  for (auto& c : caches) {
    c = s.policy().block_pool()->make(s, sizing);
    c->attach_tiers(make_tier_chain(tiers, sizing.block_bytes, 16));
    ASSERT_TRUE(c->share_tier(pool));
  }
  const std::vector<int32_t> shared = prompt_of(3, 160);  // 10 blocks
  {
    KvCachePolicy& c = *caches[0];
    const TokenView t{shared.data(), 160, nullptr, 0};
    const SeqSlot slot = c.apply_admit(c.plan_admit(c.lookup_prefix(t), 160));
    c.commit(slot, t, 160);
    c.release(slot);
  }
  std::vector<int32_t> asked = shared;
  for (int32_t t = 0; t < 40; ++t) asked.push_back(9000 + t);
  const Request r = request_of(asked);
  EXPECT_EQ(caches[1]->lookup_prefix({asked.data(), 200, nullptr, 0}).cached_tokens, 160);
  std::vector<InstanceView> v = {{1, 600, caches[0].get()}, {0, 400, caches[1].get()}};
  auto pa = make_routing_policy("prefix_aware", routing_policy_defaults("prefix_aware"));
  EXPECT_EQ(pa->pick(r, v), 0u);  // same total hit, but instance 0 holds it itself
}

TEST(Routers, SessionAffinityKeepsASessionOnOneInstance) {
  auto sa = make_routing_policy("session_affinity", routing_policy_defaults("session_affinity"));
  std::vector<InstanceView> v(4);
  const size_t first = sa->pick(request_of({1}, 42), v);
  for (int k = 0; k < 5; ++k) {
    v[first].outstanding_tokens += 1000;  // load does not move a session
    EXPECT_EQ(sa->pick(request_of({static_cast<int32_t>(k)}, 42), v), first);
  }
  v = std::vector<InstanceView>(4, InstanceView{0, 100, nullptr});
  v[3].outstanding_tokens = 10;
  EXPECT_EQ(sa->pick(request_of({1}, 0), v), 3u);  // no session: least loaded
}

TEST(Routers, RegistryListsEveryPolicy) {
  EXPECT_EQ(routing_policy_names(),
            (std::vector<std::string>{"kv_cost", "least_loaded", "prefix_aware", "round_robin",
                                      "session_affinity", "weighted"}));
  EXPECT_THROW(make_routing_policy("nope", {}), std::invalid_argument);
}

// One request through a prefill instance, an HCCS transfer and a decode
// instance: TTFT = prefill step + (latency + bytes / bandwidth) + first
// decode step, each priced by the timing model as the engines price them.
TEST(Disaggregation, TtftIsPrefillPlusTransferPlusFirstDecodeStep) {
  const ScenarioSpec s = scenario_from_text(R"(
name: pd-one
seed: 3
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 16}
scheduler: {max_batched_tokens: 4096}
cluster:
  transfer: {link: hccs, layerwise: false}
  groups:
    p: {role: prefill}
    d: {role: decode}
workload: {kind: synthetic, requests: 1, arrival: {process: poisson, rate_per_s: 1}, input_tokens: 1000, output_tokens: 4}
)");
  CapturingSink sink;
  ClusterRun run(s, *s.cluster, make_engine, &sink);
  const RunMetrics m = run.run();
  ASSERT_EQ(sink.request_rows.size(), 1u);
  const RequestRow& row = sink.request_rows[0];
  ASSERT_EQ(row.status, "completed");
  EXPECT_EQ(row.output_tokens, 4);

  const InstanceSpec& p = *s.cluster->groups[0].spec;
  const TimingModel timing(p.device, p.model, {p.tp, 2});
  StepWork prefill, decode;
  prefill.seqs.push_back({1000, 0, true});
  decode.seqs.push_back({1, 999, true});  // the prompt's KV arrived; its last token computes
  const TimeNs prefill_ns = timing.price(prefill).latency;
  const TimeNs decode_ns = timing.price(decode).latency;
  const Bytes kv_per_token = run.memory_plan().kv_bytes_per_token;
  const Bytes bytes = 1000 * kv_per_token;
  const TimeNs transfer_ns =
      p.device.device_link_latency +
      static_cast<TimeNs>(std::ceil(static_cast<double>(bytes) * 1e9 /
                                    static_cast<double>(p.device.device_link_bandwidth)));
  EXPECT_EQ(row.first_token - row.arrival, prefill_ns + transfer_ns + decode_ns);
  ASSERT_TRUE(m.find<ClusterMetrics>() != nullptr);
  EXPECT_EQ(m.find<ClusterMetrics>()->transfer.requests, 1);
  EXPECT_EQ(m.find<ClusterMetrics>()->transfer.bytes, bytes);
  EXPECT_DOUBLE_EQ(m.find<ClusterMetrics>()->transfer.time_s,
                   static_cast<double>(transfer_ns) / 1e9);
  EXPECT_EQ(m.find<ClusterMetrics>()->prefill_instances, 1);
  EXPECT_EQ(m.find<ClusterMetrics>()->decode_instances, 1);
}

TEST(Disaggregation, LayerwiseLeavesOnlyTheLastLayersShare) {
  const KvLink link{"hccs", 100'000'000'000, 20'000};
  const KvTransferPrice whole = price_kv_transfer(1000, 32768, 2, 16, false, link);
  const KvTransferPrice layered = price_kv_transfer(1000, 32768, 2, 16, true, link);
  EXPECT_EQ(whole.bytes, 2 * 1000 * 32768);
  EXPECT_EQ(layered.bytes, whole.bytes);
  EXPECT_EQ(whole.time, 20'000 + 327'680);  // per rank: 32.768 MB at 100 GB/s
  EXPECT_EQ(layered.time, 20'000 + 20'480);
}

TEST(Cluster, EveryRequestServedAndEveryBlockBackInItsPool) {
  for (const char* router : {"round_robin", "least_loaded", "prefix_aware", "session_affinity"}) {
    const ScenarioSpec s = scenario_from_text(with(fmt::format(R"(
cluster:
  router: {{policy: {}}}
  groups:
    a: {{count: 2}}
    b: {{count: 1, kv_cache: {{memory_fraction: 0.5}}}}
)",
                                                               router)));
    ClusterRun run(s, *s.cluster, make_engine, nullptr);
    const RunMetrics m = run.run();
    EXPECT_EQ(m.requests.completed, 60) << router;
    ASSERT_EQ(run.instances(), 3u);
    int64_t served = 0;
    for (const auto& i : m.find<ClusterMetrics>()->per_instance) served += i.completed;
    EXPECT_EQ(served, 60) << router;
    for (size_t i = 0; i < run.instances(); ++i) {
      const KvCachePolicy* cache = run.engine(i).cache_policy();
      ASSERT_NE(cache, nullptr);
      EXPECT_EQ(cache->free_blocks(), run.engine(i).memory_plan().num_blocks) << router << i;
    }
    EXPECT_EQ(m.find<ClusterMetrics>()->router, router);
  }
}

TEST(Cluster, PrefillDecodeSplitServesEveryRequestAndMovesItsKv) {
  const ScenarioSpec s = scenario_from_text(with(R"(
cluster:
  router: {policy: prefix_aware}
  groups:
    p: {role: prefill, count: 2}
    d: {role: decode, count: 2}
)"));
  const RunMetrics m = run_scenario(s, nullptr).metrics;
  EXPECT_EQ(m.requests.completed, 60);
  EXPECT_EQ(m.find<ClusterMetrics>()->transfer.requests, 60);
  EXPECT_GT(m.find<ClusterMetrics>()->transfer.bytes, 0);
  EXPECT_GT(testing::pool_of(m).prefix_hit_rate,
            0.0);  // the shared prefixes hit on the prefill side
}

// A cluster of one instance is that instance alone: the same rows and the
// same latencies; only cluster.* is added.
TEST(Cluster, OneInstanceBehindARouterServesWhatItServesAlone) {
  CapturingSink alone_rows, cluster_rows;
  const RunMetrics alone = run_scenario(scenario_from_text(kBase), &alone_rows).metrics;
  const RunMetrics one =
      run_scenario(scenario_from_text(with("cluster: {groups: {solo: {count: 1}}}\n")),
                   &cluster_rows)
          .metrics;
  ASSERT_EQ(alone_rows.request_rows.size(), cluster_rows.request_rows.size());
  for (size_t i = 0; i < alone_rows.request_rows.size(); ++i) {
    const RequestRow& a = alone_rows.request_rows[i];
    const RequestRow& b = cluster_rows.request_rows[i];
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.first_token, b.first_token);
    EXPECT_EQ(a.finished, b.finished);
    EXPECT_EQ(a.cached_tokens, b.cached_tokens);
  }
  EXPECT_EQ(alone.latency_ms.ttft.p99, one.latency_ms.ttft.p99);
  EXPECT_EQ(alone.latency_ms.itl.p50, one.latency_ms.itl.p50);
  EXPECT_EQ(testing::pool_of(alone).prefix_hit_rate, testing::pool_of(one).prefix_hit_rate);
  EXPECT_EQ(alone.kv_cache.peak_used_bytes, one.kv_cache.peak_used_bytes);
  EXPECT_FALSE((alone.find<ClusterMetrics>() != nullptr));
  EXPECT_EQ(metrics_to_json(alone).count("cluster"), 0u);
  EXPECT_EQ(metrics_to_json(one).count("cluster"), 1u);
}

// A global pool shared by every instance: a prefix computed on one serves
// the others, so round-robin routing finds the shared prefixes wherever it
// sends a request; the pool's reads are priced at the device's RoCE link
// times the instance's ranks; its blocks balance over the instances.
TEST(Cluster, AGlobalPoolServesEveryInstanceAndBalances) {
  const std::string groups = R"(
  router: {policy: round_robin}
  groups:
    a: {count: 3, parallel: {tensor: 2}}
)";
  const RunMetrics alone =
      run_scenario(scenario_from_text(with("cluster:" + groups)), nullptr).metrics;
  const ScenarioSpec s =
      scenario_from_text(with("cluster:\n  global_pool: {capacity: 64GiB}" + groups));
  const GlobalPoolConfig& gp = s.cluster->global_pool;
  const DeviceSpec& device = s.cluster->groups[0].spec->device;
  EXPECT_EQ(gp.tier.read_bandwidth, device.network_link_bandwidth * 2);
  EXPECT_EQ(gp.tier.latency, device.network_link_latency);
  ClusterRun run(s, *s.cluster, make_engine, nullptr);
  const RunMetrics m = run.run();  // throws unless every balance holds
  EXPECT_EQ(m.requests.completed, 60);
  ASSERT_NE(run.global_pool(), nullptr);
  EXPECT_EQ(run.global_pool()->block_bytes(), run.memory_plan().block_bytes * 2);
  EXPECT_GT(testing::tiers_of(m).global.hit_tokens, 0);
  EXPECT_GT(testing::pool_of(m).prefix_hit_rate, testing::pool_of(alone).prefix_hit_rate);
  EXPECT_NEAR(testing::tiers_of(m).device_hit_rate + testing::tiers_of(m).global.hit_rate,
              testing::pool_of(m).prefix_hit_rate, 1e-12);
  EXPECT_EQ(testing::tiers_of(m).global.bytes_read,
            testing::tiers_of(m).global.hit_tokens / 16 * run.global_pool()->block_bytes());
  EXPECT_EQ(static_cast<uint64_t>(testing::tiers_of(m).global.blocks_held),
            m.find<ClusterMetrics>()->global_pool.puts);
  EXPECT_EQ(m.find<ClusterMetrics>()->global_pool.instances, 3);
  EXPECT_EQ(testing::tiers_of(m).global.bytes_written,
            static_cast<Bytes>(m.find<ClusterMetrics>()->global_pool.puts) *
                run.global_pool()->block_bytes());
  // Without a pool the cluster's kv_tiers are the device's alone.
  EXPECT_DOUBLE_EQ(testing::tiers_of(alone).device_hit_rate,
                   testing::pool_of(alone).prefix_hit_rate);
  EXPECT_EQ(alone.find<ClusterMetrics>()->global_pool.puts, 0u);
}

std::string load_error(const std::string& yaml) {
  try {
    scenario_from_text(yaml);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ClusterConfig, BadSectionsAreErrorsWithTheirPlace) {
  const std::string no_decode = load_error(with("cluster: {groups: {p: {role: prefill}}}\n"));
  EXPECT_NE(no_decode.find("0 mixed, 1 prefill and 0 decode instances"), std::string::npos)
      << no_decode;
  const std::string router =
      load_error(with("cluster: {router: {policy: prefix_awar}, groups: {a: {}}}\n"));
  EXPECT_NE(router.find("prefix_aware"), std::string::npos) << router;
  const std::string foreign = load_error(
      with("cluster: {router: {policy: round_robin, load_bound: 2}, groups: {a: {}}}\n"));
  EXPECT_NE(foreign.find("not a parameter of router 'round_robin'"), std::string::npos) << foreign;
  // The 910B3's file names no network port: a RoCE transfer has no figures.
  const std::string link = load_error(with(
      "cluster: {transfer: {link: roce}, groups: {p: {role: prefill, device: ascend-910b3}, d: "
      "{role: decode}}}\n"));
  EXPECT_NE(link.find("network_link_bandwidth"), std::string::npos) << link;
  const std::string key = load_error(with("cluster: {groups: {a: {cuont: 2}}}\n"));
  EXPECT_NE(key.find("did you mean 'count'"), std::string::npos) << key;
  // A group's own section is checked like the file's: the group's value, its place.
  const std::string tp = load_error(with("cluster: {groups: {a: {parallel: {tensor: 3}}}}\n"));
  EXPECT_NE(tp.find("parallel.tensor"), std::string::npos) << tp;
}

TEST(ClusterConfig, GlobalPoolErrorsNameTheirPlace) {
  const std::string dram =
      "kv_tiers: {tiers: {dram: {capacity: 1GiB, read_bandwidth: 25GB/s, write_bandwidth: "
      "25GB/s}}}\n";
  // The 910B3's file names no network port: the pool's RoCE link has no figures.
  const std::string link = load_error(
      with("cluster: {global_pool: {capacity: 1TB}, groups: {a: {device: ascend-910b3}}}\n"));
  EXPECT_NE(link.find("network_link_bandwidth"), std::string::npos) << link;
  EXPECT_NE(link.find("cluster.global_pool"), std::string::npos) << link;
  const std::string own =
      load_error(with("kv_tiers: {tiers: [{name: global, capacity: 1TB, read_bandwidth: 1GB/s, "
                      "write_bandwidth: 1GB/s}]}\ncluster: {groups: {a: {count: 2}}}\n"));
  EXPECT_NE(own.find("lists a `global` tier of its own"), std::string::npos) << own;
  const std::string decode =
      load_error(with(dram + "cluster: {groups: {p: {role: prefill}, d: {role: decode}}}\n"));
  EXPECT_NE(decode.find("decode group 'd' has tiers"), std::string::npos) << decode;
  EXPECT_EQ(load_error(with(dram + "cluster: {global_pool: {capacity: 1TB}, groups: {p: {role: "
                                   "prefill}, d: {role: decode, kv_tiers: {tiers: []}}}}\n")),
            "no error");
  const std::string no_prefix =
      load_error(with("cluster: {global_pool: {capacity: 1TB}, groups: {a: {kv_cache: "
                      "{prefix_caching: false}}}}\n"));
  EXPECT_NE(no_prefix.find("keeps no prefix blocks"), std::string::npos) << no_prefix;
  const std::string mixed = load_error(
      with("cluster: {global_pool: {capacity: 1TB}, groups: {a: {}, b: {kv_cache: {block_size: "
           "32}}}}\n"));
  EXPECT_NE(mixed.find("reaches the global pool with blocks of"), std::string::npos) << mixed;
  const std::string key =
      load_error(with("cluster: {global_pool: {capacty: 1TB}, groups: {a: {}}}\n"));
  EXPECT_NE(key.find("did you mean 'capacity'"), std::string::npos) << key;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
