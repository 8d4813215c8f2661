#pragma once
// Eviction orders by name: the YAML value `kv_cache.eviction` picks one
// (default `lru`, today's behaviour). The table in eviction_registry.cpp is
// the only place an order is registered; a test compares it with the
// expected names so none can be lost. An order is one file beside this one
// (lru_order.cpp, lfu_order.cpp, s3fifo_order.cpp, arc_order.cpp); adding
// one is one file and one table line.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.hpp"
#include "sim/cache/eviction/eviction_order.hpp"

namespace kvsim {

constexpr std::string_view kDefaultEvictionOrder = "lru";

// Registered names, sorted.
std::vector<std::string> eviction_order_names();
// Kind "eviction order", name, doc and parameters of each, in name order.
std::vector<config::ComponentInfo> eviction_order_infos();
// A new order of that name. Throws std::invalid_argument naming the known
// orders when the name is not registered (the reader checks the YAML value
// against eviction_order_names() first, so this means a caller's bug).
std::unique_ptr<EvictionOrder> make_eviction_order(std::string_view name);

}  // namespace kvsim
