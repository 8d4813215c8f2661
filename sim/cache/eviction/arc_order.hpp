#pragma once
// `arc` (Megiddo and Modha, "ARC: A Self-Tuning, Low Overhead Replacement
// Cache", FAST 2003): T1 holds entries used once since they took their
// content, T2 entries hit at least once more, each in LRU order; B1 and B2
// remember the keys last evicted from T1 and T2. A new content whose key is
// in B1 raises the target size p of T1 by max(|B2|/|B1|, 1), one in B2
// lowers it by max(|B1|/|B2|, 1), and either enters T2. The victim is T1's
// least recent when |T1| > p (or T2 is empty), else T2's; its key goes to
// B1 or B2, kept to |T1| + |B1| <= c and |T1| + |T2| + |B1| + |B2| <= 2c.
//
// Two differences from the paper come from the pool's calls: the pool asks
// for a victim before it says which content replaces it, so p adapts at the
// insert that follows an eviction (the paper adapts first), and REPLACE
// cannot see that the incoming key is in B2 (the paper's |T1| = p case goes
// to T2 here too). An entry in use is not evictable: it leaves T1/T2 and
// returns to the most recent end of its list (T2 once hit). c is the number
// of entries the order has seen (a block pool's size).
#include <cstdint>
#include <vector>

#include "base/params.hpp"
#include "sim/cache/eviction/eviction_order.hpp"
#include "sim/cache/eviction/ghost_keys.hpp"
#include "sim/cache/eviction/id_lists.hpp"

namespace kvsim {

class ArcOrder final : public EvictionOrder {
 public:
  static constexpr int kT1 = 0;
  static constexpr int kT2 = 1;

  std::string_view name() const override { return "arc"; }
  void on_evictable(EvictableId id) override;
  void on_pinned(EvictableId id) override;
  // The entry belongs to T2 from now on (moved to its most recent end if evictable).
  void on_access(EvictableId id) override;
  EvictableId pop_victim() override;
  void on_content(EvictableId id, uint64_t key) override;
  // The next victim first under the current p: T1 then T2 when |T1| > p,
  // else T2 then T1.
  std::vector<EvictableId> victims_in_order() const override;

  double target_t1() const { return p_; }
  int list_of(EvictableId id) const { return lists_.list_of(id); }
  int64_t t1_size() const { return lists_.size(kT1); }
  int64_t t2_size() const { return lists_.size(kT2); }
  int64_t b1_size() const { return b1_.size(); }
  int64_t b2_size() const { return b2_.size(); }
  bool in_b1(uint64_t key) const { return b1_.contains(key); }
  bool in_b2(uint64_t key) const { return b2_.contains(key); }

 private:
  struct State {
    int list = kT1;  // where it goes when evictable
    bool has_key = false;
    uint64_t key = 0;
  };
  State& state_of(EvictableId id);
  bool evict_from_t1() const;
  void bound_ghosts();

  IdLists lists_{2};
  std::vector<State> states_;
  GhostKeys b1_;
  GhostKeys b2_;
  double p_ = 0;
  int64_t c_ = 0;
};

config::ComponentInfo arc_order_info();

}  // namespace kvsim
