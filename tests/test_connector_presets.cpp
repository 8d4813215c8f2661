// Connector presets (sim/cache/tiers/connector_presets.hpp) and the global
// pool's (sim/cluster/pool_presets.hpp): each preset is its keys' values, a
// user's key overrides the preset's, a tier the preset gives with no room is
// left out until an override sizes it, every value has a source and parses
// as the key it sets, and bad input (an unknown preset, a misspelled key,
// tiers as a list, a pool preset without a capacity) is an error naming the
// key with what the preset knows.
#include <gtest/gtest.h>

#include <string>

#include "base/diagnostics.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/tiers/connector_presets.hpp"
#include "sim/cache/tiers/kv_tier.hpp"
#include "sim/cluster/cluster_spec.hpp"
#include "sim/cluster/pool_presets.hpp"
#include "sim/scenario/component_catalog.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
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

// Where the connector loads asynchronously or stages through host DRAM,
// its preset says so: vLLM's offloading connector loads a request's hits
// between scheduler steps; LMCache's disk and remote backends go through
// its CPU cache; Mooncake (and AscendStore over it) move blocks straight
// into device memory.
TEST(ConnectorPresets, AsyncLoadsAndHostStagingAreTheConnectorsOwn) {
  const ScenarioSpec v = testing::scenario_from_text(with_tiers("{preset: vllm_offloading}"));
  EXPECT_EQ(v.kv_tiers.load_overlap, "async");
  EXPECT_EQ(v.kv_tiers.max_load_tokens_per_step, 0);  // no cap
  const ScenarioSpec l = testing::scenario_from_text(
      with_tiers("{preset: lmcache, tiers: {ssd: {capacity: 1TB}, global: {capacity: 1TB}}}"));
  EXPECT_EQ(l.kv_tiers.load_overlap, "none");
  EXPECT_FALSE(tier(l, "dram")->via_host);
  EXPECT_TRUE(tier(l, "ssd")->via_host);
  EXPECT_TRUE(tier(l, "global")->via_host);
  // The user's key still wins.
  const ScenarioSpec off = testing::scenario_from_text(
      with_tiers("{preset: lmcache, tiers: {ssd: {capacity: 1TB, via_host: false}}}"));
  EXPECT_FALSE(tier(off, "ssd")->via_host);
  for (const char* direct : {"mooncake_store", "ascend_store"}) {
    const ScenarioSpec m =
        testing::scenario_from_text(with_tiers(std::string("{preset: ") + direct + "}"));
    EXPECT_FALSE(tier(m, "global")->via_host) << direct;
    EXPECT_EQ(m.kv_tiers.load_overlap, "none") << direct;
  }
  // The catalogue lists via_host as a bool with its source.
  for (const config::ComponentInfo& info : connector_preset_infos()) {
    if (info.name != "lmcache") continue;
    ASSERT_NE(info.find("tiers.ssd.via_host"), nullptr);
    EXPECT_EQ(info.at("tiers.ssd.via_host").type, config::ParamType::boolean);
    EXPECT_NE(info.at("tiers.ssd.via_host").doc.find("architecture.rst"), std::string::npos);
  }
}

