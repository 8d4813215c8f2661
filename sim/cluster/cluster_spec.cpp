#include "sim/cluster/cluster_spec.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/cache/eviction/eviction_registry.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/cache/tiers/tier_config.hpp"
#include "sim/cluster/cluster_links.hpp"
#include "sim/cluster/kv_link.hpp"
#include "sim/cluster/pool_presets.hpp"
#include "sim/cluster/routing_registry.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {
using config::MapReader;
using config::Node;

namespace {

// The sections a group may lay over the file's own: what differs between
// instance groups of one deployment (the model and the workload do not).
constexpr std::string_view kGroupSections[] = {"device", "parallel", "kv_cache", "kv_tiers",
                                               "scheduler"};

// `index:` of a router: a kind and its keys, read as a router is.
PrefixIndexConfig read_prefix_index(const Node& node) {
  PrefixIndexConfig ix;
  MapReader r(node);
  const auto names = prefix_index_names();
  ix.kind = r.choice("kind", std::string(kDefaultPrefixIndex), names);
  if (std::find(names.begin(), names.end(), ix.kind) == names.end())
    ix.kind = std::string(kDefaultPrefixIndex);  // the error is recorded
  const config::ComponentInfo& info = prefix_index_info(ix.kind);
  ix.params = config::read_params(r, info);
  config::report_foreign_keys(r, info, prefix_index_infos(), {"kind"});
  r.finish();
  return ix;
}

RouterConfig read_router(const Node& node, std::string_view fallback) {
  RouterConfig rc;
  MapReader r(node);
  rc.policy = r.choice("policy", std::string(fallback), routing_policy_names());
  const auto names = routing_policy_names();
  if (std::find(names.begin(), names.end(), rc.policy) == names.end())
    rc.policy = std::string(fallback);  // the error is recorded; read the fallback's keys
  const config::ComponentInfo& info = routing_policy_info(rc.policy);
  rc.params = config::read_params(r, info);
  config::report_foreign_keys(r, info, routing_policy_infos(), {"policy"});
  rc.index = info.find("index") != nullptr ? read_prefix_index(r.child("index"))
                                           : prefix_index_defaults(kDefaultPrefixIndex);
  r.finish();
  return rc;
}

// The group's document: the file without `cluster:`, each section the group
// gives laid over the file's (maps key by key, anything else replaced).
YAML::Node group_document(const YAML::Node& root, const YAML::Node& group) {
  YAML::Node doc = YAML::Clone(root);
  doc.remove("cluster");
  for (std::string_view section : kGroupSections) {
    const std::string key(section);
    const YAML::Node over = group[key];
    if (!over.IsDefined()) continue;
    YAML::Node base = doc[key];
    if (over.IsMap() && base.IsDefined() && base.IsMap()) {
      for (auto it = over.begin(); it != over.end(); ++it)
        base[it->first.Scalar()] = YAML::Clone(it->second);
    } else {
      doc[key] = YAML::Clone(over);
    }
  }
  return doc;
}

GlobalPoolConfig read_global_pool(const Node& node, const ClusterLinksConfig& links) {
  GlobalPoolConfig pool;
  MapReader r(node);
  const config::ComponentInfo info = global_pool_info();
  const config::ParamValues v = config::read_params(r, info);
  pool.via = read_via(r.child("via"), links, {"node_nic", "pool_servers"});
  r.finish();
  if (!v.has("capacity")) return pool;  // an error is recorded
  pool.link = v.string("link");
  pool.tier.name = "global";
  pool.tier.capacity = v.integer("capacity");
  pool.tier.eviction = v.string("eviction");
  pool.tier.store = v.string("store");
  read_tier_store_cost(v, pool.tier);
  pool.tier.key_path = node.path();
  return pool;
}

// The pool as instance `spec` reaches it: its link's figures times the
// instance's ranks, its block (all ranks). Errors at `where` (the group).
void reach_global_pool(GlobalPoolConfig& pool, const InstanceGroup& group, InstanceSpec& spec,
                       const Node& where, const Node& pool_node, bool first) {
  const BlockPoolContract* pool_of_spec = spec.policy().block_pool();
  if (pool_of_spec == nullptr || !pool_of_spec->keeps_prefix_blocks()) {
    where.error(fmt::format("group '{}' would share the global pool, but kv_cache.policy '{}' "
                            "keeps no prefix blocks",
                            group.name, spec.policy().display_name()),
                "kv_cache: {policy: paged, prefix_caching: true}");
    return;
  }
  const std::optional<KvLink> link = kv_link_of(spec.device, pool.link);
  if (!link) {
    const Node at = pool_node.child_at("link");
    (at.defined() ? at : pool_node)
        .error(fmt::format("{} (group '{}') gives no figures for the '{}' link to the global pool",
                           spec.device.name, group.name, pool.link),
               kv_link_keys(pool.link));
    return;
  }
  KvTierParams reached = pool.tier;
  reached.read_bandwidth = link->bandwidth * spec.tp;
  reached.write_bandwidth = link->bandwidth * spec.tp;
  reached.latency = link->latency;
  const Bytes block = spec.pool_sizing().block_bytes * spec.tp;
  std::string allowed;
  if (const std::string problem = tier_staging_problem(pool.tier, block, allowed);
      !problem.empty()) {
    pool_node.child_at("staging_buffer")
        .error(fmt::format("group '{}': {}", group.name, problem), allowed);
    return;
  }
  if (first) {
    pool.tier = reached;
    pool.block_bytes = block;
  } else if (block != pool.block_bytes || reached.read_bandwidth != pool.tier.read_bandwidth ||
             reached.latency != pool.tier.latency) {
    where.error(fmt::format("group '{}' reaches the global pool with blocks of {} bytes at {} B/s "
                            "and {} ns, an earlier group with {} bytes at {} B/s and {} ns",
                            group.name, block, reached.read_bandwidth, reached.latency,
                            pool.block_bytes, pool.tier.read_bandwidth, pool.tier.latency),
                "groups sharing one pool alike in block bytes (block_size, dtype, model) and in "
                "link bandwidth x tensor ranks");
    return;
  }
  spec.kv_tiers.tiers.push_back(reached);
}

}  // namespace

