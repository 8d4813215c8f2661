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
    : params_(params), policy_(policy), events_in_bulk_(!params.watched) {}

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
  next_event_.insert(next_event_.begin() + index, 0);
  const auto slot = static_cast<size_t>(seq->slot);
  if (slot >= bulk_run_.size()) bulk_run_.resize(slot + 1);
  bulk_run_[slot] = {};
  running_.insert(at, RunningSeq{seq, id, seq->slot});
}

void Scheduler::settle(size_t i, int64_t now) {
  BulkRun& entry = run_of(i);
  const BulkRun run = entry;
  if (run.until == 0) return;
  run_sum_ -= run.base - run.since;
  const int64_t end = std::min(run.until, now);
  entry = {};
  next_event_[i] = 0;
  // Each bulk step computed one token and sampled one, the last of them at
  // the end of the step before `now` (a sequence left out of a step is
  // settled then, so its bulk steps are the latest steps).
  if (const int64_t taken = end - run.since; taken > 0) {
    Sequence* seq = running_[i].seq;
    seq->computed += taken;
    seq->generated += taken;
    seq->last_token_at = last_step_end_;
  }
  if (const int64_t taken = end - run.policy_since; taken > 0)
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

void Scheduler::start_run(size_t i, int64_t tokens) {
  // A decode computing token c (computed == c) samples it; in the following
  // steps it takes tokens c+1, c+2, ... A following step j does not finish
  // the request (generated + 1 + j < output_tokens). Where a step j needs
  // more than in-place room, or reaches the commit horizon, the run goes on
  // through it (an event: advance_at_event) unless an observer watches
  // block fills: then j <= room, the step's commit and the following ones
  // must change nothing (c + 1 + j < horizon; c + 1 < horizon).
  const Sequence& seq = *running_[i].seq;
  if (tokens != 1 || seq.computed + 1 != seq.known_tokens()) return;
  const SeqSlot slot = running_[i].slot;
  int64_t steps = seq.output_tokens - seq.generated - 2;
  const bool at_horizon = seq.computed + 1 >= seq.commit_horizon;
  if (!events_in_bulk_) {
    if (params_.watched(seq)) return;
    // The step that fills its block is observed one by one.
    steps =
        std::min({steps, policy_.in_place_room(slot) - 1, seq.commit_horizon - seq.computed - 2});
  }
  if (steps <= 0) return;
  BulkRun run;
  run.since = clock_ + 1;
  run.base = seq.computed + 1;
  run.generated = seq.generated + 1;  // this step samples one
  run.until = run.since + steps;
  run.policy_since = run.since;  // try_grow counted this step's token
  // This step's commit moves the horizon: looked up at the run's first step.
  run.horizon = at_horizon ? -1 : seq.commit_horizon;
  run_of(i) = run;
  next_event_[i] = events_in_bulk_ ? next_event(slot, run) : run.until;
  run_sum_ += run.base - run.since;
  run_sum_new_ += run.base - run.since;
}

int64_t Scheduler::next_event(SeqSlot slot, const BulkRun& run) const {
  // The policy's count is as of policy_since: the steps from there fit in
  // place until the room is used up.
  int64_t next = std::min(run.until, run.policy_since + policy_.in_place_room(slot));
  if (run.horizon < 0) return std::min(next, run.policy_since);
  // The step whose token is the horizon's last: base + t - since + 1 == horizon
  // (no overflow for a horizon of "never").
  const int64_t to_horizon = run.horizon - 1 - run.base;
  if (to_horizon < next - run.since) next = run.since + to_horizon;
  return next;
}

bool Scheduler::advance_at_event(size_t i, ScheduledBatch& batch) {
  BulkRun& run = run_of(i);
  const SeqSlot slot = running_[i].slot;
  const int64_t now = clock_;
  // The policy hears of the bulk steps before this one, then of this one
  // if it needs a block (apply_grow counts its token) or commits.
  if (now > run.policy_since) policy_.settle_in_place(slot, now - run.policy_since);
  run.policy_since = now;
  Sequence* seq = running_[i].seq;
  if (run.horizon < 0) run.horizon = seq->commit_horizon;  // no committed() since a commit
  bool grown = false;
  if (policy_.in_place_room(slot) == 0) {
    const GrowPlan plan = policy_.plan_grow(slot, 1);
    if (!plan.fits) return false;  // a preemption: one by one from here
    policy_.apply_grow(slot, plan, 1);
    run.policy_since = now + 1;
    grown = true;
    ++grown_now_;
  }
  const int64_t computed = run.base + (now - run.since) + 1;  // after this step
  if (computed >= run.horizon) {
    if (!grown) policy_.settle_in_place(slot, 1);
    run.policy_since = now + 1;
    batch.summary.bulk_commits.push_back({seq, run.generated + (now - run.since), computed,
                                          static_cast<uint32_t>(batch.items.size())});
    run.horizon = -1;  // the commit moves it: committed() tells
  }
  next_event_[i] = next_event(slot, run);
  return true;
}

void Scheduler::drop_finished() {
  if (finished_in_place_ == 0) return;
  // The entries before the first finished one stay where they are; those
  // after it move down by stretches (a finished one ends each stretch).
  const size_t n = running_.size();
  size_t kept = first_finished_;
  for (size_t i = first_finished_; i < n;) {
    if (!running_[i].seq) {
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < n && running_[end].seq) ++end;
    std::copy(running_.begin() + i, running_.begin() + end, running_.begin() + kept);
    std::copy(next_event_.begin() + i, next_event_.begin() + end, next_event_.begin() + kept);
    kept += end - i;
    i = end;
  }
  running_.resize(kept);
  next_event_.resize(kept);
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
  next_event_.pop_back();
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
  if (params_.bulk_decodes) start_run(i, tokens);
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
  const int64_t* const event = next_event_.data();
  const int64_t now = clock_;
  // A run with no event in this step takes it in bulk: nothing to write.
  // The others' positions are listed (a store each, kept only if m moves on).
  one_by_one_.resize(n);
  size_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    one_by_one_[m] = static_cast<uint32_t>(i);
    m += event[i] <= now ? 1 : 0;
  }
  one_by_one_.resize(m);
  bulk_now_ = static_cast<int64_t>(n - m);
  // Then the others in order, with the budget the one-by-one loop would
  // have when it reached each (every bulk decode before it took one
  // token): runs at an event take their step in bulk after a look, the
  // rest are scheduled one by one. Blocks are allocated in this order.
  int64_t left = c.left;  // after the previous listed entry
  size_t prev = 0;        // entries before the next listed entry start here
  constexpr size_t kAhead = 8;
  for (size_t k = 0; k < m; ++k) {
    const size_t pos = one_by_one_[k];
    // Each of them reads its run and the policy's record of it, both far
    // apart: loaded a few entries ahead. (An event reads no Sequence; the
    // few entries scheduled one by one in a steady step do.)
    if (k + kAhead / 2 < m) {
      const SeqSlot ahead = run[one_by_one_[k + kAhead / 2]].slot;
      policy_.prefetch(ahead);
      __builtin_prefetch(&bulk_run_[static_cast<size_t>(ahead)]);
    }
    const auto gap = static_cast<int64_t>(pos - prev);  // bulk decodes in between
    // The budget runs out among them (or leaves this entry nothing).
    if (left <= gap) return stop_in_bulk(prev, left, c);
    c.left = left - gap;
    c.bulk = static_cast<int64_t>(pos - batch.items.size());
    const bool in_run = run_of(pos).until > now;
    if (in_run ? !advance_at_event(pos, batch) : !grow_one(pos, c, batch)) {
      // A preemption: the one-by-one loop takes over at this entry, and
      // the entries after it go one by one too.
      end_runs_from(pos + 1);
      return pos;
    }
    if (in_run) {
      --c.left;
      ++bulk_now_;
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
    if (run_of(i).until <= clock_) continue;  // no run, or one that ended
    // Counted in bulk_now_ unless an event of this step listed it.
    if (next_event_[i] > clock_) --bulk_now_;
    settle(i, clock_);
  }
}

void Scheduler::schedule_running(ScheduledBatch& batch, int64_t& budget, bool& preempted) {
  BatchSummary& sum = batch.summary;
  RunningCursor c{budget, 0};
  bulk_now_ = 0;
  grown_now_ = 0;
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
    // Those that grew their table had apply_grow count their token.
    policy_.grow_in_place_bulk(bulk_now_ - grown_now_);
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
  batch.summary.bulk_commits.clear();
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

void Scheduler::committed(SeqSlot slot, int64_t horizon) {
  const auto s = static_cast<size_t>(slot);
  if (s < bulk_run_.size() && bulk_run_[s].until != 0) bulk_run_[s].horizon = horizon;
}

void Scheduler::finish(Sequence* seq) {
  // The entry stays, marked, until the next schedule drops it with the
  // step's other finished ones: one pass instead of an erase each.
  const uint64_t id = seq->request.id;
  const auto it = std::lower_bound(running_.begin(), running_.end(), id,
                                   [](const RunningSeq& r, uint64_t v) { return r.id < v; });
  if (it == running_.end() || it->seq != seq)
    throw std::logic_error("finish() of a sequence that is not running");
  const auto index = static_cast<size_t>(it - running_.begin());
  if (run_of(index).until != 0)
    throw std::logic_error("finish() of a sequence with unsettled tokens");
  it->seq = nullptr;
  first_finished_ = finished_in_place_ == 0 ? index : std::min(first_finished_, index);
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
