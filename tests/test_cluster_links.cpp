// Links a cluster's instances share (sim/cluster/cluster_links.hpp): with
// every link to itself a cluster run is what it was before links were
// shared; eight replicas reading the global pool over one node's NIC share
// it (their reads take longer, TTFT rises); the `cluster.links` section and
// the `via:` lists are read with their errors in place.
#include <gtest/gtest.h>

#include <string>

#include "base/diagnostics.hpp"
#include "scenario_helpers.hpp"
#include "sim/cluster/cluster_links.hpp"
#include "sim/cluster/cluster_run.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::scenario_from_text;

// Eight replicas of a 1B model, each prompt a long shared prefix plus its
// own tail, routed round robin: the prefixes one replica computed are found
// by the others in the global pool and read over RoCE (25 GB/s, 20 us on the
// 910B2), many at once.
const char* kBase = R"(
name: links-test
seed: 11
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 16}
scheduler: {max_batched_tokens: 8192}
workload:
  kind: synthetic
  requests: 160
  arrival: {process: poisson, rate_per_s: 400}
  input_tokens: {dist: uniform, min: 3000, max: 3200}
  output_tokens: {dist: uniform, min: 2, max: 8}
  shared_prefix: {groups: 4, tokens: 3000, popularity: uniform}
cluster:
  router: {policy: round_robin}
)";

std::string with(const std::string& cluster_extra, const std::string& pool_extra = "",
                 const std::string& group_extra = "") {
  return std::string(kBase) + cluster_extra + "  global_pool: {capacity: 64GiB" + pool_extra +
         "}\n  groups:\n    replica: {count: 8" + group_extra + "}\n";
}

struct Outcome {
  RunMetrics metrics;
  LinkCounters nic;  // node 0's NIC, the direction reads take
};

Outcome run_of(const std::string& yaml) {
  const ScenarioSpec s = scenario_from_text(yaml);
  ClusterRun run(s, *s.cluster, make_engine, nullptr);
  Outcome out{run.run(), {}};
  const auto& links = run.links().links();
  if (auto it = links.find("node0.node_nic.rx"); it != links.end())
    out.nic = it->second->counters();
  return out;
}

TEST(ClusterLinks, LinksEachToItselfReproduceTheRunWithout) {
  const Outcome plain = run_of(with(""));
  // One NIC per replica as fast as its port and without latency of its
  // own: no read waits for another replica's.
  const Outcome own = run_of(
      with("  links: {node_nic: {bandwidth: 25GB/s}}\n", ", via: [node_nic]", ", node_size: 1"));
  EXPECT_GT(testing::tiers_of(plain.metrics).global.hit_tokens, 0);
  EXPECT_EQ(own.metrics.latency_ms.ttft.p50, plain.metrics.latency_ms.ttft.p50);
  EXPECT_EQ(own.metrics.latency_ms.ttft.p99, plain.metrics.latency_ms.ttft.p99);
  EXPECT_EQ(own.metrics.latency_ms.e2e.p99, plain.metrics.latency_ms.e2e.p99);
  EXPECT_EQ(testing::tiers_of(own.metrics).global.hit_tokens,
            testing::tiers_of(plain.metrics).global.hit_tokens);
  EXPECT_EQ(own.nic.delay, 0);
  EXPECT_GT(own.nic.transfers, 0);
}

TEST(ClusterLinks, EightReplicasOnOneNicShareIt) {
  const Outcome alone = run_of(
      with("  links: {node_nic: {bandwidth: 25GB/s}}\n", ", via: [node_nic]", ", node_size: 1"));
  const Outcome shared = run_of(
      with("  links: {node_nic: {bandwidth: 25GB/s}}\n", ", via: [node_nic]", ", node_size: 8"));
  // All eight replicas' reads and puts now cross node 0's NIC.
  EXPECT_GT(shared.nic.transfers, alone.nic.transfers);
  EXPECT_GT(shared.nic.delay, 0);
  // Reads that overlap take longer, and the steps that wait for them.
  EXPECT_GT(shared.metrics.latency_ms.ttft.p50, alone.metrics.latency_ms.ttft.p50);
  EXPECT_GE(shared.metrics.latency_ms.ttft.p99, alone.metrics.latency_ms.ttft.p99);
  EXPECT_GT(shared.metrics.latency_ms.ttft.mean, alone.metrics.latency_ms.ttft.mean);
  EXPECT_EQ(shared.metrics.requests.completed, 160);
  // A NIC eight times as fast gives each of the eight what it had alone
  // when they all read at once; the run is again close to the one alone.
  const Outcome fast = run_of(
      with("  links: {node_nic: {bandwidth: 200GB/s}}\n", ", via: [node_nic]", ", node_size: 8"));
  EXPECT_LT(fast.metrics.latency_ms.ttft.p50, shared.metrics.latency_ms.ttft.p50);
}

