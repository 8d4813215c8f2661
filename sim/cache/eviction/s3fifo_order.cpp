#include "sim/cache/eviction/s3fifo_order.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kvsim {

S3FifoOrder::S3FifoOrder(const S3FifoParams& params) : params_(params) {}

void S3FifoOrder::track(EvictableId id) {
  if (id < 0) throw std::logic_error(fmt::format("s3fifo order: entry id {}", id));
  const auto i = static_cast<size_t>(id);
  if (i < states_.size()) return;
  states_.resize(std::max(i + 1, 2 * states_.size()));
}

S3FifoOrder::State& S3FifoOrder::state_of(EvictableId id) {
  track(id);
  const auto seen = static_cast<int64_t>(id) + 1;
  if (seen > entries_) {
    entries_ = seen;
    ghost_.set_capacity(
        static_cast<int64_t>(std::floor(params_.ghost_ratio * static_cast<double>(entries_))));
  }
  return states_[static_cast<size_t>(id)];
}

const S3FifoOrder::State& S3FifoOrder::state(EvictableId id) const {
  static const State kNone;
  const auto i = static_cast<size_t>(id);
  return i < states_.size() ? states_[i] : kNone;
}

void S3FifoOrder::on_content(EvictableId id, uint64_t key) {
  State& s = state_of(id);
  s = State{};  // new content starts afresh (a chunk pool reuses ids after clear())
  s.has_key = true;
  s.key = key;
  // Content seen lately (its key is a ghost) skips the small queue.
  if (ghost_.take(key)) s.queue = kMain;
}

void S3FifoOrder::on_evictable(EvictableId id) {
  State& s = state_of(id);
  if (queues_.list_of(id) >= 0)
    throw std::logic_error(fmt::format("s3fifo order: entry {} is already evictable", id));
  queues_.push_back(s.queue, id);
}

void S3FifoOrder::on_pinned(EvictableId id) {
  if (queues_.list_of(id) < 0)
    throw std::logic_error(fmt::format("s3fifo order: entry {} is not evictable", id));
  state_of(id).queue = queues_.list_of(id);
  queues_.remove(id);
}

void S3FifoOrder::on_access(EvictableId id) {
  State& s = state_of(id);
  s.count = std::min(s.count + 1, kMaxCount);
}

EvictableId S3FifoOrder::pop_victim() {
  if (queues_.empty(kSmall) && queues_.empty(kMain))
    throw std::logic_error("s3fifo order: no evictable entry");
  const double small_share = params_.small_ratio * static_cast<double>(entries_);
  // Each pass either evicts or moves an entry S -> M (at most once per
  // entry) or lowers a count in M (at most 3 per entry): it ends.
  for (;;) {
    const bool from_small =
        !queues_.empty(kSmall) &&
        (static_cast<double>(queues_.size(kSmall)) >= small_share || queues_.empty(kMain));
    if (from_small) {
      const EvictableId id = queues_.pop_front(kSmall);
      State& s = states_[static_cast<size_t>(id)];
      if (s.count >= params_.move_to_main_threshold) {
        s.count = 0;
        queues_.push_back(kMain, id);
        continue;
      }
      if (s.has_key) ghost_.add(s.key);
      s = State{};
      return id;
    }
    const EvictableId id = queues_.pop_front(kMain);
    State& s = states_[static_cast<size_t>(id)];
    if (s.count > 0) {
      --s.count;
      queues_.push_back(kMain, id);
      continue;
    }
    s = State{};
    return id;
  }
}

std::vector<EvictableId> S3FifoOrder::victims_in_order() const {
  std::vector<EvictableId> out;
  queues_.append_to(kSmall, out);
  queues_.append_to(kMain, out);
  return out;
}

config::ComponentInfo s3fifo_order_info() {
  // The paper's and libCacheSim's settings (S3FifoParams' defaults); a pool
  // names an order only, so they are not keys of their own.
  return {"eviction order",
          "s3fifo",
          "S3-FIFO (SOSP 2023): a small FIFO (10% of entries) filtering entries not hit, a main "
          "FIFO run as a 2-bit CLOCK, a ghost FIFO of keys evicted from the small one (90%)",
          {}};
}

}  // namespace kvsim
