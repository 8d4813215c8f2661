#include "sim/cache/tiers/tier_chain.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/cache/tiers/tier_metrics.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {

TierChain::TierChain(std::vector<std::shared_ptr<KvTier>> tiers, bool layerwise, int64_t block_size)
    : tiers_(std::move(tiers)), layerwise_(layerwise), block_size_(block_size) {
  for (const auto& t : tiers_)
    if (!t) throw std::invalid_argument("tier chain: a null tier");
  moved_.resize(tiers_.size());
  shared_.assign(tiers_.size(), false);
  pending_blocks_.assign(tiers_.size(), 0);
  last_read_bytes_.assign(tiers_.size(), 0);
  last_read_time_.assign(tiers_.size(), 0);
  read_paths_.resize(tiers_.size());
  write_paths_.resize(tiers_.size());
  unsent_bytes_.assign(tiers_.size(), 0);
  const size_t levels = tiers_.size() + 1;
  left_.assign(levels, 0);
  landed_.assign(levels, 0);
  already_.assign(levels, 0);
  dropped_.assign(levels, 0);
}

bool TierChain::share_tier(std::shared_ptr<KvTier> shared) {
  if (!shared) throw std::invalid_argument("tier chain: share of a null tier");
  for (size_t i = 0; i < tiers_.size(); ++i) {
    if (tiers_[i]->name() != shared->name()) continue;
    if (tiers_[i]->puts() != 0 || moved_[i].hit_blocks != 0)
      throw std::logic_error(fmt::format("tier {}: shared after the run began", shared->name()));
    if (tiers_[i]->block_bytes() != shared->block_bytes()) {
      throw std::invalid_argument(fmt::format("tier {}: blocks of {} bytes, the shared pool's {}",
                                              shared->name(), tiers_[i]->block_bytes(),
                                              shared->block_bytes()));
    }
    tiers_[i] = std::move(shared);
    shared_[i] = true;
    return true;
  }
  return false;
}

int64_t TierChain::puts_into(const KvTier& tier) const {
  int64_t n = 0;
  for (size_t i = 0; i < tiers_.size(); ++i)
    if (tiers_[i].get() == &tier) n += moved_[i].puts;
  return n;
}

void check_shared_tier_conserved(const KvTier& tier, const std::vector<const TierChain*>& chains) {
  tier.check_conserved();
  int64_t puts = 0;
  for (const TierChain* chain : chains)
    if (chain != nullptr) puts += chain->puts_into(tier);
  if (static_cast<uint64_t>(puts) != tier.puts()) {
    throw std::logic_error(fmt::format(
        "shared tier {}: its instances put {} blocks into it, it counts {} ({} held, {} evicted)",
        tier.name(), puts, tier.puts(), tier.blocks_held(), tier.evictions()));
  }
}

int TierChain::find(const BlockHash& hash) const {
  for (int i = 0; i < size(); ++i)
    if (tiers_[static_cast<size_t>(i)]->contains(hash)) return i;
  return -1;
}

void TierChain::put(int tier, const BlockHash& hash, std::vector<BlockHash>& evicted) {
  KvTier& t = *tiers_[static_cast<size_t>(tier)];
  t.put(hash, evicted);
  Moved& m = moved_[static_cast<size_t>(tier)];
  ++m.puts;
  // A tier smaller than one block (a 1-byte pool) holds nothing: the block
  // is dropped at once and nothing is written.
  if (t.capacity_blocks() > 0) {
    m.bytes_written += t.block_bytes();
    unsent_bytes_[static_cast<size_t>(tier)] += t.block_bytes();
  }
}

void TierChain::demote(const BlockHash& hash, int from, int level) {
  ++left_[static_cast<size_t>(level + 1)];
  int to = from;
  while (to < size() && tiers_[static_cast<size_t>(to)]->stores_on_compute()) ++to;
  if (to >= size()) {
    ++dropped_[static_cast<size_t>(level + 1)];
    return;
  }
  KvTier& t = *tiers_[static_cast<size_t>(to)];
  if (t.contains(hash)) {
    ++already_[static_cast<size_t>(level + 1)];
    return;
  }
  ++landed_[static_cast<size_t>(level + 1)];
  std::vector<BlockHash> evicted;
  put(to, hash, evicted);
  for (const BlockHash& v : evicted) demote(v, to + 1, to);
}

void TierChain::on_block_evicted(const BlockHash& hash) {
  demote(hash, 0, -1);
}

void TierChain::on_computed(const BlockHash& hash) {
  for (int i = 0; i < size(); ++i) {
    KvTier& t = *tiers_[static_cast<size_t>(i)];
    if (!t.stores_on_compute() || t.contains(hash)) continue;
    scratch_.clear();
    put(i, hash, scratch_);
    // A write-through tier's victims are copies of blocks computed earlier:
    // they leave it and go to the next on_evict tier below, if any.
    if (scratch_.empty()) continue;
    const std::vector<BlockHash> evicted = scratch_;
    for (const BlockHash& v : evicted) demote(v, i + 1, i);
  }
}

void TierChain::load(const BlockHash& hash, int tier, bool first_admission) {
  KvTier& t = *tiers_.at(static_cast<size_t>(tier));
  if (!t.touch(hash))
    throw std::logic_error(fmt::format("tier {}: load of a block it does not hold", t.name()));
  Moved& m = moved_[static_cast<size_t>(tier)];
  ++m.hit_blocks;
  if (first_admission) m.hit_tokens_first += block_size_;
  m.bytes_read += t.block_bytes();
  ++pending_blocks_[static_cast<size_t>(tier)];
}

