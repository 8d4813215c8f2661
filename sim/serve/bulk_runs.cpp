// The scheduler's runs of bulk decodes (SchedulerParams::bulk_decodes): a
// running decode that needs nothing from the policy but room in its block,
// a fill committed after the step or a new block in arrival order takes its
// tokens without being an item of the batch; its Sequence is settled when
// it next needs the policy, finishes, is preempted or is left out.
#include <algorithm>

#include "sim/cache/paged_policy.hpp"
#include "sim/serve/scheduler.hpp"

namespace kvsim {

void Scheduler::settle(size_t i, int64_t now) {
  BulkRun& entry = run_of(i);
  const BulkRun run = entry;
  if (run.until == 0) return;
  run_sum_ -= run.base - run.since;
  const int64_t end = std::min(run.until, now);
  entry = {};
  next_event_.set(i, 0);
  // Each bulk step computed one token and sampled one, the last of them at
  // the end of the step before `now` (a sequence left out of a step is
  // settled then, so its bulk steps are the latest steps).
  if (const int64_t taken = end - run.since; taken > 0) {
    Sequence* seq = run.seq;
    seq->computed += taken;
    seq->generated += taken;
    seq->last_token_at = last_step_end_;
  }
  if (const int64_t taken = end - run.policy_since; taken > 0)
    policy_.settle_in_place(slots_[i], taken);
  // A commit of a bulk step told the run its horizon (committed()), not
  // the Sequence.
  if (run.horizon >= 0) run.seq->commit_horizon = run.horizon;
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
  const SeqSlot slot = slots_[i];
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
  if (events_in_bulk_) run.room_until = run.policy_since + policy_.in_place_room(slot);
  run.seq = running_[i].seq;
  run_of(i) = run;
  next_event_.set(i, events_in_bulk_ ? next_event(run) : run.until);
  run_sum_ += run.base - run.since;
  run_sum_new_ += run.base - run.since;
}

int64_t Scheduler::next_event(const BulkRun& run) {
  // The steps before room_until fit in place.
  int64_t next = std::min(run.until, run.room_until);
  if (run.horizon < 0) return std::min(next, run.policy_since);
  // The step whose token is the horizon's last: base + t - since + 1 == horizon
  // (no overflow for a horizon of "never").
  const int64_t to_horizon = run.horizon - 1 - run.base;
  if (to_horizon < next - run.since) next = run.since + to_horizon;
  return next;
}

namespace {
// Whether a commit of `Policy` reads the in-place count settle_in_place
// keeps (a policy says it does not with kCommitReadsTokensInPlace = false;
// KvCachePolicy in general may).
template <class Policy>
constexpr bool commit_reads_tokens_in_place() {
  if constexpr (requires { Policy::kCommitReadsTokensInPlace; })
    return Policy::kCommitReadsTokensInPlace;
  else
    return true;
}
}  // namespace

template <class Policy>
inline bool Scheduler::advance_at_event(Policy& policy, size_t i, SeqSlot slot, BulkRun& run,
                                        ScheduledBatch& batch) {
  const int64_t now = clock_;
  Sequence* seq = run.seq;
  if (run.horizon < 0) run.horizon = seq->commit_horizon;  // no committed() since a commit
  // The policy hears of the bulk steps before this one only when it is
  // asked something: before a new block (apply_grow counts this step's
  // token), or with this step's token before a commit that reads them.
  bool grown = false;
  if (now >= run.room_until) {
    const SettledGrowth growth =
        policy.settle_and_grow(slot, std::max<int64_t>(now - run.policy_since, 0), 1);
    run.policy_since = now;
    if (!growth.grown) return false;  // a preemption: one by one from here
    run.policy_since = now + 1;
    run.room_until = run.policy_since + growth.room;
    grown = true;
    ++grown_now_;
  }
  const int64_t computed = run.base + (now - run.since) + 1;  // after this step
  if (computed >= run.horizon) {
    // The engine commits it after the step: its content is loaded from now.
    __builtin_prefetch(&content_[static_cast<size_t>(slot)]);
    // The policy's count of its tokens is settled before the commit, unless
    // the policy's commit never reads it: then the next settle counts
    // these steps too.
    if constexpr (commit_reads_tokens_in_place<Policy>()) {
      if (!grown) policy.settle_in_place(slot, now + 1 - run.policy_since);
      run.policy_since = now + 1;
    }
    batch.summary.bulk_commits.push_back(
        {slot, computed, run.generated + (now - run.since), this, &Scheduler::content_of});
    run.horizon = -1;  // the commit moves it: committed() tells
    // So the next step looks again, and learns the new horizon there.
    next_event_.set_ahead(i, now + 1);
    return true;
  }
  next_event_.set_ahead(i, next_event(run));
  return true;
}

template <class Policy>
size_t Scheduler::schedule_running_in_bulk(RunningCursor& c, ScheduledBatch& batch) {
  // The class bulk_loop_for checked policy_ to be.
  Policy& policy = static_cast<Policy&>(policy_);
  const size_t n = running_.size();
  const SeqSlot* const slot = slots_.data();
  BulkRun* const runs = bulk_run_.data();
  const int64_t now = clock_;
  // A run with no event in this step takes it in bulk: nothing to write.
  // The others' positions are listed.
  // (Room for every entry, kept from step to step: never shrunk, so that
  // no step writes zeros into it.)
  if (one_by_one_.size() < n) one_by_one_.resize(n);
  const uint32_t* const listed = one_by_one_.data();
  const size_t m = next_event_.list_due(now, one_by_one_.data());
  // Every entry not listed takes its bulk step, and so does every listed
  // one at an event of its run (counted as it takes it).
  int64_t bulk = static_cast<int64_t>(n - m);
  // Then the others in order, with the budget the one-by-one loop would
  // have when it reached each (every bulk decode before it took one
  // token): runs at an event take their step in bulk after a look, the
  // rest are scheduled one by one. Blocks are allocated in this order.
  // The budget left after the previous listed entry is reach - prev: each
  // bulk decode from prev on takes one token and moves prev on by one, so
  // only an entry scheduled one by one changes `reach`, and the budget runs
  // out at the first entry at or past it.
  int64_t reach = c.left;
  size_t prev = 0;  // entries before the next listed entry start here
  constexpr size_t kAhead = 4;
  for (size_t k = 0; k < m; ++k) {
    const size_t pos = listed[k];
    // Each of them reads its run and the policy's record of it, both far
    // apart: loaded a few entries ahead. (An event reads no Sequence; the
    // few entries scheduled one by one in a steady step do.)
    if (k + kAhead < m) {
      const SeqSlot ahead = slot[listed[k + kAhead]];
      policy.prefetch(ahead);
      __builtin_prefetch(&runs[static_cast<size_t>(ahead)]);
    }
    // The budget runs out among the bulk decodes before it (or leaves this
    // entry nothing).
    if (static_cast<int64_t>(pos) >= reach) {
      bulk_now_ = bulk;
      return stop_in_bulk(prev, reach - static_cast<int64_t>(prev), c);
    }
    const SeqSlot s = slot[pos];
    BulkRun& run = runs[static_cast<size_t>(s)];
    const bool in_run = run.until > now;
    if (in_run && advance_at_event(policy, pos, s, run, batch)) {
      ++bulk;
    } else {
      c.left = reach - static_cast<int64_t>(pos);
      c.bulk = static_cast<int64_t>(pos - batch.items.size());
      // A preemption (no block for an event, or none for grow_one): the
      // one-by-one loop takes over at this entry, and the entries after it
      // go one by one too.
      if (in_run || !grow_one(pos, c, batch)) {
        bulk_now_ = bulk;
        end_runs_from(pos + 1);
        return pos;
      }
      reach = c.left + static_cast<int64_t>(pos + 1);
    }
    prev = pos + 1;
  }
  bulk_now_ = bulk;
  if (reach < static_cast<int64_t>(n))
    return stop_in_bulk(prev, reach - static_cast<int64_t>(prev), c);
  c.left = reach - static_cast<int64_t>(n);
  c.bulk = bulk;
  return n;
}

Scheduler::BulkLoop Scheduler::bulk_loop_for(KvCachePolicy& policy) {
  if (dynamic_cast<PagedPolicy*>(&policy) != nullptr)
    return &Scheduler::schedule_running_in_bulk<PagedPolicy>;
  return &Scheduler::schedule_running_in_bulk<KvCachePolicy>;
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

}  // namespace kvsim
