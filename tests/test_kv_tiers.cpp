// Tiers below device HBM (sim/cache/tiers/): a tier's capacity and transfer
// times, the chain's cascade and conservation, a prefix found in a lower
// tier read back at that tier's bandwidth, a global pool shared by two
// instances, the `kv_tiers:` section, and runs that use them.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/cache/eviction/eviction_registry.hpp"
#include "sim/cache/paged_policy.hpp"
#include "sim/cache/tiers/kv_tier.hpp"
#include "sim/cache/tiers/tier_chain.hpp"
#include "sim/cache/tiers/tier_config.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr Bytes kBlockBytes = 1 << 20;  // 1 MiB per block

KvTierParams tier_params(const std::string& name, int64_t blocks, int64_t read_bw = 1'000'000'000,
                         TimeNs latency = 10'000) {
  KvTierParams p;
  p.name = name;
  p.capacity = blocks * kBlockBytes;
  p.read_bandwidth = read_bw;
  p.write_bandwidth = read_bw / 2;
  p.latency = latency;
  return p;
}

BlockHash h(uint64_t v) {
  return {v, v * 31};
}

TEST(KvTier, HoldsItsCapacityAndPricesTransfers) {
  KvTier t(tier_params("dram", 2), kBlockBytes);
  EXPECT_EQ(t.capacity_blocks(), 2);
  std::vector<BlockHash> evicted;
  t.put(h(1), evicted);
  t.put(h(2), evicted);
  EXPECT_TRUE(evicted.empty());
  EXPECT_TRUE(t.touch(h(1)));  // h(2) is now the least recent
  t.put(h(3), evicted);
  EXPECT_EQ(evicted, (std::vector<BlockHash>{h(2)}));
  EXPECT_TRUE(t.contains(h(1)));
  EXPECT_FALSE(t.contains(h(2)));
  t.check_conserved();
  // 3 MiB at 1 GB/s after a 10 us latency; writes at half the bandwidth.
  EXPECT_EQ(t.read_time(3),
            10'000 + (3 * kBlockBytes * 1'000'000'000LL + 999'999'999) / 1'000'000'000LL);
  EXPECT_EQ(t.write_time(1), 10'000 + 2 * kBlockBytes);
  EXPECT_EQ(t.read_time(0), 0);
}

TEST(TierChain, DeviceEvictionsCascadeDownAndAreConserved) {
  auto dram = std::make_shared<KvTier>(tier_params("dram", 2), kBlockBytes);
  auto ssd = std::make_shared<KvTier>(tier_params("ssd", 2), kBlockBytes);
  TierChain chain({dram, ssd}, false, 16);
  for (uint64_t v = 1; v <= 5; ++v) chain.on_block_evicted(h(v));
  // dram keeps the two latest; ssd took 1, 2, 3 and dropped 1.
  EXPECT_EQ(chain.find(h(5)), 0);
  EXPECT_EQ(chain.find(h(4)), 0);
  EXPECT_EQ(chain.find(h(3)), 1);
  EXPECT_EQ(chain.find(h(2)), 1);
  EXPECT_EQ(chain.find(h(1)), -1);
  chain.on_block_evicted(h(4));  // already in dram: nothing moves
  EXPECT_EQ(dram->puts(), 5u);
  EXPECT_NO_THROW(chain.check_conserved());
  EXPECT_EQ(ssd->evictions(), 1u);
}

TEST(TierChain, LoadsArePricedPerTierAndPerStep) {
  auto dram = std::make_shared<KvTier>(tier_params("dram", 8, 2'000'000'000, 5'000), kBlockBytes);
  auto ssd = std::make_shared<KvTier>(tier_params("ssd", 8, 500'000'000, 80'000), kBlockBytes);
  TierChain chain({dram, ssd}, false, 16);
  std::vector<BlockHash> ev;
  dram->put(h(1), ev);
  dram->put(h(2), ev);
  ssd->put(h(3), ev);
  chain.load(h(1), 0, true);
  chain.load(h(2), 0, true);
  chain.load(h(3), 1, true);
  const TierLoad load = chain.take_load();
  EXPECT_EQ(load.time, dram->read_time(2) + ssd->read_time(1));
  EXPECT_EQ(load.step_latency(1'000'000), 1'000'000 + load.time);
  EXPECT_EQ(chain.take_load().time, 0);  // priced once
  TierLoad layerwise = load;
  layerwise.layerwise = true;
  EXPECT_EQ(layerwise.step_latency(load.time + 7), load.time + 7);
  EXPECT_EQ(layerwise.step_latency(load.time - 7), load.time);
}

// A paged pool of 4 blocks of 4 tokens over a dram tier: a prompt evicted
// from the device is found in dram and read back at dram's cost.
TEST(PagedTiers, APrefixEvictedFromTheDeviceIsReadBackFromItsTier) {
  PagedParams pp;
  pp.num_blocks = 4;
  pp.block_size = 4;
  pp.block_bytes = kBlockBytes;
  PagedPolicy policy(pp);
  KvTiersConfig cfg;
  cfg.tiers.push_back(tier_params("dram", 16, 1'000'000'000, 10'000));
  policy.attach_tiers(make_tier_chain(cfg, kBlockBytes, 4));

  auto serve = [&](const std::vector<int32_t>& prompt) {
    const TokenView tokens{prompt.data(), static_cast<int64_t>(prompt.size()), nullptr, 0};
    PrefixHit hit = policy.lookup_prefix(tokens);
    const int64_t cached = hit.cached_tokens;
    const AdmitPlan plan = policy.plan_admit(std::move(hit), tokens.size() - cached);
    EXPECT_TRUE(plan.fits);
    const SeqSlot s = policy.apply_admit(plan);
    policy.commit(s, tokens, tokens.size());
    policy.release(s);
    return cached;
  };
  std::vector<int32_t> a(13), b(13);
  std::iota(a.begin(), a.end(), 0);
  std::iota(b.begin(), b.end(), 100);
  EXPECT_EQ(serve(a), 0);
  EXPECT_EQ(policy.take_tier_load().time, 0);
  EXPECT_EQ(serve(b), 0);  // b's 4 blocks evict a's 3 cached ones into dram
  EXPECT_EQ(policy.take_tier_load().time, 0);
  EXPECT_EQ(policy.tiers()->find(policy.lookup_prefix({a.data(), 13, nullptr, 0}).hashes[0]), 0);
  EXPECT_EQ(serve(a), 12);  // 3 full blocks back from dram (never the last token)
  const TierLoad load = policy.take_tier_load();
  EXPECT_EQ(load.time, policy.tiers()->tier(0).read_time(3));
  EXPECT_EQ(load.time,
            10'000 + (3 * kBlockBytes * 1'000'000'000LL + 999'999'999) / 1'000'000'000LL);
  EXPECT_NO_THROW(policy.check_drained());
  RunMetrics m;
  policy.report(m);
  EXPECT_EQ(testing::tiers_of(m).dram.hit_tokens, 12);
  EXPECT_EQ(testing::tiers_of(m).dram.bytes_read, 3 * kBlockBytes);
  EXPECT_DOUBLE_EQ(testing::tiers_of(m).dram.hit_rate, 12.0 / 39.0);
  EXPECT_DOUBLE_EQ(testing::tiers_of(m).device_hit_rate, 0.0);
}

// One global pool, two instances: what one computes the other reads.
TEST(GlobalPool, APrefixComputedOnOneInstanceServesAnother) {
  KvTierParams gp = tier_params("global", 64, 10'000'000'000, 20'000);
  gp.store = kStoreOnCompute;
  auto pool = std::make_shared<KvTier>(gp, kBlockBytes);
  KvTiersConfig cfg;
  cfg.tiers.push_back(gp);
  PagedParams pp;
  pp.num_blocks = 8;
  pp.block_size = 4;
  pp.block_bytes = kBlockBytes;
  PagedPolicy one(pp), two(pp);
  one.attach_tiers(make_tier_chain(cfg, kBlockBytes, 4, pool));
  two.attach_tiers(make_tier_chain(cfg, kBlockBytes, 4, pool));
  std::vector<int32_t> prompt(9);
  std::iota(prompt.begin(), prompt.end(), 7);
  const TokenView tokens{prompt.data(), 9, nullptr, 0};
  {
    const AdmitPlan plan = one.plan_admit(one.lookup_prefix(tokens), 9);
    const SeqSlot s = one.apply_admit(plan);
    one.commit(s, tokens, 9);
    one.release(s);
  }
  EXPECT_EQ(pool->blocks_held(), 2);  // put as computed, not on eviction
  PrefixHit hit = two.lookup_prefix(tokens);
  EXPECT_EQ(hit.cached_tokens, 8);
  EXPECT_EQ(hit.tier_hits, (std::vector<int8_t>{0, 0}));
  const SeqSlot s = two.apply_admit(two.plan_admit(std::move(hit), 1));
  EXPECT_EQ(two.take_tier_load().time, pool->read_time(2));
  two.commit(s, tokens, 9);
  two.release(s);
  EXPECT_NO_THROW(one.check_drained());
  EXPECT_NO_THROW(two.check_drained());
  EXPECT_EQ(pool->puts(), 2u);  // instance two found them: no second put
}

// A cluster hands its pool to instances built with their own chains.
TEST(GlobalPool, SharedIntoChainsBuiltFromTheScenario) {
  KvTierParams gp = tier_params("global", 64);
  gp.store = kStoreOnCompute;
  KvTiersConfig cfg;
  cfg.tiers.push_back(tier_params("dram", 4));
  cfg.tiers.push_back(gp);
  PagedParams pp;
  pp.num_blocks = 8;
  pp.block_size = 4;
  pp.block_bytes = kBlockBytes;
  PagedPolicy a(pp), b(pp), no_tiers(pp);
  a.attach_tiers(make_tier_chain(cfg, kBlockBytes, 4));
  b.attach_tiers(make_tier_chain(cfg, kBlockBytes, 4));
  auto pool = std::make_shared<KvTier>(gp, kBlockBytes);
  EXPECT_TRUE(a.share_tier(pool));
  EXPECT_TRUE(b.share_tier(pool));
  EXPECT_FALSE(no_tiers.share_tier(pool));
  EXPECT_EQ(&a.tiers()->tier(1), pool.get());
  EXPECT_EQ(&b.tiers()->tier(1), pool.get());
  EXPECT_THROW((void)a.share_tier(std::make_shared<KvTier>(gp, 2 * kBlockBytes)),
               std::invalid_argument);
}

// The pool's balance across the chains that share it: what they put, minus
// its evictions; a chain left out of the count fails the check.
TEST(GlobalPool, ItsPutsAreTheSumOfEveryChainsPuts) {
  KvTierParams gp = tier_params("global", 3);
  gp.store = kStoreOnCompute;
  auto pool = std::make_shared<KvTier>(gp, kBlockBytes);
  KvTiersConfig cfg;
  cfg.tiers.push_back(gp);
  TierChain one({pool}, false, 4), two({pool}, false, 4);
  one.on_computed(h(1));
  one.on_computed(h(2));
  two.on_computed(h(2));  // held already: not put twice
  two.on_computed(h(3));
  two.on_computed(h(4));  // full: h(1) leaves
  EXPECT_EQ(one.puts_into(*pool), 2);
  EXPECT_EQ(two.puts_into(*pool), 2);
  EXPECT_EQ(pool->evictions(), 1u);
  EXPECT_NO_THROW(check_shared_tier_conserved(*pool, {&one, &two}));
  EXPECT_THROW(check_shared_tier_conserved(*pool, {&one}), std::logic_error);
  const KvTier other(gp, kBlockBytes);
  EXPECT_EQ(one.puts_into(other), 0);
}

const char* kRun = R"(
device: ascend-910b2
model: llama-3.2-1b
seed: 3
kv_cache: {policy: paged, block_size: 16, memory_fraction: 0.06, activation_reserve: 1GiB}
workload: {kind: chat, sessions: 40, arrival: {process: poisson, rate_per_s: 4},
           turns: {dist: constant, value: 4}, think_time: {dist: exponential, mean: 8s},
           system_prompt_tokens: 256, user_tokens: {dist: constant, value: 200},
           output_tokens: {dist: constant, value: 64}}
)";

TEST(KvTiersYaml, ReadsTheSectionAndRefusesBadOnes) {
  const std::string base = kRun;
  const ScenarioSpec s = testing::scenario_from_text(
      base +
      "kv_tiers: {load_overlap: layerwise, tiers: [{name: dram, capacity: 8GiB, "
      "read_bandwidth: 25GB/s, write_bandwidth: 20GB/s, latency: 10us, eviction: s3fifo},"
      " {name: global, capacity: 1TB, read_bandwidth: 10GB/s, write_bandwidth: 10GB/s, "
      "store: on_compute}]}\n");
  ASSERT_EQ(s.kv_tiers.tiers.size(), 2u);
  EXPECT_EQ(s.kv_tiers.load_overlap, "layerwise");
  EXPECT_EQ(s.kv_tiers.tiers[0].eviction, "s3fifo");
  EXPECT_EQ(s.kv_tiers.tiers[0].latency, 10'000);
  EXPECT_EQ(s.kv_tiers.tiers[1].store, "on_compute");
  EXPECT_TRUE(testing::scenario_from_text(base).kv_tiers.empty());
  auto error_of = [&](const std::string& tiers) {
    try {
      (void)testing::scenario_from_text(base + tiers);
    } catch (const config::ConfigError& e) {
      return e.diagnostics().at(0).format();
    }
    return std::string("no error");
  };
  const std::string dram =
      "{name: dram, capacity: 1GiB, read_bandwidth: 1GB/s, write_bandwidth: 1GB/s}";
  const std::string ssd =
      "{name: ssd, capacity: 1GiB, read_bandwidth: 1GB/s, write_bandwidth: 1GB/s}";
  EXPECT_NE(error_of("kv_tiers: {tiers: [" + ssd + ", " + dram + "]}\n").find("slower one"),
            std::string::npos);
  EXPECT_NE(error_of("kv_tiers: {tiers: [{name: dram, capacity: 1GiB}]}\n").find("read_bandwidth"),
            std::string::npos);
  std::string no_prefix = base;
  no_prefix.replace(no_prefix.find("block_size: 16,"), 15,
                    "block_size: 16, prefix_caching: false,");
  try {
    (void)testing::scenario_from_text(no_prefix + "kv_tiers: {tiers: [" + dram + "]}\n");
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(e.diagnostics().at(0).format().find("prefix_caching"), std::string::npos)
        << e.diagnostics().at(0).format();
  }
}

RunMetrics run(const std::string& yaml) {
  const ScenarioSpec s = testing::scenario_from_text(yaml);
  ServingEngine engine(s, nullptr);
  return engine.run();
}

// A chat whose sessions outgrow a small device pool: a dram tier serves the
// prefixes the device evicted, and every block is accounted for.
TEST(KvTiersRun, ADramTierServesWhatTheDeviceEvicted) {
  RunMetrics none = run(kRun);
  RunMetrics empty = run(std::string(kRun) + "kv_tiers: {tiers: []}\n");
  none.sim.wall_s = empty.sim.wall_s = 0;
  EXPECT_EQ(metrics_to_json(none).dump(), metrics_to_json(empty).dump());
  const RunMetrics dram =
      run(std::string(kRun) +
          "kv_tiers: {tiers: [{name: dram, capacity: 64GiB, read_bandwidth: 25GB/s, "
          "write_bandwidth: 25GB/s, latency: 10us}]}\n");
  EXPECT_GT(testing::pool_of(none).evictions, 0u);
  EXPECT_GT(testing::tiers_of(dram).dram.hit_rate, 0.0);
  EXPECT_GT(testing::pool_of(dram).prefix_hit_rate, testing::pool_of(none).prefix_hit_rate);
  EXPECT_NEAR(testing::tiers_of(dram).device_hit_rate + testing::tiers_of(dram).dram.hit_rate,
              testing::pool_of(dram).prefix_hit_rate, 1e-12);
  EXPECT_GT(testing::tiers_of(dram).load_time_s, 0.0);
  if (dram.requests.preemptions == 0) {  // every load is a first admission's
    EXPECT_EQ(testing::tiers_of(dram).dram.bytes_read,
              testing::tiers_of(dram).dram.hit_tokens / 16 * testing::pool_of(dram).block_bytes);
  }
  EXPECT_GT(testing::tiers_of(dram).dram.bytes_written, 0);
  EXPECT_EQ(testing::tiers_of(dram).ssd.bytes_read, 0);
  EXPECT_EQ(testing::tiers_of(none).dram.hit_tokens, 0);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// `tiers:` as a map of name to tier: taken fastest first whatever the map's
// order, and a tier of capacity 0 left out (a compare switches it off so).
TEST(KvTiersYaml, AMapOfTiersAndCapacityZero) {
  const std::string base = kRun;
  const ScenarioSpec s = testing::scenario_from_text(
      base +
      "kv_tiers: {tiers: {ssd: {capacity: 1TB, read_bandwidth: 6GB/s, write_bandwidth: 3GB/s}, "
      "dram: {capacity: 8GiB, read_bandwidth: 25GB/s, write_bandwidth: 25GB/s}}}\n");
  ASSERT_EQ(s.kv_tiers.tiers.size(), 2u);
  EXPECT_EQ(s.kv_tiers.tiers[0].name, "dram");
  EXPECT_EQ(s.kv_tiers.tiers[1].name, "ssd");
  const ScenarioSpec off =
      testing::scenario_from_text(base +
                                  "kv_tiers: {tiers: {dram: {capacity: 0, read_bandwidth: 25GB/s, "
                                  "write_bandwidth: 25GB/s}}}\n");
  EXPECT_TRUE(off.kv_tiers.empty());
  try {
    (void)testing::scenario_from_text(base +
                                      "kv_tiers: {tiers: {hbm: {capacity: 1GiB, read_bandwidth: "
                                      "1GB/s, write_bandwidth: 1GB/s}}}\n");
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(e.diagnostics().at(0).format().find("no tier named 'hbm'"), std::string::npos)
        << e.diagnostics().at(0).format();
  }
}

// Every eviction order, on the device pool and on the tier, through a whole
// run: the pool's and the tiers' balances hold (finish() throws otherwise),
// and overlapping the loads with compute never makes a step longer.
TEST(KvTiersRun, EveryEvictionOrderAndBothOverlapsKeepTheBalances) {
  const std::string tier =
      "{name: dram, capacity: 256MiB, read_bandwidth: 25GB/s, write_bandwidth: 25GB/s, "
      "latency: 10us, eviction: ";
  for (const std::string& order : eviction_order_names()) {
    std::string yaml = kRun;
    yaml.replace(yaml.find("block_size: 16,"), 15, "block_size: 16, eviction: " + order + ",");
    const RunMetrics m = run(yaml + "kv_tiers: {tiers: [" + tier + order + "}]}\n");
    EXPECT_EQ(m.requests.completed, m.requests.arrived) << order;
    EXPECT_GT(testing::tiers_of(m).dram.hit_rate, 0.0) << order;
    EXPECT_GT(testing::tiers_of(m).dram.evictions, 0u) << order;
  }
  const RunMetrics serial = run(std::string(kRun) + "kv_tiers: {tiers: [" + tier + "lru}]}\n");
  const RunMetrics overlap =
      run(std::string(kRun) + "kv_tiers: {load_overlap: layerwise, tiers: [" + tier + "lru}]}\n");
  EXPECT_LE(overlap.latency_ms.ttft.mean, serial.latency_ms.ttft.mean);
  EXPECT_DOUBLE_EQ(testing::tiers_of(overlap).load_time_s, testing::tiers_of(serial).load_time_s);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
