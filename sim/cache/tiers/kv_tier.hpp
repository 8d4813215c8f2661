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
#include <unordered_map>
#include <vector>

#include "base/params.hpp"
#include "base/units.hpp"
#include "sim/cache/block_hash.hpp"
#include "sim/cache/eviction/eviction_order.hpp"

namespace kvsim {

// Where a tier takes its blocks from: the blocks the level above evicts
// (a victim cache, vLLM's CPU offload and LMCache's local tiers), or every
// block as soon as it is computed (Mooncake Store's put after prefill).
inline constexpr const char* kStoreOnEvict = "on_evict";
inline constexpr const char* kStoreOnCompute = "on_compute";

struct KvTierParams {
  std::string name;  // dram | ssd | global (kv_tier_names())
  Bytes capacity = 0;
  int64_t read_bandwidth = 0;   // bytes per second, tier -> device
  int64_t write_bandwidth = 0;  // bytes per second, device -> tier
  TimeNs latency = 0;           // per transfer
  std::string eviction = "lru";
  std::string store = kStoreOnEvict;
};

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
  bool stores_on_compute() const { return params_.store == kStoreOnCompute; }

  bool contains(const BlockHash& hash) const { return index_.count(hash) > 0; }
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
  std::vector<BlockHash> hash_of_;  // by EvictableId
  std::vector<EvictableId> free_ids_;
  std::unordered_map<BlockHash, EvictableId, BlockHashHasher> index_;
  uint64_t puts_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace kvsim
