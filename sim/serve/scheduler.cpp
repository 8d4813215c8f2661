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
    : params_(params),
      policy_(policy),
      bulk_loop_(bulk_loop_for(policy)),
      events_in_bulk_(!params.watched) {}

void Scheduler::add_waiting(Sequence* seq) {
  seq->state = SeqState::waiting;
  waiting_.push_back(seq);
}

void Scheduler::insert_running(Sequence* seq) {
  seq->state = SeqState::running;
  const uint64_t id = seq->request.id;
  // A new request arrived after every running one: it goes last, with no
  // search (a readmitted one goes back to its place).
  const size_t index =
      running_.empty() || running_.back().id < id
          ? running_.size()
          : static_cast<size_t>(
                std::upper_bound(running_.begin(), running_.end(), id,
                                 [](uint64_t v, const RunningSeq& r) { return v < r.id; }) -
                running_.begin());
  next_event_.insert(index, 0);
  const auto slot = static_cast<size_t>(seq->slot);
  if (slot >= bulk_run_.size()) {
    bulk_run_.resize(slot + 1);
    content_.resize(slot + 1);
  }
  bulk_run_[slot] = {};
  content_[slot].view = TokenView::of(seq->request.prompt, seq->request.output, 0);
  slots_.insert(index, seq->slot);
  running_.insert(index, RunningSeq{seq, id});
}

void Scheduler::drop_finished() {
  if (finished_at_.empty()) return;
  // The gaps close from the side with fewer entries to move: the entries
  // before the last finished one move up and the front leaves (the oldest
  // finish first, so this is usually a few entries), or those after the
  // first finished one move down. Either way the order stays arrival order,
  // and only the places finish() noted are read, not the entries between.
  std::sort(finished_at_.begin(), finished_at_.end());
  const size_t n = running_.size();
  const size_t gone = finished_at_.size();
  const size_t first = finished_at_.front();
  const size_t last = finished_at_.back();
  if (last + 1 - gone <= n - first - gone) {
    // The kept stretch before the j-th finished entry moves up by the
    // finished ones from there on, the last stretch first.
    for (size_t j = gone; j-- > 0;) {
      const size_t begin = j == 0 ? 0 : finished_at_[j - 1] + 1;
      const size_t end = finished_at_[j];
      if (begin == end) continue;
      running_.move_up(begin, end, end + (gone - j));
      slots_.move_up(begin, end, end + (gone - j));
      next_event_.move_up(begin, end, end + (gone - j));
    }
    running_.drop_front(gone);
    slots_.drop_front(gone);
    next_event_.drop_front(gone);
    // Back to the start of the storage once the places left behind
    // outnumber the entries: each drop's share of that move is O(1).
    if (running_.head() >= running_.size()) {
      running_.rewind();
      slots_.rewind();
      next_event_.rewind();
    }
  } else {
    // The kept stretch after the j-th finished entry moves down by the
    // finished ones up to there, the first stretch first.
    for (size_t j = 0; j < gone; ++j) {
      const size_t begin = finished_at_[j] + 1;
      const size_t end = j + 1 < gone ? finished_at_[j + 1] : n;
      if (begin == end) continue;
      running_.move_down(begin, end, begin - (j + 1));
      slots_.move_down(begin, end, begin - (j + 1));
      next_event_.move_down(begin, end, begin - (j + 1));
    }
    running_.resize(n - gone);
    slots_.resize(n - gone);
    next_event_.resize(n - gone);
  }
  finished_at_.clear();
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
  const auto bulk_commits = static_cast<uint32_t>(sum.bulk_commits.size());
  if (tokens == 1 && seq->computed + 1 == seq->known_tokens()) {
    ++sum.decodes;
    sum.decode_context += seq->computed;
    if (seq->computed + 1 >= seq->commit_horizon) {
      sum.at_horizon.push_back(index);
      sum.at_horizon_bulk_commits.push_back(bulk_commits);
    }
  } else {
    sum.others.push_back(index);
    sum.at_horizon.push_back(index);
    sum.at_horizon_bulk_commits.push_back(bulk_commits);
  }
}

