#pragma once
// One store of KV blocks below device HBM (host DRAM, SSD, or a global pool
// reached over the network, as LMCache, Mooncake Store and UCM keep them):
// blocks keyed by content hash (the chained block hash the paged pool uses),
// a capacity, read and write bandwidth and a latency, and its own eviction
// order (sim/cache/eviction/). Metadata only: which content it holds.
//
// Figures are per serving instance, all tensor-parallel ranks together: a
// block is the paged block's bytes times tp. A tier may be shared by several
// instances (the global pool): it knows no instance, so a block one puts is
// found by any other through the same hash.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/params.hpp"
#include "base/units.hpp"
#include "sim/cache/block_hash.hpp"
#include "sim/cache/block_hash_table.hpp"
#include "sim/cache/eviction/eviction_order.hpp"

namespace kvsim {

// Where a tier takes its blocks from: the blocks the level above evicts
// (a victim cache, vLLM's CPU offload and LMCache's local tiers), or every
// block as soon as it is computed (Mooncake Store's put after prefill).
inline constexpr const char* kStoreOnEvict = "on_evict";
inline constexpr const char* kStoreOnCompute = "on_compute";
// Every block of a prompt once computed, none of the generated ones: a
// selective write-through that keeps what requests send (the prefixes a
// later request can share) and not what they generate. Not SGLang HiCache's
// write_through_selective, which writes a node once it has been hit twice
// (hiradix_cache.py's write_through_threshold).
inline constexpr const char* kStoreOnComputePrompt = "on_compute_prompt";

// What a store costs the engine (write_mode):
// - background: it crosses the tier's links while the device works and
//   holds nothing (kvsim's first model: the bound of what offloading buys);
// - async: the device block stays pinned until its store has landed, as
//   vLLM's connectors delay freeing a finished request's blocks while an
//   asynchronous save runs (KVConnectorBase_V1.request_finished returns
//   delay_free: "blocks should not be freed until ... get_finished()",
//   vllm/distributed/kv_transfer/kv_connector/v1/offloading_connector.py);
//   `staging_buffer` bounds the bytes of stores in flight, and a step whose
//   blocks do not fit waits for room (back-pressure);
// - sync: the step waits for its stores, as a connector's wait_for_save()
//   blocks "until all the save operations is done" before the forward
//   context exits (vLLM's KVConnectorBase_V1, LMCache's default save path).
// A block the device evicts is overwritten by the step that took it, so its
// store is on that step's path under async and sync alike.
inline constexpr const char* kWriteBackground = "background";
inline constexpr const char* kWriteAsync = "async";
inline constexpr const char* kWriteSync = "sync";

struct KvTierParams {
  std::string name;  // dram | ssd | global (kv_tier_names())
  Bytes capacity = 0;
  int64_t read_bandwidth = 0;   // bytes per second, tier -> device
  int64_t write_bandwidth = 0;  // bytes per second, device -> tier
  TimeNs latency = 0;           // per transfer
  std::string eviction = "lru";
  std::string store = kStoreOnEvict;
  std::string write_mode = kWriteBackground;
  Bytes staging_buffer = 0;  // async: bytes of stores in flight at once; 0: no bound
  // A metadata round trip per admitted request whose prefix lookup reaches
  // this tier, and per block it looks up there (a store keyed per block).
  TimeNs lookup_latency = 0;
  TimeNs lookup_block_latency = 0;
  // The tier has no path to device memory of its own: its blocks move
  // through host DRAM, store and forward (kv_tier_info's via_host).
  bool via_host = false;
  std::string key_path;  // where the scenario gives this tier (errors found later)
};

// The keys of what a tier's stores and lookups cost (write_mode,
// staging_buffer, lookup_latency, lookup_block_latency), which `kv_tiers`
// items and `cluster.global_pool` both declare, and their reading.
std::vector<config::ParamSpec> tier_store_cost_params();
void read_tier_store_cost(const config::ParamValues& values, KvTierParams& out);

// The tier names, fastest first: a scenario lists at most one of each, in
// this order, and metrics.json has a kv_tiers.<name> object for each.
const std::vector<std::string>& kv_tier_names();
// Kind "kv tier": the keys of one item of `kv_tiers.tiers`.
config::ComponentInfo kv_tier_info();

class KvTier {
 public:
  // `block_bytes`: bytes of one block (all ranks).
  KvTier(const KvTierParams& params, Bytes block_bytes);

  const KvTierParams& params() const { return params_; }
  const std::string& name() const { return params_.name; }
  Bytes block_bytes() const { return block_bytes_; }
  int64_t capacity_blocks() const { return capacity_blocks_; }
  int64_t blocks_held() const { return static_cast<int64_t>(index_.size()); }
  // Takes blocks as they are computed (all of them, or the prompt's only).
  bool stores_on_compute() const { return on_compute_; }
  bool stores_prompt_only() const { return prompt_only_; }
  // write_mode is background (stores hold nothing on device).
  bool writes_in_background() const { return background_; }

  bool contains(const BlockHash& hash) const { return find_id(hash) != BlockHashTable::kAbsent; }
  // A hit read back to a device: the order sees an access. False when absent.
  bool touch(const BlockHash& hash);
  // Puts a block that is absent, evicting the order's victims first when
  // full; their hashes are appended to `evicted`. A tier of capacity 0
  // keeps nothing (the block itself is "evicted").
  void put(const BlockHash& hash, std::vector<BlockHash>& evicted);

  // Time to move `blocks` blocks in one transfer: latency + bytes / bandwidth.
  TimeNs read_time(int64_t blocks) const;
  TimeNs write_time(int64_t blocks) const;

  uint64_t puts() const { return puts_; }
  uint64_t evictions() const { return evictions_; }
  // Throws std::logic_error unless held == puts - evictions, the order holds
  // exactly the held blocks and held <= capacity.
  void check_conserved() const;

 private:
  KvTierParams params_;
  Bytes block_bytes_;
  int64_t capacity_blocks_;
  std::unique_ptr<EvictionOrder> order_;
  // The tier's store and write_mode, read once: every computed and every
  // evicted block asks them.
  bool on_compute_, prompt_only_, background_;
  std::vector<BlockHash> hash_of_;  // by EvictableId
  std::vector<EvictableId> free_ids_;
  // Hash -> EvictableId in one flat table (block_hash_table.hpp): every
  // block the device computes or evicts, and every prefix lookup past the
  // device, probes each tier, and a node-based map cost two cache misses
  // per probe in a pool of a million blocks (bench_cluster's global pool).
  BlockHashTable index_;
  EvictableId find_id(const BlockHash& hash) const {
    return index_.find(hash, [this](EvictableId id) { return hash_of_[static_cast<size_t>(id)]; });
  }
  uint64_t puts_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace kvsim
