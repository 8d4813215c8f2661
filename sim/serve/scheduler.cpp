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
  const uint64_t id = seq->request.id;
  const auto at = std::upper_bound(running_.begin(), running_.end(), id,
                                   [](uint64_t v, const RunningSeq& r) { return v < r.id; });
  const auto index = at - running_.begin();
  bulk_until_.insert(bulk_until_.begin() + index, 0);
  bulk_run_.insert(bulk_run_.begin() + index, BulkRun{});
  running_.insert(at, RunningSeq{seq, id, seq->slot});
}

void Scheduler::settle(size_t i, int64_t now) {
  int64_t& until = bulk_until_[i];
  if (until == 0) return;
  const BulkRun run = bulk_run_[i];
  run_sum_ -= run.base - run.since;
  until = std::min(until, now);
  const int64_t taken = until - run.since;
  until = 0;
  bulk_run_[i] = {};
  if (taken <= 0) return;
  // Each bulk step computed one token and sampled one, the last of them at
  // the end of the step before `now` (a sequence left out of a step is
  // settled then, so its bulk steps are the latest steps).
  Sequence* seq = running_[i].seq;
  seq->computed += taken;
  seq->generated += taken;
  seq->last_token_at = last_step_end_;
  policy_.settle_in_place(running_[i].slot, taken);
}

void Scheduler::settle_all(int64_t now) {
  for (size_t i = 0; i < running_.size(); ++i)
    if (running_[i].seq) settle(i, now);
}

void Scheduler::set_bulk_decodes(bool on) {
  if (!on) settle_all();
  params_.bulk_decodes = on;
}

int64_t Scheduler::bulk_steps_after(const Sequence& seq, int64_t tokens) const {
  // A decode computing token c (computed == c) samples it; in the following
  // steps it takes tokens c+1, c+2, ... A following step j needs nothing but
  // in-place room (j <= room), leaves commit() nothing to do (c + 1 + j <
  // horizon; the step at hand commits nothing either: c + 1 < horizon) and
  // does not finish the request (generated + 1 + j < output_tokens).
  if (tokens != 1 || seq.computed + 1 != seq.known_tokens()) return 0;
  int64_t room = policy_.in_place_room(seq.slot);
  if (params_.watched) {
    if (params_.watched(seq)) return 0;
    --room;  // the step that fills its block is observed one by one
  }
  const int64_t steps = std::min(
      {room, seq.commit_horizon - seq.computed - 2, seq.output_tokens - seq.generated - 2});
  return std::max<int64_t>(steps, 0);
}

