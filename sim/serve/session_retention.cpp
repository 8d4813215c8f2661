#include "sim/serve/session_retention.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kvsim {
namespace {
// After the engine's events of the same instant (step done 0, arrivals 1,
// kick 2): a call that arrives exactly as its pin's TTL runs out is
// admitted, if it can be, before the pin goes.
constexpr int32_t kPrioExpiry = 3;
}  // namespace

SessionRetention::SessionRetention(const SessionRetentionConfig& config, KvCachePolicy& policy,
                                   Simulator& sim, int64_t num_blocks, int64_t block_size,
                                   std::function<void()> freed)
    : config_(config),
      policy_(policy),
      sim_(sim),
      block_size_(block_size),
      max_pinned_blocks_(static_cast<int64_t>(
          std::floor(config.max_pinned_fraction * static_cast<double>(num_blocks)))),
      freed_(std::move(freed)),
      integral_at_(sim.now()) {}

SessionRetention::~SessionRetention() {
  // An engine torn down mid-run (an error) leaves its expiries queued.
  for (auto& [age, pin] : pins_) sim_.cancel(pin.expiry);
}

void SessionRetention::advance() {
  const TimeNs now = sim_.now();
  m_.pinned_block_seconds +=
      static_cast<double>(pinned_blocks_) * static_cast<double>(now - integral_at_) / 1e9;
  integral_at_ = now;
}

void SessionRetention::pin(const Request& request, SeqSlot slot) {
  if (!wants(request)) throw std::logic_error("SessionRetention::pin of a call it does not want");
  advance();
  const auto blocks = static_cast<int64_t>(policy_.block_table(slot).size());
  // A session has one pin: its newest call's blocks hold its whole history
  // (an older pin of it, say a sub-call that ended earlier, goes).
  if (auto s = by_session_.find(request.session); s != by_session_.end()) {
    ++m_.superseded;
    release(pins_.find(s->second), true);
  }
  const bool keep = config_.on_pressure == SessionRetentionConfig::OnPressure::keep;
  if (!keep && blocks <= max_pinned_blocks_)
    while (pinned_blocks_ + blocks > max_pinned_blocks_ && !pins_.empty()) {
      ++m_.dropped;
      release(pins_.begin(), true);
    }
  if (pinned_blocks_ + blocks > max_pinned_blocks_) {
    ++m_.refused;
    policy_.release(slot);
    return;
  }
  const uint64_t age = next_age_++;
  Pin p{request.session, slot, blocks, {}};
  p.expiry = sim_.schedule_in(config_.ttl, kPrioExpiry, [this, age] { expire(age); });
  pins_.emplace(age, p);
  by_session_[request.session] = age;
  pinned_blocks_ += blocks;
  m_.peak_pinned_blocks = std::max(m_.peak_pinned_blocks, pinned_blocks_);
  ++m_.pins;
}

void SessionRetention::admitted(uint64_t session, SeqSlot slot, int64_t hit_tokens) {
  if (session == 0) return;
  const auto s = by_session_.find(session);
  if (s == by_session_.end()) return;
  const auto it = pins_.find(s->second);
  // The pinned blocks the call reuses: its table's leading blocks that are
  // the pin's, within its prefix hit.
  const std::vector<BlockId>& mine = policy_.block_table(slot);
  const std::vector<BlockId>& pinned = policy_.block_table(it->second.slot);
  const size_t limit =
      std::min({mine.size(), pinned.size(), static_cast<size_t>(hit_tokens / block_size_)});
  size_t same = 0;
  while (same < limit && mine[same] == pinned[same]) ++same;
  if (same > 0) {
    ++m_.hits;
    m_.saved_prompt_tokens += static_cast<int64_t>(same) * block_size_;
  } else {
    ++m_.unused;
  }
  advance();
  release(it, true);
}

bool SessionRetention::make_room(uint64_t spare_session) {
  if (config_.on_pressure != SessionRetentionConfig::OnPressure::evict_oldest) return false;
  for (auto it = pins_.begin(); it != pins_.end(); ++it) {
    if (spare_session != 0 && it->second.session == spare_session) continue;
    advance();
    ++m_.dropped;
    release(it, true);
    return true;
  }
  return false;
}

void SessionRetention::close() {
  if (closed_) return;
  closed_ = true;
  advance();
  while (!pins_.empty()) {
    ++m_.closed;
    release(pins_.begin(), true);
  }
}

void SessionRetention::expire(uint64_t age) {
  const auto it = pins_.find(age);
  if (it == pins_.end()) return;  // cancelled events never run; guard anyway
  advance();
  ++m_.expired;
  release(it, false);
  if (freed_) freed_();
}

void SessionRetention::release(Pins::iterator it, bool cancel_expiry) {
  if (cancel_expiry) sim_.cancel(it->second.expiry);
  policy_.release(it->second.slot);
  pinned_blocks_ -= it->second.blocks;
  by_session_.erase(it->second.session);
  pins_.erase(it);
}

SessionRetentionMetrics SessionRetention::metrics(TimeNs end) const {
  SessionRetentionMetrics out = m_;
  out.pinned_block_seconds +=
      static_cast<double>(pinned_blocks_) * static_cast<double>(end - integral_at_) / 1e9;
  out.mean_pinned_blocks =
      end > 0 ? out.pinned_block_seconds * 1e9 / static_cast<double>(end) : 0.0;
  return out;
}

}  // namespace kvsim
