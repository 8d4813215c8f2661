#include "sim/cache/eviction/eviction_registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "sim/cache/eviction/arc_order.hpp"
#include "sim/cache/eviction/lfu_order.hpp"
#include "sim/cache/eviction/lru_order.hpp"
#include "sim/cache/eviction/s3fifo_order.hpp"

namespace kvsim {
namespace {

struct Registered {
  config::ComponentInfo (*info)();
  std::unique_ptr<EvictionOrder> (*make)();
};

// One line per order, kept in name order.
const std::vector<Registered>& table() {
  static const std::vector<Registered> t = {
      {arc_order_info, [] { return std::unique_ptr<EvictionOrder>(new ArcOrder()); }},
      {lfu_order_info, [] { return std::unique_ptr<EvictionOrder>(new LfuOrder()); }},
      {lru_order_info, [] { return std::unique_ptr<EvictionOrder>(new LruOrder()); }},
      {s3fifo_order_info, [] { return std::unique_ptr<EvictionOrder>(new S3FifoOrder()); }},
  };
  return t;
}

}  // namespace

std::vector<std::string> eviction_order_names() {
  std::vector<std::string> names;
  for (const Registered& r : table()) names.push_back(r.info().name);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<config::ComponentInfo> eviction_order_infos() {
  std::vector<config::ComponentInfo> infos;
  for (const Registered& r : table()) infos.push_back(r.info());
  std::sort(infos.begin(), infos.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return infos;
}

std::unique_ptr<EvictionOrder> make_eviction_order(std::string_view name) {
  for (const Registered& r : table())
    if (r.info().name == name) return r.make();
  throw std::invalid_argument(fmt::format("unknown eviction order '{}' (known: {})", name,
                                          fmt::join(eviction_order_names(), ", ")));
}

}  // namespace kvsim