std::string_view instance_role_name(InstanceRole role) {
  switch (role) {
    case InstanceRole::mixed:
      return "mixed";
    case InstanceRole::prefill:
      return "prefill";
    case InstanceRole::decode:
      return "decode";
  }
  return "mixed";
}

int64_t InstanceGroup::engines() const {
  return count * (spec ? std::max<int64_t>(spec->dp, 1) : 1);
}

int64_t ClusterSpec::instances() const {
  int64_t n = 0;
  for (const InstanceGroup& g : groups) n += g.engines();
  return n;
}

int64_t ClusterSpec::instances_of(InstanceRole role) const {
  int64_t n = 0;
  for (const InstanceGroup& g : groups)
    if (g.role == role) n += g.engines();
  return n;
}

std::shared_ptr<const ClusterSpec> data_parallel_cluster(const InstanceSpec& scenario) {
  auto spec = std::make_shared<ClusterSpec>();
  for (RouterConfig* r : {&spec->router, &spec->decode_router}) {
    r->policy = "round_robin";
    r->index = prefix_index_defaults(kDefaultPrefixIndex);
  }
  InstanceGroup g;
  g.name = "dp";
  g.count = 1;
  g.node_size = 1;
  g.spec = std::make_shared<const InstanceSpec>(scenario);
  spec->groups.push_back(std::move(g));
  return spec;
}

config::ComponentInfo cluster_section_info() {
  using namespace config;
  return {"cluster",
          "cluster",
          "instance groups behind a router on one clock; absent: one instance",
          {section_param("groups", true, "[{name, count, role, device, parallel, ...}, ...]",
                         "the instance groups (cluster-group keys)"),
           section_param("router", false, "{policy: round_robin, ...}",
                         "routes each arrival to a mixed or prefill instance (router keys)"),
           section_param("decode_router", false, "{policy: least_loaded, ...}",
                         "routes a prefilled request to a decode instance (router keys)"),
           section_param("transfer", false, "{link: hccs, layerwise: true}",
                         "how KV moves from prefill to decode instances"),
           choice_param("transfer.link", "hccs", kv_link_names(),
                        "the prefill device's link the KV crosses (its file's bandwidth and "
                        "latency)"),
           bool_param("transfer.layerwise", true,
                      "stream each layer's KV while the next computes (only the last layer's "
                      "share is left at the end of the prefill)"),
           section_param("transfer.via", false, "[node_nic]",
                         "cluster.links the KV crosses after the prefill device's port: node_nic "
                         "(between nodes), fabric (within one)"),
           section_param("global_pool", false, "{capacity: 16TB, link: roce, ...}",
                         "one KV store every mixed and prefill instance shares (global-pool "
                         "keys)"),
           section_param("links", false, "{node_nic: {bandwidth: 25GB/s, latency: 5us}, ...}",
                         "links instances share, by kind: node_nic, fabric, pool_servers "
                         "(cluster-link keys)")}};
}

namespace {
std::vector<std::string> pool_preset_name_list() {
  std::vector<std::string> names;
  for (const PoolPreset& p : pool_presets()) names.push_back(p.name);
  return names;
}
}  // namespace

