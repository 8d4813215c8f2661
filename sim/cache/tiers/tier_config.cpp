#include "sim/cache/tiers/tier_config.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/cache/tiers/connector_presets.hpp"

namespace kvsim {

namespace {
std::vector<std::string> preset_names_list() {
  std::vector<std::string> names;
  for (const ConnectorPreset& p : connector_presets()) names.push_back(p.name);
  return names;
}
}  // namespace

config::ComponentInfo kv_tiers_section_info() {
  using namespace config;
  ParamSpec cap = int_param(
      "max_load_tokens_per_step", std::nullopt, 1, int64_t{1} << 40, "tokens",
      "async: tokens whose loads start per scheduler step, all requests together (whole "
      "blocks, at least one); a longer load spreads over ceil(tokens / cap) steps; absent: "
      "each request's whole load at once");
  cap.optional = true;
  cap.own_reader = true;
  return {"kv tiers",
          "kv_tiers",
          "tiers of KV blocks below device HBM (host DRAM, SSD, a global pool), fastest first",
          {optional_param(choice_param(
               "preset", std::nullopt, preset_names_list(),
               "a deployed connector as values of the keys below, each overridable (kind "
               "`connector preset` lists each one's keys, values and sources)")),
           choice_param("load_overlap", std::string("none"), {"none", "layerwise", "async"},
                        "none: hits are read back before the step; layerwise: while it "
                        "computes (step = max(compute, load)); async: before the request's "
                        "prefill, which waits while other requests' steps run (vLLM's "
                        "WAITING_FOR_REMOTE_KVS)"),
           std::move(cap),
           section_param("tiers", false, "[{name: dram, capacity: ..., ...}, ...]",
                         "the tiers, a list fastest first or a map of name to tier (kind `kv "
                         "tier` lists an item's keys); a tier of capacity 0 is left out")}};
}

void read_kv_tiers_section(config::MapReader& top, KvTiersConfig& out) {
  const config::Node section = top.child("kv_tiers");
  if (!section.defined()) return;
  config::MapReader r(section);
  out.load_overlap = r.choice("load_overlap", "none", {"none", "layerwise", "async"});
  if (r.has("max_load_tokens_per_step")) {
    out.max_load_tokens_per_step =
        r.integer("max_load_tokens_per_step", std::nullopt, 1, int64_t{1} << 40);
    // A cap on loads that start between steps means nothing to a load the
    // step itself waits for.
    if (out.load_overlap != "async")
      section.child_at("max_load_tokens_per_step")
          .error(fmt::format("a cap on loads per step with load_overlap '{}'", out.load_overlap),
                 "load_overlap: async, or no max_load_tokens_per_step");
  }
  const config::Node list = r.child("tiers");
  r.finish();
  if (!list.defined()) return;
  const std::vector<std::string>& order = kv_tier_names();
  // A list, fastest first, or a map of tier name to tier (which `--set
  // kv_tiers.tiers.dram.capacity=0` and `kvsim compare --vary` reach; its
  // keys are the names, taken fastest first whatever their order).
  std::vector<std::pair<config::Node, std::string>> items;  // an item and its name from the map
  if (list.is_map()) {
    std::vector<std::pair<config::Node, std::string>> given;
    for (auto it = list.raw().begin(); it != list.raw().end(); ++it) {
      const std::string key = it->first.Scalar();
      given.emplace_back(
          config::Node(it->second, list.path() + "." + key, list.file(), &list.context()), key);
    }
    auto rank_of = [&](const std::string& name) {
      return std::find(order.begin(), order.end(), name) - order.begin();
    };
    // Sorted by index, the nodes copied once: assigning a YAML::Node (as a
    // sort of the nodes themselves would) overwrites the node it refers to,
    // so sorting {dram, ssd, global} lost dram's keys to another tier's.
    std::vector<size_t> at(given.size());
    for (size_t i = 0; i < at.size(); ++i) at[i] = i;
    std::stable_sort(at.begin(), at.end(), [&](size_t a, size_t b) {
      return rank_of(given[a].second) < rank_of(given[b].second);
    });
    for (const size_t i : at) items.push_back(given[i]);
  } else {
    for (const config::Node& item : list.items()) items.emplace_back(item, "");
  }
  size_t next_rank = 0;  // tiers come fastest first, each once
  config::ComponentInfo info = kv_tier_info();
  for (const auto& [item, key] : items) {
    config::ComponentInfo item_info = info;
    if (!key.empty()) {
      // A map's key names the tier; `name:` may repeat it but not differ.
      for (config::ParamSpec& p : item_info.params)
        if (p.key == "name") p.default_value = key;
      if (std::find(order.begin(), order.end(), key) == order.end()) {
        item.error(fmt::format("no tier named '{}'", key), "dram, ssd or global");
        continue;
      }
    }
    config::MapReader ir(item);
    const config::ParamValues v = config::read_params(ir, item_info);
    ir.finish();
    if (!v.has("name")) continue;
    KvTierParams p;
    p.name = v.string("name");
    if (!key.empty() && p.name != key) {
      item.child_at("name").error(fmt::format("tier '{}' is named '{}'", key, p.name),
                                  "the map's key or nothing");
      continue;
    }
    p.capacity = v.integer("capacity");
    p.read_bandwidth = v.integer("read_bandwidth");
    p.write_bandwidth = v.integer("write_bandwidth");
    p.latency = v.integer("latency");
    p.eviction = v.string("eviction");
    p.store = v.string("store");
    p.via_host = v.boolean("via_host");
    if (p.via_host && p.name == "dram") {
      item.child_at("via_host")
          .error("the dram tier is host memory: nothing to go through",
                 "via_host on ssd or global");
      continue;
    }
    read_tier_store_cost(v, p);
    p.key_path = item.path();
    const auto rank =
        static_cast<size_t>(std::find(order.begin(), order.end(), p.name) - order.begin());
    if (rank < next_rank) {
      item.child_at("name").error(
          fmt::format("tier '{}' is listed after a slower one or twice", p.name),
          "each of dram, ssd, global at most once, in that order");
      continue;
    }
    next_rank = rank + 1;
    // A tier with no room keeps nothing: it is left out, as if not listed
    // (a compare can switch a tier off with capacity=0).
    if (p.capacity > 0) out.tiers.push_back(p);
  }
}

std::string tier_staging_problem(const KvTierParams& t, Bytes block_bytes, std::string& allowed) {
  if (t.staging_buffer == 0) return {};
  if (t.write_mode != kWriteAsync) {
    allowed = "write_mode: async, or no staging_buffer";
    return fmt::format(
        "tier '{}' has a staging buffer but write_mode '{}': only async stores "
        "are staged",
        t.name, t.write_mode);
  }
  if (t.staging_buffer >= block_bytes) return {};
  allowed = fmt::format("0 (no bound) or at least {} bytes", block_bytes);
  return fmt::format("{} bytes hold no block: a block of tier '{}' is {} bytes (all ranks)",
                     t.staging_buffer, t.name, block_bytes);
}

void check_tier_store_costs(const std::vector<KvTierParams>& tiers, Bytes block_bytes,
                            config::LoadContext& ctx) {
  for (const KvTierParams& t : tiers) {
    std::string allowed;
    const std::string problem = tier_staging_problem(t, block_bytes, allowed);
    if (problem.empty()) continue;
    const std::string key = t.key_path + ".staging_buffer";
    ctx.diagnostics.error(ctx.location_of(key), key, problem, allowed);
  }
}

std::unique_ptr<TierChain> make_tier_chain(const KvTiersConfig& config, Bytes block_bytes,
                                           int64_t block_size,
                                           std::shared_ptr<KvTier> global_pool) {
  std::vector<std::shared_ptr<KvTier>> tiers;
  for (const KvTierParams& p : config.tiers) {
    if (global_pool && p.name == global_pool->name()) {
      tiers.push_back(global_pool);
    } else {
      tiers.push_back(std::make_shared<KvTier>(p, block_bytes));
    }
  }
  return std::make_unique<TierChain>(std::move(tiers), config.load_overlap == "layerwise",
                                     block_size, config.load_overlap == "async");
}

}  // namespace kvsim