TierLoad TierChain::take_load() {
  TierLoad load;
  load.layerwise = layerwise_;
  // One transfer per tier per step; tiers are read one after another (their
  // blocks cross the same host link into the device).
  for (int i = 0; i < size(); ++i) {
    const auto at = static_cast<size_t>(i);
    int64_t& blocks = pending_blocks_[at];
    last_read_time_[at] = tiers_[at]->read_time(blocks);
    last_read_bytes_[at] = blocks * tiers_[at]->block_bytes();
    load.time += last_read_time_[at];
    blocks = 0;
  }
  load_time_ += load.time;
  return load;
}

void TierChain::set_paths(int i, LinkPath read, LinkPath write) {
  read_paths_.at(static_cast<size_t>(i)) = std::move(read);
  write_paths_.at(static_cast<size_t>(i)) = std::move(write);
  has_paths_ = true;
}

void TierChain::add_hops(int i, const LinkPath& read, const LinkPath& write) {
  LinkPath& r = read_paths_.at(static_cast<size_t>(i));
  LinkPath& w = write_paths_.at(static_cast<size_t>(i));
  r.insert(r.end(), read.begin(), read.end());
  w.insert(w.end(), write.begin(), write.end());
  has_paths_ = true;
}

int TierChain::index_of(const std::string& name) const {
  for (int i = 0; i < size(); ++i)
    if (tiers_[static_cast<size_t>(i)]->name() == name) return i;
  return -1;
}

bool TierChain::read_back(SharedLink::Done done) {
  bool any = false;
  for (size_t i = 0; i < tiers_.size(); ++i)
    if (last_read_bytes_[i] > 0 && !read_paths_[i].empty()) any = true;
  if (!any) return false;
  read_from(0, std::move(done));
  return true;
}

// One tier after the other, as take_load sums them: their blocks cross the
// same host link into the device.
void TierChain::read_from(int i, SharedLink::Done done) {
  for (; i < size(); ++i) {
    const auto at = static_cast<size_t>(i);
    if (last_read_bytes_[at] <= 0 || read_paths_[at].empty()) continue;
    transfer_over(
        read_paths_[at], last_read_bytes_[at],
        [this, i, done = std::move(done)]() mutable { read_from(i + 1, std::move(done)); });
    return;
  }
  done();
}

void TierChain::flush_writes() {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    Bytes& bytes = unsent_bytes_[i];
    if (bytes > 0 && !write_paths_[i].empty()) transfer_over(write_paths_[i], bytes, {});
    bytes = 0;
  }
}

void TierChain::check_conserved() const {
  for (size_t level = 0; level < left_.size(); ++level) {
    if (left_[level] != landed_[level] + already_[level] + dropped_[level]) {
      throw std::logic_error(fmt::format(
          "tiers: {} blocks left {} but {} landed below, {} were there already, {} dropped",
          left_[level], level == 0 ? std::string("the device") : tiers_[level - 1]->name(),
          landed_[level], already_[level], dropped_[level]));
    }
  }
  for (size_t i = 0; i < tiers_.size(); ++i) {
    // A shared tier is balanced once, by whoever shares it
    // (check_shared_tier_conserved), not once per chain: its check walks
    // every block it holds.
    if (!shared_[i]) tiers_[i]->check_conserved();
    // A tier only this chain uses holds what this chain put minus its evictions.
    if (tiers_[i].use_count() == 1 && static_cast<uint64_t>(moved_[i].puts) != tiers_[i]->puts()) {
      throw std::logic_error(fmt::format("tier {}: {} puts counted by the instance, {} by the tier",
                                         tiers_[i]->name(), moved_[i].puts, tiers_[i]->puts()));
    }
  }
  for (int64_t p : pending_blocks_)
    if (p != 0) throw std::logic_error("tiers: loads that no step priced");
}

void TierChain::report(RunMetrics& m, int64_t query_tokens, int64_t prefix_hit_tokens) const {
  auto rate = [&](int64_t tokens) {
    return query_tokens > 0 ? static_cast<double>(tokens) / static_cast<double>(query_tokens) : 0.0;
  };
  KvTiersMetrics& tiers = m.part<KvTiersMetrics>();
  int64_t lower = 0;
  for (size_t i = 0; i < tiers_.size(); ++i) {
    KvTierMetrics* out = tiers.tier(tiers_[i]->name());
    if (!out) throw std::logic_error(fmt::format("no metrics for tier {}", tiers_[i]->name()));
    const Moved& mv = moved_[i];
    out->hit_rate = rate(mv.hit_tokens_first);
    out->hit_tokens = mv.hit_tokens_first;
    out->bytes_read = mv.bytes_read;
    out->bytes_written = mv.bytes_written;
    out->evictions = tiers_[i]->evictions();
    out->blocks_held = tiers_[i]->blocks_held();
    lower += mv.hit_tokens_first;
  }
  tiers.device_hit_rate = rate(prefix_hit_tokens - lower);
  tiers.load_time_s = static_cast<double>(load_time_) / 1e9;
}

}  // namespace kvsim
