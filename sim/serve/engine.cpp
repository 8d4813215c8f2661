#include "sim/serve/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "sim/cache/policy_registry.hpp"
#include "sim/served_metrics.hpp"

namespace kvsim {
namespace {
// Same-time events: finish the step first, then take arrivals, then start the
// next step, so a request arriving exactly when a step ends joins the next one.
constexpr int32_t kPrioStepDone = 0;
constexpr int32_t kPrioArrival = 1;
constexpr int32_t kPrioKick = 2;

}  // namespace

ServingEngine::ServingEngine(const ScenarioSpec& scenario, RunSink* sink)
    : scenario_(scenario), sink_(sink ? sink : &null_sink_) {
  sizing_ = size_paged_pool(scenario.model, scenario.pool_input());
  policy_ = make_cache_policy(scenario.cache, sizing_);
  if (!policy_)
    throw std::logic_error(fmt::format("no cache policy named '{}'", scenario.cache.policy));
  SchedulerParams sp;
  sp.max_num_seqs = scenario.scheduler.max_num_seqs;
  sp.max_batched_tokens = scenario.scheduler.max_batched_tokens;
  sp.chunked_prefill = scenario.scheduler.chunked_prefill;
  sp.swap = scenario.cache.preemption == "swap";
  scheduler_ = std::make_unique<Scheduler>(sp, *policy_);
  timing_ = std::make_unique<TimingModel>(
      scenario.device, scenario.model,
      TimingModel::Params{scenario.tp, kv_dtype_bytes(scenario.cache.dtype)});
  source_ = make_request_source(*scenario.workload, scenario.seed, scenario.model.vocab_size);
  numerics_ = make_numerics_observer(scenario, sizing_);
}

ServingEngine::~ServingEngine() = default;

Sequence* ServingEngine::new_sequence(Request&& request) {
  Sequence* seq;
  if (!free_sequences_.empty()) {
    seq = free_sequences_.back();
    free_sequences_.pop_back();
    *seq = Sequence{};
  } else {
    sequence_pool_.push_back(std::make_unique<Sequence>());
    seq = sequence_pool_.back().get();
  }
  seq->request = std::move(request);
  return seq;
}

void ServingEngine::recycle(Sequence* seq) {
  free_sequences_.push_back(seq);
}

void ServingEngine::arm_arrival() {
  const std::optional<TimeNs> next = source_->next_arrival();
  if (!next) return;
  const TimeNs at = std::max(*next, sim_.now());
  if (arrival_event_.valid()) {
    if (at >= arrival_event_time_) return;
    sim_.cancel(arrival_event_);
  }
  arrival_event_time_ = at;
  arrival_event_ = sim_.schedule_at(at, kPrioArrival, [this] { on_arrival(); });
}

void ServingEngine::on_arrival() {
  arrival_event_ = EventHandle{};
  const TimeNs now = sim_.now();
  const int64_t max_len = scenario_.max_model_len();
  const int64_t block_size = scenario_.cache.block_size;
  for (std::optional<TimeNs> t = source_->next_arrival(); t && *t <= now;
       t = source_->next_arrival()) {
    Sequence* seq = new_sequence(source_->take());
    ++arrived_;
    const int64_t total = seq->prompt_len() + seq->output_len();
    const int64_t blocks = (total + block_size - 1) / block_size;
    // A request that can never be served is refused at the door, as vLLM
    // refuses prompts beyond max_model_len or larger than the whole cache.
    if (seq->prompt_len() < 1 || seq->output_len() < 1 || total > max_len ||
        blocks > sizing_.num_blocks) {
      reject(seq);
      continue;
    }
    scheduler_->add_waiting(seq);
  }
  arm_arrival();
  kick();
}

void ServingEngine::kick() {
  if (step_in_flight_ || kick_pending_) return;
  kick_pending_ = true;
  sim_.schedule_at(sim_.now(), kPrioKick, [this] {
    kick_pending_ = false;
    start_step();
  });
}

void ServingEngine::start_step() {
  if (step_in_flight_) return;
  const TimeNs now = sim_.now();
  scheduler_->schedule(batch_);
  if (batch_.empty()) {
    // Nothing runs and nothing can be admitted: the head of the queue can
    // never fit (arrival checks make this unreachable; guard anyway).
    if (scheduler_->num_running() == 0 && scheduler_->num_swapped() == 0 &&
        scheduler_->num_waiting() > 0) {
      reject(scheduler_->reject_head());
      kick();
    }
    observe(now, 0, 0);
    return;
  }
  work_.seqs.clear();
  for (const ScheduledSeq& item : batch_.items) {
    const Sequence* seq = item.seq;
    work_.seqs.push_back({item.tokens, policy_->attention_context(seq->computed),
                          seq->computed + item.tokens == seq->num_tokens()});
  }
  work_.swap_in_bytes = batch_.swap_in_bytes;
  work_.swap_out_bytes = batch_.swap_out_bytes;
  work_.kv_copy_bytes = 0;
  const StepTiming timing = timing_->price(work_);
  step_latency_ = std::max<TimeNs>(timing.latency, 1);
  // Work the policy ran for this step's admissions (seed 003: missed chunks
  // prefilled alone, chunks copied and re-rotated into the main pool) is a
  // pass of its own ahead of the batch, as the seed's model runner does it.
  if (StepWork pass; policy_->take_pending_work(pass))
    step_latency_ += timing_->price(pass).latency;
  step_in_flight_ = true;
  ++steps_;
  if (progress_ && steps_ % 4096 == 0) {
    progress_({arrived_, completed_, rejected_, static_cast<int64_t>(scheduler_->num_running()),
               static_cast<int64_t>(scheduler_->num_waiting()), now});
  }
  observe(now, batch_.total_tokens, step_latency_);
  sim_.schedule_in(step_latency_, kPrioStepDone, [this] { on_step_done(); });
}

void ServingEngine::on_step_done() {
  const TimeNs now = sim_.now();
  step_in_flight_ = false;
  for (const ScheduledSeq& item : batch_.items) {
    Sequence* seq = item.seq;
    seq->computed += item.tokens;
    policy_->commit(seq->slot, seq->tokens(), seq->computed);
  }
  if (numerics_) numerics_->on_step_done(batch_, *policy_, now);
  for (const ScheduledSeq& item : batch_.items) {
    Sequence* seq = item.seq;
    if (seq->computed < seq->num_tokens()) continue;  // prefill chunk, no token yet
    ++seq->generated;                                 // the step sampled a token
    if (seq->first_token_at < 0) seq->first_token_at = now;
    if (seq->generated >= seq->output_len()) complete(seq);
  }
  observe(now, 0, 0);
  kick();
}

void ServingEngine::complete(Sequence* seq) {
  const TimeNs now = sim_.now();
  if (numerics_) numerics_->on_release(*seq);
  scheduler_->finish(seq);
  seq->finished_at = now;
  last_completion_ = now;
  ++completed_;
  if (seq->preemptions > 0) ++preempted_requests_;
  prompt_tokens_done_ += seq->prompt_len();
  output_tokens_done_ += seq->output_len();
  ttft_.add(seq->first_token_at - seq->request.arrival);
  e2e_.add(now - seq->request.arrival);
  if (seq->generated > 1) tpot_.add((now - seq->first_token_at) / (seq->generated - 1));
  sink_->request({seq->request.id, "completed", seq->request.arrival, seq->first_token_at, now,
                  seq->prompt_len(), seq->output_len(), seq->cached_tokens, seq->preemptions,
                  seq->request.session, seq->request.turn});
  source_->on_complete(seq->request, now);
  recycle(seq);
  arm_arrival();
}

void ServingEngine::reject(Sequence* seq) {
  const TimeNs now = sim_.now();
  ++rejected_;
  seq->state = SeqState::finished;
  sink_->request({seq->request.id, "rejected", seq->request.arrival, -1, now, seq->prompt_len(),
                  seq->output_len(), 0, 0, seq->request.session, seq->request.turn});
  source_->on_complete(seq->request, now);
  recycle(seq);
  arm_arrival();
}

void ServingEngine::observe(TimeNs now, int64_t step_tokens, TimeNs step_latency, bool force_row) {
  const double dt = static_cast<double>(now - last_observed_);
  used_bytes_integral_ += static_cast<double>(current_used_bytes_) * dt;
  if (current_has_blocks_) {
    frag_integral_ += current_frag_ * dt;
    frag_time_ += dt;
  }
  last_observed_ = now;
  const CacheAccounting acc = policy_->accounting();
  current_used_bytes_ = acc.blocks_used * acc.block_bytes;
  peak_used_bytes_ = std::max(peak_used_bytes_, current_used_bytes_);
  current_has_blocks_ = acc.slots_reserved > 0;
  current_frag_ = current_has_blocks_ ? static_cast<double>(acc.slots_reserved - acc.tokens_held) /
                                            static_cast<double>(acc.slots_reserved)
                                      : 0.0;
  if (force_row || last_timeline_ < 0 ||
      now - last_timeline_ >= scenario_.output.timeline_interval) {
    last_timeline_ = now;
    sink_->timeline({now, static_cast<int64_t>(scheduler_->num_running()),
                     static_cast<int64_t>(scheduler_->num_waiting()),
                     static_cast<int64_t>(scheduler_->num_swapped()), acc.blocks_used,
                     current_used_bytes_, acc.tokens_held, step_tokens, step_latency});
  }
}

RunMetrics ServingEngine::run() {
  const auto wall_start = std::chrono::steady_clock::now();
  arm_arrival();
  sim_.run();
  if (scheduler_->num_running() + scheduler_->num_waiting() + scheduler_->num_swapped() != 0 ||
      step_in_flight_) {
    throw std::logic_error(fmt::format(
        "the run ended with requests in flight: {} running, {} waiting, {} swapped",
        scheduler_->num_running(), scheduler_->num_waiting(), scheduler_->num_swapped()));
  }
  // Every block must be back in the pool with no reference: fail loudly.
  policy_->check_drained();
  observe(sim_.now(), 0, 0, /*force_row=*/true);

  RunMetrics m;
  m.scenario = scenario_.name;
  m.seed = scenario_.seed;
  m.device = scenario_.device.name;
  m.model = scenario_.model.name;
  m.policy = std::string(policy_->name());
  m.requests.arrived = arrived_;
  m.requests.completed = completed_;
  m.requests.rejected = rejected_;
  m.requests.preempted = preempted_requests_;
  m.requests.preemptions = static_cast<int64_t>(scheduler_->preemptions());
  fill_served_metrics(
      {ttft_, tpot_, e2e_, completed_, prompt_tokens_done_, output_tokens_done_, last_completion_},
      m);
  const CacheAccounting acc = policy_->accounting();
  m.kv_cache.block_bytes = sizing_.block_bytes;
  m.kv_cache.block_size = scenario_.cache.block_size;
  m.kv_cache.num_blocks = sizing_.num_blocks;
  m.kv_cache.capacity_tokens = sizing_.capacity_tokens;
  m.kv_cache.kv_bytes_per_token = sizing_.kv_bytes_per_token;
  m.kv_cache.peak_used_bytes = peak_used_bytes_;
  const double total_ns = static_cast<double>(sim_.now());
  m.kv_cache.mean_used_bytes = total_ns > 0 ? used_bytes_integral_ / total_ns : 0.0;
  m.kv_cache.fragmentation = frag_time_ > 0 ? frag_integral_ / frag_time_ : 0.0;
  m.kv_cache.prefix_hit_rate = acc.prefix_query_tokens > 0
                                   ? static_cast<double>(acc.prefix_hit_tokens) /
                                         static_cast<double>(acc.prefix_query_tokens)
                                   : 0.0;
  m.kv_cache.bytes_moved = acc.bytes_moved;
  m.kv_cache.pointer_updates = acc.pointer_updates;
  m.kv_cache.evictions = acc.evictions;
  m.kv_cache.swapped_bytes = acc.swapped_bytes;
  m.kv_cache.window_evicted_tokens = acc.window_evicted_tokens;
  m.memory.device_bytes = scenario_.device.memory_bytes;
  m.memory.weights_bytes = sizing_.weights_bytes;
  m.memory.kv_bytes = sizing_.num_blocks * sizing_.block_bytes;
  m.memory.activation_reserve_bytes = sizing_.activation_reserve;
  m.numerics.mode = scenario_.numerics.mode;
  policy_->report(m);  // the policy's own counters (kv_cache.chunk_*, memory pools)
  if (numerics_) numerics_->report(m);
  m.workload.skipped_records = source_->skipped_records();
  m.sim.events = sim_.events_processed();
  m.sim.steps = steps_;
  m.sim.simulated_s = total_ns / 1e9;
  m.sim.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return m;
}

}  // namespace kvsim
