// Loads of lower-tier hits as vLLM's OffloadingConnector schedules them
// (kv_tiers.load_overlap: async, sim/serve/async_loads.hpp): started before
// the request's prefill, while the other requests' steps run, with an
// optional cap on the tokens whose loads start per step. Times are worked
// out by hand from the link arithmetic (sim/core/shared_link.hpp).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/cache/tiers/kv_tier.hpp"
#include "sim/cache/tiers/tier_chain.hpp"
#include "sim/core/link_metrics.hpp"
#include "sim/core/shared_link.hpp"
#include "sim/core/simulator.hpp"
#include "sim/engine/run_sink.hpp"
#include "sim/serve/async_loads.hpp"
#include "sim/serve/engine.hpp"
#include "sim/serve/sequence.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr Bytes kBlock = 1'000'000;            // bytes per block
constexpr int64_t kBandwidth = 1'000'000'000;  // 1 GB/s: a block in 1 ms
constexpr TimeNs kBlockTime = 1'000'000;
constexpr int64_t kBlockTokens = 16;

BlockHash h(uint64_t v) {
  return {v, v * 7919};
}

// One dram tier holding blocks 1..n, read over one link of its own.
struct OneTier {
  Simulator sim;
  SharedLink read, write;
  std::unique_ptr<TierChain> chain;

  // The engine gives the tier's links its latency (make_tier_links).
  explicit OneTier(int64_t blocks, TimeNs latency = 0)
      : read(sim, {"read", kBandwidth, latency}, 0), write(sim, {"write", kBandwidth, latency}, 0) {
    KvTierParams p;
    p.name = "dram";
    p.capacity = 1000 * kBlock;
    p.read_bandwidth = p.write_bandwidth = kBandwidth;
    p.latency = latency;
    p.store = kStoreOnCompute;  // its blocks put as computed, in the background
    chain = std::make_unique<TierChain>(
        std::vector<std::shared_ptr<KvTier>>{std::make_shared<KvTier>(p, kBlock)}, false,
        kBlockTokens, true);
    chain->set_paths(0, {&read}, {&write});
    for (int64_t b = 1; b <= blocks; ++b) chain->on_computed(h(static_cast<uint64_t>(b)));
  }
  // A request admitted with hits in blocks [first, first + n).
  std::vector<int64_t> admit(int64_t first, int64_t n) {
    for (int64_t b = first; b < first + n; ++b) chain->load(h(static_cast<uint64_t>(b)), 0, true);
    return chain->take_request_load();
  }
};

TEST(AsyncLoads, ALoadUnderTheCapTakesItsBytesOverTheBandwidth) {
  OneTier t(4);
  Sequence seq;
  TimeNs landed = -1;
  AsyncLoads loads(*t.chain, kBlockTokens, 4 * kBlockTokens, [&] { landed = t.sim.now(); });
  loads.add(&seq, t.admit(1, 4));
  EXPECT_EQ(loads.issue(), 4);
  // The step's price is untouched: take_load() finds nothing pending.
  EXPECT_EQ(t.chain->take_load().time, 0);
  t.sim.run();
  EXPECT_EQ(landed, 4 * kBlockTime);  // 4 MB at 1 GB/s
  EXPECT_EQ(loads.parts(), 1);
  std::vector<Sequence*> ready;
  loads.take_ready(ready);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0], &seq);
  t.chain->check_conserved();
}

