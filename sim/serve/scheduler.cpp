#include "sim/serve/scheduler.hpp"

#include <algorithm>
#include <stdexcept>

namespace kvsim {
namespace {
bool by_arrival(const Sequence* a, const Sequence* b) {
  return a->request.id < b->request.id;
}
}  // namespace

Scheduler::Scheduler(const SchedulerParams& params, KvCachePolicy& policy)
    : params_(params), policy_(policy) {}

void Scheduler::add_waiting(Sequence* seq) {
  seq->state = SeqState::waiting;
  waiting_.push_back(seq);
}

void Scheduler::insert_running(Sequence* seq) {
  seq->state = SeqState::running;
  running_.insert(std::upper_bound(running_.begin(), running_.end(), seq, by_arrival), seq);
}

bool Scheduler::try_grow(Sequence* seq, int64_t tokens, ScheduledBatch& batch, int64_t& budget) {
  if (!policy_.grow_in_place(seq->slot, tokens)) {
    const GrowPlan plan = policy_.plan_grow(seq->slot, tokens);
    if (!plan.fits) return false;
    policy_.apply_grow(seq->slot, plan, tokens);
  }
  add_item(seq, tokens, batch, budget);
  return true;
}

void Scheduler::add_item(Sequence* seq, int64_t tokens, ScheduledBatch& batch, int64_t& budget) {
  const auto index = static_cast<uint32_t>(batch.items.size());
  batch.items.push_back({seq, tokens});
  batch.total_tokens += tokens;
  budget -= tokens;
  BatchSummary& sum = batch.summary;
  if (tokens == 1 && seq->computed + 1 == seq->known_tokens()) {
    ++sum.decodes;
    sum.decode_context += seq->computed;
    if (seq->computed + 1 >= seq->commit_horizon) sum.at_horizon.push_back(index);
  } else {
    sum.others.push_back(index);
    sum.at_horizon.push_back(index);
  }
}

Sequence* Scheduler::preempt_latest(ScheduledBatch& batch) {
  Sequence* victim = running_.back();
  running_.pop_back();
  batch.preempted.push_back(victim);
  ++preemptions_;
  ++victim->preemptions;
  if (params_.swap) {
    const SwapPlan plan = policy_.plan_swap_out(victim->slot);
    if (plan.fits) {
      victim->host = policy_.apply_swap_out(victim->slot, plan);
      victim->slot = kNoSeq;
      victim->state = SeqState::swapped;
      batch.swap_out_bytes += plan.bytes;
      swapped_.insert(std::upper_bound(swapped_.begin(), swapped_.end(), victim, by_arrival),
                      victim);
      return victim;
    }
    ++swap_fallbacks_;  // host swap space is full: fall back to recompute
  }
  // Recompute: drop the KV; the request re-enters at the head of the waiting
  // queue and recomputes prompt + generated tokens (its freed blocks keep
  // their hashes, so a prefix hit may spare most of the work).
  policy_.release(victim->slot);
  victim->slot = kNoSeq;
  victim->computed = 0;
  victim->request.kv_ready_tokens = 0;  // the KV that came with it is gone: recompute it
  victim->state = SeqState::waiting;
  waiting_.push_front(victim);
  return victim;
}

void Scheduler::schedule_running(ScheduledBatch& batch, int64_t& budget, bool& preempted) {
  size_t i = 0;
  // Sequences live apart on the heap: ask for the ones a few places ahead
  // while this one is scheduled.
  constexpr size_t kAhead = 8;
  while (i < running_.size() && budget > 0) {
    if (i + kAhead < running_.size()) __builtin_prefetch(running_[i + kAhead]);
    Sequence* seq = running_[i];
    const int64_t tokens = std::min(seq->tokens_to_compute(), budget);
    bool scheduled = false;
    while (!scheduled) {
      if (try_grow(seq, tokens, batch, budget)) {
        scheduled = true;
        break;
      }
      // The most recently arrived is last in arrival order and not yet
      // scheduled in this step (we go front to back); it may be `seq` itself.
      Sequence* victim = preempt_latest(batch);
      preempted = true;
      if (victim == seq) break;
    }
    if (scheduled) ++i;
  }
}

void Scheduler::schedule_swapped(ScheduledBatch& batch, int64_t& budget) {
  while (!swapped_.empty() && static_cast<int64_t>(running_.size()) < params_.max_num_seqs &&
         budget > 0) {
    Sequence* seq = swapped_.front();
    const SwapPlan plan = policy_.plan_swap_in(seq->host);
    if (!plan.fits) break;
    seq->slot = policy_.apply_swap_in(seq->host, plan);
    seq->commit_horizon = 0;
    seq->host = -1;
    batch.swap_in_bytes += plan.bytes;
    batch.swapped_in.push_back(seq);
    swapped_.pop_front();
    insert_running(seq);
    try_grow(seq, std::min(seq->tokens_to_compute(), budget), batch, budget);
  }
}

void Scheduler::schedule_waiting(ScheduledBatch& batch, int64_t& budget) {
  while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < params_.max_num_seqs &&
         budget > 0) {
    Sequence* seq = waiting_.front();
    PrefixHit hit = policy_.lookup_prefix(seq->tokens(), seq->block_hashes);
    hit.readmission = seq->admitted_once;
    // KV that came with the request needs room, not compute; the last token
    // is still computed so the step yields logits (as for a prefix hit).
    const int64_t arrived = std::clamp<int64_t>(seq->request.kv_ready_tokens - hit.cached_tokens, 0,
                                                seq->known_tokens() - hit.cached_tokens - 1);
    int64_t tokens = seq->known_tokens() - hit.cached_tokens - arrived;
    if (params_.chunked_prefill) {
      tokens = std::min(tokens, budget);
    } else if (tokens > budget) {
      break;  // FCFS: the head waits for a step with room for its whole prompt
    }
    const AdmitPlan plan = policy_.plan_admit(std::move(hit), arrived + tokens);
    if (!plan.fits) break;  // FCFS: nobody overtakes the head
    seq->slot = policy_.apply_admit(plan);
    seq->commit_horizon = 0;
    seq->computed = plan.hit.cached_tokens + arrived;
    if (!seq->admitted_once) {
      seq->cached_tokens = plan.hit.cached_tokens;
      seq->admitted_once = true;
    }
    waiting_.pop_front();
    insert_running(seq);
    batch.summary.admitted.push_back(seq);
    add_item(seq, tokens, batch, budget);
  }
}