Sequence* Scheduler::preempt_latest(ScheduledBatch& batch) {
  // Not yet scheduled in this step (the loop goes front to back), so its
  // bulk steps are all of earlier steps.
  settle(running_.size() - 1, clock_);
  Sequence* victim = running_.back().seq;
  running_.pop_back();
  slots_.pop_back();
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
  // No run is open while bulk decodes are off (set_bulk_decodes settles
  // every one first): the run's line is not read.
  if (params_.bulk_decodes) settle(i, clock_);
  Sequence* seq = running_[i].seq;
  const int64_t tokens = step_tokens(seq, c.left);
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
      // Retained sessions' blocks go before any running request does.
      if (params_.make_room && params_.make_room(0)) continue;
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
  if (params_.bulk_decodes)
    for (; i < running_.size(); ++i) settle(i, clock_);
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
      i = (this->*bulk_loop_)(c, batch);
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
    SwapPlan plan = policy_.plan_swap_in(seq->host);
    while (!plan.fits && params_.make_room && params_.make_room(seq->request.session))
      plan = policy_.plan_swap_in(seq->host);
    if (!plan.fits) break;
    seq->slot = policy_.apply_swap_in(seq->host, plan);
    seq->commit_horizon = 0;
    seq->host = -1;
    batch.swap_in_bytes += plan.bytes;
    batch.swapped_in.push_back(seq);
    swapped_.pop_front();
    insert_running(seq);
    try_grow(seq, step_tokens(seq, budget), batch, budget);
  }
}

void Scheduler::schedule_waiting(ScheduledBatch& batch, int64_t& budget) {
  while (!loaded_.empty() && static_cast<int64_t>(num_running()) < params_.max_num_seqs &&
         budget > 0) {
    if (!resume_loaded(batch, budget)) return;  // FCFS: the head waits behind it
  }
  // Most steps of a light load find nobody waiting: the check costs no
  // frame of admit_head's size.
  while (!waiting_.empty() && static_cast<int64_t>(num_running()) < params_.max_num_seqs &&
         budget > 0) {
    if (params_.load_async && static_cast<int64_t>(loading_) >= params_.max_num_seqs) break;
    if (!admit_head(batch, budget)) break;
  }
}

namespace {
// A waiting sequence's record has gone cold since its arrival, and
// admission reads nearly all of its lines (its lengths, its request's
// contents, its hash memo): asked for together, their misses overlap
// instead of coming one read after another.
void prefetch_record(const Sequence* seq) {
  const auto* bytes = reinterpret_cast<const char*>(seq);
  for (size_t at = 0; at < sizeof(Sequence); at += 64) __builtin_prefetch(bytes + at);
}
}  // namespace

bool Scheduler::admit_head(ScheduledBatch& batch, int64_t& budget) {
  Sequence* seq = waiting_.front();
  prefetch_record(seq);
  // The next one too: a step that admits several (a first step, or one
  // after many finished) finds it loaded.
  if (waiting_.size() > 1) prefetch_record(waiting_[1]);
  take_spare_memo(seq);
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
    policy_.give_back(std::move(hit));
    return false;  // FCFS: the head waits for a step with room for its whole prompt
  }
  AdmitPlan plan = policy_.plan_admit(std::move(hit), arrived + tokens);
  // Retained sessions' blocks (but the asking call's own) go before the
  // head waits; the hit stays valid (released blocks stay cached).
  while (!plan.fits && params_.make_room && params_.make_room(seq->request.session))
    plan = policy_.plan_admit(std::move(plan.hit), arrived + tokens);
  if (!plan.fits) {
    policy_.give_back(std::move(plan.hit));
    return false;  // FCFS: nobody overtakes the head
  }
  seq->slot = policy_.apply_admit(plan);
  if (params_.admitted) params_.admitted(*seq, plan.hit.cached_tokens);
  seq->commit_horizon = 0;
  seq->computed = plan.hit.cached_tokens + arrived;
  if (!seq->admitted_once) {
    seq->cached_tokens = plan.hit.cached_tokens;
    seq->admitted_once = true;
  }
  const bool from_tiers = !plan.hit.tier_hits.empty();
  policy_.give_back(std::move(plan.hit));
  waiting_.pop_front();
  if (from_tiers && params_.load_async && params_.load_async(*seq)) {
    ++loading_;  // its blocks are held; it computes once they are read back
    batch.summary.admitted.push_back(seq);  // its queueing ends here
    return true;
  }
  insert_running(seq);
  batch.summary.admitted.push_back(seq);
  add_item(seq, tokens, batch, budget);
  // The next head's lookup starts now (its record was requested above): its
  // first map slot loads while this step goes on, whether the next
  // admission comes in this step or a later one (its memo is kept). Only
  // with a memo it has or a spare one: started on a memo of its own, it
  // would not take the one a sequence finishing meanwhile leaves.
  if (!waiting_.empty()) {
    Sequence* next = waiting_.front();
    take_spare_memo(next);
    if (next->block_hashes.capacity() > 0)
      policy_.prepare_lookup(next->tokens(), next->block_hashes);
  }
  return true;
}