// A cluster group may deploy a connector of its own: its kv_tiers' preset
// is expanded for that group (its own keys override the preset's), and
// replaces the file's kv_tiers; bad input names the group's key.
TEST(ConnectorPresets, AClusterGroupsPresetIsExpandedForThatGroup) {
  const std::string base =
      "device: ascend-910b2\nmodel: llama-3.2-1b\n"
      "kv_cache: {policy: paged, block_size: 16, prefix_caching: true}\n"
      "kv_tiers: {tiers: [{name: ssd, capacity: 1TB, read_bandwidth: 5GB/s, "
      "write_bandwidth: 3GB/s}]}\n"
      "workload: {kind: synthetic, requests: 4, arrival: {process: poisson, rate_per_s: 1}, "
      "input_tokens: 100, output_tokens: 2}\n"
      "cluster:\n  groups:\n";
  const ScenarioSpec s = testing::scenario_from_text(
      base +
      "    a: {count: 1, kv_tiers: {preset: hicache_write_back, tiers: {dram: {capacity: 8GiB}}}}\n"
      "    b: {count: 1}\n");
  ASSERT_EQ(s.cluster->groups.size(), 2u);
  const InstanceSpec& a = *s.cluster->groups[0].spec;
  ASSERT_EQ(a.kv_tiers.tiers.size(), 1u);
  EXPECT_EQ(a.kv_tiers.tiers[0].name, "dram");
  EXPECT_EQ(a.kv_tiers.tiers[0].capacity, int64_t{8} << 30);  // the group's key
  EXPECT_EQ(a.kv_tiers.tiers[0].store, kStoreOnEvict);        // the preset's
  EXPECT_EQ(a.kv_tiers.load_overlap, "layerwise");
  // The other group keeps the file's kv_tiers.
  const InstanceSpec& b = *s.cluster->groups[1].spec;
  ASSERT_EQ(b.kv_tiers.tiers.size(), 1u);
  EXPECT_EQ(b.kv_tiers.tiers[0].name, "ssd");
  // --set reaches a group's preset.
  const ScenarioSpec set =
      load_scenario_text(base + "    a: {count: 1}\n", "inline.yaml", testing::configs_dir(),
                         {"cluster.groups.a.kv_tiers.preset=vllm_offloading",
                          "cluster.groups.a.kv_tiers.tiers.dram.capacity=4GiB"});
  EXPECT_EQ(set.cluster->groups[0].spec->kv_tiers.load_overlap, "async");
  EXPECT_EQ(set.cluster->groups[0].spec->kv_tiers.tiers.at(0).capacity, int64_t{4} << 30);
  // A misspelled key of the group's preset: its path, its line, the preset's keys.
  const std::string key = load_error(
      base + "    a: {count: 1, kv_tiers: {preset: lmcache, tiers: {dram: {capcity: 1GB}}}}\n");
  EXPECT_NE(key.find("cluster.groups.a.kv_tiers.tiers.dram.capcity"), std::string::npos) << key;
  EXPECT_NE(key.find("tiers.dram.capacity"), std::string::npos) << key;
  EXPECT_NE(key.find(":8:"), std::string::npos) << key;
  const std::string unknown = load_error(base + "    a: {count: 1, kv_tiers: {preset: lmcash}}\n");
  EXPECT_NE(unknown.find("cluster.groups.a.kv_tiers.preset"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown connector preset 'lmcash'"), std::string::npos) << unknown;
}

std::string with_pool(const std::string& global_pool) {
  return "device: ascend-910b2\nmodel: llama-3.2-1b\n"
         "kv_cache: {policy: paged, block_size: 16, prefix_caching: true}\n"
         "cluster:\n  global_pool: " +
         global_pool +
         "\n  groups: {a: {count: 2}}\n"
         "workload: {kind: synthetic, requests: 4, arrival: {process: poisson, rate_per_s: 1}, "
         "input_tokens: 100, output_tokens: 2}\n";
}

TEST(PoolPresets, APoolPresetIsItsValuesAndTheUserKeysWin) {
  const ScenarioSpec s =
      testing::scenario_from_text(with_pool("{preset: ascend_store, capacity: 8TB}"));
  const KvTierParams& t = s.cluster->global_pool.tier;
  EXPECT_EQ(t.capacity, 8'000'000'000'000);
  EXPECT_EQ(t.store, kStoreOnCompute);
  EXPECT_EQ(t.write_mode, kWriteAsync);
  EXPECT_EQ(t.staging_buffer, int64_t{1} << 30);  // the backend's local buffer
  EXPECT_EQ(t.lookup_latency, 200'000);
  EXPECT_EQ(t.lookup_block_latency, 0);
  EXPECT_EQ(t.eviction, "lru");
  EXPECT_EQ(s.cluster->global_pool.link, "roce");
  // An override wins key by key, from the file or from --set.
  const ScenarioSpec o = testing::scenario_from_text(
      with_pool("{preset: mooncake_store, capacity: 1TB, staging_buffer: 64MiB}"));
  EXPECT_EQ(o.cluster->global_pool.tier.staging_buffer, int64_t{64} << 20);
  EXPECT_EQ(o.cluster->global_pool.tier.write_mode, kWriteAsync);
  const ScenarioSpec set = load_scenario_text(
      with_pool("{capacity: 1TB}"), "inline.yaml", testing::configs_dir(),
      {"cluster.global_pool.preset=mooncake_store", "cluster.global_pool.lookup_latency=1ms"});
  EXPECT_EQ(set.cluster->global_pool.tier.lookup_latency, 1'000'000);
  EXPECT_EQ(set.cluster->global_pool.tier.write_mode, kWriteAsync);
  // Without a preset, the pool's own defaults (stores cost nothing).
  const ScenarioSpec plain = testing::scenario_from_text(with_pool("{capacity: 1TB}"));
  EXPECT_EQ(plain.cluster->global_pool.tier.write_mode, kWriteBackground);
}

TEST(PoolPresets, BadInputNamesTheKeyAndThePresetsKeys) {
  const std::string unknown = load_error(with_pool("{preset: mooncake, capacity: 1TB}"));
  EXPECT_NE(unknown.find("cluster.global_pool.preset"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown pool preset 'mooncake'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("ascend_store"), std::string::npos) << unknown;
  const std::string key =
      load_error(with_pool("{preset: ascend_store, capacity: 1TB, stagin_buffer: 1GiB}"));
  EXPECT_NE(key.find("cluster.global_pool.stagin_buffer"), std::string::npos) << key;
  EXPECT_NE(key.find("unknown key 'stagin_buffer' for pool preset 'ascend_store'"),
            std::string::npos)
      << key;
  EXPECT_NE(key.find("staging_buffer, lookup_block_latency"), std::string::npos) << key;
  EXPECT_NE(key.find(":5:"), std::string::npos) << key;  // the line of the key
  const std::string capacity = load_error(with_pool("{preset: ascend_store}"));
  EXPECT_NE(capacity.find("needs the pool's capacity"), std::string::npos) << capacity;
  EXPECT_NE(capacity.find("global_segment_size"), std::string::npos) << capacity;
}

// `kvsim list presets`: every preset of both kinds, each key it sets typed as
// the section declares it, its value the default and its source the doc.
TEST(Presets, TheCatalogListsEveryValueWithItsSource) {
  const std::vector<config::ComponentInfo> tiers = connector_preset_infos();
  ASSERT_EQ(tiers.size(), connector_presets().size());
  for (size_t i = 0; i < tiers.size(); ++i) {
    const ConnectorPreset& p = connector_presets()[i];
    EXPECT_EQ(tiers[i].name, p.name);
    size_t values = p.load_overlap.empty() ? 0 : 1;
    for (const ConnectorPresetTier& t : p.tiers) values += t.values.size();
    EXPECT_EQ(tiers[i].params.size(), values) << p.name;
    for (const config::ParamSpec& param : tiers[i].params) {
      EXPECT_FALSE(param.doc.empty()) << p.name << " " << param.key;
      EXPECT_TRUE(param.default_value.has_value()) << p.name << " " << param.key;
    }
  }
  const config::ComponentInfo& lmcache = tiers[1];
  ASSERT_NE(lmcache.find("tiers.dram.capacity"), nullptr);
  EXPECT_EQ(lmcache.at("tiers.dram.capacity").default_text(), "5GB");
  EXPECT_EQ(lmcache.at("tiers.dram.capacity").type, config::ParamType::bytes);
  EXPECT_NE(lmcache.at("tiers.dram.capacity").doc.find("max_local_cpu_size"), std::string::npos);

  const std::vector<config::ComponentInfo> pools = pool_preset_infos();
  ASSERT_EQ(pools.size(), pool_presets().size());
  for (const config::ComponentInfo& info : pools) {
    EXPECT_EQ(info.kind, "pool preset");
    EXPECT_EQ(info.params.front().key, "capacity");
    EXPECT_EQ(info.params.front().default_text(), "required");
    for (const config::ParamSpec& param : info.params) {
      // Every value names an upstream file at a pinned commit, or says it is assumed.
      const bool pinned = param.doc.find('@') != std::string::npos;
      const bool assumed = param.doc.rfind("assumed", 0) == 0;
      EXPECT_TRUE(pinned || assumed || param.key == "capacity") << info.name << " " << param.key;
      EXPECT_NE(global_pool_info().find(param.key), nullptr) << param.key;
    }
  }
  bool listed = false;
  for (const ComponentKind& kind : component_catalog())
    if (kind.name == "presets") listed = kind.infos.size() == tiers.size() + pools.size();
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
