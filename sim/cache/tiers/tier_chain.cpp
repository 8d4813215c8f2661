#include "sim/cache/tiers/tier_chain.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/cache/tiers/tier_metrics.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {

TierChain::TierChain(std::vector<std::shared_ptr<KvTier>> tiers, bool layerwise, int64_t block_size,
                     bool async_loads)
    : tiers_(std::move(tiers)),
      layerwise_(layerwise),
      block_size_(block_size),
      async_loads_(async_loads) {
  for (const auto& t : tiers_)
    if (!t) throw std::invalid_argument("tier chain: a null tier");
  moved_.resize(tiers_.size());
  shared_.assign(tiers_.size(), false);
  pending_blocks_.assign(tiers_.size(), 0);
  last_read_bytes_.assign(tiers_.size(), 0);
  last_read_time_.assign(tiers_.size(), 0);
  read_paths_.resize(tiers_.size());
  write_paths_.resize(tiers_.size());
  host_read_.resize(tiers_.size());
  host_write_.resize(tiers_.size());
  shared_from_.assign(tiers_.size(), RankSplit{}.shared_from);
  unsent_host_bytes_.assign(tiers_.size(), 0);
  unsent_bytes_.assign(tiers_.size(), 0);
  held_bytes_.assign(tiers_.size(), 0);
  fresh_held_bytes_.assign(tiers_.size(), 0);
  fresh_pinned_.resize(tiers_.size());
  staging_queue_.resize(tiers_.size());
  staged_.assign(tiers_.size(), 0);
  pinned_.assign(tiers_.size(), 0);
  pinned_peak_.assign(tiers_.size(), 0);
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

void TierChain::put(int tier, const BlockHash& hash, std::vector<BlockHash>& evicted,
                    WriteKind kind, BlockId block, bool fresh, bool from_device) {
  const auto at = static_cast<size_t>(tier);
  KvTier& t = *tiers_[at];
  t.put(hash, evicted);
  Moved& m = moved_[at];
  ++m.puts;
  // A tier smaller than one block (a 1-byte pool) holds nothing: the block
  // is dropped at once and nothing is written.
  if (t.capacity_blocks() <= 0) return;
  m.bytes_written += t.block_bytes();
  switch (kind) {
    case WriteKind::background:
      (from_device ? unsent_host_bytes_ : unsent_bytes_)[at] += t.block_bytes();
      break;
    case WriteKind::held:
      (fresh ? fresh_held_bytes_ : held_bytes_)[at] += t.block_bytes();
      fresh_total_ += fresh ? 1 : 0;
      break;
    case WriteKind::pinned:
      if (block != kNoBlock && pins_ != nullptr) pins_->pin(block);
      ++pinned_total_;
      pinned_peak_[at] = std::max(pinned_peak_[at], ++pinned_[at]);
      if (fresh) {
        fresh_pinned_[at].push_back(block);
        ++fresh_total_;
      } else {
        staging_queue_[at].push_back(block);
        ++queued_total_;
      }
      break;
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
  // A block the device evicted is overwritten by the step that took it:
  // unless stores are free, that step waits for its copy to land. What a
  // tier passes down costs no device time.
  const bool from_device = level < 0 && !t.writes_in_background();
  put(to, hash, evicted, from_device ? WriteKind::held : WriteKind::background, kNoBlock, false,
      level < 0);
  for (const BlockHash& v : evicted) demote(v, to + 1, to);
}

void TierChain::on_block_evicted(const BlockHash& hash) {
  demote(hash, 0, -1);
}

void TierChain::on_computed(const BlockHash& hash, BlockId block, bool prompt) {
  for (int i = 0; i < size(); ++i) {
    KvTier& t = *tiers_[static_cast<size_t>(i)];
    if (!t.stores_on_compute() || (t.stores_prompt_only() && !prompt) || t.contains(hash)) continue;
    const WriteKind kind = t.writes_in_background()               ? WriteKind::background
                           : t.params().write_mode == kWriteAsync ? WriteKind::pinned
                                                                  : WriteKind::held;
    scratch_.clear();
    put(i, hash, scratch_, kind, block, true);
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

void TierChain::note_lookup(int64_t blocks) {
  for (const auto& t : tiers_) {
    const KvTierParams& p = t->params();
    lookup_pending_ += p.lookup_latency + blocks * p.lookup_block_latency;
  }
}

TierLoad TierChain::take_load() {
  TierLoad load;
  load.layerwise = layerwise_;
  load.lookup = lookup_pending_;
  lookup_time_ += lookup_pending_;
  lookup_pending_ = 0;
  // One transfer per tier per step; tiers are read one after another (their
  // blocks cross the same host link into the device).
  for (int i = 0; i < size(); ++i) {
    const auto at = static_cast<size_t>(i);
    int64_t& blocks = pending_blocks_[at];
    last_read_bytes_[at] = blocks * tiers_[at]->block_bytes();
    last_read_time_[at] =
        tiers_[at]->read_time(blocks) + alone_over(host_read_[at], last_read_bytes_[at]);
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

void TierChain::set_host_hops(int i, LinkPath read, LinkPath write) {
  host_read_.at(static_cast<size_t>(i)) = std::move(read);
  host_write_.at(static_cast<size_t>(i)) = std::move(write);
}

void TierChain::send(int i, bool read, Bytes bytes, SharedLink::Done done, bool host) const {
  const auto at = static_cast<size_t>(i);
  static const LinkPath kNone;
  const LinkPath& path = read ? read_paths_[at] : write_paths_[at];
  const LinkPath& hop = !host ? kNone : read ? host_read_[at] : host_write_[at];
  const RankSplit split = split_of(i);
  if (hop.empty()) {
    transfer_over(path, bytes, std::move(done), 1, split);
    return;
  }
  if (path.empty()) {
    transfer_over(hop, bytes, std::move(done));
    return;
  }
  // The second hop starts once the last byte is in the host buffer.
  const LinkPath& first = read ? path : hop;
  const LinkPath& then = read ? hop : path;
  const RankSplit first_split = read ? split : RankSplit{};
  const RankSplit then_split = read ? RankSplit{} : split;
  transfer_over(
      first, bytes,
      [&then, then_split, bytes, done = std::move(done)]() mutable {
        transfer_over(then, bytes, std::move(done), 1, then_split);
      },
      1, first_split);
}

void TierChain::add_hops(int i, const LinkPath& read, const LinkPath& write) {
  LinkPath& r = read_paths_.at(static_cast<size_t>(i));
  LinkPath& w = write_paths_.at(static_cast<size_t>(i));
  // Each tier's port is one hop ahead of what a cluster adds, in both
  // directions (ServingEngine::make_tier_links), so one index serves both.
  size_t& from = shared_from_.at(static_cast<size_t>(i));
  if (from == RankSplit{}.shared_from && (!read.empty() || !write.empty()))
    from = std::max(r.size(), w.size());
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
    send(i, true, last_read_bytes_[at],
         [this, i, done = std::move(done)]() mutable { read_from(i + 1, std::move(done)); });
    return;
  }
  done();
}

std::vector<int64_t> TierChain::take_request_load() {
  std::vector<int64_t> blocks = pending_blocks_;
  std::fill(pending_blocks_.begin(), pending_blocks_.end(), 0);
  return blocks;
}

bool TierChain::read_async(std::vector<int64_t> blocks, SharedLink::Done done) {
  if (blocks.size() != tiers_.size())
    throw std::invalid_argument("tier chain: an async read of another chain's tiers");
  bool any = false;
  for (size_t i = 0; i < tiers_.size(); ++i) {
    if (blocks[i] <= 0) continue;
    // What it costs alone, as take_load counts a step's reads.
    load_time_ += tiers_[i]->read_time(blocks[i]) +
                  alone_over(host_read_[i], blocks[i] * tiers_[i]->block_bytes());
    if (!read_paths_[i].empty()) any = true;
  }
  if (!any) return false;
  read_async_from(0, std::move(blocks), std::move(done));
  return true;
}

// One tier after the other, as read_from: the same host link into the device.
void TierChain::read_async_from(int i, std::vector<int64_t> blocks, SharedLink::Done done) {
  for (; i < size(); ++i) {
    const auto at = static_cast<size_t>(i);
    if (blocks[at] <= 0 || read_paths_[at].empty()) continue;
    const Bytes bytes = blocks[at] * tiers_[at]->block_bytes();
    send(i, true, bytes, [this, i, blocks = std::move(blocks), done = std::move(done)]() mutable {
      read_async_from(i + 1, std::move(blocks), std::move(done));
    });
    return;
  }
  done();
}

void TierChain::seal_writes() {
  if (fresh_total_ == 0) return;
  for (size_t i = 0; i < tiers_.size(); ++i) {
    held_bytes_[i] += fresh_held_bytes_[i];
    fresh_held_bytes_[i] = 0;
    for (const BlockId b : fresh_pinned_[i]) staging_queue_[i].push_back(b);
    queued_total_ += static_cast<int64_t>(fresh_pinned_[i].size());
    fresh_pinned_[i].clear();
  }
  fresh_total_ = 0;
}

bool TierChain::flush_writes(SharedLink::Done ready, bool background) {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    if (background) {
      Bytes& bytes = unsent_bytes_[i];
      const int tier = static_cast<int>(i);
      if (bytes > 0 && !write_paths_[i].empty()) send(tier, false, bytes, {}, false);
      bytes = 0;
      Bytes& host = unsent_host_bytes_[i];
      if (host > 0 && !write_paths_[i].empty()) send(tier, false, host, {});
      host = 0;
    }
    Bytes& held = held_bytes_[i];
    if (held > 0 && !write_paths_[i].empty()) {
      ++held_in_flight_;
      send(static_cast<int>(i), false, held, [this] {
        --held_in_flight_;
        maybe_ready();
      });
    }
    held = 0;
    stage(static_cast<int>(i));
  }
  if (!ready || (held_in_flight_ == 0 && queued_total_ == 0)) return false;
  ready_ = std::move(ready);
  return true;
}

// Blocks go out in the order they were computed, as many at a time as the
// staging buffer has room for (all of them without a bound); each landing
// frees its room, unpins its blocks and lets the next ones go.
void TierChain::stage(int i) {
  const auto at = static_cast<size_t>(i);
  std::deque<BlockId>& queue = staging_queue_[at];
  if (queue.empty()) return;
  if (write_paths_[at].empty()) {  // no links price it: it lands at once
    while (!queue.empty()) {
      unpin(i, queue.front());
      queue.pop_front();
      --queued_total_;
    }
    return;
  }
  const Bytes block = tiers_[at]->block_bytes();
  const Bytes cap = tiers_[at]->params().staging_buffer;
  auto n = static_cast<int64_t>(queue.size());
  if (cap > 0) n = std::min(n, (cap - staged_[at]) / block);
  if (n <= 0) return;
  std::vector<BlockId> batch(queue.begin(), queue.begin() + n);
  queue.erase(queue.begin(), queue.begin() + n);
  queued_total_ -= n;
  staged_[at] += n * block;
  send(i, false, n * block, [this, i, batch = std::move(batch)] {
    staged_[static_cast<size_t>(i)] -=
        static_cast<int64_t>(batch.size()) * tiers_[static_cast<size_t>(i)]->block_bytes();
    for (const BlockId b : batch) unpin(i, b);
    stage(i);
    if (unpinned_) unpinned_();
    maybe_ready();
  });
}

void TierChain::unpin(int i, BlockId block) {
  if (block != kNoBlock && pins_ != nullptr) pins_->unpin(block);
  --pinned_[static_cast<size_t>(i)];
  --pinned_total_;
}

void TierChain::maybe_ready() {
  if (!ready_ || held_in_flight_ != 0 || queued_total_ != 0) return;
  SharedLink::Done ready = std::move(ready_);
  ready_ = nullptr;
  ready();
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
  if (pinned_total_ != 0 || queued_total_ != 0 || held_in_flight_ != 0 || fresh_total_ != 0)
    throw std::logic_error(
        fmt::format("tiers: {} blocks still pinned by stores that never landed", pinned_total_));
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
    out->pinned_peak_blocks = pinned_peak_[i];
    lower += mv.hit_tokens_first;
  }
  tiers.device_hit_rate = rate(prefix_hit_tokens - lower);
  tiers.load_time_s = static_cast<double>(load_time_) / 1e9;
  tiers.store_wait_s = static_cast<double>(store_wait_) / 1e9;
  tiers.lookup_time_s = static_cast<double>(lookup_time_) / 1e9;
}

}  // namespace kvsim
