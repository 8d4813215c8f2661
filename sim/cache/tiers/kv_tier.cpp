#include "sim/cache/tiers/kv_tier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/cache/eviction/eviction_registry.hpp"

namespace kvsim {

const std::vector<std::string>& kv_tier_names() {
  static const std::vector<std::string> names = {"dram", "ssd", "global"};
  return names;
}

std::vector<config::ParamSpec> tier_store_cost_params() {
  using namespace config;
  return {choice_param("write_mode", std::string(kWriteBackground),
                       {kWriteBackground, kWriteAsync, kWriteSync},
                       "background: stores cross the links while the device works and hold "
                       "nothing; async: a stored block stays pinned on device until its store "
                       "lands, staging_buffer bounds the bytes in flight (a step waits for room); "
                       "sync: the step waits for its stores"),
          bytes_param("staging_buffer", 0, 0, 1LL << 50,
                      "async: bytes of stores in flight at once (the connector's host buffer); "
                      "0: no bound; else at least one block"),
          duration_param("lookup_latency", 0, 0, 1000LL * 1000 * 1000,
                         "metadata round trip per admitted request whose prefix lookup reaches "
                         "this tier (added to its step before the compute)"),
          duration_param("lookup_block_latency", 0, 0, 1000LL * 1000 * 1000,
                         "added per block looked up in this tier (a store keyed per block)")};
}

void read_tier_store_cost(const config::ParamValues& values, KvTierParams& out) {
  out.write_mode = values.string("write_mode");
  out.staging_buffer = values.integer("staging_buffer");
  out.lookup_latency = values.integer("lookup_latency");
  out.lookup_block_latency = values.integer("lookup_block_latency");
}

config::ComponentInfo kv_tier_info() {
  using namespace config;
  config::ComponentInfo info{
      "kv tier",
      "tier",
      "a store of evicted or computed KV blocks below device HBM, per instance (all ranks); "
      "`global` is the pool instances share over the network (Mooncake Store)",
      {choice_param("name", std::nullopt, kv_tier_names(),
                    "which tier: host DRAM, SSD, or the global pool (fastest first)"),
       bytes_param("capacity", std::nullopt, 0, 1LL << 60, "blocks this tier can hold, in bytes"),
       bandwidth_param("read_bandwidth", std::nullopt, 1, 1LL << 50,
                       "tier -> device, for a hit loaded back"),
       bandwidth_param("write_bandwidth", std::nullopt, 1, 1LL << 50,
                       "device -> tier, for a block stored (write_mode says what it costs)"),
       duration_param("latency", 0, 0, 1000LL * 1000 * 1000, "fixed cost of one transfer"),
       choice_param("eviction", std::string(kDefaultEvictionOrder), eviction_order_names(),
                    "which block the tier drops first when full"),
       choice_param("store", std::string(kStoreOnEvict),
                    {kStoreOnEvict, kStoreOnCompute, kStoreOnComputePrompt},
                    "on_evict: blocks the level above evicts; on_compute: every block once "
                    "computed (Mooncake Store's put); on_compute_prompt: a prompt's blocks "
                    "once computed, no generated one"),
       bool_param("via_host", false,
                  "true: its blocks move through host DRAM, store and forward: a read crosses "
                  "the tier's link into a host buffer, then the host link into the device (the "
                  "dram tier's, else the device file's host_link_*); a store the other way "
                  "(vLLM's secondary tiers, LMCache's disk and remote backends)")}};
  for (config::ParamSpec& p : tier_store_cost_params()) info.params.push_back(std::move(p));
  return info;
}

KvTier::KvTier(const KvTierParams& params, Bytes block_bytes)
    : params_(params),
      block_bytes_(block_bytes),
      order_(make_eviction_order(params.eviction)),
      on_compute_(params.store == kStoreOnCompute || params.store == kStoreOnComputePrompt),
      prompt_only_(params.store == kStoreOnComputePrompt),
      background_(params.write_mode == kWriteBackground) {
  if (block_bytes <= 0) throw std::invalid_argument("kv tier: block bytes must be positive");
  if (params.read_bandwidth <= 0 || params.write_bandwidth <= 0)
    throw std::invalid_argument(fmt::format("kv tier {}: bandwidth must be positive", name()));
  capacity_blocks_ = params.capacity / block_bytes;
}

bool KvTier::touch(const BlockHash& hash) {
  const EvictableId id = find_id(hash);
  if (id == BlockHashTable::kAbsent) return false;
  order_->on_access(id);
  return true;
}

void KvTier::put(const BlockHash& hash, std::vector<BlockHash>& evicted) {
  if (contains(hash))
    throw std::logic_error(fmt::format("kv tier {}: put of a block held", name()));
  if (puts_ == 0) {
    // A tier in use fills up over a run: its index is sized for its
    // capacity at the first put (up to a bound, so a huge tier of small
    // blocks does not reserve memory it may never use) rather than rehashed
    // as it grows. A tier never used (replaced by a shared one) reserves
    // nothing.
    index_.reserve(static_cast<size_t>(std::min<int64_t>(capacity_blocks_, 1 << 20)));
  }
  ++puts_;
  if (capacity_blocks_ == 0) {
    ++evictions_;
    evicted.push_back(hash);
    return;
  }
  const auto hash_of = [this](EvictableId v) { return hash_of_[static_cast<size_t>(v)]; };
  while (blocks_held() >= capacity_blocks_) {
    const EvictableId victim = order_->pop_victim();
    const BlockHash gone = hash_of_[static_cast<size_t>(victim)];
    evicted.push_back(gone);
    index_.erase(gone, victim, hash_of);
    free_ids_.push_back(victim);
    ++evictions_;
  }
  EvictableId id;
  if (free_ids_.empty()) {
    id = static_cast<EvictableId>(hash_of_.size());
    hash_of_.push_back(hash);
  } else {
    id = free_ids_.back();
    free_ids_.pop_back();
    hash_of_[static_cast<size_t>(id)] = hash;
  }
  if (!index_.insert(hash, id, hash_of))
    throw std::logic_error(fmt::format("kv tier {}: put of a block held", name()));
  order_->on_content(id, hash.low);
  order_->on_evictable(id);
}

namespace {
TimeNs transfer_time(TimeNs latency, Bytes bytes, int64_t bandwidth) {
  return latency + static_cast<TimeNs>(std::ceil(static_cast<double>(bytes) * 1e9 /
                                                 static_cast<double>(bandwidth)));
}
}  // namespace

TimeNs KvTier::read_time(int64_t blocks) const {
  return blocks > 0 ? transfer_time(params_.latency, blocks * block_bytes_, params_.read_bandwidth)
                    : 0;
}

TimeNs KvTier::write_time(int64_t blocks) const {
  return blocks > 0 ? transfer_time(params_.latency, blocks * block_bytes_, params_.write_bandwidth)
                    : 0;
}

void KvTier::check_conserved() const {
  const auto ordered = static_cast<int64_t>(order_->victims_in_order().size());
  const int64_t held = blocks_held();
  if (held != static_cast<int64_t>(puts_ - evictions_) || ordered != held ||
      held > capacity_blocks_ ||
      static_cast<int64_t>(hash_of_.size()) != held + static_cast<int64_t>(free_ids_.size())) {
    throw std::logic_error(fmt::format(
        "kv tier {}: {} blocks held but {} put - {} evicted, {} in the {} order, capacity {}",
        name(), held, puts_, evictions_, ordered, order_->name(), capacity_blocks_));
  }
}

}  // namespace kvsim
