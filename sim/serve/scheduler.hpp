#pragma once
// Continuous batching as vLLM does it (seed 001's nano-vllm is the small
// version): a waiting queue admitted first-come first-served, a running set
// that gets one token each per step (or a prefill chunk), a token budget
// (max_batched_tokens) and a sequence cap (max_num_seqs) per step, chunked
// prefill, and preemption of the most recently arrived running request when
// the cache has no room (by recompute, or by swapping its blocks to the host).
#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "sim/cache/kv_cache_policy.hpp"
#include "sim/serve/event_steps.hpp"
#include "sim/serve/front_drop_vector.hpp"
#include "sim/serve/sequence.hpp"

namespace kvsim {

struct SchedulerParams {
  int64_t max_num_seqs = 256;
  int64_t max_batched_tokens = 8192;
  bool chunked_prefill = true;
  bool swap = false;  // preemption by swap (else recompute)
  // Decodes that need nothing from the policy but room in their last block
  // are advanced in bulk, out of `items` (BatchSummary::bulk_decodes). Only
  // for callers that need no per-sequence record of such a step: no
  // numerics observer, no per-sequence pricing.
  bool bulk_decodes = false;
  // Set when an observer watches some sequences step by step (a sampled
  // numerics checker): those it names are never in bulk, and no bulk step
  // fills a block, so every block a sequence starts or fills shows in some
  // step's `items` (in-place room never reaches past a sequence's last
  // block: see KvCachePolicy::in_place_room).
  std::function<bool(const Sequence&)> watched;
  // Session KV retention (sim/serve/session_retention.hpp), when on: asked
  // for room (pins released) before an admission, a swap-in or a growth
  // gives up, with the session of the call asking (0: a growth); true when
  // it freed some, and the scheduler tries again. And told of every
  // admission, once the call holds its own references.
  std::function<bool(uint64_t spare_session)> make_room;
  std::function<void(const Sequence&, int64_t hit_tokens)> admitted;
  // Async loads of lower-tier hits (sim/serve/async_loads.hpp), when set:
  // called with an admitted sequence whose hits came from a tier, once its
  // blocks are allocated; true parks it (no token of it scheduled) until
  // load_landed() gives it back. As vLLM's connector defers every lookup
  // while max_num_seqs requests are loading (max_concurrent_loads), no
  // admission is tried then.
  std::function<bool(Sequence&)> load_async;
  // Speculative decoding (sim/serve/speculation.hpp): a running decode is
  // scheduled with up to this many drafts after its token (never more than
  // its output needs), all in the token budget, as vLLM V1 schedules
  // num_tokens_with_spec. 0: off. Needs bulk_decodes off.
  int64_t speculative_tokens = 0;
};

struct ScheduledSeq {
  Sequence* seq = nullptr;
  int64_t tokens = 0;  // tokens computed for it in this step
};

// How the scheduler sums a step while it builds it, so the engine need not
// walk every sequence to price it or to commit it. A decode is one token
// that samples: computed + 1 == num_tokens().
struct BatchSummary {
  int64_t decodes = 0;
  int64_t decode_context = 0;  // sum of computed over the decodes
  // Items (indices into `items`, in batch order) that are not a decode, or
  // reach their commit horizon with this step: the only ones whose
  // commit() can change anything (Sequence::commit_horizon).
  std::vector<uint32_t> others;
  std::vector<uint32_t> at_horizon;
  // Per entry of at_horizon: how many bulk_commits come before it in batch
  // order (those made before the item was added).
  std::vector<uint32_t> at_horizon_bulk_commits;
  // Sequences whose async loads landed, scheduled again this step.
  std::vector<Sequence*> resumed;
  // Sequences taken from the waiting queue this step.
  std::vector<Sequence*> admitted;
  // Running decodes advanced in bulk (SchedulerParams::bulk_decodes): each
  // computes one token and samples it, does not finish, and sampled its
  // last token at `bulk_last_token_at` (the end of the step before); those
  // that reach their commit horizon are listed in `bulk_commits`. They are counted in `decodes` and
  // `decode_context`, not in `items`; their Sequence fields (computed, generated, last_token_at)
  // are settled by the scheduler when it next looks at them.
  int64_t bulk_decodes = 0;
  TimeNs bulk_last_token_at = -1;
  // Per item: the bulk decodes before it in batch order (running sequences
  // in arrival order, then swapped-in, then admitted ones).
  std::vector<uint32_t> bulk_before;
  // Bulk decodes whose token reaches their commit horizon in this step (it
  // fills their last block): the engine commits them after the step, in
  // batch order among the items of `at_horizon` (at_horizon_bulk_commits),
  // as it would commit them as items. Their Sequence lags (see bulk_decodes): each entry is already
  // the commit KvCachePolicy::commit_step takes (a step with no item to commit hands the list over
  // as it is), with `generated` and `computed_tokens` as the one-by-one step has them (output
  // tokens known before this step's sample; tokens in the cache after it), the content from
  // Scheduler::content_of (the scheduler as `source`), and the horizon
  // after the commit for Scheduler::committed (which settles it in the
  // Sequence with the rest), so that the commit does not touch the Sequence.
  std::vector<StepCommit> bulk_commits;
};

struct ScheduledBatch {
  std::vector<ScheduledSeq> items;
  // Sequences preempted while building this step (their KV left the device:
  // swapped out, or dropped for recompute) and sequences swapped back in.
  std::vector<Sequence*> preempted;
  std::vector<Sequence*> swapped_in;
  Bytes swap_in_bytes = 0;
  Bytes swap_out_bytes = 0;
  int64_t total_tokens = 0;
  BatchSummary summary;
  bool empty() const {
    return items.empty() && summary.bulk_decodes == 0 && swap_in_bytes == 0 && swap_out_bytes == 0;
  }
  // Sequences scheduled in this step: the items and the bulk decodes.
  int64_t num_seqs() const { return static_cast<int64_t>(items.size()) + summary.bulk_decodes; }
};

class Scheduler {
 public:
  Scheduler(const SchedulerParams& params, KvCachePolicy& policy);