// Five blocks, a cap of two a step, steps every 5 ms (longer than a part):
// parts of 2, 2 and 1 blocks start at 0, 5 and 10 ms; the load is whole
// when the last lands, at 11 ms. ceil(5 / 2) = 3 steps.
TEST(AsyncLoads, ALoadOverTheCapSpreadsOverCeilTokensOverCapSteps) {
  OneTier t(5, 100'000);
  Sequence seq;
  std::vector<TimeNs> wakes;
  AsyncLoads loads(*t.chain, kBlockTokens, 2 * kBlockTokens, [&] { wakes.push_back(t.sim.now()); });
  loads.add(&seq, t.admit(1, 5));
  constexpr TimeNs kStep = 5'000'000;
  std::vector<int64_t> started;
  for (int s = 0; s < 4; ++s)
    t.sim.schedule_at(s * kStep, 0, [&] { started.push_back(loads.issue()); });
  t.sim.run();
  EXPECT_EQ(started, (std::vector<int64_t>{2, 2, 1, 0}));
  EXPECT_EQ(loads.parts(), 3);
  // Each part: its 100 us latency, then its blocks.
  const TimeNs lat = 100'000;
  EXPECT_EQ(wakes, (std::vector<TimeNs>{lat + 2 * kBlockTime, kStep + lat + 2 * kBlockTime,
                                        2 * kStep + lat + kBlockTime}));
  std::vector<Sequence*> ready;
  loads.take_ready(ready);
  EXPECT_EQ(ready.size(), 1u);
  // The tier's reads count what each part cost alone.
  t.chain->check_conserved();
}

// The cap is shared: two requests' loads of 3 blocks each under a cap of 4
// a step start 3 + 1, then 2 blocks; the first is whole after its part.
TEST(AsyncLoads, TheCapIsSharedByTheRequestsLoadingOldestFirst) {
  OneTier t(6);
  Sequence a, b;
  AsyncLoads loads(*t.chain, kBlockTokens, 4 * kBlockTokens, {});
  loads.add(&a, t.admit(1, 3));
  loads.add(&b, t.admit(4, 3));
  EXPECT_EQ(loads.issue(), 4);
  EXPECT_EQ(loads.loading(), 2u);
  t.sim.run();
  std::vector<Sequence*> ready;
  loads.take_ready(ready);
  EXPECT_EQ(ready, (std::vector<Sequence*>{&a}));
  EXPECT_EQ(loads.issue(), 2);
  t.sim.run();
  loads.take_ready(ready);
  EXPECT_EQ(ready, (std::vector<Sequence*>{&a, &b}));
  EXPECT_TRUE(loads.empty());
}

// A cap below a block still moves a block a step: a block is what a load moves.
TEST(AsyncLoads, ACapBelowABlockMovesOneBlockAStep) {
  OneTier t(2);
  Sequence seq;
  AsyncLoads loads(*t.chain, kBlockTokens, 1, {});
  loads.add(&seq, t.admit(1, 2));
  EXPECT_EQ(loads.issue(), 1);
  EXPECT_EQ(loads.issue(), 1);
  EXPECT_EQ(loads.issue(), 0);
  t.sim.run();
}

// A chat whose sessions outgrow a small device pool, a dram tier behind a
// 2 GB/s link serving what the device evicted. No system prompt: a first
// turn has no hit at all (sessions keep arriving while earlier ones load).
const char* kChat = R"(
device: ascend-910b2
model: llama-3.2-1b
seed: 3
kv_cache: {policy: paged, block_size: 16, memory_fraction: 0.06, activation_reserve: 1GiB}
workload: {kind: chat, sessions: 80, arrival: {process: poisson, rate_per_s: 4},
           turns: {dist: constant, value: 4}, think_time: {dist: exponential, mean: 8s},
           system_prompt_tokens: 0, user_tokens: {dist: constant, value: 200},
           output_tokens: {dist: constant, value: 64}}
)";

std::string with_tier(const std::string& overlap, const std::string& extra = "") {
  return std::string(kChat) + "kv_tiers: {load_overlap: " + overlap + extra +
         ", tiers: [{name: dram, capacity: 64GiB, read_bandwidth: 2GB/s, "
         "write_bandwidth: 25GB/s, latency: 10us}]}\n";
}

struct Rows final : RunSink {
  std::vector<RequestRow> rows;
  void request(const RequestRow& row) override { rows.push_back(row); }
  void timeline(const TimelineRow&) override {}
};

