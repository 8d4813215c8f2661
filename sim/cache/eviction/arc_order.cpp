#include "sim/cache/eviction/arc_order.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace kvsim {

ArcOrder::State& ArcOrder::state_of(EvictableId id) {
  if (id < 0) throw std::logic_error(fmt::format("arc order: entry id {}", id));
  const auto i = static_cast<size_t>(id);
  if (i >= states_.size()) states_.resize(std::max(i + 1, 2 * states_.size()));
  c_ = std::max<int64_t>(c_, static_cast<int64_t>(id) + 1);
  return states_[i];
}

void ArcOrder::on_content(EvictableId id, uint64_t key) {
  State& s = state_of(id);
  s = State{};  // new content starts afresh (a chunk pool reuses ids after clear())
  s.has_key = true;
  s.key = key;
  const auto b1 = static_cast<double>(b1_.size());
  const auto b2 = static_cast<double>(b2_.size());
  if (b1_.take(key)) {
    p_ = std::min(static_cast<double>(c_), p_ + std::max(b2 / b1, 1.0));
    s.list = kT2;
  } else if (b2_.take(key)) {
    p_ = std::max(0.0, p_ - std::max(b1 / b2, 1.0));
    s.list = kT2;
  }
}

void ArcOrder::on_evictable(EvictableId id) {
  State& s = state_of(id);
  if (lists_.list_of(id) >= 0)
    throw std::logic_error(fmt::format("arc order: entry {} is already evictable", id));
  lists_.push_back(s.list, id);
}

void ArcOrder::on_pinned(EvictableId id) {
  if (lists_.list_of(id) < 0)
    throw std::logic_error(fmt::format("arc order: entry {} is not evictable", id));
  state_of(id).list = lists_.list_of(id);
  lists_.remove(id);
}

void ArcOrder::on_access(EvictableId id) {
  State& s = state_of(id);
  s.list = kT2;
  if (lists_.list_of(id) >= 0) {
    lists_.remove(id);
    lists_.push_back(kT2, id);
  }
}

bool ArcOrder::evict_from_t1() const {
  return !lists_.empty(kT1) && (static_cast<double>(lists_.size(kT1)) > p_ || lists_.empty(kT2));
}

// Called at an eviction, before the entry taking the victim's place is
// counted: keep room for it in |T1| + |B1| <= c and the 2c total.
void ArcOrder::bound_ghosts() {
  b1_.set_capacity(std::max<int64_t>(0, c_ - 1 - lists_.size(kT1)));
  b2_.set_capacity(
      std::max<int64_t>(0, 2 * c_ - 1 - lists_.size(kT1) - lists_.size(kT2) - b1_.size()));
}

EvictableId ArcOrder::pop_victim() {
  if (lists_.empty(kT1) && lists_.empty(kT2))
    throw std::logic_error("arc order: no evictable entry");
  const bool t1 = evict_from_t1();
  const EvictableId id = lists_.pop_front(t1 ? kT1 : kT2);
  State& s = states_[static_cast<size_t>(id)];
  bound_ghosts();  // room for the key, under the bounds as they are now
  if (s.has_key) (t1 ? b1_ : b2_).add(s.key);
  bound_ghosts();
  s = State{};
  return id;
}

std::vector<EvictableId> ArcOrder::victims_in_order() const {
  std::vector<EvictableId> out;
  const bool t1_first = evict_from_t1();
  lists_.append_to(t1_first ? kT1 : kT2, out);
  lists_.append_to(t1_first ? kT2 : kT1, out);
  return out;
}

config::ComponentInfo arc_order_info() {
  return {"eviction order",
          "arc",
          "ARC (FAST 2003): recency (T1) and frequency (T2) lists whose split adapts on hits in "
          "the ghost lists of recently evicted keys (B1, B2)",
          {}};
}

}  // namespace kvsim
