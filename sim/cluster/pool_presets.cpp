#include "sim/cluster/pool_presets.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/cache/tiers/kv_tier.hpp"
#include "sim/cluster/cluster_spec.hpp"

namespace kvsim {
namespace {

// Pinned upstream snapshots the values below were read from.
#define MOONCAKE "kvcache-ai/Mooncake@3b5a594133958449a1feaf1c9e0fc1b553e34a28: "
#define ASCEND "vllm-project/vllm-ascend@182b75ea84ff13ece27b57391331ef8935410aea: "
#define ASCEND_STORE ASCEND "vllm_ascend/distributed/kv_transfer/kv_pool/ascend_store/"

// What both share: Mooncake's master and its eviction, a metadata round
// trip per lookup.
std::vector<PresetValue> mooncake_values(std::vector<PresetValue> own) {
  std::vector<PresetValue> v = {
      {"eviction", "lru",
       MOONCAKE "docs/source/design/store/mooncake-store.md (Eviction Policy: an approximate "
                "LRU, least recently used objects first)"},
      {"lookup_latency", "200us",
       "assumed: one metadata RPC to Mooncake's master (a datacenter round trip and its "
       "lookup)"},
  };
  v.insert(v.end(), own.begin(), own.end());
  return v;
}

std::vector<PoolPreset> make_pool_presets() {
  return {
      {"mooncake_store",
       "Mooncake Store as the cluster's pool: every computed block put, asynchronously "
       "through the client's 1 GiB local buffer, a round trip to the master per lookup, "
       "approximate-LRU eviction",
       MOONCAKE "docs/source/design/store/mooncake-store.md, mooncake-wheel/mooncake/"
                "mooncake_config.py; the lookup's cost assumed",
       "the pool is the sum of the global_segment_size each client mounts (3.125 GiB a "
       "client by default: " MOONCAKE "mooncake-wheel/mooncake/mooncake_config.py "
       "DEFAULT_GLOBAL_SEGMENT_SIZE)",
       mooncake_values({
           {"link", "roce", "assumed: the transfer engine's RDMA over the node's RoCE NICs"},
           {"store", kStoreOnCompute,
            MOONCAKE "docs/source/design/store/mooncake-store.md (a client's Put of the KV "
                     "it computed)"},
           {"write_mode", kWriteAsync,
            "assumed: a connector puts from its own thread and frees the block when the "
            "put ends (as AscendStore)"},
           {"staging_buffer", "1GiB",
            MOONCAKE "mooncake-wheel/mooncake/mooncake_config.py (DEFAULT_LOCAL_BUFFER_SIZE, "
                     "the client's buffer for its gets and puts)"},
           {"lookup_block_latency", "0us",
            "assumed: one batched existence check a request (BatchExistKey)"},
       })},
      {"ascend_store",
       "vllm-ascend's AscendStore over Mooncake as the cluster's pool: the prefill's blocks "
       "put asynchronously (freed once put), hits loaded before the step (load_async "
       "false), one batched existence check a request",
       ASCEND "docs/source/user_guide/feature_guide/kv_pool.md, " ASCEND_STORE
              "pool_scheduler.py, pool_worker.py, backend/mooncake_backend.py; the lookup's "
              "cost assumed",
       "the pool is the sum of the global_segment_size each card mounts (1 GiB a card by "
       "default: " ASCEND_STORE "backend/mooncake_backend.py DEFAULT_GLOBAL_SEGMENT_SIZE)",
       mooncake_values({
           {"link", "roce",
            ASCEND "docs/source/user_guide/feature_guide/kv_pool.md (mooncake.json protocol "
                   "ascend: the NPUs' own RoCE ports)"},
           {"store", kStoreOnCompute,
            ASCEND "docs/source/user_guide/feature_guide/kv_pool.md (the pool stores the KV "
                   "the prefill computes; consumer_is_to_put false)"},
           {"write_mode", kWriteAsync,
            ASCEND_STORE "pool_scheduler.py (request_finished delays freeing a request's "
                         "blocks while its puts run)"},
           {"staging_buffer", "1GiB",
            ASCEND_STORE "backend/mooncake_backend.py (DEFAULT_LOCAL_BUFFER_SIZE)"},
           {"lookup_block_latency", "0us",
            ASCEND_STORE "pool_worker.py (lookup: one exists() batch of the request's block "
                         "keys)"},
       })},
  };
}

#undef ASCEND_STORE
#undef ASCEND
#undef MOONCAKE

const PoolPreset* find_pool_preset(const std::string& name) {
  for (const PoolPreset& p : pool_presets())
    if (p.name == name) return &p;
  return nullptr;
}

std::string keys_of(const PoolPreset& p) {
  std::string out = "capacity (required)";
  for (const PresetValue& v : p.values) out += ", " + v.key;
  return out;
}

}  // namespace

const std::vector<PoolPreset>& pool_presets() {
  static const std::vector<PoolPreset> presets = make_pool_presets();
  return presets;
}

std::string pool_preset_names() {
  std::string out;
  for (const PoolPreset& p : pool_presets()) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

std::vector<config::ComponentInfo> pool_preset_infos() {
  const config::ComponentInfo pool = global_pool_info();
  std::vector<config::ComponentInfo> infos;
  for (const PoolPreset& p : pool_presets()) {
    config::ComponentInfo info{
        "pool preset",
        p.name,
        fmt::format("cluster.global_pool.preset: {}. Source: {}", p.doc, p.source),
        {}};
    config::ParamSpec capacity = pool.at("capacity");
    capacity.default_value.reset();  // required: the deployment's
    capacity.doc = "required: " + p.capacity_note;
    info.params.push_back(std::move(capacity));
    for (const PresetValue& v : p.values)
      info.params.push_back(preset_param(pool.at(v.key), v.key, v));
    infos.push_back(std::move(info));
  }
  return infos;
}

void apply_pool_preset(YAML::Node& doc, const std::string& file, config::LoadContext& ctx) {
  if (!doc.IsMap()) return;
  const YAML::Node& cdoc = doc;
  if (!cdoc["cluster"] || !cdoc["cluster"].IsMap() || !cdoc["cluster"]["global_pool"] ||
      !cdoc["cluster"]["global_pool"].IsMap() || !cdoc["cluster"]["global_pool"]["preset"])
    return;
  YAML::Node pool = doc["cluster"]["global_pool"];
  const std::string path = "cluster.global_pool";
  const config::Node name_node(pool["preset"], path + ".preset", file, &ctx);
  const std::optional<std::string> name = name_node.as_string();
  if (!name) return;
  const PoolPreset* preset = find_pool_preset(*name);
  if (preset == nullptr) {
    name_node.error(fmt::format("unknown pool preset '{}'", *name),
                    "one of " + pool_preset_names());
    return;
  }
  const config::ComponentInfo info = global_pool_info();
  const YAML::Node& cpool = pool;
  bool ok = true;
  for (auto kv = cpool.begin(); kv != cpool.end(); ++kv) {
    const std::string key = kv->first.Scalar();
    if (info.find(key) != nullptr) continue;
    config::Node(kv->first, path + "." + key, file, &ctx)
        .error(fmt::format("unknown key '{}' for pool preset '{}'", key, preset->name),
               "the preset's keys: " + keys_of(*preset) +
                   " (or any key of kind `cluster global pool`)");
    ok = false;
  }
  if (!cpool["capacity"]) {
    name_node.error(fmt::format("pool preset '{}' needs the pool's capacity", preset->name),
                    "cluster.global_pool: {preset: " + preset->name + ", capacity: 8TB}; " +
                        preset->capacity_note);
    ok = false;
  }
  if (!ok) return;
  YAML::Node given = YAML::Clone(pool);
  given.remove("preset");
  doc["cluster"]["global_pool"] = overlay_preset(given, preset->values);
}

}  // namespace kvsim
