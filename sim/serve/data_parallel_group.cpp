#include "sim/serve/data_parallel_group.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace kvsim {

DataParallelGroup::DataParallelGroup(Simulator& sim, int64_t ranks)
    : sim_(sim),
      ranks_(static_cast<size_t>(ranks), nullptr),
      joined_(static_cast<size_t>(ranks), 0),
      deferred_(static_cast<size_t>(ranks), 0),
      price_(static_cast<size_t>(ranks), 0) {
  if (ranks < 1) throw std::invalid_argument("a data-parallel group needs a rank");
  metrics_.ranks = ranks;
  metrics_.per_rank.resize(static_cast<size_t>(ranks));
}

void DataParallelGroup::attach(size_t rank, DataParallelRank* r) {
  ranks_.at(rank) = r;
}

void DataParallelGroup::defer(size_t rank) {
  deferred_.at(rank) = 1;
}

void DataParallelGroup::join(size_t rank) {
  if (launched_)
    throw std::logic_error(fmt::format("data-parallel rank {} joined a step in flight", rank));
  joined_.at(rank) = 1;
  if (launch_pending_) return;
  launch_pending_ = true;
  sim_.schedule_at(sim_.now(), kPrioLaunch, [this] { launch(); });
}

// Every rank's tokens meet at the dispatch: the group routes their sum,
// and a rank without a batch sends its dummy token. Each busy rank prices
// its step under that load; the step lasts the slowest price for all.
void DataParallelGroup::launch() {
  launch_pending_ = false;
  double group_tokens = 0, group_draft_tokens = 0;
  int64_t busy = 0;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    if (joined_[r]) {
      group_tokens += ranks_[r]->step_tokens();
      group_draft_tokens += ranks_[r]->draft_tokens();
      ++busy;
    } else {
      // vLLM's execute_dummy_batch: one token, through the drafter too
      // (its dummy run proposes for the dummy request).
      group_tokens += 1;
      group_draft_tokens += 1;
    }
  }
  TimeNs step = 0;
  double own_sum = 0;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    if (!joined_[r]) continue;
    price_[r] = std::max<TimeNs>(ranks_[r]->price_step(group_tokens, group_draft_tokens), 1);
    step = std::max(step, price_[r]);
    own_sum += static_cast<double>(price_[r]);
  }
  const double mean = own_sum / static_cast<double>(busy);
  ++metrics_.steps;
  metrics_.step_ns += static_cast<double>(step);
  metrics_.max_over_mean += static_cast<double>(step) / mean;
  launched_ = true;
  in_flight_ = busy;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    DataParallelRankMetrics& m = metrics_.per_rank[r];
    if (!joined_[r]) {
      m.wait_ns += static_cast<double>(step);
      metrics_.wait_ns += static_cast<double>(step);
      continue;
    }
    ++m.steps;
    m.tokens += ranks_[r]->step_tokens();
    m.seqs += static_cast<double>(ranks_[r]->step_seqs());
    m.own_ns += static_cast<double>(price_[r]);
    m.wait_ns += static_cast<double>(step - price_[r]);
    metrics_.wait_ns += static_cast<double>(step - price_[r]);
  }
  for (size_t r = 0; r < ranks_.size(); ++r) {
    if (!joined_[r]) continue;
    joined_[r] = 0;
    ranks_[r]->launch_step(step);
  }
}

void DataParallelGroup::finished(size_t) {
  if (in_flight_ <= 0) throw std::logic_error("a data-parallel rank finished a step not launched");
  if (--in_flight_ > 0) return;
  launched_ = false;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    if (!deferred_[r]) continue;
    deferred_[r] = 0;
    ranks_[r]->wake();
  }
}

}  // namespace kvsim