  void add_waiting(Sequence* seq);
  // Builds the next step. Mutates the cache through plan/apply.
  void schedule(ScheduledBatch& batch);
  // The commit after a step moved the sequence in `slot` to `horizon`
  // (KvCachePolicy::commit_horizon): its run, if it goes on, need not read
  // its Sequence to learn it. Required after the commit of a bulk decode
  // (BatchSummary::bulk_commits), whose Sequence learns it when settled.
  void committed(SeqSlot slot, int64_t horizon) {
    const auto s = static_cast<size_t>(slot);
    if (s < bulk_run_.size() && bulk_run_[s].until != 0) bulk_run_[s].horizon = horizon;
  }
  // The content of the running sequence in `slot` with `generated` output
  // tokens known, as a commit takes it, without a read of its Sequence.
  TokenView content(SeqSlot slot, int64_t generated) const {
    TokenView view = content_[static_cast<size_t>(slot)].view;
    view.output_len = generated;
    return view;
  }
  // content() as a StepCommit::ContentOf, `scheduler` the Scheduler.
  static TokenView content_of(const void* scheduler, SeqSlot slot, int64_t generated) {
    return static_cast<const Scheduler*>(scheduler)->content(slot, generated);
  }
  // Removes a finished sequence from the running set and releases its
  // cache; with `keep_slot` the slot stays held and is returned (the
  // caller releases it later: a session's retained blocks), else kNoSeq.
  SeqSlot finish(Sequence* seq, bool keep_slot = false);
  // The step built last ended at `now`: its samples, bulk decodes' too, came then.
  void step_done(TimeNs now) { last_step_end_ = now; }
  // Every running sequence's Sequence fields brought up to date (bulk steps
  // settled); a caller that reads them all between steps calls this first.
  void settle_all() { settle_all(clock_ + 1); }
  // Turns bulk decodes on or off between steps (off settles every sequence).
  void set_bulk_decodes(bool on);
  // Drops the head of the waiting queue (it can never be admitted).
  Sequence* reject_head();

  // A parked sequence's load landed: the next schedule takes it (before
  // the waiting queue's head, which arrived after it).
  void load_landed(Sequence* seq);
  // Parked sequences (load_async) count as waiting, as vLLM keeps a
  // WAITING_FOR_REMOTE_KVS request in its waiting queue.
  size_t num_loading() const { return loading_; }
  size_t num_waiting() const { return waiting_.size() + loading_; }
  size_t num_running() const { return running_.size() - finished_at_.size(); }
  size_t num_swapped() const { return swapped_.size(); }
  const Sequence* waiting_head() const { return waiting_.empty() ? nullptr : waiting_.front(); }
  uint64_t preemptions() const { return preemptions_; }
  uint64_t swap_fallbacks() const { return swap_fallbacks_; }

