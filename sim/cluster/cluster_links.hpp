#pragma once
// The links a cluster's instances share (`cluster.links`, ClusterSpec): the
// reader of the section and of the `via:` lists that route a movement over
// them, and the links themselves on the cluster's clock, one SharedLink per
// node and direction for node_nic, per node for fabric, one per direction
// for pool_servers.
//
//   cluster:
//     links:
//       node_nic: {bandwidth: 25GB/s, latency: 5us}
//       pool_servers: {bandwidth: 100GB/s}
//     global_pool: {capacity: 12TB, via: [node_nic, pool_servers]}
//     groups:
//       replica: {count: 8, node_size: 8}   # the 8 share one node, one NIC
//
// A movement first crosses the instance's own port (its device's link, as
// it priced alone), then each link of its `via` in turn (link_path.hpp).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/reader.hpp"
#include "sim/cluster/cluster_spec.hpp"
#include "sim/core/link_path.hpp"
#include "sim/core/simulator.hpp"

namespace kvsim {

// Reads `cluster.links:` (a map of kind to {bandwidth, latency}); unknown
// kinds and bandwidths <= 0 are errors at their key.
ClusterLinksConfig read_cluster_links(const config::Node& node);
// Reads the `via:` list at `node` (absent: none): each a kind of `allowed`
// that `links` declares.
std::vector<std::string> read_via(const config::Node& node, const ClusterLinksConfig& links,
                                  const std::vector<std::string>& allowed);

class ClusterLinks {
 public:
  // Instances are numbered as ClusterRun numbers them: group by group.
  // Completion events run at `priority`.
  ClusterLinks(Simulator& sim, const ClusterSpec& cluster, int32_t priority);

  int64_t node_of(size_t instance) const { return node_of_.at(instance); }
  int64_t nodes() const { return nodes_; }
  // Hops after the instance's own port for a read from / a write to the
  // global pool (the node's NIC, the pool's servers), per global_pool.via.
  LinkPath pool_read_hops(size_t instance) const;
  LinkPath pool_write_hops(size_t instance) const;
  // Hops after the prefill instance's own port to the decode instance, per
  // transfer.via.
  LinkPath transfer_hops(size_t from, size_t to) const;
  // Every link, by name ("node0.node_nic.rx", "pool_servers.read").
  const std::map<std::string, std::unique_ptr<SharedLink>>& links() const { return links_; }

 private:
  SharedLink* at(const std::string& name) const;
  std::string node_link(int64_t node, const std::string& kind, const char* dir) const;

  const ClusterSpec& cluster_;
  std::vector<int64_t> node_of_;
  int64_t nodes_ = 0;
  std::map<std::string, std::unique_ptr<SharedLink>> links_;
};

}  // namespace kvsim
