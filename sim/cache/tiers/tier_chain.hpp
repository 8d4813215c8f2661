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
// A tier's write_mode says what its stores cost (kv_tier.hpp): in the
// background they cross the tier's write path while the device works,
// taking their share of the links the step's reads and other instances
// use, and hold nothing; async ones pin their device block until they land
// and wait for room in the tier's staging buffer; sync ones (and, under
// async, a block the device evicted, which the next step overwrites) hold
// the next step until they land (flush_writes). Every block that leaves a
// level is accounted for (landed in a tier, found there already, or
// dropped); check_conserved() holds that and each tier's own balance, and
// the engine fails the run otherwise.
#include <algorithm>
#include <deque>
#include <functional>
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
  // Metadata round trips of the step's admissions (lookup_latency), spent
  // by the scheduler before the step is launched; not in step_latency().
  TimeNs lookup = 0;
  // The step's latency once the load is added.
  TimeNs step_latency(TimeNs compute) const {
    return layerwise ? std::max(compute, time) : compute + time;
  }
};

class TierChain;

// Holds a device block while a store of it is in flight (the paged pool's
// reference): a pinned block is neither free nor evictable.
class StorePins {
 public:
  virtual ~StorePins() = default;
  virtual void pin(BlockId block) = 0;
  virtual void unpin(BlockId block) = 0;
};

// A tier several chains share (a cluster's global pool) holds what all of
// them put minus its evictions: throws std::logic_error unless the tier's
// own balance holds and its puts are exactly the sum of every chain's, so a
// block put by no listed chain, or counted by two, fails the run.
void check_shared_tier_conserved(const KvTier& tier, const std::vector<const TierChain*>& chains);

class TierChain final : public BlockEvictionListener {
 public:
  // `tiers` fastest first; any of them may be shared with other chains.
  // `async_loads`: hits are read before the request's prefill while other
  // requests run (kv_tiers.load_overlap: async), not on a step's path.
  TierChain(std::vector<std::shared_ptr<KvTier>> tiers, bool layerwise, int64_t block_size,
            bool async_loads = false);

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
  // A block computed on device (`block`, kNoBlock when unknown), of the
  // prompt alone or not: put into every tier that stores on compute.
  void on_computed(const BlockHash& hash, BlockId block = kNoBlock, bool prompt = true);
  // Who pins a block while an async store of it runs, and what to call when
  // a landed store unpinned blocks (the engine may admit work again).
  void set_pins(StorePins* pins) { pins_ = pins; }
  void set_unpinned(std::function<void()> unpinned) { unpinned_ = std::move(unpinned); }
  int64_t pinned_blocks() const { return pinned_total_; }
  // An admitted request's prefix lookup went past the device's blocks,
  // looking `blocks` blocks up in the tiers: each tier's lookup_latency,
  // and lookup_block_latency per block, go on the step (take_load().lookup).
  void note_lookup(int64_t blocks);
  // Time a step waited for stores (flush_writes' `ready`), for the report.
  void note_store_wait(TimeNs waited) { store_wait_ += waited; }
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

  // Async loads (async_loads()): the admission's loads leave the step.
  // take_request_load() returns the blocks loaded since the last call, per
  // tier, and clears them (take_load() then prices none of them);
  // read_async() reads `blocks[i]` blocks of each tier i over its read
  // path, one tier after the other, and runs `done` once the last is
  // across; false (`done` not kept, nothing to wait for) when no path
  // prices any of them.
  bool async_loads() const { return async_loads_; }
  std::vector<int64_t> take_request_load();
  bool read_async(std::vector<int64_t> blocks, SharedLink::Done done);

