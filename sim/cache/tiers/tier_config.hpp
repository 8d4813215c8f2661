#pragma once
// The `kv_tiers:` section of a scenario: the tiers of KV blocks below device
// HBM (SPEC 6's paged pool, extended as LMCache / Mooncake Store / UCM
// offload), fastest first, and whether reading them back overlaps compute.
//
//   kv_tiers:
//     load_overlap: none          # none | layerwise | async
//     max_load_tokens_per_step: 4096   # async only; absent: no cap
//     tiers:
//       - {name: dram, capacity: 256GiB, read_bandwidth: 25GB/s, write_bandwidth: 25GB/s,
//          latency: 10us, eviction: lru}
//       - {name: global, capacity: 4TB, read_bandwidth: 12GB/s, write_bandwidth: 12GB/s,
//          latency: 50us, store: on_compute}
//
// Absent or with no tiers, nothing changes: the device pool alone, as before.
#include <memory>
#include <string>
#include <vector>

#include "base/params.hpp"
#include "base/reader.hpp"
#include "sim/cache/tiers/kv_tier.hpp"
#include "sim/cache/tiers/tier_chain.hpp"

namespace kvsim {

struct KvTiersConfig {
  std::string load_overlap = "none";
  int64_t max_load_tokens_per_step = 0;  // async loads; 0: not given (no cap)
  std::vector<KvTierParams> tiers;       // fastest first, each name at most once
  bool empty() const { return tiers.empty(); }
};

// Kind "kv tiers": the section's own keys (load_overlap,
// max_load_tokens_per_step, tiers).
config::ComponentInfo kv_tiers_section_info();

// Reads `kv_tiers:` of `top` into `out`. Errors (at their line): a tier name
// twice or out of order (dram, ssd, global). Whether the policy keeps
// blocks tiers can take is the scenario's cross-check.
void read_kv_tiers_section(config::MapReader& top, KvTiersConfig& out);

// What block bytes decide of a tier's store keys, as errors at each tier's
// key: a staging buffer below one block (`block_bytes`, all ranks), or one
// given to a tier whose stores are not async.
std::string tier_staging_problem(const KvTierParams& t, Bytes block_bytes, std::string& allowed);
void check_tier_store_costs(const std::vector<KvTierParams>& tiers, Bytes block_bytes,
                            config::LoadContext& ctx);

// The chain of one instance: a tier per entry, each block `block_bytes`
// (all ranks). `global_pool`, when given, replaces the `global` entry (the
// pool a cluster shares among its instances); a chain without a `global`
// entry ignores it.
std::unique_ptr<TierChain> make_tier_chain(const KvTiersConfig& config, Bytes block_bytes,
                                           int64_t block_size,
                                           std::shared_ptr<KvTier> global_pool = nullptr);

}  // namespace kvsim
