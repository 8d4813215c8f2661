// Where the time of KV movement goes (sim/core/link_metrics.hpp): a link's
// bytes, busy time, utilisation and queueing delay per transfer are what
// the fair-share arithmetic of its transfers gives; requests' waits for
// loads and stores are what the store formula gives; a cluster names every
// instance's ports after it; the trace has a track per link with a slice
// per transfer; and runs are the same bit for bit.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "reports/link_report.hpp"
#include "reports/run_report.hpp"
#include "scenario_helpers.hpp"
#include "sim/cluster/cluster_run.hpp"
#include "sim/core/link_metrics.hpp"
#include "sim/core/metrics.hpp"
#include "sim/core/shared_link.hpp"
#include "sim/core/simulator.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "sim/serve/engine.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr int64_t kGBps = 1'000'000'000;  // one byte per ns
using Json = nlohmann::ordered_json;

// Two 1 MB transfers on a 1 GB/s link, the second starting 0.75 ms into the
// first, then a third alone from 3 ms: A moves 0.75 MB alone, its last
// 0.25 MB at half speed (0.5 ms) and ends at 1.25 ms, 0.25 ms late; B has
// 0.25 MB across by then, its last 0.75 MB alone, and ends at 2.0 ms, also
// 0.25 ms late (it took 1.25 ms for 1 ms of wire). C is never shared. The
// wire is busy 0-2 ms and 3-4 ms: 3 ms of a 5 ms run.
TEST(LinkMetrics, TwoOverlappingTransfersGiveTheDelayAndUtilisationOfTheArithmetic) {
  Simulator sim;
  SharedLink link(sim, {"node0.node_nic.rx", kGBps, 0}, 0);
  std::vector<LinkTransfer> seen;
  link.set_observer([&](const LinkTransfer& t) { seen.push_back(t); });
  for (const TimeNs at : {TimeNs{0}, TimeNs{750'000}, TimeNs{3'000'000}})
    sim.schedule_at(at, 0, [&] { link.start(1'000'000, [] {}); });
  sim.schedule_at(5'000'000, 0, [] {});  // the run's last event
  sim.run();

  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].start, 0);
  EXPECT_EQ(seen[0].end, 1'250'000);
  EXPECT_EQ(seen[0].delay, 250'000);
  EXPECT_EQ(seen[1].start, 750'000);
  EXPECT_EQ(seen[1].end, 2'000'000);
  EXPECT_EQ(seen[1].delay, 250'000);
  EXPECT_EQ(seen[2].delay, 0);
  EXPECT_EQ(seen[2].bytes, 1'000'000);

  RunMetrics m;
  m.sim.simulated_s = static_cast<double>(sim.now()) / 1e9;
  m.part<KvMovementMetrics>().links.push_back(link_metrics(link, "prefill0."));
  const Json j = metrics_to_json(m);
  const Json& l = j["kv_movement"]["links"]["prefill0"]["node0"]["node_nic"]["rx"];
  EXPECT_EQ(l["transfers"], 3);
  EXPECT_EQ(l["bytes"], 3'000'000);
  EXPECT_DOUBLE_EQ(l["busy_s"].get<double>(), 0.003);
  EXPECT_DOUBLE_EQ(l["utilisation"].get<double>(), 0.003 / 0.005);
  // Nearest rank of {0, 0.25, 0.25}: the 2nd for p50, the 3rd for p99.
  EXPECT_DOUBLE_EQ(l["queue_delay_ms"]["p50"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(l["queue_delay_ms"]["p99"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(l["queue_delay_ms"]["max"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(l["queue_delay_ms"]["mean"].get<double>(), 0.5 / 3);
  // The dotted key an `expect:` names the link by.
  EXPECT_DOUBLE_EQ(
      metric_value(j, "kv_movement.links.prefill0.node0.node_nic.rx.utilisation").value(), 0.6);
  // The summary lists it.
  EXPECT_NE(links_summary(m).find("prefill0.node0.node_nic.rx"), std::string::npos);
}

TEST(LinkMetrics, EveryRunWritesTheKeysAndARunWithoutLinksListsNone) {
  const std::vector<std::string> keys = metric_key_names();
  for (const char* k : {"kv_movement.request_wait_ms.p50", "kv_movement.request_wait_ms.p99",
                        "kv_movement.request_wait_ms.max"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  const Json j = metrics_to_json(RunMetrics{});
  ASSERT_TRUE(j.contains("kv_movement"));
  EXPECT_TRUE(j["kv_movement"]["links"].empty());
  EXPECT_EQ(links_summary(RunMetrics{}), "");
}

// One 4096-token prompt in chunks of 512 on a write-through tier with a
// one-block staging buffer (tests/test_tier_stores.cpp works the formula
// out): its steps wait 8 x 31 block times for stores, and so does the one
// request, and the tier's write port carried its 256 blocks.
const char* kOnePrompt = R"(
device: ascend-910b2
model: llama-3.2-1b
seed: 1
kv_cache: {policy: paged, block_size: 16}
scheduler: {max_batched_tokens: 512}
workload: {kind: synthetic, requests: 1, arrival: {process: poisson, rate_per_s: 1},
           input_tokens: {dist: constant, value: 4096}, output_tokens: {dist: constant, value: 8}}
)";

TEST(LinkMetrics, ARequestWaitsWhatItsStepsWaitedForStores) {
  const Bytes block = 2 * 16 * 16 * 8 * 64 * 2;
  const int64_t bandwidth = 2'000'000'000;
  const auto block_time =
      static_cast<TimeNs>(std::ceil(static_cast<double>(block) * 1e9 / bandwidth));
  const std::string yaml =
      std::string(kOnePrompt) +
      fmt::format(
          "kv_tiers: {{tiers: [{{name: dram, capacity: 64GiB, read_bandwidth: 25GB/s, "
          "write_bandwidth: {}B/s, latency: 0us, store: on_compute_prompt, write_mode: async, "
          "staging_buffer: {}B}}]}}\n",
          bandwidth, block);
  const ScenarioSpec s = testing::scenario_from_text(yaml);
  ServingEngine engine(s, nullptr);
  const RunMetrics m = engine.run();
  const KvMovementMetrics& k = *m.find<KvMovementMetrics>();
  const double expected_ms = static_cast<double>(8 * 31 * block_time) / 1e6;
  EXPECT_NEAR(k.request_wait_ms.p50, expected_ms, 1e-6);
  EXPECT_NEAR(k.request_wait_ms.max, expected_ms, 1e-6);
  ASSERT_EQ(k.links.size(), 2u);  // the tier's read and write ports
  EXPECT_EQ(k.links[0].name, "kv_tiers.dram.read");
  EXPECT_EQ(k.links[0].transfers, 0);
  EXPECT_EQ(k.links[1].name, "kv_tiers.dram.write");
  EXPECT_EQ(k.links[1].bytes, 256 * block);
  // One port to itself, one store after another: a store never shares it.
  EXPECT_EQ(k.links[1].delay_max_ms, 0.0);

  // Without tiers nothing waits.
  const ScenarioSpec plain_spec = testing::scenario_from_text(kOnePrompt);
  ServingEngine plain(plain_spec, nullptr);
  const RunMetrics p = plain.run();
  EXPECT_EQ(p.find<KvMovementMetrics>()->request_wait_ms.max, 0.0);
  EXPECT_TRUE(p.find<KvMovementMetrics>()->links.empty());
}

// Spans as a trace takes them.
struct LinkSpans final : RunSink {
  void request(const RequestRow& r) override { waits.push_back(r.kv_wait); }
  void timeline(const TimelineRow&) override {}
  bool wants_spans() const override { return true; }
  void span(const SpanRow& r) override { record(-1, r); }
  void instance_span(int32_t instance, const SpanRow& r) override { record(instance, r); }
  void record(int32_t instance, const SpanRow& r) {
    if (r.track != "link") return;
    names.push_back(fmt::format("{}:{}", instance, r.name));
    bytes += r.bytes;
  }
  std::vector<std::string> names;
  std::vector<TimeNs> waits;
  Bytes bytes = 0;
};

// Eight replicas on two nodes reading a shared prefix from the global pool
// over their node's NIC (tests/test_cluster_links.cpp's cluster).
const char* kCluster = R"(
name: links-metrics
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
  links: {node_nic: {bandwidth: 25GB/s, latency: 3us}}
  global_pool: {capacity: 64GiB, via: [node_nic]}
  groups:
    replica: {count: 8, node_size: 4}
)";

TEST(LinkMetrics, AClusterNamesEachInstancesPortsAndTracesEveryTransfer) {
  const ScenarioSpec s = testing::scenario_from_text(kCluster);
  LinkSpans spans;
  ClusterRun run(s, *s.cluster, make_engine, &spans);
  const RunMetrics m = run.run();
  const Json j = metrics_to_json(m);
  const Json& links = j["kv_movement"]["links"];
  ASSERT_TRUE(links.contains("replica7"));
  EXPECT_GT(links["replica7"]["kv_tiers"]["global"]["read"]["transfers"].get<int64_t>(), 0);
  ASSERT_TRUE(links.contains("node1"));
  // Four replicas share each NIC: their puts wait for each other.
  const Json& tx = links["node0"]["node_nic"]["tx"];
  EXPECT_GT(tx["queue_delay_ms"]["max"].get<double>(), 0.0);
  EXPECT_GT(tx["utilisation"].get<double>(), 0.0);
  EXPECT_LE(tx["utilisation"].get<double>(), 1.0);
  // Every transfer a link counted is a slice of its track, the shared
  // links' in the cluster's process (-1), a port's in its instance's.
  Bytes counted = 0;
  for (const LinkMetrics& l : m.find<KvMovementMetrics>()->links) counted += l.bytes;
  EXPECT_EQ(spans.bytes, counted);
  EXPECT_NE(std::find(spans.names.begin(), spans.names.end(), "-1:node0.node_nic.rx"),
            spans.names.end());
  EXPECT_NE(std::find(spans.names.begin(), spans.names.end(), "3:kv_tiers.global.read"),
            spans.names.end());
  // Requests' rows carry their waits; the percentiles are over them.
  ASSERT_EQ(spans.waits.size(), 160u);
  EXPECT_GT(*std::max_element(spans.waits.begin(), spans.waits.end()), 0);
  EXPECT_DOUBLE_EQ(
      m.find<KvMovementMetrics>()->request_wait_ms.max,
      static_cast<double>(*std::max_element(spans.waits.begin(), spans.waits.end())) / 1e6);
}

TEST(LinkMetrics, RunsAreTheSameBitForBit) {
  auto text = [] {
    const ScenarioSpec s = testing::scenario_from_text(kCluster);
    ClusterRun run(s, *s.cluster, make_engine, nullptr);
    RunMetrics m = run.run();
    m.sim.wall_s = 0;
    Json j = metrics_to_json(m);
    j.erase("provenance");
    return j["kv_movement"].dump();
  };
  const std::string a = text();
  EXPECT_EQ(a, text());
  EXPECT_NE(a.find("node_nic"), std::string::npos);
}

// `kvsim run --trace`: a thread per link, named after it, with one slice per
// transfer (the shared NICs in the cluster's process, pid 2; each
// instance's tier ports in its own, 100 + its index).
TEST(LinkMetrics, TheTraceHasATrackPerLinkWithASlicePerTransfer) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("kvsim-link-trace-{}", ::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "c.yaml") << kCluster;
  const testing::CommandResult r = testing::run_command(
      fmt::format("{} run {} --quiet --out {} --trace {}", KVSIM_BINARY, (dir / "c.yaml").string(),
                  (dir / "out").string(), (dir / "t.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(dir / "t.json");
  const Json trace = Json::parse(in);
  const Json metrics = Json::parse(std::ifstream(dir / "out" / "metrics.json"));
  std::map<std::pair<int, int>, std::string> threads;
  std::map<std::string, int64_t> slices;
  for (const Json& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name")
      threads[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] != "link") continue;
    const std::string& thread = threads.at({e["pid"].get<int>(), e["tid"].get<int>()});
    ASSERT_EQ(thread.rfind("link ", 0), 0u) << thread;
    const int pid = e["pid"].get<int>();
    slices[(pid == 2 ? "" : fmt::format("replica{}.", pid - 100)) + thread.substr(5)] += 1;
  }
  const Json& links = metrics["kv_movement"]["links"];
  EXPECT_EQ(slices["node0.node_nic.tx"], links["node0"]["node_nic"]["tx"]["transfers"]);
  EXPECT_EQ(slices["node1.node_nic.rx"], links["node1"]["node_nic"]["rx"]["transfers"]);
  EXPECT_EQ(slices["replica5.kv_tiers.global.read"],
            links["replica5"]["kv_tiers"]["global"]["read"]["transfers"]);
  EXPECT_GT(slices["node0.node_nic.tx"], 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
