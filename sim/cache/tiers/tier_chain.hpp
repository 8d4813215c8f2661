#pragma once
// The tiers of one serving instance below device HBM, fastest first (dram,
// ssd, then the global pool, which other instances may share), and what this
// instance moved through them. The paged policy owns one when the scenario
// has `kv_tiers:`:
// - a block the device pool evicts goes to the first `on_evict` tier; what
//   a tier evicts goes to the next `on_evict` tier below it; the last one's
//   victims are dropped (on_block_evicted);
// - a block computed on device is put into every `on_compute` tier
//   (on_computed);
// - a prefix lookup that runs out of device blocks continues here (find),
//   and a hit is read back into a device block (load) at the tier's read
//   bandwidth and latency, summed per step (take_load).
// Tiers are inclusive: a block read back stays in its tier.
//
// With links (set_paths), the reads of a step cross each tier's path of
// shared links (sim/core/link_path.hpp: the instance's own port, then its
// node's NIC or the pool's servers a cluster adds) and the step waits for
// them (read_back), so instances that read at once share the bandwidth;
// alone they cost exactly take_load's time. Without links, take_load's
// time is the step's.
//
// Writes are kept off the step's path: they go out asynchronously while the
// device works, as LMCache and Mooncake Store offload; with links they
// cross the tier's write path in the background (flush_writes), taking
// their share of the links the step's reads and other instances use. Every block that leaves a
// level is accounted for (landed in a tier, found there already, or dropped); check_conserved()
// holds that and each tier's own balance, and the engine fails the run otherwise.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "base/units.hpp"
#include "sim/cache/block_pool.hpp"
#include "sim/cache/tiers/kv_tier.hpp"
#include "sim/core/link_path.hpp"

namespace kvsim {

struct RunMetrics;

// What reading tier hits back costs a step, and whether it overlaps the
// step's compute (layer-wise loading: layer l's KV arrives while layer l-1
// runs, LMCache's use_layerwise, Mooncake's layer-wise transfer) or runs
// before it (the default of LMCache and vLLM's offload connector).
struct TierLoad {
  TimeNs time = 0;
  bool layerwise = false;
  // The step's latency once the load is added.
  TimeNs step_latency(TimeNs compute) const {
    return layerwise ? std::max(compute, time) : compute + time;
  }
};

class TierChain;

// A tier several chains share (a cluster's global pool) holds what all of
// them put minus its evictions: throws std::logic_error unless the tier's
// own balance holds and its puts are exactly the sum of every chain's, so a
// block put by no listed chain, or counted by two, fails the run.
void check_shared_tier_conserved(const KvTier& tier, const std::vector<const TierChain*>& chains);

class TierChain final : public BlockEvictionListener {
 public:
  // `tiers` fastest first; any of them may be shared with other chains.
  TierChain(std::vector<std::shared_ptr<KvTier>> tiers, bool layerwise, int64_t block_size);

  int size() const { return static_cast<int>(tiers_.size()); }
  // Replaces the tier of the same name by `shared` (a cluster's global pool,
  // one object for every instance), before the chain moved anything. False
  // when the chain has no tier of that name. std::logic_error once used.
  bool share_tier(std::shared_ptr<KvTier> shared);
  const KvTier& tier(int i) const { return *tiers_[static_cast<size_t>(i)]; }
  // True for a tier put in by share_tier (other instances reach it too).
  bool shared(int i) const { return shared_[static_cast<size_t>(i)]; }
  // Blocks this chain put into `tier` (the object, which other chains may
  // share); 0 when the chain does not reach it.
  int64_t puts_into(const KvTier& tier) const;

  // Index of the fastest tier holding the block, or -1.
  int find(const BlockHash& hash) const;
  void on_block_evicted(const BlockHash& hash) override;
  void on_computed(const BlockHash& hash);
  // A hit in tier `tier` read back to the device. `first_admission`: counts
  // toward the tier's hit rate (re-admissions after a recompute preemption
  // do not, as kv_cache.prefix_hit_rate).
  void load(const BlockHash& hash, int tier, bool first_admission);
  // The time of the loads since the last call (0 when none), and resets.
  TierLoad take_load();
  // What the last take_load() read from tier `i` (a trace shows each as a
  // transfer of its step): bytes and time, 0 when nothing.
  Bytes last_read_bytes(int i) const { return last_read_bytes_[static_cast<size_t>(i)]; }
  TimeNs last_read_time(int i) const { return last_read_time_[static_cast<size_t>(i)]; }

  // The links a read from / a write to tier `i` crosses, in order; an
  // empty read path keeps take_load's price.
  void set_paths(int i, LinkPath read, LinkPath write);
  // Appends `read` and `write` hops to tier `i`'s paths (a cluster's shared
  // NIC and pool servers after the instance's own port).
  void add_hops(int i, const LinkPath& read, const LinkPath& write);
  bool has_paths() const { return has_paths_; }
  // Index of the tier of that name, or -1.
  int index_of(const std::string& name) const;
  // After take_load(): reads what it priced over each tier's read path, one
  // tier after another, and runs `done` when the last is across. False (and
  // `done` is not kept) when nothing was read.
  bool read_back(SharedLink::Done done);
  // Sends the blocks put into each tier since the last call over its write
  // path, in the background.
  void flush_writes();

  // Adds kv_tiers.* to the run's metrics; `query_tokens` are the prompt
  // tokens looked up at first admissions (prefix_hit_rate's denominator).
  void report(RunMetrics& m, int64_t query_tokens, int64_t prefix_hit_tokens) const;
  void check_conserved() const;

 private:
  struct Moved {
    int64_t hit_blocks = 0;        // loads
    int64_t hit_tokens_first = 0;  // loads at first admissions, in tokens
    Bytes bytes_read = 0;
    Bytes bytes_written = 0;
    int64_t puts = 0;  // blocks this chain put into the tier
  };
  // Puts `hash` into the first on_evict tier at index >= from, cascading
  // that tier's victims further down; `level` is the level it leaves (-1:
  // the device).
  void demote(const BlockHash& hash, int from, int level);
  void put(int tier, const BlockHash& hash, std::vector<BlockHash>& evicted);
  void read_from(int i, SharedLink::Done done);

  std::vector<std::shared_ptr<KvTier>> tiers_;
  bool layerwise_;
  int64_t block_size_;
  std::vector<Moved> moved_;
  std::vector<bool> shared_;
  std::vector<int64_t> pending_blocks_;  // loads of the current step, per tier
  std::vector<Bytes> last_read_bytes_;   // of the last take_load, per tier
  std::vector<TimeNs> last_read_time_;
  TimeNs load_time_ = 0;
  std::vector<LinkPath> read_paths_, write_paths_;
  std::vector<Bytes> unsent_bytes_;  // written since the last flush_writes, per tier
  bool has_paths_ = false;
  // Blocks leaving each level (device = index 0, tier i = i + 1) and where
  // they went: into a tier, already there, or dropped.
  std::vector<int64_t> left_, landed_, already_, dropped_;
  std::vector<BlockHash> scratch_;
};

}  // namespace kvsim
