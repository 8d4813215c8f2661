// Swap and tensor-parallel ranks on the links KV shares (link_path.hpp,
// ServingEngine::make_tier_links): a preempted sequence's swap crosses the
// host link its instance's tier loads and stores cross, so the two share
// it as the fair-share arithmetic says (checked against a fluid reference
// written here, not the link's integer clock); an instance's T ranks cross
// a node's NIC as T flows, 1/T of the bytes each, and take T shares of it
// against another instance's one; bytes are conserved on every link.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/cluster/cluster_run.hpp"
#include "sim/core/link_metrics.hpp"
#include "sim/core/link_path.hpp"
#include "sim/core/shared_link.hpp"
#include "sim/core/simulator.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr int64_t kGBps = 1'000'000'000;  // one byte per ns
constexpr int32_t kPrio = 0;

// ---- ranks as flows ---------------------------------------------------

TEST(RankFlows, SharesSumToTheBytes) {
  EXPECT_EQ(rank_share(10, 4, 0), 3);
  EXPECT_EQ(rank_share(10, 4, 1), 3);
  EXPECT_EQ(rank_share(10, 4, 2), 2);
  EXPECT_EQ(rank_share(10, 4, 3), 2);
  for (const Bytes b : {Bytes{1}, Bytes{7}, Bytes{1'000'003}}) {
    for (const int64_t t : {1, 2, 3, 8}) {
      Bytes sum = 0;
      for (int64_t r = 0; r < t; ++r) sum += rank_share(b, t, r);
      EXPECT_EQ(sum, b) << b << " over " << t;
    }
  }
  EXPECT_THROW(rank_share(10, 0, 0), std::logic_error);
}

// Four ranks behind a port of four dies' links (4 GB/s) read 4 MB over a
// 1 GB/s NIC: four flows of 1 MB, each at a quarter of the NIC, all end at
// 4 ms, what the instance's bytes take alone on the NIC; each flow waited
// 3 ms beyond its own 1 ms alone.
TEST(RankFlows, TRanksOnOneNicSeeOneTthEach) {
  Simulator sim;
  SharedLink port(sim, {"port", 4 * kGBps, 0}, kPrio);
  SharedLink nic(sim, {"nic", kGBps, 0}, kPrio);
  std::vector<LinkTransfer> flows;
  nic.set_observer([&](const LinkTransfer& t) { flows.push_back(t); });
  TimeNs end = -1;
  sim.schedule_at(0, kPrio, [&] {
    transfer_over(
        {&port, &nic}, 4'000'000, [&] { end = sim.now(); }, 1, RankSplit{1, 4});
  });
  sim.run();
  EXPECT_EQ(end, 4'000'000);
  ASSERT_EQ(flows.size(), 4u);
  for (const LinkTransfer& f : flows) {
    EXPECT_EQ(f.bytes, 1'000'000);
    EXPECT_EQ(f.end, 4'000'000);
    EXPECT_EQ(f.delay, 3'000'000);
  }
  // Bytes conserved: the port carried the whole once, the NIC its shares.
  EXPECT_EQ(port.counters().bytes, 4'000'000);
  EXPECT_EQ(port.counters().transfers, 1);
  EXPECT_EQ(nic.counters().bytes, 4'000'000);
  EXPECT_EQ(nic.counters().transfers, 4);
  EXPECT_EQ(alone_over({&port, &nic}, 4'000'000), 4'000'000);
}

// An instance of three ranks (3 MB, 1 MB a rank) and one of one rank
// (2 MB) read over one 1 GB/s NIC from 0: four flows at 0.25 GB/s; the
// three end at 4 ms, the lone rank has 1 MB across by then and its last
// 1 MB alone ends at 5 ms. Were the three ranks one flow, the two would
// halve the NIC: the lone rank's 2 MB would end at 4 ms, the three's 3 MB
// at 5 ms.
TEST(RankFlows, AnInstanceOfTRanksTakesTSharesAgainstAnothersOne) {
  for (const int64_t ranks : {3, 1}) {
    Simulator sim;
    SharedLink port_a(sim, {"a.port", 3 * kGBps, 0}, kPrio);
    SharedLink port_b(sim, {"b.port", kGBps * 100, 0}, kPrio);
    SharedLink nic(sim, {"nic", kGBps, 0}, kPrio);
    TimeNs a = -1, b = -1;
    sim.schedule_at(0, kPrio, [&] {
      transfer_over(
          {&port_a, &nic}, 3'000'000, [&] { a = sim.now(); }, 1, RankSplit{1, ranks});
      transfer_over(
          {&port_b, &nic}, 2'000'000, [&] { b = sim.now(); }, 1, RankSplit{1, 1});
    });
    sim.run();
    if (ranks == 3) {
      EXPECT_EQ(a, 4'000'000);
      EXPECT_EQ(b, 5'000'000);
    } else {
      EXPECT_EQ(b, 4'000'000);
      EXPECT_EQ(a, 5'000'000);
    }
    EXPECT_EQ(nic.counters().bytes, 5'000'000);
  }
}

