#include "sim/cache/eviction/lfu_order.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace kvsim {

int& LfuOrder::count_of(EvictableId id) {
  if (id < 0) throw std::logic_error(fmt::format("lfu order: entry id {}", id));
  const auto i = static_cast<size_t>(id);
  if (i >= counts_.size()) counts_.resize(std::max(i + 1, 2 * counts_.size()), 0);
  return counts_[i];
}

int LfuOrder::count(EvictableId id) const {
  const auto i = static_cast<size_t>(id);
  return i < counts_.size() ? counts_[i] : 0;
}

void LfuOrder::push(EvictableId id) {
  const int c = count_of(id);
  buckets_.push_back(c, id);
  non_empty_ |= uint64_t{1} << c;
}

void LfuOrder::remove(EvictableId id) {
  const int c = buckets_.list_of(id);
  buckets_.remove(id);
  if (buckets_.empty(c)) non_empty_ &= ~(uint64_t{1} << c);
}

void LfuOrder::on_evictable(EvictableId id) {
  if (buckets_.list_of(id) >= 0)
    throw std::logic_error(fmt::format("lfu order: entry {} is already evictable", id));
  push(id);
}

void LfuOrder::on_pinned(EvictableId id) {
  if (buckets_.list_of(id) < 0)
    throw std::logic_error(fmt::format("lfu order: entry {} is not evictable", id));
  remove(id);
}

void LfuOrder::on_access(EvictableId id) {
  int& c = count_of(id);
  const bool evictable = buckets_.list_of(id) >= 0;
  if (evictable) remove(id);
  c = std::min(c + 1, kMaxCount);
  if (evictable) push(id);
}

EvictableId LfuOrder::pop_victim() {
  if (non_empty_ == 0) throw std::logic_error("lfu order: no evictable entry");
  const int c = std::countr_zero(non_empty_);
  const EvictableId id = buckets_.front(c);
  remove(id);
  count_of(id) = 0;
  return id;
}

void LfuOrder::on_content(EvictableId id, uint64_t /*key*/) {
  const bool evictable = buckets_.list_of(id) >= 0;
  if (evictable) remove(id);
  count_of(id) = 0;
  if (evictable) push(id);
}

std::vector<EvictableId> LfuOrder::victims_in_order() const {
  std::vector<EvictableId> out;
  for (int c = 0; c <= kMaxCount; ++c) buckets_.append_to(c, out);
  return out;
}

config::ComponentInfo lfu_order_info() {
  return {"eviction order",
          "lfu",
          "least frequently hit first, least recently used among equals (O(1) LFU, counts "
          "saturating at 63)",
          {}};
}

}  // namespace kvsim
