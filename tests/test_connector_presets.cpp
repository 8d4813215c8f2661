// Connector presets (sim/cache/tiers/connector_presets.hpp): each preset is
// its tiers' values, a user's key overrides the preset's, a tier the preset
// gives with no room is left out until an override sizes it, and bad input
// (an unknown preset, a misspelled key, tiers as a list) is an error naming
// the key with what the preset knows.
#include <gtest/gtest.h>

#include <string>

#include "base/diagnostics.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/tiers/connector_presets.hpp"
#include "sim/cache/tiers/kv_tier.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {
namespace {

std::string with_tiers(const std::string& kv_tiers) {
  return "device: ascend-910b2\nmodel: llama-3-8b\n"
         "kv_cache: {policy: paged, block_size: 128, memory_fraction: 0.5}\n"
         "kv_tiers: " +
         kv_tiers +
         "\nworkload: {kind: synthetic, requests: 2, arrival: {process: poisson, rate_per_s: 1}, "
         "input_tokens: 100, output_tokens: 2}\n";
}

const KvTierParams* tier(const ScenarioSpec& s, const std::string& name) {
  for (const KvTierParams& t : s.kv_tiers.tiers)
    if (t.name == name) return &t;
  return nullptr;
}

std::string load_error(const std::string& yaml) {
  try {
    (void)testing::scenario_from_text(yaml);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ConnectorPresets, EachPresetIsItsTiersValues) {
  const ScenarioSpec s = testing::scenario_from_text(with_tiers("{preset: lmcache}"));
  // LMCache's defaults: a 5 GB CPU cache of prompt chunks, saves waited
  // for; disk and remote off (capacity 0, left out).
  ASSERT_EQ(s.kv_tiers.tiers.size(), 1u);
  const KvTierParams& dram = s.kv_tiers.tiers[0];
  EXPECT_EQ(dram.name, "dram");
  EXPECT_EQ(dram.capacity, 5'000'000'000);
  EXPECT_EQ(dram.store, kStoreOnComputePrompt);
  EXPECT_EQ(dram.write_mode, kWriteSync);
  EXPECT_EQ(s.kv_tiers.load_overlap, "none");

  const ScenarioSpec m = testing::scenario_from_text(with_tiers("{preset: mooncake_store}"));
  ASSERT_NE(tier(m, "global"), nullptr);
  EXPECT_EQ(tier(m, "global")->store, kStoreOnCompute);
  EXPECT_EQ(tier(m, "global")->write_mode, kWriteAsync);
  EXPECT_EQ(tier(m, "global")->lookup_latency, 200'000);
  EXPECT_EQ(tier(m, "dram"), nullptr);

  const ScenarioSpec back = testing::scenario_from_text(with_tiers("{preset: hicache_write_back}"));
  EXPECT_EQ(tier(back, "dram")->store, kStoreOnEvict);
  EXPECT_EQ(back.kv_tiers.load_overlap, "layerwise");
  const ScenarioSpec through =
      testing::scenario_from_text(with_tiers("{preset: hicache_write_through}"));
  EXPECT_EQ(tier(through, "dram")->store, kStoreOnCompute);
  // Every preset loads, and names its source.
  for (const ConnectorPreset& p : connector_presets()) {
    EXPECT_FALSE(p.source.empty()) << p.name;
    EXPECT_NO_THROW(testing::scenario_from_text(with_tiers("{preset: " + p.name + "}"))) << p.name;
  }
}

TEST(ConnectorPresets, AUserOverridesKeyByKey) {
  const ScenarioSpec s = testing::scenario_from_text(
      with_tiers("{preset: lmcache, load_overlap: layerwise, tiers: {dram: {capacity: 64GiB}, ssd: "
                 "{capacity: 1TB, read_bandwidth: 7GB/s}}}"));
  ASSERT_EQ(s.kv_tiers.tiers.size(), 2u);
  EXPECT_EQ(tier(s, "dram")->capacity, int64_t{64} << 30);
  EXPECT_EQ(tier(s, "dram")->store, kStoreOnComputePrompt);  // the preset's, not overridden
  EXPECT_EQ(tier(s, "ssd")->capacity, 1'000'000'000'000);
  EXPECT_EQ(tier(s, "ssd")->read_bandwidth, 7'000'000'000);
  EXPECT_EQ(tier(s, "ssd")->write_bandwidth, 3'000'000'000);  // the preset's
  EXPECT_EQ(s.kv_tiers.load_overlap, "layerwise");
  // --set reaches the preset and its keys.
  const ScenarioSpec set =
      load_scenario_text(with_tiers("{}"), "inline.yaml", testing::configs_dir(),
                         {"kv_tiers.preset=vllm_offloading", "kv_tiers.tiers.dram.capacity=8GiB"});
  EXPECT_EQ(tier(set, "dram")->capacity, int64_t{8} << 30);
  EXPECT_EQ(tier(set, "dram")->store, kStoreOnCompute);
}

TEST(ConnectorPresets, BadInputNamesTheKeyAndWhatThePresetKnows) {
  const std::string unknown = load_error(with_tiers("{preset: lmcash}"));
  EXPECT_NE(unknown.find("kv_tiers.preset"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown connector preset 'lmcash'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("mooncake_store"), std::string::npos) << unknown;
  const std::string key =
      load_error(with_tiers("{preset: lmcache, tiers: {dram: {capcity: 64GiB}}}"));
  EXPECT_NE(key.find("kv_tiers.tiers.dram.capcity"), std::string::npos) << key;
  EXPECT_NE(key.find("tiers.dram.capacity"), std::string::npos) << key;  // the preset's keys
  EXPECT_NE(key.find(":4:"), std::string::npos) << key;                  // the line of the key
  const std::string list =
      load_error(with_tiers("{preset: lmcache, tiers: [{name: dram, capacity: 1GB}]}"));
  EXPECT_NE(list.find("tiers is a map"), std::string::npos) << list;
  const std::string name = load_error(with_tiers("{preset: lmcache, tiers: {hbm: {}}}"));
  EXPECT_NE(name.find("no tier named 'hbm'"), std::string::npos) << name;
}

}  // namespace
}  // namespace kvsim
