// A tier reached through host DRAM (kv_tiers.tiers[].via_host): its reads
// cross the tier's link into a host buffer, then the host link into the
// device, one hop after the other; its stores from the device the other
// way. Both hops are shared links: bytes on each are what the tier moved,
// and a transfer alone takes the sum of its hops' times.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/cache/tiers/kv_tier.hpp"
#include "sim/cache/tiers/tier_chain.hpp"
#include "sim/core/link_metrics.hpp"
#include "sim/core/shared_link.hpp"
#include "sim/core/simulator.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr Bytes kBlock = 1'000'000;
constexpr TimeNs kMs = 1'000'000;

BlockHash h(uint64_t v) {
  return {v, v * 7919};
}

// dram behind a 2 GB/s host link, ssd behind its own 1 GB/s link and
// reached through host DRAM; ssd stores every computed block, in sync.
struct Staged {
  Simulator sim;
  SharedLink host_read{sim, {"host.read", 2'000'000'000, 0}, 0};
  SharedLink host_write{sim, {"host.write", 2'000'000'000, 0}, 0};
  SharedLink ssd_read{sim, {"ssd.read", 1'000'000'000, 0}, 0};
  SharedLink ssd_write{sim, {"ssd.write", 1'000'000'000, 0}, 0};
  std::unique_ptr<TierChain> chain;

  Staged() {
    KvTierParams dram;
    dram.name = "dram";
    dram.capacity = 100 * kBlock;
    dram.read_bandwidth = dram.write_bandwidth = 2'000'000'000;
    KvTierParams ssd = dram;
    ssd.name = "ssd";
    ssd.read_bandwidth = ssd.write_bandwidth = 1'000'000'000;
    ssd.store = kStoreOnCompute;
    ssd.write_mode = kWriteSync;
    ssd.via_host = true;
    chain = std::make_unique<TierChain>(
        std::vector<std::shared_ptr<KvTier>>{std::make_shared<KvTier>(dram, kBlock),
                                             std::make_shared<KvTier>(ssd, kBlock)},
        false, 16);
    chain->set_paths(0, {&host_read}, {&host_write});
    chain->set_paths(1, {&ssd_read}, {&ssd_write});
    chain->set_host_hops(1, {&host_read}, {&host_write});
  }
};

TEST(HostStaging, AStoreCrossesTheHostLinkThenTheTiersOneAfterTheOther) {
  Staged t;
  for (uint64_t b = 1; b <= 4; ++b) t.chain->on_computed(h(b));
  t.chain->seal_writes();
  TimeNs ready = -1;
  ASSERT_TRUE(t.chain->flush_writes([&] { ready = t.sim.now(); }));
  t.sim.run();
  // 4 MB: 2 ms over the host link into DRAM, then 4 ms onto the SSD.
  EXPECT_EQ(ready, 6 * kMs);
  EXPECT_EQ(t.host_write.counters().bytes, 4 * kBlock);
  EXPECT_EQ(t.ssd_write.counters().bytes, 4 * kBlock);
  EXPECT_EQ(t.host_read.counters().bytes, 0);
}

TEST(HostStaging, ALoadCrossesTheTiersLinkThenTheHostLink) {
  Staged t;
  for (uint64_t b = 1; b <= 4; ++b) t.chain->on_computed(h(b));
  t.chain->seal_writes();
  t.chain->flush_writes([] {});
  t.sim.run();
  const TimeNs start = t.sim.now();
  for (uint64_t b = 1; b <= 4; ++b) t.chain->load(h(b), 1, true);
  // Priced alone: 4 ms from the SSD into DRAM plus 2 ms into the device.
  EXPECT_EQ(t.chain->take_load().time, 6 * kMs);
  TimeNs done = -1;
  ASSERT_TRUE(t.chain->read_back([&] { done = t.sim.now(); }));
  t.sim.run();
  EXPECT_EQ(done - start, 6 * kMs);
  EXPECT_EQ(t.ssd_read.counters().bytes, 4 * kBlock);
  EXPECT_EQ(t.host_read.counters().bytes, 4 * kBlock);
  t.chain->check_conserved();
}

// A dram hit and a staged ssd hit in one step share the host link: the
// dram read first (1 ms), then the ssd's two hops (2 + 1 ms); a block the
// device evicted into dram crosses dram's link alone.
TEST(HostStaging, DramHitsAndStagedReadsShareTheHostLink) {
  Staged t;
  for (uint64_t b = 1; b <= 2; ++b) t.chain->on_computed(h(b));
  t.chain->seal_writes();
  t.chain->flush_writes([] {});
  t.sim.run();
  // Two blocks the device evicted land in dram (on_evict).
  t.chain->on_block_evicted(h(10));
  t.chain->on_block_evicted(h(11));
  t.chain->seal_writes();
  t.chain->flush_writes([] {}, true);
  t.sim.run();
  const Bytes host_before = t.host_read.counters().bytes;
  const TimeNs start = t.sim.now();
  t.chain->load(h(10), 0, true);
  t.chain->load(h(11), 0, true);
  t.chain->load(h(1), 1, true);
  t.chain->load(h(2), 1, true);
  EXPECT_EQ(t.chain->take_load().time, 1 * kMs + 2 * kMs + 1 * kMs);
  TimeNs done = -1;
  ASSERT_TRUE(t.chain->read_back([&] { done = t.sim.now(); }));
  t.sim.run();
  EXPECT_EQ(done - start, 4 * kMs);
  EXPECT_EQ(t.host_read.counters().bytes - host_before, 4 * kBlock);
  EXPECT_EQ(t.ssd_read.counters().bytes, 2 * kBlock);
}

const char* kChat = R"(
device: ascend-910b2
model: llama-3.2-1b
seed: 3
kv_cache: {policy: paged, block_size: 16, memory_fraction: 0.06, activation_reserve: 1GiB}
workload: {kind: chat, sessions: 40, arrival: {process: poisson, rate_per_s: 4},
           turns: {dist: constant, value: 4}, think_time: {dist: exponential, mean: 8s},
           system_prompt_tokens: 256, user_tokens: {dist: constant, value: 200},
           output_tokens: {dist: constant, value: 64}}
)";

RunMetrics run(const std::string& yaml) {
  const ScenarioSpec s = testing::scenario_from_text(yaml);
  ServingEngine engine(s, nullptr);
  return engine.run();
}

std::map<std::string, Bytes> link_bytes(const RunMetrics& m) {
  std::map<std::string, Bytes> out;
  for (const LinkMetrics& l : m.parts.get_or_zero<KvMovementMetrics>().links) out[l.name] = l.bytes;
  return out;
}

// A small dram tier whose victims go to an ssd reached through it: every
// byte read from the ssd crosses the ssd's link and then dram's (the host
// link); what dram passes down to the ssd stays off the host link.
TEST(HostStagingRun, EveryStagedByteCrossesBothLinks) {
  const RunMetrics m =
      run(std::string(kChat) +
          "kv_tiers: {tiers: [{name: dram, capacity: 64MiB, read_bandwidth: 25GB/s, "
          "write_bandwidth: 25GB/s, latency: 10us}, {name: ssd, capacity: 64GiB, "
          "read_bandwidth: 3GB/s, write_bandwidth: 2GB/s, latency: 50us, via_host: true}]}\n");
  const KvTiersMetrics& t = testing::tiers_of(m);
  ASSERT_GT(t.ssd.bytes_read, 0);
  ASSERT_GT(t.dram.bytes_read, 0);
  const auto bytes = link_bytes(m);
  EXPECT_EQ(bytes.at("kv_tiers.ssd.read"), t.ssd.bytes_read);
  EXPECT_EQ(bytes.at("kv_tiers.dram.read"), t.dram.bytes_read + t.ssd.bytes_read);
  // Stores put after the last step's flush never go out (the run ends
  // first): one block here, on each of dram's and the ssd's links.
  const Bytes block = testing::pool_of(m).block_bytes;
  EXPECT_EQ(t.dram.bytes_written - bytes.at("kv_tiers.dram.write"), block);
  EXPECT_EQ(t.ssd.bytes_written - bytes.at("kv_tiers.ssd.write"), block);
  EXPECT_EQ(bytes.count("kv_tiers.host.read"), 0u);
}

// Without a dram tier the device file's host link is the second hop.
TEST(HostStagingRun, WithoutADramTierTheDevicesHostLinkCarriesIt) {
  const RunMetrics m = run(std::string(kChat) +
                           "kv_tiers: {tiers: [{name: ssd, capacity: 64GiB, "
                           "read_bandwidth: 3GB/s, write_bandwidth: 2GB/s, latency: 50us, "
                           "via_host: true}]}\n");
  const KvTiersMetrics& t = testing::tiers_of(m);
  ASSERT_GT(t.ssd.bytes_read, 0);
  const auto bytes = link_bytes(m);
  EXPECT_EQ(bytes.at("kv_tiers.host.read"), t.ssd.bytes_read);
  EXPECT_EQ(bytes.at("kv_tiers.host.write"), t.ssd.bytes_written);
  EXPECT_EQ(bytes.at("kv_tiers.ssd.read"), t.ssd.bytes_read);
}

TEST(HostStagingYaml, ViaHostOnDramIsAnErrorAtTheKey) {
  try {
    (void)testing::scenario_from_text(
        std::string(kChat) +
        "kv_tiers: {tiers: [{name: dram, capacity: 1GiB, read_bandwidth: 1GB/s, "
        "write_bandwidth: 1GB/s, via_host: true}]}\n");
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    const std::string text = e.diagnostics().at(0).format();
    EXPECT_NE(text.find("kv_tiers.tiers[0].via_host"), std::string::npos) << text;
    EXPECT_NE(text.find("host memory"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