void Scheduler::load_landed(Sequence* seq) {
  loaded_.push_back(seq);
}

bool Scheduler::resume_loaded(ScheduledBatch& batch, int64_t& budget) {
  Sequence* seq = loaded_.front();
  const int64_t left = seq->tokens_to_compute();
  if (!params_.chunked_prefill && left > budget) return false;
  const int64_t tokens = std::min(left, budget);
  // Its admission allocated room for the chunk it planned then; the budget
  // of this step may take more of the prompt (a swap-in grows so too).
  if (!policy_.grow_in_place(seq->slot, tokens)) {
    const GrowPlan plan = policy_.plan_grow(seq->slot, tokens);
    if (!plan.fits) return false;
    policy_.apply_grow(seq->slot, plan, tokens);
  }
  loaded_.pop_front();
  --loading_;
  insert_running(seq);
  batch.summary.resumed.push_back(seq);
  add_item(seq, tokens, batch, budget);
  return true;
}

void Scheduler::take_spare_memo(Sequence* seq) {
  // A sequence that never had a hash memo takes one a finished sequence
  // left (cleared): its room was allocated once, for an earlier request.
  if (seq->block_hashes.capacity() == 0 && !spare_memos_.empty()) {
    seq->block_hashes = std::move(spare_memos_.back());
    spare_memos_.pop_back();
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
  batch.summary.resumed.clear();
  batch.summary.bulk_decodes = 0;
  batch.summary.bulk_last_token_at = -1;
  batch.summary.bulk_before.clear();
  batch.summary.bulk_commits.clear();
  batch.summary.at_horizon_bulk_commits.clear();
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

SeqSlot Scheduler::finish(Sequence* seq, bool keep_slot) {
  // The entry stays, marked, until the next schedule drops it with the
  // step's other finished ones: one pass instead of an erase each.
  // What the checks and the release read next is requested first, so its
  // misses overlap the search: the sequence's run and memo, and the
  // policy's records of its slot.
  const SeqSlot slot = seq->slot;
  if (static_cast<size_t>(slot) < bulk_run_.size()) {
    __builtin_prefetch(&bulk_run_[static_cast<size_t>(slot)]);
    policy_.prefetch(slot);
  }
  __builtin_prefetch(&seq->block_hashes);
  // Branch-free (a conditional move per halving): the sequences that
  // finish lie anywhere in the running set, so every branch of
  // std::lower_bound's search was a coin flip, mispredicted half the time.
  // The same entry: the first whose id is not below `id`.
  const uint64_t id = seq->request.id;
  RunningSeq* it = running_.begin();
  // Both places the next halving may read are requested while this one
  // waits on its own: the running set mostly lies beyond the core's first
  // cache by the time a step ends, and the halvings' loads come one after
  // another.
  for (size_t len = running_.size(); len > 1;) {
    const size_t half = len / 2;
    const size_t next_half = (len - half) / 2;
    if (next_half > 0) {
      __builtin_prefetch(it + next_half - 1);
      __builtin_prefetch(it + half + next_half - 1);
    }
    // A mask, not `cond ? half : 0`, which GCC 12 compiled as a branch.
    it += half & (size_t{0} - static_cast<size_t>(it[half - 1].id < id));
    len -= half;
  }
  if (it != running_.end() && it->id < id) ++it;
  if (it == running_.end() || it->seq != seq)
    throw std::logic_error("finish() of a sequence that is not running");
  const auto index = static_cast<size_t>(it - running_.begin());
  if (run_of(index).until != 0)
    throw std::logic_error("finish() of a sequence with unsettled tokens");
  it->seq = nullptr;
  finished_at_.push_back(index);
  const SeqSlot kept = keep_slot ? seq->slot : kNoSeq;
  if (!keep_slot) policy_.release(seq->slot);
  seq->slot = kNoSeq;
  seq->state = SeqState::finished;
  // Its hash memo goes to the next sequence admitted without one (a
  // saturated run admits requests that have waited since before any
  // finished: each would allocate its own, and free it at the end).
  if (seq->block_hashes.capacity() > 0) {
    seq->block_hashes.clear();
    spare_memos_.push_back(std::move(seq->block_hashes));
  }
  return kept;
}

Sequence* Scheduler::reject_head() {
  if (waiting_.empty()) return nullptr;
  Sequence* seq = waiting_.front();
  waiting_.pop_front();
  seq->state = SeqState::finished;
  return seq;
}

}  // namespace kvsim