TEST(ClusterLinks, PoolServersAreSharedByEveryNode) {
  const Outcome alone = run_of(with(""));
  const Outcome servers =
      run_of(with("  links: {pool_servers: {bandwidth: 25GB/s}}\n", ", via: [pool_servers]"));
  EXPECT_GT(servers.metrics.latency_ms.ttft.p50, alone.metrics.latency_ms.ttft.p50);
  EXPECT_GT(servers.metrics.latency_ms.ttft.mean, alone.metrics.latency_ms.ttft.mean);
}

TEST(ClusterLinks, RunsAreTheSameBitForBit) {
  const std::string yaml = with("  links: {node_nic: {bandwidth: 25GB/s, latency: 3us}}\n",
                                ", via: [node_nic]", ", node_size: 4");
  const Outcome a = run_of(yaml), b = run_of(yaml);
  EXPECT_EQ(a.metrics.latency_ms.ttft.p50, b.metrics.latency_ms.ttft.p50);
  EXPECT_EQ(a.metrics.latency_ms.e2e.p99, b.metrics.latency_ms.e2e.p99);
  EXPECT_EQ(a.nic.delay, b.nic.delay);
  EXPECT_EQ(a.nic.busy, b.nic.busy);
}

std::string load_error(const std::string& yaml) {
  try {
    scenario_from_text(yaml);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ClusterLinks, BadLinksAreErrorsAtTheirKey) {
  const std::string kind = load_error(with("  links: {node_nics: {bandwidth: 25GB/s}}\n"));
  EXPECT_NE(kind.find("cluster.links.node_nics"), std::string::npos) << kind;
  EXPECT_NE(kind.find("did you mean 'node_nic'"), std::string::npos) << kind;
  const std::string zero = load_error(with("  links: {node_nic: {bandwidth: 0GB/s}}\n"));
  EXPECT_NE(zero.find("cluster.links.node_nic.bandwidth"), std::string::npos) << zero;
  const std::string negative = load_error(with("  links: {node_nic: {bandwidth: -5GB/s}}\n"));
  EXPECT_NE(negative.find("cluster.links.node_nic.bandwidth"), std::string::npos) << negative;
  const std::string missing = load_error(with("  links: {node_nic: {latency: 1us}}\n"));
  EXPECT_NE(missing.find("cluster.links.node_nic.bandwidth"), std::string::npos) << missing;
  const std::string undeclared = load_error(with("", ", via: [node_nic]"));
  EXPECT_NE(undeclared.find("cluster.global_pool.via"), std::string::npos) << undeclared;
  EXPECT_NE(undeclared.find("declares no 'node_nic'"), std::string::npos) << undeclared;
  const std::string typo =
      load_error(with("  links: {node_nic: {bandwidth: 25GB/s}}\n", ", via: [node_nik]"));
  EXPECT_NE(typo.find("did you mean 'node_nic'"), std::string::npos) << typo;
  const std::string wrong_way =
      load_error(with("  links: {fabric: {bandwidth: 25GB/s}}\n", ", via: [fabric]"));
  EXPECT_NE(wrong_way.find("node_nic, pool_servers"), std::string::npos) << wrong_way;
  const std::string node = load_error(with("", "", ", node_size: 0"));
  EXPECT_NE(node.find("node_size"), std::string::npos) << node;
  // The location is the line of the key.
  EXPECT_NE(zero.find(":17:"), std::string::npos) << zero;
}

// Every replica puts every block it computes into the pool over its own
// port; with async stores through a 16-block staging buffer each replica's
// steps wait for room, and the cluster's kv_tiers add up those waits.
TEST(ClusterLinks, AsyncPoolStoresHoldEachReplicasStepsAndAddUp) {
  const Outcome free_stores = run_of(with(""));
  const Outcome staged = run_of(with("", ", write_mode: async, staging_buffer: 8MiB"));
  const KvTiersMetrics& t = testing::tiers_of(staged.metrics);
  EXPECT_EQ(testing::tiers_of(free_stores.metrics).store_wait_s, 0.0);
  EXPECT_GT(t.store_wait_s, 0.0);
  EXPECT_GT(t.global.pinned_peak_blocks, 0);
  EXPECT_GE(staged.metrics.latency_ms.e2e.mean, free_stores.metrics.latency_ms.e2e.mean);
  EXPECT_EQ(t.global.bytes_written, testing::tiers_of(free_stores.metrics).global.bytes_written);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
