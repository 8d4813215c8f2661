// GenieEngine, the turns: arrival, VTCM, the passes of a turn and the Genie
// KV update after each (seed 002). Construction, co-runners and metrics are
// in genie_engine_run.cpp.
#include <fmt/format.h>

#include <algorithm>

#include "sim/genie/genie_engine_impl.hpp"
#include "workloads/rng.hpp"

namespace kvsim {

using namespace dialog_detail;  // this file's own engine internals

namespace {

// Speculative acceptance draws, keyed (seed, stream, turn, verify pass). Kept
// apart from the workload's streams (workloads/rng.hpp) so that turning
// speculation on never moves a prompt or a reply length.
constexpr auto kAcceptanceStream = static_cast<RandomStream>(0x53504543);  // "SPEC"

}  // namespace

std::string_view genie_pass_kind_name(GeniePassKind kind) {
  switch (kind) {
    case GeniePassKind::prefill:
      return "prefill";
    case GeniePassKind::decode:
      return "decode";
    case GeniePassKind::verify:
      return "verify";
  }
  return "?";
}

// ---------------------------------------------------------------------------
// Turns

void GenieEngine::Impl::submit(Request request) {
  if (turn_submitted_)
    throw std::logic_error("the dialog engine serves one turn at a time: a turn is in flight");
  turn_submitted_ = true;
  shell_.count_arrival();
  // The CPU may still be copying the previous turn's last update.
  const TimeNs start = std::max(sim_.now(), engine_free_at_);
  sim_.schedule_at(start, kPrioStart,
                   [this, r = std::move(request)]() mutable { begin_turn(std::move(r)); });
}

void GenieEngine::Impl::begin_turn(Request request) {
  Turn t;
  t.reply_tokens = static_cast<int64_t>(request.output.size());
  t.request = std::move(request);
  turn_ = std::move(t);
  const SessionCacheSpec& sc = dialog_.session_cache;
  if (turn_->request.turn == 0 && sc.restore) {
    // seed 002 loadCache: the saved conversation is read back into the
    // buffers before the first query. Installed through the policy (clear,
    // then appends of at most one pass each), priced at storage bandwidth
    // only: no pass runs and no output buffer is copied.
    (void)dispatch(0, variants_.back(), "restore");
    int64_t held = 0;
    while (held < sc.tokens) {
      held += std::min(variants_.back(), sc.tokens - held);
      (void)dispatch(held, variants_.back(), "restore");
    }
    pending_token_ = false;
    const Bytes bytes = policy_->saved_bytes();
    session_io_bytes_ += bytes;
    sim_.schedule_in(timing_.storage_time(bytes), kPrioStart, [this] { acquire_vtcm(); });
    return;
  }
  acquire_vtcm();
}

void GenieEngine::Impl::acquire_vtcm() {
  observe(sim_.now(), 0, 0);
  const TimeNs asked = sim_.now();
  vtcm_.acquire(kLlmSession, asked, [this, asked](const VtcmGrant& grant) {
    turn_->grant = grant;
    turn_->started = sim_.now();
    SpanRow wait{"vtcm_wait",         "VTCM wait", turn_->request.id,
                 turn_->request.turn, asked,       sim_.now() - asked};
    wait.bytes = grant.granted;
    shell_.span(wait);
    // The grant may come inside another session's release: start from an
    // event of our own, once the KV resident in VTCM is filled.
    const TimeNs fill = place_kv_vtcm(grant);
    sim_.schedule_at(sim_.now() + fill, kPrioStart, [this] { start_turn(); });
  });
}

void GenieEngine::Impl::start_turn() {
  Turn& t = *turn_;
  const int64_t prompt = static_cast<int64_t>(t.request.prompt.size());
  const auto capacity = [this](int64_t v) { return policy_->capacity_tokens(v); };
  if (t.request.clear_context) pending_token_ = false;  // llama-bench: llama_memory_clear
  t.input_tokens = prompt + (pending_token_ ? 1 : 0);
  int64_t position = t.request.clear_context ? 0 : policy_->n_past();
  const bool fits = windowed_ || turn_fits(position, t.input_tokens, t.reply_tokens, variants_,
                                           capacity, ctx_size_);
  const int64_t allowed =
      fits ? -1 : policy_->overflow_reply_tokens(position, t.input_tokens, t.reply_tokens);
  if (!fits && allowed >= 0) {
    // The policy refuses the turn or cuts its reply short, keeping the
    // history (llama-server with context shift off).
    const int64_t reply = std::min(allowed, t.reply_tokens);
    if (reply <= 0 || !turn_fits(position, t.input_tokens, reply, variants_, capacity, ctx_size_)) {
      reject_turn();
      return;
    }
    t.reply_tokens = reply;
  } else if (!fits) {
    // The conversation outgrew ctx_size without a sliding window: the cache
    // is cleared and the new prompt starts a fresh context alone (the
    // history is dropped, as an app does when a Genie dialog reports its
    // context full), counted in kv_cache.context_resets.
    ++context_resets_;
    position = 0;
    pending_token_ = false;
    t.input_tokens = prompt;
    if (!turn_fits(0, prompt, t.reply_tokens, variants_, capacity, ctx_size_)) {
      reject_turn();
      return;
    }
  }
  t.cached_tokens = policy_->tokens_held();
  if (position == 0) t.cached_tokens = 0;
  t.prefill = prefill_passes(t.input_tokens, variants_);
  pending_token_ = false;  // fed by this turn's first pass
  // Before the first pass: clear (n_past 0) or switch to the prefill variant.
  const int64_t first_variant = t.prefill.front().variant;
  TimeNs delay = 0;
  if (position == 0 || policy_->variant() != first_variant) {
    const KvUpdatePlan plan =
        dispatch(position, first_variant, fmt::format("turn {} before pass 0", t.request.turn));
    delay = update_time(plan);
    span_update(plan, nullptr, delay);
  }
  t.next_prefill = 1;
  start_pass(GeniePassKind::prefill, t.prefill.front(), delay);
}

// After the prefill: one AR-1 pass per token, or a speculative verify pass
// when the drafts and the full update fit the verify variant's cache dim.
PassShape GenieEngine::Impl::decode_shape(int64_t position, GeniePassKind* kind) const {
  const Turn& t = *turn_;
  const int64_t remaining = t.reply_tokens - t.generated;
  if (dialog_.speculative && remaining > 1) {
    // No more drafts than the reply still needs after the pass's own token.
    const int64_t k = std::min(dialog_.speculative->draft_tokens, remaining - 1);
    const int64_t v = smallest_variant_at_least(k + 1, variants_);
    if (v >= k + 1 && (windowed_ || position + k + 1 <= policy_->capacity_tokens(v))) {
      *kind = GeniePassKind::verify;
      return {v, k + 1};
    }
  }
  *kind = GeniePassKind::decode;
  return {1, 1};
}

void GenieEngine::Impl::start_pass(GeniePassKind kind, PassShape shape, TimeNs delay) {
  // Before the graph runs, the host writes its attention mask (seed 002
  // graphs take one in every mode; qualla's setupAttentionMask, one thread),
  // against the cache state the updates so far left.
  const Bytes mask = policy_->attention_mask_bytes();
  mask_bytes_ += mask;
  if (mask > 0) delay += timing_.cpu_copy_time(mask, 1);
  sim_.schedule_in(delay, kPrioStart, [this, kind, shape] {
    Turn& t = *turn_;
    const AttentionSpan span = policy_->attention_span();
    pending_ = Pending{};
    pending_.kind = kind;
    pending_.shape = shape;
    GeniePassRecord& r = pending_.record;
    r.turn = t.request.turn;
    r.pass = t.passes++;
    r.kind = kind;
    r.htp = HtpPass{shape.variant, shape.useful_tokens, span.read,
                    graph_vtcm_,   t.kv.graph_bytes,    t.kv.share};
    r.timing = timing_.price_pass(r.htp);
    kv_vtcm_counts_.read_bytes += static_cast<Bytes>(r.timing.kv_vtcm_bytes);
    // llama_cells: the ops llama.cpp's backend leaves to the CPU and the
    // layers an n_gpu_layers split keeps there (sim/cache/llama_backend_cost.hpp).
    if (host_work_) r.timing = host_work_->htp_pass(timing_, r.htp, r.timing);
    r.start = sim_.now();
    r.n_past_before = policy_->n_past();
    attention_read_ += span.read;
    attention_useful_ += span.useful;
    ++passes_;
    shell_.step_started(passes_, 1, 0);
    observe(sim_.now(), shape.useful_tokens, r.timing.latency);
    shell_.span({"pass", genie_pass_kind_name(kind), static_cast<uint64_t>(r.pass), r.turn, r.start,
                 r.timing.latency, shape.useful_tokens, 1, shape.variant});
    sim_.schedule_in(std::max<TimeNs>(r.timing.latency, 1), kPrioDone, [this] { on_pass_done(); });
  });
}

void GenieEngine::Impl::on_pass_done() {
  const TimeNs now = sim_.now();
  Turn& t = *turn_;
  GeniePassRecord& r = pending_.record;
  const int64_t before = r.n_past_before;
  int64_t written = pending_.shape.useful_tokens;  // entries the pass wrote
  int64_t kept = written;                          // ... that stay in the cache
  int64_t emitted = 0;                             // tokens it gave the user
  std::vector<bool> keep_mask;                     // tree drafts: the kept entries
  const bool prefill_done = t.next_prefill >= t.prefill.size();
  switch (pending_.kind) {
    case GeniePassKind::prefill:
      emitted = prefill_done ? 1 : 0;
      break;
    case GeniePassKind::decode:
      emitted = 1;
      break;
    case GeniePassKind::verify: {
      const SpeculativeSpec& sp = *dialog_.speculative;
      Rng rng = Rng::keyed(s_.seed, kAcceptanceStream, static_cast<uint64_t>(t.request.turn),
                           static_cast<uint64_t>(t.verify_passes++));
      // Tree drafts (sp.selected): the target walks the marked path among
      // the pass's entries; a chain's path is every entry.
      std::vector<int64_t> path;
      for (int64_t i = 0; i < written; ++i)
        if (sp.selected.empty() ||
            (i < static_cast<int64_t>(sp.selected.size()) && sp.selected[i] == 1))
          path.push_back(i);
      r.accepted_drafts = accepted_drafts(static_cast<int64_t>(path.size()) - 1, sp.acceptance_rate,
                                          [&rng] { return rng.uniform01(); });
      // The pass fed the last token and K drafts; it keeps the last token and
      // the accepted drafts, and emits those drafts plus its own next token.
      emitted = std::min(r.accepted_drafts + 1, t.reply_tokens - t.generated);
      kept = emitted;
      if (!sp.selected.empty()) {
        keep_mask.assign(static_cast<size_t>(written), false);
        for (int64_t i = 0; i < kept; ++i) keep_mask[static_cast<size_t>(path[i])] = true;
      }
      break;
    }
  }
  if (emitted > 0 && t.first_token < 0) t.first_token = now;
  shell_.tokens_emitted(t.last_token, emitted);
  t.generated += emitted;
  const int64_t position = before + kept;
  const bool turn_over = prefill_done && t.generated >= t.reply_tokens;

  // The next pass decides the variant this update sets (seed 002: the
  // dispatch after a pass prepares the next one).
  GeniePassKind next_kind = GeniePassKind::prefill;
  PassShape next{policy_->variant(), 0};
  if (!prefill_done) {
    next = t.prefill[t.next_prefill++];
  } else if (!turn_over) {
    next = decode_shape(position, &next_kind);
  }
  TimeNs cpu = 0;
  const std::string where = fmt::format("turn {} after pass {}", r.turn, r.pass);
  if (!keep_mask.empty()) {
    // Tree drafts: one update keeps exactly the accepted path's entries
    // (seed 002 dispatchUpdate's `selected`), nothing to rewind.
    r.update = dispatch(position, next.variant, where, std::move(keep_mask));
    cpu = update_time(r.update);
    span_update(r.update, nullptr, cpu);
  } else if (kept < written) {
    // Verify: all K + 1 entries are copied in, then the rejected ones are
    // rewound (dispatch UPDATE_OUTPUT, n_past below the current one).
    r.update = dispatch(before + written, policy_->variant(), where);
    r.extra.push_back(dispatch(position, next.variant, where + " (rewind)"));
    cpu = update_time(r.update) + update_time(r.extra.back());
    span_update(r.update, &r.extra.back(), cpu);
  } else {
    r.update = dispatch(position, next.variant, where);
    cpu = update_time(r.update);
    span_update(r.update, nullptr, cpu);
  }
  r.update_time = cpu;
  for (auto& o : observers_) o->on_pass(r, *policy_);
  if (pass_callback_) pass_callback_(r);
  observe(now, 0, 0);

  if (turn_over) {
    // The last reply token is fed by the next turn; llama-bench feeds none.
    pending_token_ = !t.request.bench;
    complete_turn(cpu);
    return;
  }
  if (next_kind == GeniePassKind::verify && dialog_.speculative)
    cpu += draft_time(next.useful_tokens - 1, position);
  start_pass(next_kind, next, cpu);
}

// The given price per draft, else the drafter's: prompt lookup is free; an
// EAGLE head drafts one token per AR-1 pass of its one layer and the LM head,
// attending over its own one-layer KV of the context so far.
TimeNs GenieEngine::Impl::draft_time(int64_t drafts, int64_t position) const {
  const SpeculativeSpec& sp = *dialog_.speculative;
  if (sp.draft_cost_per_token) return *sp.draft_cost_per_token * drafts;
  if (!draft_timing_) return 0;
  TimeNs t = 0;
  for (int64_t i = 0; i < drafts; ++i)
    t += draft_timing_->price_pass(HtpPass{1, 1, position + i, 0, 0}).latency;
  return t;
}

void GenieEngine::Impl::complete_turn(TimeNs update_time) {
  const TimeNs now = sim_.now();
  const Turn& t = *turn_;
  vtcm_.release(kLlmSession, now);
  engine_free_at_ = now + update_time;
  // llama-bench's clock (llama-bench.cpp: t_start before test_prompt, the
  // time read after test_gen's last llama_synchronize): from the turn's
  // first work to the end of its last pass's KV update, which llama.cpp
  // does inside the decode graph.
  if (t.request.bench_test >= 0)
    bench_samples_[static_cast<size_t>(t.request.bench_test)].push_back(engine_free_at_ -
                                                                        t.started);
  shell_.complete(
      {t.request, t.first_token, t.input_tokens, t.reply_tokens, t.cached_tokens, 0, t.started});
  end_turn();
}

void GenieEngine::Impl::reject_turn() {
  const TimeNs now = sim_.now();
  const Turn& t = *turn_;
  vtcm_.release(kLlmSession, now);
  shell_.reject(
      {t.request, -1, static_cast<int64_t>(t.request.prompt.size()), t.reply_tokens, 0, 0});
  end_turn();
}

// The turn is over (completed or rejected) and its request went back up (a
// closed-loop source issues the next turn from it); after the last turn the
// dialog ends.
void GenieEngine::Impl::end_turn() {
  turn_.reset();
  turn_submitted_ = false;
  if (shell_.uplink().requests_exhausted()) finish_dialog();
}

// After the last turn: save the cache (seed 002 dumpCache) and stop the
// co-runners' duty cycles.
void GenieEngine::Impl::finish_dialog() {
  TimeNs end = engine_free_at_;
  if (dialog_.session_cache.save) {
    const Bytes bytes = policy_->saved_bytes();
    session_io_bytes_ += bytes;
    end += timing_.storage_time(bytes);
  }
  end_time_ = std::max(end, sim_.now());
  sim_.schedule_at(end_time_, kPrioStop, [this] {
    stopped_ = true;
    vtcm_.finish(sim_.now());
    observe(sim_.now(), 0, 0, /*force_row=*/true);
    shell_.uplink().engine_stopped();
  });
}

// ---------------------------------------------------------------------------
// KV updates

KvUpdatePlan GenieEngine::Impl::dispatch(int64_t n_past, int64_t variant, const std::string& where,
                                         std::vector<bool> selected) {
  KvUpdatePlan plan = policy_->plan_update({n_past, variant, std::move(selected)});
  policy_->apply_update(plan);
  for (auto& o : observers_) o->on_update(plan, *policy_, where);
  return plan;
}

void GenieEngine::Impl::span_update(const KvUpdatePlan& plan, const KvUpdatePlan* rewind,
                                    TimeNs duration) {
  if (!shell_.spans_wanted()) return;
  const bool switched = plan.variant_before != plan.variant_after ||
                        (rewind != nullptr && rewind->variant_before != rewind->variant_after);
  SpanRow row{"kv_update",
              switched ? "variant switch" : "KV update",
              static_cast<uint64_t>(passes_),
              turn_ ? turn_->request.turn : -1,
              sim_.now(),
              duration};
  row.variant = rewind != nullptr ? rewind->variant_after : plan.variant_after;
  row.bytes = plan.bytes_moved() + (rewind != nullptr ? rewind->bytes_moved() : 0);
  row.pointer_updates = static_cast<int64_t>(plan.pointer_updates) +
                        (rewind != nullptr ? static_cast<int64_t>(rewind->pointer_updates) : 0);
  row.variant_switch = switched;
  shell_.span(row);
}

// seed 002: the update jobs split the KV tensors over `update_threads` CPU
// threads (cpu_copy_time); registerPointerOffset re-registers every KV
// tensor at the new offset (the policy prices it: registration_time, see
// pointer_shift_policy.cpp); a variant change switches the executing graph
// (its realignment bytes are in bytes_moved).
TimeNs GenieEngine::Impl::update_time(const KvUpdatePlan& plan) const {
  TimeNs t = timing_.cpu_copy_time(plan.bytes_moved(), update_threads_);
  t += plan.registration_time;
  if (plan.variant_before != plan.variant_after) t += timing_.variant_switch_time();
  t += kv_vtcm_sync_time(plan);  // the changes into the VTCM mirrors, if any
  // llama_cells: the K-shift and the defragmentation are graphs of their
  // own (their bytes are in bytes_moved), one launch each.
  if (plan.kshift_bytes > 0) t += s_.device.kernel_launch;
  if (plan.defrag_bytes > 0) t += s_.device.kernel_launch;
  return t;
}

}  // namespace kvsim
