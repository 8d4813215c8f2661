#include "sim/serve/async_loads.hpp"

#include <algorithm>
#include <stdexcept>

namespace kvsim {

AsyncLoads::AsyncLoads(TierChain& chain, int64_t block_size, int64_t cap_tokens,
                       std::function<void()> woken)
    : chain_(chain), woken_(std::move(woken)) {
  if (block_size <= 0 || cap_tokens < 0)
    throw std::invalid_argument("async loads: a block size > 0 and a cap >= 0");
  // Whole blocks, at least one a step: a block is what a load moves.
  cap_blocks_ = cap_tokens == 0 ? 0 : std::max<int64_t>(cap_tokens / block_size, 1);
}

void AsyncLoads::add(Sequence* seq, std::vector<int64_t> blocks) {
  Load load;
  load.seq = seq;
  for (const int64_t b : blocks) load.unstarted += b;
  load.left = std::move(blocks);
  if (load.unstarted <= 0) {  // nothing to read: ready at the next step
    ready_.push_back(seq);
    return;
  }
  loads_.push_back(std::move(load));
}

int64_t AsyncLoads::issue() {
  int64_t room = cap_blocks_ > 0 ? cap_blocks_ : INT64_MAX;
  int64_t started = 0;
  for (auto it = loads_.begin(); it != loads_.end() && room > 0;) {
    auto next = std::next(it);
    Load& load = *it;
    if (load.unstarted == 0) {
      it = next;
      continue;
    }
    // The part: the next blocks of the request's hits, fastest tier first
    // (a prefix's hits come in that order down the chain).
    std::vector<int64_t> part(load.left.size(), 0);
    int64_t take = std::min(room, load.unstarted);
    for (size_t i = 0; i < part.size() && take > 0; ++i) {
      const int64_t n = std::min(take, load.left[i]);
      part[i] = n;
      load.left[i] -= n;
      load.unstarted -= n;
      room -= n;
      started += n;
      take -= n;
    }
    ++parts_;
    ++load.in_flight;
    if (!chain_.read_async(std::move(part), [this, it] { landed(it); })) {
      landed(it);  // no link prices it: it is there at once
    }
    it = next;
  }
  return started;
}

void AsyncLoads::landed(std::list<Load>::iterator it) {
  --it->in_flight;
  if (it->in_flight == 0 && it->unstarted == 0) {
    ready_.push_back(it->seq);
    loads_.erase(it);
  }
  if (woken_) woken_();
}

void AsyncLoads::take_ready(std::vector<Sequence*>& out) {
  out.insert(out.end(), ready_.begin(), ready_.end());
  ready_.clear();
}

}  // namespace kvsim
