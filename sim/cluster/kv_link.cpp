#include "sim/cluster/kv_link.hpp"

#include <algorithm>
#include <cmath>

namespace kvsim {

namespace {

// One row per link: where its figures live in a device file.
struct LinkRow {
  std::string_view name;
  int64_t DeviceSpec::*bandwidth;
  TimeNs DeviceSpec::*latency;
  std::string_view keys;
};

constexpr LinkRow kLinks[] = {
    {"hccs", &DeviceSpec::device_link_bandwidth, &DeviceSpec::device_link_latency,
     "device_link_bandwidth and device_link_latency in the device file"},
    {"pcie", &DeviceSpec::host_link_bandwidth, &DeviceSpec::host_link_latency,
     "host_link_bandwidth and host_link_latency in the device file"},
    {"roce", &DeviceSpec::network_link_bandwidth, &DeviceSpec::network_link_latency,
     "network_link_bandwidth and network_link_latency in the device file"},
};

const LinkRow* row_of(std::string_view name) {
  for (const LinkRow& r : kLinks)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace

std::vector<std::string> kv_link_names() {
  std::vector<std::string> names;
  for (const LinkRow& r : kLinks) names.emplace_back(r.name);
  return names;
}

std::string kv_link_keys(std::string_view name) {
  const LinkRow* r = row_of(name);
  return r ? std::string(r->keys) : std::string();
}

std::optional<KvLink> kv_link_of(const DeviceSpec& d, std::string_view name) {
  const LinkRow* r = row_of(name);
  if (r == nullptr || d.*(r->bandwidth) <= 0) return std::nullopt;
  return KvLink{r->name, d.*(r->bandwidth), d.*(r->latency)};
}

KvTransferPrice price_kv_transfer(int64_t tokens, Bytes kv_bytes_per_token, int64_t ranks,
                                  int64_t layers, bool layerwise, const KvLink& link) {
  KvTransferPrice p;
  const Bytes per_rank = tokens * kv_bytes_per_token;
  p.bytes = per_rank * ranks;
  double wire_ns = static_cast<double>(per_rank) * 1e9 / static_cast<double>(link.bandwidth);
  if (layerwise) wire_ns /= static_cast<double>(std::max<int64_t>(layers, 1));
  p.time = link.latency + static_cast<TimeNs>(std::ceil(wire_ns));
  return p;
}

}  // namespace kvsim