config::ComponentInfo global_pool_info() {
  using namespace config;
  config::ComponentInfo info{
      "cluster global pool",
      "global_pool",
      "one store of KV blocks all mixed and prefill instances share over a link (Mooncake "
      "Store); each instance's last tier, kv_tiers.global in the metrics",
      {optional_param(choice_param(
           "preset", std::nullopt, pool_preset_name_list(),
           "Mooncake Store or AscendStore as values of the keys below, each overridable; "
           "capacity then required (kind `pool preset` lists each one's values and sources)")),
       bytes_param("capacity", 0, 0, 1LL << 60, "blocks the pool holds, in bytes (0: no pool)"),
       choice_param("link", "roce", kv_link_names(),
                    "the instances' device link to the pool: its bandwidth x the instance's "
                    "ranks, and its latency, price a read or a write"),
       choice_param("eviction", std::string(kDefaultEvictionOrder), eviction_order_names(),
                    "which block the pool drops first when full"),
       choice_param("store", std::string(kStoreOnCompute),
                    {kStoreOnEvict, kStoreOnCompute, kStoreOnComputePrompt},
                    "on_compute: every block once computed (Mooncake Store's put after "
                    "prefill); on_compute_prompt: the prompt's blocks only; on_evict: what "
                    "an instance's device or tiers above evict"),
       section_param("via", false, "[node_nic, pool_servers]",
                     "cluster.links a get or a put crosses after the instance's own port "
                     "(the node's NIC, the pool's servers)")}};
  for (config::ParamSpec& p : tier_store_cost_params()) info.params.push_back(std::move(p));
  return info;
}

config::ComponentInfo prefix_index_section_info() {
  using namespace config;
  return {"router index",
          "index",
          "`index:` of a router that routes by prefix: the kind, then that kind's keys",
          {choice_param("kind", std::string(kDefaultPrefixIndex), prefix_index_names(),
                        "exact: every cache read at the instant of routing; events: KV events "
                        "applied after a lag; approximate: the router's own LRU of the prompts "
                        "it routed")}};
}

config::ComponentInfo cluster_group_info() {
  using namespace config;
  return {"cluster group",
          "group",
          "one group of identical instances; its sections are laid over the file's",
          {string_param("name", "", "the group's name in the metrics (default group<index>)"),
           int_param("count", 1, 1, 4096, "instances", "identical instances in the group"),
           choice_param("role", "mixed", {"mixed", "prefill", "decode"},
                        "whole requests, or one side of a prefill/decode split"),
           int_param("node_size", 1, 1, 4096, "instances",
                     "instances per node: those of one node share its node_nic and fabric "
                     "(cluster.links)"),
           section_param("device", false, "a name, path or map", "the group's device"),
           section_param("parallel", false, "{tensor: N}", "laid over the file's parallel:"),
           section_param("kv_cache", false, "{...}", "laid over the file's kv_cache:"),
           section_param("kv_tiers", false, "{...}", "laid over the file's kv_tiers:"),
           section_param("scheduler", false, "{...}", "laid over the file's scheduler:")}};
}

