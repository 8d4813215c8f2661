#pragma once
// `s3fifo` (Yang, Zhang, Qiu, Yue, Rashmi, "FIFO queues are all you need for
// cache eviction", SOSP 2023): a small FIFO S (10% of the entries) that
// filters one-hit wonders, a main FIFO M run as a 2-bit CLOCK, and a ghost
// FIFO G of the keys recently evicted from S (as many as 90% of the
// entries, libCacheSim's defaults). New content enters S, or M when its key
// is in G. Eviction takes S's oldest when S holds at least 10% of the
// entries: if it was hit (count >= 1) it moves to M with its count reset,
// else it is evicted and its key goes to G; otherwise M's oldest: a count
// above 0 is decremented and the entry goes back to M's newest end, a count
// of 0 is evicted. Hits only bump a count saturating at 3 (lazy promotion).
//
// In a pool an entry in use (a block referenced by a running sequence) is
// not evictable and leaves its queue; when it becomes evictable again it
// re-enters the newest end of the queue it was in, count kept. "Entries"
// in the ratios are all the pool's entries the order has seen (a block
// pool's size), pinned ones included.
#include <cstdint>
#include <vector>

#include "base/params.hpp"
#include "sim/cache/eviction/eviction_order.hpp"
#include "sim/cache/eviction/ghost_keys.hpp"
#include "sim/cache/eviction/id_lists.hpp"

namespace kvsim {

struct S3FifoParams {
  double small_ratio = 0.10;       // S's share of the entries
  double ghost_ratio = 0.90;       // G's capacity as a share of the entries
  int move_to_main_threshold = 1;  // hits an S entry needs to move to M
};

class S3FifoOrder final : public EvictionOrder {
 public:
  static constexpr int kSmall = 0;
  static constexpr int kMain = 1;
  static constexpr int kMaxCount = 3;

  S3FifoOrder() : S3FifoOrder(S3FifoParams{}) {}
  explicit S3FifoOrder(const S3FifoParams& params);

  std::string_view name() const override { return "s3fifo"; }
  void on_evictable(EvictableId id) override;
  void on_pinned(EvictableId id) override;
  void on_access(EvictableId id) override;
  EvictableId pop_victim() override;
  void on_content(EvictableId id, uint64_t key) override;
  // S oldest first, then M oldest first: the order a run of evictions with
  // no hit in between would take, counts aside.
  std::vector<EvictableId> victims_in_order() const override;

  // Which queue an evictable entry is in (kSmall, kMain), -1 when pinned.
  int queue_of(EvictableId id) const { return queues_.list_of(id); }
  int count(EvictableId id) const { return state(id).count; }
  bool in_ghost(uint64_t key) const { return ghost_.contains(key); }
  int64_t small_size() const { return queues_.size(kSmall); }
  int64_t main_size() const { return queues_.size(kMain); }

 private:
  struct State {
    int count = 0;
    int queue = kSmall;  // where it goes when evictable again
    bool has_key = false;
    uint64_t key = 0;
  };
  State& state_of(EvictableId id);
  const State& state(EvictableId id) const;
  void track(EvictableId id);

  S3FifoParams params_;
  IdLists queues_{2};
  std::vector<State> states_;
  GhostKeys ghost_;
  int64_t entries_ = 0;  // ids seen
};

config::ComponentInfo s3fifo_order_info();

}  // namespace kvsim
