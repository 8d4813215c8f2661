#include "sim/cluster/cluster_links.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "base/diagnostics.hpp"

namespace kvsim {

namespace {

bool lists(const std::vector<std::string>& via, const char* kind) {
  return std::find(via.begin(), via.end(), kind) != via.end();
}

}  // namespace

const std::vector<std::string>& shared_link_kinds() {
  static const std::vector<std::string> kinds{"node_nic", "fabric", "pool_servers"};
  return kinds;
}

const SharedLinkDecl* ClusterLinksConfig::find(std::string_view name) const {
  for (const SharedLinkDecl& d : declared)
    if (d.name == name) return &d;
  return nullptr;
}

config::ComponentInfo shared_link_info() {
  using namespace config;
  return {"cluster link",
          "link",
          "one link instances share (cluster.links.<kind>): node_nic and fabric one per node, "
          "pool_servers one for the cluster; each direction its own",
          {bandwidth_param("bandwidth", std::nullopt, 1, 1LL << 50,
                           "bytes per second and direction, shared fairly by the transfers on it"),
           duration_param("latency", 0, 0, 1000LL * 1000 * 1000,
                          "fixed cost of one transfer (before it takes bandwidth)")}};
}

ClusterLinksConfig read_cluster_links(const config::Node& node) {
  ClusterLinksConfig out;
  if (!node.defined()) return out;
  if (!node.is_map()) {
    node.error("expected a map of link kinds", "{node_nic: {bandwidth: 25GB/s, latency: 5us}}");
    return out;
  }
  const config::ComponentInfo info = shared_link_info();
  std::string kinds;
  for (const std::string& k : shared_link_kinds()) kinds += (kinds.empty() ? "" : ", ") + k;
  for (auto it = node.raw().begin(); it != node.raw().end(); ++it) {
    const std::string kind = it->first.Scalar();
    const config::Node item(it->second, node.path() + "." + kind, node.file(), &node.context());
    const auto& all = shared_link_kinds();
    if (std::find(all.begin(), all.end(), kind) == all.end()) {
      const std::string near = config::closest_match(kind, all);
      item.error(near.empty()
                     ? fmt::format("unknown link kind '{}'", kind)
                     : fmt::format("unknown link kind '{}', did you mean '{}'?", kind, near),
                 kinds);
      continue;
    }
    config::MapReader r(item);
    const config::ParamValues v = config::read_params(r, info);
    r.finish();
    out.declared.push_back({kind, v.integer("bandwidth"), v.integer("latency")});
  }
  return out;
}

std::vector<std::string> read_via(const config::Node& node, const ClusterLinksConfig& links,
                                  const std::vector<std::string>& allowed) {
  std::vector<std::string> via;
  if (!node.defined()) return via;
  if (!node.is_sequence()) {
    node.error("expected a list of link kinds", "[node_nic, pool_servers]");
    return via;
  }
  for (const config::Node& item : node.items()) {
    const std::optional<std::string> kind = item.as_choice(allowed);
    if (!kind) continue;
    if (links.find(*kind) == nullptr) {
      item.error(fmt::format("cluster.links declares no '{}' link", *kind),
                 fmt::format("cluster: {{links: {{{}: {{bandwidth: 25GB/s}}}}}}", *kind));
      continue;
    }
    if (lists(via, kind->c_str())) {
      item.error(fmt::format("'{}' listed twice", *kind), "each link once");
      continue;
    }
    via.push_back(*kind);
  }
  return via;
}

ClusterLinks::ClusterLinks(Simulator& sim, const ClusterSpec& cluster, int32_t priority)
    : cluster_(cluster) {
  for (const InstanceGroup& g : cluster.groups) {
    const int64_t size = std::max<int64_t>(g.node_size, 1);
    for (int64_t k = 0; k < g.engines(); ++k) node_of_.push_back(nodes_ + k / size);
    nodes_ += (g.engines() + size - 1) / size;
  }
  auto add = [&](const std::string& name, const SharedLinkDecl& d) {
    links_.emplace(
        name, std::make_unique<SharedLink>(sim, LinkSpec{name, d.bandwidth, d.latency}, priority));
  };
  for (const SharedLinkDecl& d : cluster.links.declared) {
    if (d.name == "node_nic") {
      for (int64_t n = 0; n < nodes_; ++n) {
        add(node_link(n, d.name, "tx"), d);
        add(node_link(n, d.name, "rx"), d);
      }
    } else if (d.name == "fabric") {
      for (int64_t n = 0; n < nodes_; ++n) add(node_link(n, d.name, ""), d);
    } else {
      add(d.name + ".read", d);
      add(d.name + ".write", d);
    }
  }
}

std::string ClusterLinks::node_link(int64_t node, const std::string& kind, const char* dir) const {
  return *dir ? fmt::format("node{}.{}.{}", node, kind, dir) : fmt::format("node{}.{}", node, kind);
}

SharedLink* ClusterLinks::at(const std::string& name) const {
  const auto it = links_.find(name);
  if (it == links_.end()) throw std::logic_error(fmt::format("no cluster link {}", name));
  return it->second.get();
}

LinkPath ClusterLinks::pool_read_hops(size_t instance) const {
  LinkPath path;
  const std::vector<std::string>& via = cluster_.global_pool.via;
  if (lists(via, "node_nic")) path.push_back(at(node_link(node_of(instance), "node_nic", "rx")));
  if (lists(via, "pool_servers")) path.push_back(at("pool_servers.read"));
  return path;
}

LinkPath ClusterLinks::pool_write_hops(size_t instance) const {
  LinkPath path;
  const std::vector<std::string>& via = cluster_.global_pool.via;
  if (lists(via, "node_nic")) path.push_back(at(node_link(node_of(instance), "node_nic", "tx")));
  if (lists(via, "pool_servers")) path.push_back(at("pool_servers.write"));
  return path;
}

LinkPath ClusterLinks::transfer_hops(size_t from, size_t to) const {
  LinkPath path;
  const std::vector<std::string>& via = cluster_.transfer.via;
  const int64_t a = node_of(from), b = node_of(to);
  if (a != b && lists(via, "node_nic")) {
    path.push_back(at(node_link(a, "node_nic", "tx")));
    path.push_back(at(node_link(b, "node_nic", "rx")));
  }
  if (a == b && lists(via, "fabric")) path.push_back(at(node_link(a, "fabric", "")));
  return path;
}

}  // namespace kvsim
