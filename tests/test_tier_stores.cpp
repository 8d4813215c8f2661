// What a store into a tier costs (kv_tier.hpp's write_mode): an async store
// pins its device block until it lands and waits for room in the staging
// buffer, a sync store (and, unless stores are free, a block the device
// evicted) holds the next step, on_compute_prompt skips generated blocks,
// and lookups that reach a tier pay its round trips. Times are worked out
// by hand from the link arithmetic (sim/core/shared_link.hpp).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/cache/tiers/kv_tier.hpp"
#include "sim/cache/tiers/tier_chain.hpp"
#include "sim/core/shared_link.hpp"
#include "sim/core/simulator.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr Bytes kBlock = 1'000'000;            // bytes per block
constexpr int64_t kBandwidth = 1'000'000'000;  // 1 GB/s: a block in 1 ms
constexpr TimeNs kBlockTime = 1'000'000;

struct RecordedPins : StorePins {
  std::multiset<BlockId> held;
  void pin(BlockId b) override { held.insert(b); }
  void unpin(BlockId b) override {
    auto it = held.find(b);
    ASSERT_NE(it, held.end()) << "unpin of a block not pinned: " << b;
    held.erase(it);
  }
};

BlockHash h(uint64_t v) {
  return {v, v * 7919};
}

// One tier whose writes cross one link of its own, as the serving engine
// gives every tier (make_tier_links).
struct OneTier {
  Simulator sim;
  SharedLink read{sim, {"read", kBandwidth, 0}, 0};
  SharedLink write{sim, {"write", kBandwidth, 0}, 0};
  RecordedPins pins;
  std::unique_ptr<TierChain> chain;

  explicit OneTier(KvTierParams p) {
    p.name = "dram";
    p.capacity = 1000 * kBlock;
    p.read_bandwidth = p.write_bandwidth = kBandwidth;
    chain = std::make_unique<TierChain>(
        std::vector<std::shared_ptr<KvTier>>{std::make_shared<KvTier>(p, kBlock)}, false, 16);
    chain->set_paths(0, {&read}, {&write});
    chain->set_pins(&pins);
  }
};

KvTierParams params(const char* store, const char* mode, Bytes staging = 0) {
  KvTierParams p;
  p.store = store;
  p.write_mode = mode;
  p.staging_buffer = staging;
  return p;
}

TEST(TierStores, AnAsyncStorePinsItsBlockUntilItLands) {
  OneTier t(params(kStoreOnCompute, kWriteAsync));
  t.chain->on_computed(h(1), 7);
  EXPECT_EQ(t.pins.held.count(7), 1u);
  EXPECT_EQ(t.chain->pinned_blocks(), 1);
  // No staging bound: the store goes out at once and nothing waits for it.
  t.chain->seal_writes();
  EXPECT_FALSE(t.chain->flush_writes([] { FAIL() << "nothing waits for an async store"; }));
  int64_t pinned_midway = -1;
  t.sim.schedule_at(kBlockTime / 2, 0, [&] { pinned_midway = t.chain->pinned_blocks(); });
  TimeNs landed = -1;
  t.chain->set_unpinned([&] { landed = t.sim.now(); });
  t.sim.run();
  EXPECT_EQ(pinned_midway, 1);
  EXPECT_EQ(landed, kBlockTime);
  EXPECT_TRUE(t.pins.held.empty());
  EXPECT_EQ(t.chain->pinned_blocks(), 0);
  t.chain->check_conserved();
}

TEST(TierStores, BackgroundStoresPinNothingAndHoldNoStep) {
  OneTier t(params(kStoreOnCompute, kWriteBackground));
  t.chain->on_computed(h(1), 7);
  EXPECT_TRUE(t.pins.held.empty());
  t.chain->seal_writes();
  EXPECT_FALSE(t.chain->flush_writes([] { FAIL(); }));
  EXPECT_EQ(t.write.in_flight(), 1u);  // on its link, waited for by nobody
  t.sim.run();
}

// Four blocks and room for one: the step can go once the fourth is in the
// buffer, i.e. after three have landed; the last lands a block time later.
TEST(TierStores, AFullStagingBufferHoldsTheStepUntilTheBlocksFit) {
  OneTier t(params(kStoreOnCompute, kWriteAsync, kBlock));
  for (BlockId b = 0; b < 4; ++b) t.chain->on_computed(h(static_cast<uint64_t>(b) + 1), b);
  TimeNs ready = -1;
  t.chain->seal_writes();
  ASSERT_TRUE(t.chain->flush_writes([&] { ready = t.sim.now(); }));
  std::vector<std::pair<TimeNs, int64_t>> unpins;
  t.chain->set_unpinned([&] { unpins.emplace_back(t.sim.now(), t.chain->pinned_blocks()); });
  t.sim.run();
  EXPECT_EQ(ready, 3 * kBlockTime);
  ASSERT_EQ(unpins.size(), 4u);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(unpins[static_cast<size_t>(i)].first, (i + 1) * kBlockTime);
    EXPECT_EQ(unpins[static_cast<size_t>(i)].second, 3 - i);
  }
  t.chain->check_conserved();
}