std::shared_ptr<const ClusterSpec> read_cluster_section(
    const Node& cluster, const YAML::Node& root,
    const std::function<InstanceSpec(const YAML::Node& doc)>& parse_group,
    const std::function<std::string(const InstanceSpec& group)>& refuse_group,
    config::LoadContext& ctx) {
  auto spec = std::make_shared<ClusterSpec>();
  MapReader c(cluster);
  spec->router = read_router(c.child("router"), kDefaultRoutingPolicy);
  spec->decode_router = read_router(c.child("decode_router"), "least_loaded");
  spec->links = read_cluster_links(c.child("links"));
  {
    MapReader t(c.child("transfer"));
    spec->transfer.link = t.choice("link", "hccs", kv_link_names());
    spec->transfer.layerwise = t.boolean("layerwise", true);
    spec->transfer.via = read_via(t.child("via"), spec->links, {"node_nic", "fabric"});
    t.finish();
  }
  const Node pool_node = c.child("global_pool");
  spec->global_pool = read_global_pool(pool_node, spec->links);
  // A list of groups, or a map of name to group (which `--set
  // cluster.groups.decode.count=3` and `kvsim compare --vary` can reach).
  const Node groups = c.child("groups");
  std::vector<std::pair<Node, std::string>> items;  // a group and its name from the map
  if (groups.defined() && groups.is_sequence()) {
    for (const Node& item : groups.items()) items.emplace_back(item, "");
  } else if (groups.defined() && groups.is_map()) {
    for (auto it = groups.raw().begin(); it != groups.raw().end(); ++it) {
      const std::string key = it->first.Scalar();
      items.emplace_back(Node(it->second, groups.path() + "." + key, groups.file(), &ctx), key);
    }
  }
  if (items.empty()) {
    groups.error("a cluster needs one or more instance groups",
                 "groups: {replica: {count: 8}}, or a list [{name: replica, count: 8}]");
  }
  std::vector<YAML::Node> docs;
  std::vector<Node> group_nodes;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& [item, key] = items[i];
    MapReader g(item);
    InstanceGroup group;
    if (key.empty()) {
      group.name = g.string("name", "");
      if (group.name.empty()) group.name = fmt::format("group{}", i);
    } else {
      group.name = key;
    }
    group.count = g.integer("count", 1, 1, 4096);
    group.node_size = g.integer("node_size", 1, 1, 4096);
    const std::string role = g.choice("role", "mixed", {"mixed", "prefill", "decode"});
    for (InstanceRole r : {InstanceRole::mixed, InstanceRole::prefill, InstanceRole::decode})
      if (instance_role_name(r) == role) group.role = r;
    for (std::string_view section : kGroupSections) g.ignore({section});
    g.finish();
    spec->groups.push_back(std::move(group));
    docs.push_back(group_document(root, item.raw()));
    group_nodes.push_back(item);
  }
  c.finish();
  const int64_t mixed = spec->instances_of(InstanceRole::mixed);
  const int64_t prefill = spec->instances_of(InstanceRole::prefill);
  const int64_t decode = spec->instances_of(InstanceRole::decode);
  if (!spec->groups.empty() && !(prefill == 0 && decode == 0) &&
      (mixed > 0 || prefill == 0 || decode == 0)) {
    groups.error(
        fmt::format("{} mixed, {} prefill and {} decode instances", mixed, prefill, decode),
        "either only mixed instances, or prefill and decode instances (at least one "
        "of each) and no mixed one");
  }
  ctx.diagnostics.throw_if_any();
  bool pool_reached = false;
  for (size_t i = 0; i < docs.size(); ++i) {
    InstanceGroup& group = spec->groups[i];
    auto s = std::make_shared<InstanceSpec>(parse_group(docs[i]));
    const Node& where = group_nodes[i];
    const auto global = std::find_if(s->kv_tiers.tiers.begin(), s->kv_tiers.tiers.end(),
                                     [](const KvTierParams& t) { return t.name == "global"; });
    if (global != s->kv_tiers.tiers.end()) {
      where.error(fmt::format("group '{}' lists a `global` tier of its own", group.name),
                  "in a cluster the global tier is cluster.global_pool: {capacity: ...}, one "
                  "store every instance shares");
    } else if (group.role == InstanceRole::decode && !s->kv_tiers.empty()) {
      // The prompt's KV comes over the transfer link, priced there; a hit in
      // a tier below would be read a second time.
      where.error(fmt::format("decode group '{}' has tiers below its device", group.name),
                  "kv_tiers: {tiers: []} in the decode group: its KV arrives over the transfer "
                  "link");
    } else if (group.role != InstanceRole::decode && spec->global_pool.enabled()) {
      reach_global_pool(spec->global_pool, group, *s, where, pool_node, !pool_reached);
      pool_reached = true;
    }
    // An index fed by KV events needs instances whose caches publish them.
    const bool routed_by_events =
        (group.role == InstanceRole::decode ? spec->decode_router : spec->router).index.kind ==
        "events";
    const BlockPoolContract* pool_contract = s->policy().block_pool();
    if (routed_by_events && (pool_contract == nullptr || !pool_contract->publishes_kv_events(*s))) {
      where.error(fmt::format("group '{}' is routed by KV events, but kv_cache.policy '{}' "
                              "publishes none",
                              group.name, s->policy().display_name()),
                  "kv_cache: {policy: paged, prefix_caching: true} (a model without sliding "
                  "layers), or router index: {kind: exact} or {kind: approximate}");
    }
    if (const std::string why = refuse_group(*s); !why.empty())
      where.error(
          fmt::format("group '{}' cannot be an instance behind a router: {}", group.name, why),
          "an engine that serves many requests (serving)");
    if (group.role == InstanceRole::prefill && !kv_link_of(s->device, spec->transfer.link)) {
      where.error(fmt::format("{} gives no figures for the '{}' link the KV would cross",
                              s->device.name, spec->transfer.link),
                  kv_link_keys(spec->transfer.link));
    }
    group.spec = std::move(s);
  }
  ctx.diagnostics.throw_if_any();
  return spec;
}

}  // namespace kvsim