// ---- swap on the host link -------------------------------------------

struct Recorded {
  std::string link;
  TimeNs start = 0, end = 0;
  Bytes bytes = 0;
};

struct SpansOf final : RunSink {
  void request(const RequestRow&) override {}
  void timeline(const TimelineRow&) override {}
  bool wants_spans() const override { return true; }
  void span(const SpanRow& r) override {
    if (r.track == "link")
      links.push_back({std::string(r.name), r.start, r.start + r.duration, r.bytes});
    if (r.track == "kv_transfer" && r.name == "swap in")
      swap_in.push_back({"", r.start, 0, r.bytes});
    if (r.track == "kv_transfer" && r.name == "swap out")
      swap_out.push_back({"", r.start, 0, r.bytes});
  }
  std::vector<Recorded> links, swap_in, swap_out;
};

// Processor sharing in real numbers: each transfer on the wire moves at
// bandwidth / n; returns each one's end (ns), in the order given.
std::vector<double> fluid_ends(const std::vector<Recorded>& t, double bytes_per_ns) {
  std::vector<double> left(t.size()), end(t.size(), -1);
  for (size_t i = 0; i < t.size(); ++i) left[i] = static_cast<double>(t[i].bytes);
  std::vector<size_t> order(t.size());
  for (size_t i = 0; i < t.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return t[a].start < t[b].start; });
  std::vector<size_t> on;
  size_t next = 0;
  double now = 0;
  while (next < order.size() || !on.empty()) {
    if (on.empty()) now = std::max(now, static_cast<double>(t[order[next]].start));
    while (next < order.size() && static_cast<double>(t[order[next]].start) <= now)
      on.push_back(order[next++]);
    const double rate = bytes_per_ns / static_cast<double>(on.size());
    double first = 1e300;
    for (size_t i : on) first = std::min(first, left[i] / rate);
    const double arrival =
        next < order.size() ? static_cast<double>(t[order[next]].start) - now : 1e300;
    const double dt = std::min(first, arrival);
    for (size_t i : on) left[i] -= dt * rate;
    now += dt;
    std::vector<size_t> still;
    for (size_t i : on) {
      if (left[i] <= 1e-6)
        end[i] = now;
      else
        still.push_back(i);
    }
    on.swap(still);
  }
  return end;
}

// Llama-3-8B on a 910B2 whose pool is squeezed so that sequences are
// swapped out and back, beside a DRAM tier (latency 0) whose hits are read
// back before their step: both cross the DRAM tier's links, the host link.
const char* kSwapBesideTier = R"(
name: swap-beside-tier
seed: 7
device: ascend-910b2
model: llama-3-8b
kv_cache: {policy: paged, block_size: 128, memory_fraction: 0.26, prefix_caching: true,
           preemption: swap, swap_space: 2GiB}
kv_tiers:
  tiers:
    - {name: dram, capacity: 32GiB, read_bandwidth: 31.5GB/s, write_bandwidth: 31.5GB/s,
       latency: 0us}
scheduler: {max_num_seqs: 64, max_batched_tokens: 4096, chunked_prefill: true}
workload:
  kind: synthetic
  requests: 200
  arrival: {process: poisson, rate_per_s: 10}
  input_tokens: {dist: uniform, min: 512, max: 1536}
  output_tokens: {dist: uniform, min: 256, max: 768}
  shared_prefix: {groups: 8, tokens: 512, popularity: uniform}
)";