void Scheduler::drop_finished() {
  if (finished_in_place_ == 0) return;
  size_t kept = 0;
  for (size_t i = 0; i < running_.size(); ++i) {
    if (!running_[i].seq) continue;
    running_[kept] = running_[i];
    bulk_until_[kept] = bulk_until_[i];
    bulk_run_[kept] = bulk_run_[i];
    ++kept;
  }
  running_.resize(kept);
  bulk_until_.resize(kept);
  bulk_run_.resize(kept);
  finished_in_place_ = 0;
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
  sum.bulk_before.push_back(static_cast<uint32_t>(sum.bulk_decodes));
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
  // Not yet scheduled in this step (the loop goes front to back), so its
  // bulk steps are all of earlier steps.
  settle(running_.size() - 1, clock_);
  Sequence* victim = running_.back().seq;
  running_.pop_back();
  bulk_until_.pop_back();
  bulk_run_.pop_back();
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

bool Scheduler::grow_one(size_t i, RunningCursor& c, ScheduledBatch& batch) {
  settle(i, clock_);
  Sequence* seq = running_[i].seq;
  const int64_t tokens = std::min(seq->tokens_to_compute(), c.left);
  batch.summary.bulk_decodes = c.bulk;  // the item's place among the bulk decodes
  if (!try_grow(seq, tokens, batch, c.left)) return false;
  if (params_.bulk_decodes) {
    const int64_t steps = bulk_steps_after(*seq, tokens);
    if (steps > 0) {
      const BulkRun run{clock_ + 1, seq->computed + 1};
      bulk_run_[i] = run;
      bulk_until_[i] = run.since + steps;
      run_sum_ += run.base - run.since;
      run_sum_new_ += run.base - run.since;
    }
  }
  return true;
}

void Scheduler::schedule_running_from(size_t i, RunningCursor& c, ScheduledBatch& batch,
                                      bool& preempted) {
  // Sequences live apart on the heap: ask for the ones a few places ahead
  // while this one is scheduled.
  constexpr size_t kAhead = 8;
  while (i < running_.size() && c.left > 0) {
    if (i + kAhead < running_.size()) __builtin_prefetch(running_[i + kAhead].seq);
    const Sequence* seq = running_[i].seq;
    bool scheduled = false;
    while (!scheduled) {
      // preempt_latest pops only entries behind i (or i itself, last).
      if (grow_one(i, c, batch)) {
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
  // Left out of this step (the budget ran out): their next token comes
  // later, so they are settled now and scheduled one by one next time.
  for (; i < running_.size(); ++i) settle(i, clock_);
}

size_t Scheduler::schedule_running_in_bulk(RunningCursor& c, ScheduledBatch& batch) {
  const size_t n = running_.size();
  const RunningSeq* const run = running_.data();
  const int64_t* const until = bulk_until_.data();
  const int64_t now = clock_;
  // A run that goes on takes this step in bulk: nothing to write. The
  // others' positions are listed (a store each, kept only if m moves on).
  one_by_one_.resize(n);
  size_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    one_by_one_[m] = static_cast<uint32_t>(i);
    m += until[i] <= now ? 1 : 0;
  }
  one_by_one_.resize(m);
  bulk_now_ = static_cast<int64_t>(n - m);
  // Then the others in order, with the budget the one-by-one loop would
  // have when it reached each (every bulk decode before it took one token).
  int64_t left = c.left;  // after the previous one-by-one entry
  size_t prev = 0;        // entries before the next one-by-one entry start here
  constexpr size_t kAhead = 8;
  for (size_t k = 0; k < m; ++k) {
    const size_t pos = one_by_one_[k];
    // Each of them reads its Sequence and the policy's record of it, both
    // far apart: loaded a few entries ahead.
    if (k + kAhead < m) __builtin_prefetch(run[one_by_one_[k + kAhead]].seq);
    if (k + kAhead / 2 < m) policy_.prefetch(run[one_by_one_[k + kAhead / 2]].slot);
    const auto gap = static_cast<int64_t>(pos - prev);  // bulk decodes in between
    // The budget runs out among them (or leaves this entry nothing).
    if (left <= gap) return stop_in_bulk(prev, left, c);
    c.left = left - gap;
    c.bulk = static_cast<int64_t>(pos - k);
    if (!grow_one(pos, c, batch)) {
      // A preemption: the one-by-one loop takes over at this entry, and
      // the entries after it go one by one too.
      end_runs_from(pos + 1);
      return pos;
    }
    left = c.left;
    prev = pos + 1;
  }
  const auto gap = static_cast<int64_t>(n - prev);
  if (left < gap) return stop_in_bulk(prev, left, c);
  c.left = left - gap;
  c.bulk = bulk_now_;
  return n;
}

size_t Scheduler::stop_in_bulk(size_t prev, int64_t left, RunningCursor& c) {
  // The one-by-one loop would stop `left` bulk decodes after `prev`: the
  // runs from there on end, and the budget is spent.
  const size_t stop = prev + static_cast<size_t>(std::max<int64_t>(left, 0));
  end_runs_from(stop);
  c.bulk = bulk_now_;
  c.left = 0;
  return stop;
}

void Scheduler::end_runs_from(size_t from) {
  for (size_t i = from; i < running_.size(); ++i) {
    if (bulk_until_[i] <= clock_) continue;  // no run, or one that ended
    settle(i, clock_);
    --bulk_now_;
  }
}

void Scheduler::schedule_running(ScheduledBatch& batch, int64_t& budget, bool& preempted) {
  BatchSummary& sum = batch.summary;
  RunningCursor c{budget, 0};
  bulk_now_ = 0;
  run_sum_new_ = 0;
  size_t i = 0;
  if (params_.bulk_decodes) {
    if (static_cast<int64_t>(running_.size()) <= budget)
      i = schedule_running_in_bulk(c, batch);
    else
      settle_all(clock_);  // the budget cannot reach them all: one by one
  }
  schedule_running_from(i, c, batch, preempted);
  budget = c.left;
  sum.bulk_decodes = bulk_now_;
  if (bulk_now_ > 0) {
    // Each took the token after base + (clock_ - since) computed ones.
    batch.total_tokens += bulk_now_;
    sum.decodes += bulk_now_;
    sum.decode_context += run_sum_ - run_sum_new_ + bulk_now_ * clock_;
    sum.bulk_last_token_at = last_step_end_;
    policy_.grow_in_place_bulk(bulk_now_);
  }
}

void Scheduler::schedule_swapped(ScheduledBatch& batch, int64_t& budget) {
  while (!swapped_.empty() && static_cast<int64_t>(num_running()) < params_.max_num_seqs &&
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
  while (!waiting_.empty() && static_cast<int64_t>(num_running()) < params_.max_num_seqs &&
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
  batch.summary.bulk_decodes = 0;
  batch.summary.bulk_last_token_at = -1;
  batch.summary.bulk_before.clear();
  drop_finished();
  ++clock_;
  int64_t budget = params_.max_batched_tokens;
  bool preempted = false;
  if (!params_.chunked_prefill) {
    // vLLM without chunked prefill: a step is all prefills (prioritised) or
    // all decodes; no new prefills while requests wait on the host.
    if (swapped_.empty()) {
      schedule_waiting(batch, budget);
      if (!batch.items.empty()) {
        // The running decodes skip this step: settled, they go one by one
        // next time (a bulk decode's last token is the step before's).
        settle_all(clock_);
        return;
      }
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
  // The entry stays, marked, until the next schedule drops it with the
  // step's other finished ones: one pass instead of an erase each.
  const uint64_t id = seq->request.id;
  const auto it = std::lower_bound(running_.begin(), running_.end(), id,
                                   [](const RunningSeq& r, uint64_t v) { return r.id < v; });
  if (it == running_.end() || it->seq != seq)
    throw std::logic_error("finish() of a sequence that is not running");
  if (bulk_until_[static_cast<size_t>(it - running_.begin())] != 0)
    throw std::logic_error("finish() of a sequence with unsettled tokens");
  it->seq = nullptr;
  ++finished_in_place_;
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
