#include "sim/cache/eviction/eviction_order.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace kvsim {

std::vector<uint8_t> EvictionOrder::evictable_flags(int64_t ids) const {
  std::vector<uint8_t> flags(static_cast<size_t>(std::max<int64_t>(ids, 0)), 0);
  for (const EvictableId id : victims_in_order()) {
    if (id < 0 || id >= ids)
      throw std::logic_error(
          fmt::format("the {} order holds entry {}, outside [0, {})", name(), id, ids));
    if (flags[static_cast<size_t>(id)])
      throw std::logic_error(fmt::format("the {} order holds entry {} twice", name(), id));
    flags[static_cast<size_t>(id)] = 1;
  }
  return flags;
}

}  // namespace kvsim