  // The links a read from / a write to tier `i` crosses, in order; an
  // empty read path keeps take_load's price.
  void set_paths(int i, LinkPath read, LinkPath write);
  // A tier reached through host DRAM (KvTierParams::via_host): its reads,
  // once across its path into the host buffer, cross `read` (the host
  // link) into the device; its stores from the device cross `write` first,
  // then its path. Store and forward: one hop after the other, as LMCache's
  // disk backend reads a chunk into a LocalCPUBackend buffer before it goes
  // to the GPU (LMCache docs/source/kv_cache/storage_backends/
  // local_storage.rst at 04b44655, Load Flow) and vLLM promotes a secondary
  // tier's blocks to its CPU tier first (docs/features/kv_offloading_usage.md
  // at 97180969: "all GPU<->secondary transfers are staged through the CPU
  // primary tier"). A block a tier passes down stays off the host link.
  void set_host_hops(int i, LinkPath read, LinkPath write);
  // Appends `read` and `write` hops to tier `i`'s paths (a cluster's shared
  // NIC and pool servers after the instance's own port). With set_ranks(T),
  // T > 1, every movement crosses these hops as T flows, one per rank
  // (link_path.hpp's RankSplit): the ranks of one node share its NIC.
  void add_hops(int i, const LinkPath& read, const LinkPath& write);
  void set_ranks(int64_t ranks) { ranks_ = std::max<int64_t>(ranks, 1); }
  int64_t ranks() const { return ranks_; }
  bool has_paths() const { return has_paths_; }
  // Index of the tier of that name, or -1.
  int index_of(const std::string& name) const;
  // After take_load(): reads what it priced over each tier's read path, one
  // tier after another, and runs `done` when the last is across. False (and
  // `done` is not kept) when nothing was read.
  bool read_back(SharedLink::Done done);
  // Sends the blocks put into each tier since the last call over its write
  // path (with `background` false, only the stores that hold the device:
  // an idle engine's). True when the caller must wait: `ready` runs once
  // every store the step waits for has landed and every async one has its
  // room in the staging buffer; false (and `ready` is not kept) otherwise.
  bool flush_writes(SharedLink::Done ready = {}, bool background = true);
  // Called before a step is scheduled: what was computed so far may go out
  // at its flush. Blocks put while it is scheduled are the ones it computes
  // (vLLM V1 caches a block when it allocates it, before the forward):
  // their async and sync stores wait for the next step's flush. A block the
  // device evicts while the step is scheduled goes at its flush: the step
  // overwrites it. Background stores go at the flush after their put.
  void seal_writes();

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
  // What a write costs the step (kv_tier.hpp's write_mode).
  enum class WriteKind : uint8_t { background, held, pinned };
  void demote(const BlockHash& hash, int from, int level);
  // `fresh`: a block computed by the step being scheduled (seal_writes).
  // `from_device`: the block leaves the device (a via_host tier's store
  // crosses the host link first).
  void put(int tier, const BlockHash& hash, std::vector<BlockHash>& evicted,
           WriteKind kind = WriteKind::background, BlockId block = kNoBlock, bool fresh = false,
           bool from_device = true);
  void read_from(int i, SharedLink::Done done);
  void read_async_from(int i, std::vector<int64_t> blocks, SharedLink::Done done);
  // `bytes` of tier `i` over its read path then its host hop (`read`), or
  // over its host hop then its write path; `host` false: the write path
  // alone (a block a tier passes down). An empty hop list leaves the other
  // alone; an empty `done` leaves the last hop in the background. The
  // paths are the chain's own, which outlive the transfer.
  void send(int i, bool read, Bytes bytes, SharedLink::Done done, bool host = true) const;
  RankSplit split_of(int i) const { return {shared_from_[static_cast<size_t>(i)], ranks_}; }
  // Sends what of tier `i`'s queue of pinned blocks fits its staging buffer.
  void stage(int i);
  void unpin(int i, BlockId block);
  void maybe_ready();

  std::vector<std::shared_ptr<KvTier>> tiers_;
  bool layerwise_;
  int64_t block_size_;
  bool async_loads_;
  std::vector<Moved> moved_;
  std::vector<bool> shared_;
  std::vector<int64_t> pending_blocks_;  // loads of the current step, per tier
  std::vector<Bytes> last_read_bytes_;   // of the last take_load, per tier
  std::vector<TimeNs> last_read_time_;
  TimeNs load_time_ = 0;
  std::vector<LinkPath> read_paths_, write_paths_;
  std::vector<LinkPath> host_read_, host_write_;  // via_host tiers' host link
  // Per tier: where add_hops' shared hops begin in both paths (none: max).
  std::vector<size_t> shared_from_;
  int64_t ranks_ = 1;
  std::vector<Bytes> unsent_host_bytes_;            // background stores from the device, via host
  std::vector<Bytes> unsent_bytes_;                 // written since the last flush_writes, per tier
  std::vector<Bytes> held_bytes_;                   // ... that the next step waits for, per tier
  std::vector<std::deque<BlockId>> staging_queue_;  // pinned, not sent yet, per tier
  // Stores of blocks computed by the step being scheduled (seal_writes).
  std::vector<Bytes> fresh_held_bytes_;
  std::vector<std::vector<BlockId>> fresh_pinned_;
  int64_t fresh_total_ = 0;
  std::vector<Bytes> staged_;                  // sent and not landed, per tier
  std::vector<int64_t> pinned_, pinned_peak_;  // per tier
  int64_t pinned_total_ = 0;
  int64_t queued_total_ = 0;    // blocks in the staging queues
  int64_t held_in_flight_ = 0;  // transfers of held bytes not landed
  SharedLink::Done ready_;
  StorePins* pins_ = nullptr;
  std::function<void()> unpinned_;
  TimeNs lookup_pending_ = 0, lookup_time_ = 0, store_wait_ = 0;
  bool has_paths_ = false;
  // Blocks leaving each level (device = index 0, tier i = i + 1) and where
  // they went: into a tier, already there, or dropped.
  std::vector<int64_t> left_, landed_, already_, dropped_;
  std::vector<BlockHash> scratch_;
};

}  // namespace kvsim
