#pragma once
// The link a prefilled request's KV crosses to its decode instance, with the
// bandwidth and latency the prefill device's file gives it, and the price of
// one transfer with the link to itself. Pure functions: the cluster run
// sends each transfer over the prefill instance's SharedLink port (and the
// links of transfer.via), where overlapping transfers share the bandwidth
// and a lone one costs exactly this price.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/units.hpp"
#include "devices/device_spec.hpp"

namespace kvsim {

struct KvLink {
  std::string_view name;  // hccs | roce | pcie
  int64_t bandwidth = 0;  // bytes/s per direction, per device
  TimeNs latency = 0;     // per transfer
};

// The links a cluster may name, and the device keys each reads.
std::vector<std::string> kv_link_names();
std::string kv_link_keys(std::string_view name);
// The link `name` of `device`; nullopt when its file gives no bandwidth for it.
std::optional<KvLink> kv_link_of(const DeviceSpec& device, std::string_view name);

struct KvTransferPrice {
  Bytes bytes = 0;  // KV moved, all ranks together
  TimeNs time = 0;  // from the end of the prefill to the KV being on the decode side
};

// The KV of `tokens` tokens at `kv_bytes_per_token` per rank leaves `ranks`
// prefill devices, each over its own link in parallel: time = latency +
// per-rank bytes / bandwidth. Layer-wise, layer l's KV crosses while layer
// l+1 computes, so only 1/layers of it is left when the prefill ends (the
// prefill of a layer outlasts the transfer of its KV on every link listed:
// a 12K-token layer of a 3B model computes in ~10 ms and its 48 MB cross a
// 25 GB/s RoCE port in 2 ms).
KvTransferPrice price_kv_transfer(int64_t tokens, Bytes kv_bytes_per_token, int64_t ranks,
                                  int64_t layers, bool layerwise, const KvLink& link);

}  // namespace kvsim
