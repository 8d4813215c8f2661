#include "sim/cache/tiers/connector_presets.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/cache/tiers/kv_tier.hpp"

namespace kvsim {

namespace {

using Values = std::vector<std::pair<std::string, std::string>>;

// A host DRAM tier over the device's host link. 25 GB/s: PCIe 4.0 x16's
// order (assumed; each device file's host link is the deployment's own).
Values host_dram(const char* capacity, const char* store, const char* write_mode) {
  return {{"capacity", capacity},    {"read_bandwidth", "25GB/s"}, {"write_bandwidth", "25GB/s"},
          {"latency", "10us"},       {"eviction", "lru"},          {"store", store},
          {"write_mode", write_mode}};
}

// Mooncake Store's global pool over RDMA: 25 GB/s (200 Gb/s RoCE, assumed),
// 50 us per transfer and a 200 us metadata round trip to its master per
// lookup (assumed; configs/scenarios/pool-behind-slow-link-910b2.yaml).
// Every block is put once computed (Mooncake's put after prefill).
Values mooncake_pool(const char* capacity) {
  return {{"capacity", capacity},     {"read_bandwidth", "25GB/s"}, {"write_bandwidth", "25GB/s"},
          {"latency", "50us"},        {"store", kStoreOnCompute},   {"write_mode", kWriteAsync},
          {"lookup_latency", "200us"}};
}

std::vector<ConnectorPreset> make_presets() {
  return {
      {"vllm_offloading",
       "vLLM's OffloadingConnector with its CPU backend: every computed block stored to host "
       "DRAM asynchronously (its blocks held until the store lands), LRU eviction, hits loaded "
       "before the request's prefill",
       "vllm-project/vllm: vllm/v1/kv_offload/cpu.py (CPUOffloadingSpec, LRUOffloadingManager), "
       "vllm/distributed/kv_transfer/kv_connector/v1/offloading_connector.py (delay_free until "
       "the store ends); num_cpu_blocks has no default: capacity assumed",
       "none",
       {{"dram", host_dram("64GiB", kStoreOnCompute, kWriteAsync)}}},
      {"lmcache",
       "LMCache's vLLM connector (LMCacheConnectorV1) with its defaults: local CPU cache of "
       "5 GB, prompt chunks only (save_decode_cache false), saves waited for "
       "(wait_for_save), no layer-wise loading; the local disk and remote backends off "
       "(capacity 0) until an override sizes them. Its 256-token chunk is not modelled apart "
       "from the device block",
       "LMCache/LMCache: docs/source/api_reference/configurations.rst (chunk_size 256, "
       "local_cpu true, max_local_cpu_size 5.0, max_local_disk_size 0.0, save_decode_cache "
       "false, use_layerwise false); disk and remote bandwidths assumed",
       "none",
       {{"dram", host_dram("5GB", kStoreOnComputePrompt, kWriteSync)},
        {"ssd",
         {{"capacity", "0B"},
          {"read_bandwidth", "5GB/s"},
          {"write_bandwidth", "3GB/s"},
          {"latency", "100us"},
          {"store", kStoreOnEvict},
          {"write_mode", kWriteSync}}},
        {"global",
         {{"capacity", "0B"},
          {"read_bandwidth", "12GB/s"},
          {"write_bandwidth", "12GB/s"},
          {"latency", "50us"},
          {"store", kStoreOnEvict},
          {"write_mode", kWriteSync}}}}},
      {"mooncake_store",
       "Mooncake Store as a global KV pool: every computed block put asynchronously, a "
       "metadata round trip to the master per lookup",
       "kvcache-ai/Mooncake: docs (architecture.md, mooncake-store); capacity, bandwidth and "
       "latencies assumed (the deployment's global_segment_size and network)",
       "none",
       {{"global", mooncake_pool("2TB")}}},
      {"hicache_write_through",
       "SGLang HiCache with --hicache-write-policy write_through: every computed page "
       "written to the host tier as it is computed",
       "sgl-project/sglang: docs/advanced_features/hicache_best_practices.md "
       "(--hicache-write-policy, --hicache-ratio 2: capacity assumed)",
       "layerwise",
       {{"dram", host_dram("128GiB", kStoreOnCompute, kWriteAsync)}}},
      {"hicache_write_back",
       "SGLang HiCache with --hicache-write-policy write_back: a page written to the host tier "
       "when the device evicts it",
       "sgl-project/sglang: docs/advanced_features/hicache_best_practices.md "
       "(--hicache-write-policy; capacity assumed)",
       "layerwise",
       {{"dram", host_dram("128GiB", kStoreOnEvict, kWriteAsync)}}},
      {"ascend_store",
       "vllm-ascend's AscendStore (KV pool) over Mooncake: local prefix caching on the NPU, "
       "every computed block put into the Mooncake pool, hits loaded before the step "
       "(load_async false)",
       "vllm-project/vllm-ascend: docs/source/user_guide/feature_guide/kv_pool.md (backend "
       "mooncake by default, load_async false), "
       "docs/source/developer_guide/feature_guide/KV_Cache_Pool_Guide.md; pool figures as "
       "mooncake_store (assumed)",
       "none",
       {{"global", mooncake_pool("2TB")}}},
  };
}

std::string names_of_presets() {
  std::string out;
  for (const ConnectorPreset& p : connector_presets()) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

std::string keys_of(const ConnectorPreset& p) {
  std::string out;
  for (const ConnectorPresetTier& t : p.tiers)
    for (const auto& [k, v] : t.values)
      out += fmt::format("{}tiers.{}.{}", out.empty() ? "" : ", ", t.name, k);
  return out;
}

bool tier_key_known(const std::string& key) {
  static const config::ComponentInfo info = kv_tier_info();
  return std::any_of(info.params.begin(), info.params.end(),
                     [&](const config::ParamSpec& p) { return p.key == key; });
}

}  // namespace

const std::vector<ConnectorPreset>& connector_presets() {
  static const std::vector<ConnectorPreset> presets = make_presets();
  return presets;
}

const ConnectorPreset* find_connector_preset(const std::string& name) {
  for (const ConnectorPreset& p : connector_presets())
    if (p.name == name) return &p;
  return nullptr;
}

void apply_connector_preset(YAML::Node& doc, const std::string& file, config::LoadContext& ctx) {
  if (!doc.IsMap()) return;
  const YAML::Node& cdoc = doc;
  if (!cdoc["kv_tiers"] || !cdoc["kv_tiers"].IsMap() || !cdoc["kv_tiers"]["preset"]) return;
  YAML::Node section = doc["kv_tiers"];
  const config::Node name_node(section["preset"], "kv_tiers.preset", file, &ctx);
  const std::optional<std::string> name = name_node.as_string();
  if (!name) return;
  const ConnectorPreset* preset = find_connector_preset(*name);
  if (preset == nullptr) {
    name_node.error(fmt::format("unknown connector preset '{}'", *name),
                    "one of " + names_of_presets());
    return;
  }
  const YAML::Node& csection = section;
  if (csection["tiers"] && !csection["tiers"].IsNull() && !csection["tiers"].IsMap()) {
    config::Node(section["tiers"], "kv_tiers.tiers", file, &ctx)
        .error(fmt::format("with preset '{}', tiers is a map of tier name to the keys it "
                           "overrides",
                           preset->name),
               fmt::format("tiers: {{{}: {{capacity: ...}}}}; the preset's keys: {}",
                           preset->tiers.front().name, keys_of(*preset)));
    return;
  }
  YAML::Node tiers = csection["tiers"] && csection["tiers"].IsMap()
                         ? section["tiers"]
                         : YAML::Node(YAML::NodeType::Map);
  bool ok = true;
  const std::vector<std::string>& names = kv_tier_names();
  for (auto it = tiers.begin(); it != tiers.end(); ++it) {
    const std::string tier = it->first.Scalar();
    const std::string path = "kv_tiers.tiers." + tier;
    const config::Node tier_node(it->second, path, file, &ctx);
    if (std::find(names.begin(), names.end(), tier) == names.end()) {
      config::Node(it->first, path, file, &ctx)
          .error(fmt::format("no tier named '{}' (connector preset '{}')", tier, preset->name),
                 "dram, ssd or global; the preset's keys: " + keys_of(*preset));
      ok = false;
      continue;
    }
    if (!it->second.IsMap()) continue;  // the section's reader says what is wrong
    for (auto kv = it->second.begin(); kv != it->second.end(); ++kv) {
      const std::string key = kv->first.Scalar();
      if (tier_key_known(key)) continue;
      config::Node(kv->first, path + "." + key, file, &ctx)
          .error(fmt::format("unknown key '{}' for connector preset '{}'", key, preset->name),
                 "the preset's keys: " + keys_of(*preset) + " (or any key of kind `kv tier`)");
      ok = false;
    }
  }
  if (!ok) return;
  // Each tier built anew (yaml-cpp's Node assignment rebinds shared
  // references): the user's keys as given, then the preset's others.
  const YAML::Node& ctiers = tiers;
  for (const ConnectorPresetTier& t : preset->tiers) {
    const YAML::Node given = ctiers[t.name];
    if (given && !given.IsNull() && !given.IsMap()) continue;  // the reader reports it
    YAML::Node built(YAML::NodeType::Map);
    if (given && given.IsMap())
      for (auto kv = given.begin(); kv != given.end(); ++kv) built[kv->first.Scalar()] = kv->second;
    for (const auto& [key, value] : t.values)
      if (!(given && given.IsMap() && given[key])) built[key] = value;
    tiers[t.name] = built;
  }
  section["tiers"] = tiers;
  if (!preset->load_overlap.empty() && !csection["load_overlap"])
    section["load_overlap"] = preset->load_overlap;
  section.remove("preset");
}

}  // namespace kvsim