TEST(SwapOnHostLink, ASwapBesideATierLoadTakesTheFairShareArithmeticsTime) {
  const ScenarioSpec s = testing::scenario_from_text(kSwapBesideTier);
  SpansOf spans;
  ServingEngine engine(s, &spans);
  const RunMetrics m = engine.run();
  EXPECT_EQ(m.requests.completed, 200);
  ASSERT_FALSE(spans.swap_in.empty());
  ASSERT_FALSE(spans.swap_out.empty());

  std::vector<Recorded> reads, writes;
  for (const Recorded& r : spans.links) {
    if (r.link == "kv_tiers.dram.read") reads.push_back(r);
    if (r.link == "kv_tiers.dram.write") writes.push_back(r);
  }
  // Every swap-in is a transfer on the read link, from its step's start.
  Bytes swapped_in = 0, swapped_out = 0;
  int overlapped = 0;
  for (const Recorded& in : spans.swap_in) {
    swapped_in += in.bytes;
    const auto it = std::find_if(reads.begin(), reads.end(), [&](const Recorded& r) {
      return r.start == in.start && r.bytes == in.bytes;
    });
    ASSERT_NE(it, reads.end()) << "swap in at " << in.start << " not on the host link";
    for (const Recorded& r : reads)
      if (&r != &*it && r.start < it->end && it->start < r.end) ++overlapped;
  }
  for (const Recorded& out : spans.swap_out) swapped_out += out.bytes;
  // Some swap-ins shared the link with a step's tier load.
  EXPECT_GT(overlapped, 0);

  // Bytes conserved: the read link carried the tier's reads and the
  // swap-ins, nothing else; kv_cache.swapped_bytes counts both directions.
  const auto& dram = testing::tiers_of(m).dram;
  Bytes read_bytes = 0, write_bytes = 0;
  for (const Recorded& r : reads) read_bytes += r.bytes;
  for (const Recorded& w : writes) write_bytes += w.bytes;
  EXPECT_EQ(read_bytes, dram.bytes_read + swapped_in);
  EXPECT_EQ(swapped_in + swapped_out, testing::pool_of(m).swapped_bytes);
  // Stores still in flight when the run ends have not landed.
  EXPECT_LE(write_bytes, dram.bytes_written + swapped_out);
  EXPECT_GE(write_bytes, swapped_out);

  // Every transfer on each link ends where processor sharing says (31.5
  // bytes per ns, integer rounding: a few ns per transfer sharing it).
  for (const std::vector<Recorded>* link : {&reads, &writes}) {
    const std::vector<double> want = fluid_ends(*link, 31.5);
    for (size_t i = 0; i < link->size(); ++i)
      EXPECT_NEAR(static_cast<double>((*link)[i].end), want[i], 8.0)
          << (*link)[i].link << " transfer " << i << " of " << (*link)[i].bytes << " B";
  }
  // kv_movement lists the link with what it carried.
  const auto* moved = m.find<KvMovementMetrics>();
  ASSERT_NE(moved, nullptr);
  const auto link =
      std::find_if(moved->links.begin(), moved->links.end(),
                   [](const LinkMetrics& l) { return l.name == "kv_tiers.dram.read"; });
  ASSERT_NE(link, moved->links.end());
  EXPECT_EQ(link->bytes, read_bytes);
  EXPECT_GT(link->delay_max_ms, 0);
}

// Without tiers nothing else crosses the host link: swap stays in the
// step's price, as before; with a tier below, the same swaps are
// transfers of the link's (kv_tiers.host when no DRAM tier is given).
TEST(SwapOnHostLink, AnSsdTierAloneSwapsOverTheDevicesHostLink) {
  std::string yaml = kSwapBesideTier;
  yaml.replace(yaml.find("name: dram"), 10, "name: ssd");
  const ScenarioSpec s = testing::scenario_from_text(yaml);
  SpansOf spans;
  ServingEngine engine(s, &spans);
  const RunMetrics m = engine.run();
  Bytes host_in = 0;
  for (const Recorded& r : spans.links)
    if (r.link == "kv_tiers.host.read") host_in += r.bytes;
  Bytes swapped_in = 0;
  for (const Recorded& in : spans.swap_in) swapped_in += in.bytes;
  EXPECT_GT(swapped_in, 0);
  EXPECT_EQ(host_in, swapped_in);
  EXPECT_EQ(m.requests.completed, 200);
}

// ---- ranks in a cluster ------------------------------------------------

// Two replicas of two ranks each on one node read a shared prefix from the
// global pool over the node's NIC: each movement is two flows there.
const char* kTwoRanks = R"(
name: two-ranks
seed: 11
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 16}
scheduler: {max_batched_tokens: 8192}
workload:
  kind: synthetic
  requests: 80
  arrival: {process: poisson, rate_per_s: 400}
  input_tokens: {dist: uniform, min: 3000, max: 3200}
  output_tokens: {dist: uniform, min: 2, max: 8}
  shared_prefix: {groups: 4, tokens: 3000, popularity: uniform}
cluster:
  router: {policy: round_robin}
  links: {node_nic: {bandwidth: 25GB/s}}
  global_pool: {capacity: 64GiB, via: [node_nic]}
  groups:
    replica: {count: 2, node_size: 2, parallel: {tensor: TP}}
)";

TEST(RankFlows, AClusterInstancesRanksAreFlowsOnItsNodesNic) {
  for (const int64_t tp : {1, 2}) {
    std::string yaml = kTwoRanks;
    yaml.replace(yaml.find("TP"), 2, std::to_string(tp));
    const ScenarioSpec s = testing::scenario_from_text(yaml);
    ClusterRun run(s, *s.cluster, make_engine, nullptr);
    const RunMetrics m = run.run();
    const LinkCounters& nic = run.links().links().at("node0.node_nic.rx")->counters();
    const auto* moved = m.find<KvMovementMetrics>();
    ASSERT_NE(moved, nullptr);
    int64_t port_transfers = 0;
    Bytes port_bytes = 0;
    for (const LinkMetrics& l : moved->links) {
      if (l.name.find("kv_tiers.global.read") == std::string::npos) continue;
      port_transfers += l.transfers;
      port_bytes += l.bytes;
    }
    ASSERT_GT(port_transfers, 0) << "tp " << tp;
    // Every read crossed the NIC as tp flows of its bytes.
    EXPECT_EQ(nic.transfers, tp * port_transfers) << "tp " << tp;
    EXPECT_EQ(nic.bytes, port_bytes) << "tp " << tp;
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