 private:
  void schedule_running(ScheduledBatch& batch, int64_t& budget, bool& preempted);
  void schedule_swapped(ScheduledBatch& batch, int64_t& budget);
  void schedule_waiting(ScheduledBatch& batch, int64_t& budget);
  // Admits the head of the waiting queue into the batch; false (nothing
  // changed) when it does not fit.
  [[gnu::noinline]] bool admit_head(ScheduledBatch& batch, int64_t& budget);
  // Gives `seq` a spare hash memo if it has none.
  void take_spare_memo(Sequence* seq);
  // Preempts the most recently arrived running sequence; returns it.
  Sequence* preempt_latest(ScheduledBatch& batch);
  void insert_running(Sequence* seq);  // keeps arrival order
  // Adds `seq` to the batch for `tokens` if the cache can grow; false if not.
  bool try_grow(Sequence* seq, int64_t tokens, ScheduledBatch& batch, int64_t& budget);
  // Tokens `seq` computes this step within `budget`: what it has to
  // compute, and a decode's drafts (SchedulerParams::speculative_tokens).
  int64_t step_tokens(const Sequence* seq, int64_t budget) const {
    int64_t tokens = seq->tokens_to_compute();
    if (params_.speculative_tokens > 0 && tokens == 1)
      tokens += std::min<int64_t>(params_.speculative_tokens,
                                  std::max<int64_t>(seq->output_tokens - seq->generated - 1, 0));
    return std::min(tokens, budget);
  }
  // Appends `seq` for `tokens` to the batch and its summary.
  static void add_item(Sequence* seq, int64_t tokens, ScheduledBatch& batch, int64_t& budget);

  // The running sequences as the step loop sees them, in arrival order,
  // with each one's slot and run of bulk steps beside it in arrays of their
  // own: a step reads only next_event_ (4 bytes a sequence) for the
  // sequences it advances in bulk without a look, neither their Sequence
  // (they live apart on the heap) nor anything it would have to write
  // back; a look reads the slot (4 bytes) and the run (one line).
  struct RunningSeq {
    Sequence* seq = nullptr;  // null once finished (dropped at the next schedule)
    uint64_t id = 0;          // request id: the arrival order
  };
  // A run of bulk steps: the sequence takes one token in bulk in every step
  // whose number (clock_) is in [since, until); `base` is its computed
  // tokens before the step `since`. Its Sequence is as of `since`, the
  // policy's count of its tokens as of `policy_since` (a step that grows
  // its table settles the policy's count on the way, and so does a commit
  // where the policy's commit reads that count). `horizon`
  // is its commit horizon, -1 when a commit moved it and committed() did
  // not say where to. `room_until` is the step whose token needs a new
  // block: the policy's in-place room counted from policy_since, asked
  // once per block (only a new block changes it; a settle uses it up in
  // step with policy_since), not at every look. `seq` is the running
  // sequence the run belongs to. One line each, so that a look loads one.
  struct alignas(64) BulkRun {
    int64_t since = 0;
    int64_t base = 0;
    int64_t until = 0;  // 0: no run
    int64_t policy_since = 0;
    int64_t horizon = -1;
    int64_t generated = 0;  // the Sequence's generated as of `since`
    int64_t room_until = 0;
    Sequence* seq = nullptr;
  };
  static_assert(sizeof(BulkRun) == 64);
  // Brings running_[i]'s Sequence and the policy's count of its tokens up
  // to date with the bulk steps it took before step `now`, and ends its run
  // (the next step schedules it one by one).
  void settle(size_t i, int64_t now);
  void settle_all(int64_t now);
  // After this step's `tokens` for running_[i] (scheduled one by one),
  // starts its run of bulk steps if it is a decode that does not finish in
  // the next step.
  void start_run(size_t i, int64_t tokens);
  // A run's step where it needs a look: its end, the step whose token
  // needs a new block, or the one that reaches its commit horizon.
  static int64_t next_event(const BulkRun& run);
  // Takes running_[i]'s bulk step at one of its events: grows its table
  // (false when the pool has no block: nothing changed but the policy's
  // count of the steps before) and lists a commit in the batch.
  // `slot` and `run` are running_[i]'s, as the caller has them, and
  // `policy` is policy_ as its class (see BulkLoop). Inlined in
  // schedule_running_in_bulk, its one caller (~120 looks a step at batch
  // 1,024): no frame to build and tear down at each.
  template <class Policy>
  [[gnu::always_inline]] bool advance_at_event(Policy& policy, size_t i, SeqSlot slot, BulkRun& run,
                                               ScheduledBatch& batch);
  // Drops the running entries of sequences finished since the last step.
  void drop_finished();
  // Where the running loop stands: budget left, and bulk decodes before
  // the next item in batch order.
  struct RunningCursor {
    int64_t left = 0;
    int64_t bulk = 0;
  };
  // The running loop in arrival order from entry `i`, one entry at a time
  // (no runs of bulk steps are left from there on).
  void schedule_running_from(size_t i, RunningCursor& c, ScheduledBatch& batch, bool& preempted);
  // Every running sequence whose run goes on with no event takes its bulk
  // step; then, in arrival order and with the budget the loop above would
  // give each, those at an event take theirs after a look and the others
  // are scheduled one by one. Returns where that loop must go on
  // (running_.size() when done): at a sequence that needs a preemption, or
  // where the budget ran out, with the runs behind that point ended first.
  // `Policy` is the class policy_ is known to be (BulkLoop).
  template <class Policy>
  size_t schedule_running_in_bulk(RunningCursor& c, ScheduledBatch& batch);
  // schedule_running_in_bulk for the policy's own class where the scheduler
  // knows a final one (PagedPolicy): the three calls of every look at a
  // run's event (prefetch, settle_and_grow, settle_in_place; ~260K a run at
  // batch 1,024) are then direct and inline, not virtual. Any other policy
  // is asked through KvCachePolicy. Chosen once, when the scheduler is made.
  using BulkLoop = size_t (Scheduler::*)(RunningCursor&, ScheduledBatch&);
  static BulkLoop bulk_loop_for(KvCachePolicy& policy);
  // Where schedule_running_in_bulk stops when the budget, `left` after entry
  // `prev - 1`, runs out among the bulk decodes from `prev` on.
  size_t stop_in_bulk(size_t prev, int64_t left, RunningCursor& c);
  // Ends the runs of the entries from `from` on that were to take a bulk
  // step in this step: they did not.
  void end_runs_from(size_t from);
  // Schedules the running entry `i` one by one (settled first); false when
  // its cache cannot grow (nothing changed).
  bool grow_one(size_t i, RunningCursor& c, ScheduledBatch& batch);

