#include "sim/cache/tiers/connector_presets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/cache/tiers/kv_tier.hpp"
#include "sim/cache/tiers/tier_config.hpp"

namespace kvsim {

namespace {

using Values = std::vector<PresetValue>;

constexpr const char* kAssumedHostLink =
    "assumed: PCIe 4.0 x16's order; each device file's host link is the deployment's own";

// A host DRAM tier over the device's host link.
Values host_dram(const char* capacity, const char* capacity_source, const char* store,
                 const char* write_mode, const char* mode_source) {
  return {{"capacity", capacity, capacity_source},
          {"read_bandwidth", "25GB/s", kAssumedHostLink},
          {"write_bandwidth", "25GB/s", kAssumedHostLink},
          {"latency", "10us", "assumed: one host-link DMA's setup"},
          {"eviction", "lru", "the connector's LRU of host blocks"},
          {"store", store, mode_source},
          {"write_mode", write_mode, mode_source}};
}

// Mooncake Store moves KV between the pool and the device's own memory: the
// client registers the device's KV buffers with its Transfer Engine and puts
// from and gets into them, no host buffer between.
constexpr const char* kMooncakeDirect =
    "vllm-project/vllm-ascend@3c5348b3eea6: vllm_ascend/distributed/kv_transfer/kv_pool/"
    "ascend_store/backend/mooncake_backend.py (register_buffer of the NPU KV caches, "
    "batch_put_from_multi_buffers / batch_get_into_multi_buffers on them): no staging "
    "through host DRAM";

// Mooncake Store's global pool over RDMA. Every block is put once computed
// (Mooncake's put after prefill), asynchronously.
Values mooncake_pool(const char* put_source) {
  return {{"capacity", "2TB",
           "assumed: the sum of the global_segment_size every client mounts is the "
           "deployment's"},
          {"read_bandwidth", "25GB/s", "assumed: 200 Gb/s RoCE"},
          {"write_bandwidth", "25GB/s", "assumed: 200 Gb/s RoCE"},
          {"latency", "50us", "assumed: one RDMA transfer's setup over a loaded fabric"},
          {"store", kStoreOnCompute, put_source},
          {"write_mode", kWriteAsync, put_source},
          {"lookup_latency", "200us",
           "assumed: a metadata RPC to Mooncake's master (a datacenter round trip and its "
           "lookup)"},
          {"via_host", "false", kMooncakeDirect}};
}

constexpr const char* kLmcacheDocs =
    "LMCache/LMCache: docs/source/api_reference/configurations.rst";
// LMCache's disk and remote backends hand their chunks through its local
// CPU buffer: a hit is fetched into CPU DRAM, then copied to the GPU; a
// save is copied to the CPU buffer, then written out.
constexpr const char* kLmcacheViaCpu =
    "LMCache/LMCache@3e65c70a5764: docs/source/developer_guide/architecture.rst (Disk -> "
    "CPU prefetch, Remote -> CPU fetch on reuse, CPU -> GPU on-demand reuse; CPU -> disk "
    "and CPU -> remote writes)";
constexpr const char* kHicacheDocs =
    "sgl-project/sglang: docs/advanced_features/hicache_best_practices.md";

std::vector<ConnectorPreset> make_presets() {
  return {
      {"vllm_offloading",
       "vLLM's OffloadingConnector with its CPU backend: every computed block stored to host "
       "DRAM asynchronously (its blocks held until the store lands), LRU eviction, hits loaded "
       "asynchronously before the request's prefill while other requests run (load_overlap "
       "async, no cap on tokens per step)",
       "vllm-project/vllm: vllm/v1/kv_offload/cpu.py (CPUOffloadingSpec, LRUOffloadingManager), "
       "vllm/distributed/kv_transfer/kv_connector/v1/offloading_connector.py (delay_free until "
       "the store ends); vllm-project/vllm@0072b0b7443b: vllm/distributed/kv_transfer/"
       "kv_connector/v1/offloading/scheduler.py (get_num_new_matched_tokens returns its hits "
       "with load_async True: loaded between scheduler steps; the only bound is "
       "max_concurrent_loads = max_num_seqs requests); num_cpu_blocks has no default: capacity "
       "assumed",
       "async",
       {{"dram",
         host_dram("64GiB", "assumed: num_cpu_blocks has no default", kStoreOnCompute, kWriteAsync,
                   "vllm-project/vllm: offloading_connector.py (every computed block saved, "
                   "delay_free until the store ends)")}}},
      {"lmcache",
       "LMCache's vLLM connector (LMCacheConnectorV1) with its defaults: local CPU cache of "
       "5 GB, prompt chunks only (save_decode_cache false), saves waited for "
       "(wait_for_save), no layer-wise loading; the local disk and remote backends off "
       "(capacity 0) until an override sizes them, both staged through the CPU cache "
       "(via_host). Its 256-token chunk is not modelled apart from the device block",
       "LMCache/LMCache: docs/source/api_reference/configurations.rst (chunk_size 256, "
       "local_cpu true, max_local_cpu_size 5.0, max_local_disk_size 0.0, save_decode_cache "
       "false, use_layerwise false); disk and remote bandwidths assumed",
       "none",
       {{"dram", host_dram("5GB", "LMCache/LMCache: configurations.rst (max_local_cpu_size 5.0)",
                           kStoreOnComputePrompt, kWriteSync,
                           "LMCache/LMCache: configurations.rst (save_decode_cache false); "
                           "LMCacheConnectorV1 waits for its saves (wait_for_save)")},
        {"ssd",
         {{"capacity", "0B", std::string(kLmcacheDocs) + " (max_local_disk_size 0.0)"},
          {"read_bandwidth", "5GB/s", "assumed: an NVMe SSD's read"},
          {"write_bandwidth", "3GB/s", "assumed: an NVMe SSD's write"},
          {"latency", "100us", "assumed: an NVMe read's setup"},
          {"store", kStoreOnEvict, "assumed: LMCache's disk tier takes what the CPU tier evicts"},
          {"write_mode", kWriteSync, "LMCacheConnectorV1 waits for its saves (wait_for_save)"},
          {"via_host", "true", kLmcacheViaCpu}}},
        {"global",
         {{"capacity", "0B", std::string(kLmcacheDocs) + " (remote_url null: no remote)"},
          {"read_bandwidth", "12GB/s", "assumed: 100 Gb/s to the remote backend"},
          {"write_bandwidth", "12GB/s", "assumed: 100 Gb/s to the remote backend"},
          {"latency", "50us", "assumed: one network transfer's setup"},
          {"store", kStoreOnEvict, "assumed: the remote backend takes what the tiers above evict"},
          {"write_mode", kWriteSync, "LMCacheConnectorV1 waits for its saves (wait_for_save)"},
          {"via_host", "true", kLmcacheViaCpu}}}}},
      {"mooncake_store",
       "Mooncake Store as a global KV pool: every computed block put asynchronously, a "
       "metadata round trip to the master per lookup, blocks moved straight between the pool "
       "and device memory (no host staging)",
       "kvcache-ai/Mooncake: docs (architecture.md, mooncake-store); capacity, bandwidth and "
       "latencies assumed (the deployment's global_segment_size and network)",
       "none",
       {{"global", mooncake_pool("kvcache-ai/Mooncake: docs/source/design/store/mooncake-store.md "
                                 "(Put of each computed block, a client's async transfer)")}}},
      {"hicache_write_through",
       "SGLang HiCache with --hicache-write-policy write_through: every computed page "
       "written to the host tier as it is computed",
       "sgl-project/sglang: docs/advanced_features/hicache_best_practices.md "
       "(--hicache-write-policy, --hicache-ratio 2: capacity assumed)",
       "layerwise",
       {{"dram", host_dram("128GiB", "assumed: --hicache-ratio 2 of a device pool's order",
                           kStoreOnCompute, kWriteAsync,
                           "sgl-project/sglang: hicache_best_practices.md (--hicache-write-policy "
                           "write_through)")}}},
      {"hicache_write_back",
       "SGLang HiCache with --hicache-write-policy write_back: a page written to the host tier "
       "when the device evicts it",
       "sgl-project/sglang: docs/advanced_features/hicache_best_practices.md "
       "(--hicache-write-policy; capacity assumed)",
       "layerwise",
       {{"dram", host_dram("128GiB", "assumed: --hicache-ratio 2 of a device pool's order",
                           kStoreOnEvict, kWriteAsync,
                           "sgl-project/sglang: hicache_best_practices.md (--hicache-write-policy "
                           "write_back)")}}},
      {"ascend_store",
       "vllm-ascend's AscendStore (KV pool) over Mooncake: local prefix caching on the NPU, "
       "every computed block put into the Mooncake pool, hits loaded before the step "
       "(load_async false), straight between the pool and NPU memory (no host staging)",
       "vllm-project/vllm-ascend: docs/source/user_guide/feature_guide/kv_pool.md (backend "
       "mooncake by default, load_async false), "
       "docs/source/developer_guide/feature_guide/KV_Cache_Pool_Guide.md; pool figures as "
       "mooncake_store (assumed)",
       "none",
       {{"global", mooncake_pool("vllm-project/vllm-ascend@182b75ea84ff: vllm_ascend/distributed/"
                                 "kv_transfer/kv_pool/ascend_store/pool_scheduler.py "
                                 "(request_finished delays freeing the blocks of its puts)")}}},
  };
}

std::string keys_of(const ConnectorPreset& p) {
  std::string out;
  for (const ConnectorPresetTier& t : p.tiers)
    for (const PresetValue& v : t.values)
      out += fmt::format("{}tiers.{}.{}", out.empty() ? "" : ", ", t.name, v.key);
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

std::string connector_preset_names() {
  std::string out;
  for (const ConnectorPreset& p : connector_presets()) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

config::ParamSpec preset_param(const config::ParamSpec& of, std::string key, const PresetValue& v) {
  using config::ParamType;
  config::ParamSpec p = of;
  p.key = std::move(key);
  p.doc = v.source;
  p.optional = false;
  ParsedQuantity q;
  switch (of.type) {
    case ParamType::bytes:
      q = parse_bytes(v.value);
      break;
    case ParamType::bandwidth:
      q = parse_bandwidth(v.value);
      break;
    case ParamType::duration:
      q = parse_duration(v.value);
      break;
    case ParamType::string:
    case ParamType::choice:
      p.default_value = v.value;
      return p;
    case ParamType::boolean:
      if (v.value != "true" && v.value != "false")
        throw std::logic_error(fmt::format("preset key {}: '{}' is not a bool", p.key, v.value));
      p.default_value = v.value == "true";
      return p;
    default:
      throw std::logic_error(
          fmt::format("preset key {}: a {} value", p.key, config::param_type_name(of.type)));
  }
  if (!q.value) throw std::logic_error(fmt::format("preset key {}: {}", p.key, q.problem));
  p.default_value = *q.value;
  return p;
}

YAML::Node overlay_preset(const YAML::Node& given, const std::vector<PresetValue>& values) {
  // A new map (yaml-cpp's Node assignment rebinds shared references): the
  // user's keys as given, then the preset's others.
  YAML::Node built(YAML::NodeType::Map);
  const bool map = given && given.IsMap();
  if (map)
    for (auto kv = given.begin(); kv != given.end(); ++kv) built[kv->first.Scalar()] = kv->second;
  for (const PresetValue& v : values)
    if (!(map && given[v.key])) built[v.key] = v.value;
  return built;
}

std::vector<config::ComponentInfo> connector_preset_infos() {
  const config::ComponentInfo tier = kv_tier_info();
  const config::ComponentInfo section = kv_tiers_section_info();
  std::vector<config::ComponentInfo> infos;
  for (const ConnectorPreset& p : connector_presets()) {
    config::ComponentInfo info{"connector preset",
                               p.name,
                               fmt::format("kv_tiers.preset: {}. Source: {}", p.doc, p.source),
                               {}};
    if (!p.load_overlap.empty())
      info.params.push_back(
          preset_param(section.at("load_overlap"), "load_overlap",
                       {"load_overlap", p.load_overlap,
                        p.load_overlap == "layerwise" ? "the connector loads layer by layer"
                        : p.load_overlap == "async"
                            ? "the connector loads a request's hits before its prefill, while "
                              "other requests run"
                            : "the connector reads hits back before the step"}));
    for (const ConnectorPresetTier& t : p.tiers)
      for (const PresetValue& v : t.values)
        info.params.push_back(
            preset_param(tier.at(v.key), fmt::format("tiers.{}.{}", t.name, v.key), v));
    infos.push_back(std::move(info));
  }
  return infos;
}

const ConnectorPreset* find_connector_preset(const std::string& name) {
  for (const ConnectorPreset& p : connector_presets())
    if (p.name == name) return &p;
  return nullptr;
}

void apply_connector_preset(YAML::Node& doc, const std::string& file, config::LoadContext& ctx,
                            const std::string& at) {
  if (!doc.IsMap()) return;
  const YAML::Node& cdoc = doc;
  if (!cdoc["kv_tiers"] || !cdoc["kv_tiers"].IsMap() || !cdoc["kv_tiers"]["preset"]) return;
  YAML::Node section = doc["kv_tiers"];
  const config::Node name_node(section["preset"], at + ".preset", file, &ctx);
  const std::optional<std::string> name = name_node.as_string();
  if (!name) return;
  const ConnectorPreset* preset = find_connector_preset(*name);
  if (preset == nullptr) {
    name_node.error(fmt::format("unknown connector preset '{}'", *name),
                    "one of " + connector_preset_names());
    return;
  }
  const YAML::Node& csection = section;
  if (csection["tiers"] && !csection["tiers"].IsNull() && !csection["tiers"].IsMap()) {
    config::Node(section["tiers"], at + ".tiers", file, &ctx)
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
    const std::string path = at + ".tiers." + tier;
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
    tiers[t.name] = overlay_preset(given, t.values);
  }
  section["tiers"] = tiers;
  if (!preset->load_overlap.empty() && !csection["load_overlap"])
    section["load_overlap"] = preset->load_overlap;
  section.remove("preset");
}

}  // namespace kvsim