RunMetrics run(const std::string& yaml, Rows* rows = nullptr) {
  const ScenarioSpec s = testing::scenario_from_text(yaml);
  ServingEngine engine(s, rows);
  return engine.run();
}

// Loads on the step's path (none) hold every request of the step, those
// that loaded nothing among them; async ones hold only the request that
// waits for them: a request with no hit never waits for KV.
TEST(AsyncLoadsRun, OtherRequestsStepsAreNotHeldByAnAsyncLoad) {
  Rows sync_rows, async_rows;
  const RunMetrics sync = run(with_tier("none"), &sync_rows);
  const RunMetrics async = run(with_tier("async"), &async_rows);
  ASSERT_GT(testing::tiers_of(sync).dram.hit_rate, 0.0);
  ASSERT_GT(testing::tiers_of(async).dram.hit_rate, 0.0);
  EXPECT_EQ(async.requests.completed, async.requests.arrived);
  auto held_without_hits = [](const Rows& r) {
    int64_t held = 0, without = 0;
    for (const RequestRow& row : r.rows) {
      if (row.cached_tokens != 0) continue;
      ++without;
      held += row.kv_wait > 0 ? 1 : 0;
    }
    EXPECT_GT(without, 0);
    return held;
  };
  EXPECT_GT(held_without_hits(sync_rows), 0);
  EXPECT_EQ(held_without_hits(async_rows), 0);
  // The requests that loaded waited for their own loads.
  TimeNs waited = 0;
  for (const RequestRow& row : async_rows.rows) waited += row.kv_wait;
  EXPECT_GT(waited, 0);
  EXPECT_GT(testing::tiers_of(async).load_time_s, 0.0);
}

// A cap spreads the loads over more steps: the same run, every balance
// held (finish() throws otherwise), the requests that loaded wait longer.
TEST(AsyncLoadsRun, ACapSpreadsTheLoadsAndKeepsTheBalances) {
  const RunMetrics free = run(with_tier("async"));
  const RunMetrics capped = run(with_tier("async", ", max_load_tokens_per_step: 32"));
  EXPECT_EQ(capped.requests.completed, capped.requests.arrived);
  ASSERT_GT(testing::tiers_of(capped).dram.hit_rate, 0.0);
  EXPECT_GT(capped.parts.get_or_zero<KvMovementMetrics>().request_wait_ms.mean,
            free.parts.get_or_zero<KvMovementMetrics>().request_wait_ms.mean);
}

TEST(AsyncLoadsYaml, TheCapIsCheckedAtItsKey) {
  auto error_of = [](const std::string& section) {
    try {
      (void)testing::scenario_from_text(std::string(kChat) + section);
    } catch (const config::ConfigError& e) {
      return e.diagnostics().at(0).format();
    }
    return std::string("no error");
  };
  const std::string tier =
      ", tiers: [{name: dram, capacity: 1GiB, read_bandwidth: 1GB/s, write_bandwidth: 1GB/s}]}\n";
  const std::string zero =
      error_of("kv_tiers: {load_overlap: async, max_load_tokens_per_step: 0" + tier);
  EXPECT_NE(zero.find("kv_tiers.max_load_tokens_per_step"), std::string::npos) << zero;
  const std::string negative =
      error_of("kv_tiers: {load_overlap: async, max_load_tokens_per_step: -16" + tier);
  EXPECT_NE(negative.find("kv_tiers.max_load_tokens_per_step"), std::string::npos) << negative;
  const std::string not_async = error_of("kv_tiers: {max_load_tokens_per_step: 512" + tier);
  EXPECT_NE(not_async.find("kv_tiers.max_load_tokens_per_step"), std::string::npos) << not_async;
  EXPECT_NE(not_async.find("load_overlap: async"), std::string::npos) << not_async;
  EXPECT_EQ(error_of("kv_tiers: {load_overlap: async, max_load_tokens_per_step: 512" + tier),
            "no error");
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