  SchedulerParams params_;
  KvCachePolicy& policy_;
  BulkLoop bulk_loop_;  // bulk_loop_for(policy_)
  std::deque<Sequence*> waiting_;
  // Sorted by request id (arrival order). The oldest finish first: their
  // entries leave at the front, where dropping them moves nothing
  // (FrontDropVector), as in slots_ and next_event_, which share its head.
  FrontDropVector<RunningSeq> running_;
  // slots_[i] is running_[i]'s seq->slot, which stays while it runs.
  FrontDropVector<SeqSlot> slots_;
  // running_[i] needs a look in step next_event_[i] (0: in every step, no
  // run); until then it takes its bulk steps unseen.
  EventSteps next_event_;
  // Runs by the policy's slot of their sequence (stable while it runs), so
  // that entries that move in running_ leave them in place.
  std::vector<BulkRun> bulk_run_;
  BulkRun& run_of(size_t i) { return bulk_run_[static_cast<size_t>(slots_[i])]; }
  // Each running sequence's content by slot, TokenView::of its request with
  // no output known, taken when it joins the running set (a request's
  // content does not change while it runs): a commit of a bulk decode
  // loads this line, not the several lines of its Sequence's request.
  struct alignas(64) RunContent {
    TokenView view;
  };
  std::vector<RunContent> content_;
  // The places in running_ of the entries finished since the last step
  // (seq == nullptr), as finish() found them: nothing moves the entries
  // between a finish and the next drop_finished.
  std::vector<size_t> finished_at_;
  TimeNs last_step_end_ = -1;
  int64_t clock_ = 0;  // steps scheduled so far: the number of the step being built
  // Sum of base - since over the runs begun (their context in step t is
  // base + t - since), and of the runs begun in this step (from the next).
  int64_t run_sum_ = 0;
  int64_t run_sum_new_ = 0;
  int64_t bulk_now_ = 0;   // sequences taking a bulk step in this step
  int64_t grown_now_ = 0;  // of which grew their table (policy counted the token)
  // Runs go on through block fills and commits (false: a step that fills a
  // block is scheduled one by one, for SchedulerParams::watched).
  bool events_in_bulk_ = true;
  std::vector<uint32_t> one_by_one_;  // schedule_running_in_bulk: entries it looks at
  std::deque<Sequence*> swapped_;     // sorted by request id
  size_t loading_ = 0;                // parked by load_async, loaded_ among them
  std::deque<Sequence*> loaded_;      // their loads landed, in that order
  // Takes loaded_'s head into the batch; false when it does not fit.
  bool resume_loaded(ScheduledBatch& batch, int64_t& budget);
  // Hash memos (Sequence::block_hashes) of finished sequences, cleared, for
  // the next admissions: as many as finished minus admitted since, at most.
  std::vector<std::vector<BlockHash>> spare_memos_;
  uint64_t preemptions_ = 0;
  uint64_t swap_fallbacks_ = 0;
};

}  // namespace kvsim
