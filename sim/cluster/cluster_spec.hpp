#pragma once
// A scenario's `cluster:` section: instance groups behind a router on one
// clock. Each group is a full scenario of its own (the file's sections with
// the group's `device`, `parallel`, `kv_cache` and `scheduler` laid over
// them), so every check a one-instance scenario passes is made per group. A
// scenario without `cluster:` runs one instance exactly as before.
//
// Roles: `mixed` instances serve whole requests; `prefill` instances compute
// prompts and hand their KV over a link (KvLinkKind) to `decode` instances,
// which generate the output (prefill/decode disaggregation, DistServe,
// Mooncake, SPEC "cluster" notes in docs/yaml.md).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/params.hpp"
#include "base/reader.hpp"
#include "sim/cache/tiers/kv_tier.hpp"
#include "sim/cluster/prefix_index.hpp"

namespace kvsim {

struct InstanceSpec;

enum class InstanceRole : uint8_t { mixed, prefill, decode };
std::string_view instance_role_name(InstanceRole role);

struct InstanceGroup {
  std::string name;
  int64_t count = 1;
  // Instances per node: the group's instances fill nodes of this many in
  // order, and those of one node share its `cluster.links` of kind
  // node_nic and fabric. Nodes never span groups.
  int64_t node_size = 1;
  InstanceRole role = InstanceRole::mixed;
  std::shared_ptr<const InstanceSpec> spec;  // what each of its instances runs
  // Engines it runs: `count` instances of parallel.data ranks each.
  int64_t engines() const;
};

// How a prefilled request's KV reaches its decode instance.
struct KvTransferConfig {
  std::string link = "hccs";  // a link of the prefill device's file (kv_link.hpp)
  // Layer-wise streaming (Mooncake, vLLM's LMCache connector): layer l's KV
  // is sent while layer l+1 computes, so only the last layer's share is
  // left to send when the prefill ends.
  bool layerwise = true;
  // Shared links it crosses after the prefill device's own port
  // (cluster.links): node_nic (the sender's tx and the receiver's rx, when
  // on two nodes), fabric (the node's, when on one).
  std::vector<std::string> via;
};

// `cluster.links:` the links instances share, each a SharedLink per
// direction (sim/core/shared_link.hpp), declared by kind:
// - node_nic: one per node (its RoCE NIC, which the node's instances share);
// - fabric: one per node (the intra-node switch, HCCS);
// - pool_servers: one for the cluster (the global pool's servers).
// A movement crosses the ones its `via` lists. Absent: every instance has
// its links to itself, as before links were shared.
struct SharedLinkDecl {
  std::string name;       // a kind of shared_link_kinds()
  int64_t bandwidth = 0;  // bytes per second and direction, > 0
  TimeNs latency = 0;     // per transfer
};
const std::vector<std::string>& shared_link_kinds();
struct ClusterLinksConfig {
  std::vector<SharedLinkDecl> declared;
  const SharedLinkDecl* find(std::string_view name) const;
};

// `cluster.global_pool:` one store of KV blocks that every mixed and prefill
// instance reaches over a link of its device (Mooncake Store: a prefix one
// instance computed serves any other). Each such instance's chain of tiers
// gets it as its last tier, `global`; decode instances take their KV over
// the transfer link instead. Capacity 0: no pool (as without the section).
struct GlobalPoolConfig {
  std::string link = "roce";  // a link of the instances' device files (kv_link.hpp)
  // The tier every instance shares: its bandwidths and latency are the
  // link's, times the instance's ranks (each rank's port moves its share).
  KvTierParams tier;
  Bytes block_bytes = 0;  // one block of an instance, all ranks
  // Shared links a get or a put crosses after the instance's own port
  // (cluster.links): node_nic, pool_servers.
  std::vector<std::string> via;
  bool enabled() const { return tier.capacity > 0; }
};

struct RouterConfig {
  std::string policy;
  config::ParamValues params;
  // `index:` of a policy that declares one (prefix_index.hpp); `exact`
  // otherwise.
  PrefixIndexConfig index;
};

struct ClusterSpec {
  RouterConfig router;         // picks a mixed or prefill instance for each arrival
  RouterConfig decode_router;  // picks the decode instance of a prefilled request
  KvTransferConfig transfer;
  GlobalPoolConfig global_pool;
  ClusterLinksConfig links;
  std::vector<InstanceGroup> groups;

  int64_t instances() const;  // engines, every data-parallel rank one
  int64_t instances_of(InstanceRole role) const;
  bool disaggregated() const { return instances_of(InstanceRole::prefill) > 0; }
};

// The keys `cluster:` and its parts declare (for the YAML reference).
// `parallel.data` ranks of a scenario without `cluster:`: one group of its
// ranks behind round_robin (the even split).
std::shared_ptr<const ClusterSpec> data_parallel_cluster(const InstanceSpec& scenario);

config::ComponentInfo cluster_section_info();
config::ComponentInfo cluster_group_info();
config::ComponentInfo global_pool_info();
config::ComponentInfo shared_link_info();
// The keys `index:` of a router shares (`kind`) before its kind's own.
config::ComponentInfo prefix_index_section_info();

// Reads `cluster:` (node `cluster` of the document `root`). Each group's
// document (root without `cluster:`, the group's sections laid over it) is
// handed to `parse_group`, which returns the group's scenario or throws
// config::ConfigError. Problems of the section itself go to ctx.
std::shared_ptr<const ClusterSpec> read_cluster_section(
    const config::Node& cluster, const YAML::Node& root,
    const std::function<InstanceSpec(const YAML::Node& doc)>& parse_group,
    const std::function<std::string(const InstanceSpec& group)>& refuse_group,
    config::LoadContext& ctx);

}  // namespace kvsim