TEST(TierStores, ASyncStoreHoldsTheStepUntilItLands) {
  OneTier t(params(kStoreOnCompute, kWriteSync));
  for (uint64_t b = 1; b <= 3; ++b) t.chain->on_computed(h(b), static_cast<BlockId>(b));
  EXPECT_TRUE(t.pins.held.empty());  // the step itself holds them
  TimeNs ready = -1;
  t.chain->seal_writes();
  ASSERT_TRUE(t.chain->flush_writes([&] { ready = t.sim.now(); }));
  t.sim.run();
  EXPECT_EQ(ready, 3 * kBlockTime);
}

TEST(TierStores, ABlockTheDeviceEvictedIsOnTheNextStepsPath) {
  for (const char* mode : {kWriteAsync, kWriteSync}) {
    OneTier t(params(kStoreOnEvict, mode));
    t.chain->on_block_evicted(h(1));
    t.chain->on_block_evicted(h(2));
    TimeNs ready = -1;
    t.chain->seal_writes();
    ASSERT_TRUE(t.chain->flush_writes([&] { ready = t.sim.now(); })) << mode;
    t.sim.run();
    EXPECT_EQ(ready, 2 * kBlockTime) << mode;
  }
  OneTier free_stores(params(kStoreOnEvict, kWriteBackground));
  free_stores.chain->on_block_evicted(h(1));
  free_stores.chain->seal_writes();
  EXPECT_FALSE(free_stores.chain->flush_writes([] { FAIL(); }));
}

TEST(TierStores, PromptOnlyStoresSkipGeneratedBlocks) {
  OneTier t(params(kStoreOnComputePrompt, kWriteAsync));
  t.chain->on_computed(h(1), 1, true);
  t.chain->on_computed(h(2), 2, false);
  EXPECT_EQ(t.chain->find(h(1)), 0);
  EXPECT_EQ(t.chain->find(h(2)), -1);
  EXPECT_EQ(t.chain->pinned_blocks(), 1);
  t.chain->seal_writes();
  (void)t.chain->flush_writes();
  t.sim.run();
  t.chain->check_conserved();
}

TEST(TierStores, AnIdleFlushSendsOnlyWhatHoldsTheDevice) {
  OneTier t(params(kStoreOnCompute, kWriteAsync));
  t.chain->on_computed(h(1), 1);
  t.chain->seal_writes();
  EXPECT_FALSE(t.chain->flush_writes({}, false));
  t.sim.run();
  EXPECT_EQ(t.chain->pinned_blocks(), 0);
  EXPECT_EQ(t.write.counters().bytes, kBlock);
}

TEST(TierStores, LookupsPayEachTiersRoundTrips) {
  KvTierParams p = params(kStoreOnEvict, kWriteBackground);
  p.lookup_latency = 50'000;
  p.lookup_block_latency = 2'000;
  OneTier t(p);
  t.chain->note_lookup(3);
  t.chain->note_lookup(1);
  EXPECT_EQ(t.chain->take_load().lookup, 50'000 + 3 * 2'000 + 50'000 + 2'000);
  EXPECT_EQ(t.chain->take_load().lookup, 0);
}

// One 4096-token prompt in chunks of 512 on a write-through tier of prompt
// blocks with a one-block staging buffer: every chunk puts 32 blocks, the
// next step waits for 31 of them to land (the 32nd goes while it computes,
// a block time being shorter than a chunk's compute), so the request ends
// 8 x 31 block times later than without the tier: the eighth chunk's blocks
// hold the first decode. Nothing else differs (no hit, no read).
const char* kOnePrompt = R"(
device: ascend-910b2
model: llama-3.2-1b
seed: 1
kv_cache: {policy: paged, block_size: 16}
scheduler: {max_batched_tokens: 512}
workload: {kind: synthetic, requests: 1, arrival: {process: poisson, rate_per_s: 1},
           input_tokens: {dist: constant, value: 4096}, output_tokens: {dist: constant, value: 8}}
)";

RunMetrics run(const std::string& yaml) {
  const ScenarioSpec s = testing::scenario_from_text(yaml);
  ServingEngine engine(s, nullptr);
  return engine.run();
}