void Scheduler::schedule(ScheduledBatch& batch) {
  batch.items.clear();
  batch.preempted.clear();
  batch.swapped_in.clear();
  batch.swap_in_bytes = batch.swap_out_bytes = 0;
  batch.total_tokens = 0;
  batch.summary.decodes = batch.summary.decode_context = 0;
  batch.summary.others.clear();
  batch.summary.at_horizon.clear();
  batch.summary.admitted.clear();
  int64_t budget = params_.max_batched_tokens;
  bool preempted = false;
  if (!params_.chunked_prefill) {
    // vLLM without chunked prefill: a step is all prefills (prioritised) or
    // all decodes; no new prefills while requests wait on the host.
    if (swapped_.empty()) {
      schedule_waiting(batch, budget);
      if (!batch.items.empty()) return;
    }
    schedule_running(batch, budget, preempted);
    if (!preempted) schedule_swapped(batch, budget);
    return;
  }
  // Chunked prefill (vLLM v1): running requests first (decodes and unfinished
  // prefill chunks), then swapped ones, then new admissions, in one budget.
  schedule_running(batch, budget, preempted);
  if (preempted) return;  // no admissions in a step that had to preempt
  schedule_swapped(batch, budget);
  if (swapped_.empty()) schedule_waiting(batch, budget);
}

void Scheduler::finish(Sequence* seq) {
  auto it = std::lower_bound(running_.begin(), running_.end(), seq, by_arrival);
  if (it == running_.end() || *it != seq)
    throw std::logic_error("finish() of a sequence that is not running");
  running_.erase(it);
  policy_.release(seq->slot);
  seq->slot = kNoSeq;
  seq->state = SeqState::finished;
}

Sequence* Scheduler::reject_head() {
  if (waiting_.empty()) return nullptr;
  Sequence* seq = waiting_.front();
  waiting_.pop_front();
  seq->state = SeqState::finished;
  return seq;
}

}  // namespace kvsim