TEST(TierStoresRun, WriteThroughSlowerThanTheComputeSlowsStepsByTheFormula) {
  const RunMetrics alone = run(kOnePrompt);
  // llama-3.2-1b: 2 x 16 layers x 16 tokens x 8 heads x 64 x 2 bytes.
  const Bytes block = 2 * 16 * 16 * 8 * 64 * 2;
  const int64_t bandwidth = 2'000'000'000;
  const auto block_time =
      static_cast<TimeNs>(std::ceil(static_cast<double>(block) * 1e9 / bandwidth));
  const std::string tier = fmt::format(
      "kv_tiers: {{tiers: [{{name: dram, capacity: 64GiB, read_bandwidth: 25GB/s, "
      "write_bandwidth: {}B/s, latency: 0us, store: on_compute_prompt, write_mode: async, "
      "staging_buffer: {}B}}]}}\n",
      bandwidth, block);
  const RunMetrics slowed = run(std::string(kOnePrompt) + tier);
  const TimeNs expected = 8 * 31 * block_time;
  EXPECT_NEAR(testing::tiers_of(slowed).store_wait_s, static_cast<double>(expected) / 1e9, 1e-9);
  EXPECT_NEAR((slowed.latency_ms.e2e.mean - alone.latency_ms.e2e.mean) * 1e6,
              static_cast<double>(expected), 1.0);
  EXPECT_EQ(testing::tiers_of(slowed).dram.bytes_written, 256 * block);
  // A chunk's blocks are pinned from their allocation (vLLM V1 caches a
  // block before the forward that computes it) until they land: at a
  // step's start, the chunk before's 32 and its own 32, and no more (the
  // last block of the one before that landed while the step before ran).
  EXPECT_EQ(testing::tiers_of(slowed).dram.pinned_peak_blocks, 64);
  // The same stores in the background cost no step anything.
  std::string free_tier = tier;
  free_tier.replace(free_tier.find("write_mode: async"), 17, "write_mode: background");
  free_tier.replace(free_tier.find(fmt::format(", staging_buffer: {}B", block)),
                    fmt::format(", staging_buffer: {}B", block).size(), "");
  const RunMetrics free_stores = run(std::string(kOnePrompt) + free_tier);
  EXPECT_EQ(free_stores.latency_ms.e2e.mean, alone.latency_ms.e2e.mean);
  EXPECT_EQ(testing::tiers_of(free_stores).store_wait_s, 0.0);
}

// The scenario of a pool behind a slow link: reading hits back over 1 GB/s
// costs more than recomputing them, so the pool raises TTFT against the
// device alone; over 25 GB/s it lowers it. The hit rate is the same pool's.
TEST(TierStoresRun, APoolBehindASlowLinkRaisesTtftAndBehindAFastOneLowersIt) {
  const std::string file =
      std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/pool-behind-slow-link-910b2.yaml";
  auto ttft_p50 = [&](const std::vector<std::string>& overrides, double* hit_rate) {
    const ScenarioSpec s = load_scenario(file, overrides);
    ServingEngine engine(s, nullptr);
    const RunMetrics m = engine.run();
    *hit_rate = testing::pool_of(m).prefix_hit_rate;
    return m.latency_ms.ttft.p50;
  };
  double alone_hits = 0, slow_hits = 0, fast_hits = 0;
  const double alone = ttft_p50({"kv_tiers.tiers={}"}, &alone_hits);
  const double slow = ttft_p50({}, &slow_hits);
  const double fast = ttft_p50({"kv_tiers.tiers.global.read_bandwidth=25GB/s",
                                "kv_tiers.tiers.global.write_bandwidth=25GB/s"},
                               &fast_hits);
  EXPECT_GT(slow, 2 * alone);
  EXPECT_LT(fast, alone);
  EXPECT_GT(slow_hits, alone_hits + 0.1);
  EXPECT_NEAR(fast_hits, slow_hits, 1e-9);
}

TEST(TierStoresYaml, StagingBuffersAndWriteModesAreChecked) {
  auto error_of = [](const std::string& keys) {
    try {
      (void)testing::scenario_from_text(
          std::string(kOnePrompt) +
          "kv_tiers:\n  tiers:\n    - {name: dram, capacity: 1GiB, read_bandwidth: 1GB/s, "
          "write_bandwidth: 1GB/s, " +
          keys + "}\n");
    } catch (const config::ConfigError& e) {
      return e.diagnostics().at(0).format();
    }
    return std::string("no error");
  };
  const std::string small = error_of("write_mode: async, staging_buffer: 4KiB");
  EXPECT_NE(small.find("kv_tiers.tiers[0].staging_buffer"), std::string::npos) << small;
  EXPECT_NE(small.find("hold no block"), std::string::npos) << small;
  EXPECT_NE(small.find(":11:"), std::string::npos) << small;  // the tier's line
  const std::string unstaged = error_of("staging_buffer: 64MiB");
  EXPECT_NE(unstaged.find("only async stores are staged"), std::string::npos) << unstaged;
  const std::string mode = error_of("write_mode: later");
  EXPECT_NE(mode.find("background, async, sync"), std::string::npos) << mode;
  EXPECT_EQ(error_of("write_mode: async, staging_buffer: 64MiB"), "no error");
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
