// GenieEngine, around the turns: construction, the co-runners' duty
// cycles, the timeline, the run's metrics and the public wrappers.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/core/llama_bench_metrics.hpp"
#include "sim/genie/genie_engine_impl.hpp"
#include "sim/genie/genie_metrics.hpp"

namespace kvsim {

using namespace dialog_detail;  // this file's own engine internals

namespace {

// The policy's on-device buffers: the genie engine's contract (the
// scenario's engine checks refuse a policy without them first).
const DeviceBufferContract& buffers_of(const InstanceSpec& s) {
  const DeviceBufferContract* buffers = s.policy().device_buffers();
  if (buffers == nullptr)
    throw std::invalid_argument(fmt::format(
        "kv_cache.policy '{}' keeps no on-device buffers: the genie engine runs Genie's update "
        "modes (shift_concat, pointer_shift, smart_mask, sliding_window over one of them) and "
        "llama_cells",
        s.policy().display_name()));
  return *buffers;
}

std::unique_ptr<GenieKvPolicy> scenario_policy(const InstanceSpec& s) {
  return buffers_of(s).make(s.model, s.kv.dtype_bytes());
}

const DialogWorkloadSpec& dialog_spec(const InstanceSpec& s) {
  if (!s.workload || !std::holds_alternative<DialogWorkloadSpec>(s.workload->body))
    throw std::invalid_argument(
        "the dialog engine needs a `kind: dialog` or `kind: llama_bench` workload");
  return std::get<DialogWorkloadSpec>(s.workload->body);
}

const HtpSpec& htp_of(const InstanceSpec& s) {
  if (!s.device.htp)
    throw std::invalid_argument(
        fmt::format("the dialog engine needs a kind: htp device, not '{}'", s.device.name));
  return *s.device.htp;
}

}  // namespace

GenieEngine::Impl::Impl(const InstanceSpec& scenario, Simulator& sim, EngineUplink& uplink,
                        RunSink* sink, std::unique_ptr<GenieKvPolicy> policy)
    : s_(scenario),
      shell_("genie", scenario, sim, uplink, sink),
      sim_(sim),
      dialog_(dialog_spec(scenario)),
      policy_(std::move(policy)),
      timing_(scenario.device, scenario.model, scenario.kv.dtype_bytes(), scenario.htp.logits),
      vtcm_(htp_of(scenario)) {
  shape_ = buffers_of(s_).shape(s_.model, s_.kv.dtype_bytes());
  update_threads_ = buffers_of(s_).update_threads();
  variants_ = shape_.ar_variants;
  ctx_size_ = shape_.ctx_size;
  std::sort(variants_.begin(), variants_.end());
  windowed_ = policy_->makes_room();
  const HtpSpec& htp = *s_.device.htp;
  vtcm_request_ = s_.htp.llm_request(htp.vtcm_bytes);
  vtcm_.add_session("llm", vtcm_request_, s_.htp.vtcm_min);
  for (const CoRunnerConfig& c : s_.htp.co_runners)
    co_runner_ids_.push_back(vtcm_.add_session(c.name, c.vtcm_request, c.vtcm_min));
  if (dialog_.speculative && dialog_.speculative->drafter == Drafter::eagle_head &&
      !dialog_.speculative->draft_cost_per_token) {
    ModelSpec head = s_.model;
    head.num_hidden_layers = 1;
    if (head.layer_attention.size() > 1) head.layer_attention.resize(1);
    draft_timing_.emplace(s_.device, head, s_.kv.dtype_bytes());
  }
  if (dialog_.bench) bench_samples_.resize(dialog_.bench->tests.size());
  init_kv_vtcm();
  host_work_ = s_.policy().host_work(s_);
}

// ---------------------------------------------------------------------------
// Co-runners: burst k nominally starts at start + k * period and holds its
// VTCM for `busy` once granted. A burst that waited past later nominal
// starts drops them (a frame model skips the frames it missed).

void GenieEngine::Impl::co_runner_burst(size_t index, int64_t burst) {
  if (stopped_) return;
  const int32_t id = co_runner_ids_[index];
  vtcm_.acquire(id, sim_.now(), [this, index, burst](const VtcmGrant&) {
    const TimeNs busy = s_.htp.co_runners[index].busy;
    sim_.schedule_in(busy, kPrioDone, [this, index, burst] { co_runner_release(index, burst); });
  });
}

void GenieEngine::Impl::co_runner_release(size_t index, int64_t burst) {
  const CoRunnerConfig& c = s_.htp.co_runners[index];
  const TimeNs now = sim_.now();
  vtcm_.release(co_runner_ids_[index], now);
  if (stopped_) return;
  int64_t next = burst + 1;
  if (c.start + next * c.period < now) next = (now - c.start + c.period - 1) / c.period;
  sim_.schedule_at(c.start + next * c.period, kPrioArrival,
                   [this, index, next] { co_runner_burst(index, next); });
}

// ---------------------------------------------------------------------------

void GenieEngine::Impl::observe(TimeNs now, int64_t step_tokens, TimeNs step_latency,
                                bool force_row) {
  kv_used_.advance(now);
  kv_used_.set(used_bytes());
  const bool waiting = vtcm_.waiting(kLlmSession);
  TimelineRow row{now,         turn_ && !waiting ? 1 : 0, waiting ? 1 : 0,        0,
                  0,           kv_used_.current(),        policy_->tokens_held(), step_tokens,
                  step_latency};
  row.pool_of_blocks = false;  // Genie buffers: tokens held, no blocks, no swap
  row.step_seqs = step_tokens > 0 ? 1 : 0;
  shell_.timeline(row, force_row);
}

void GenieEngine::Impl::start() {
  shell_.start();
  for (size_t i = 0; i < s_.htp.co_runners.size(); ++i) {
    sim_.schedule_at(s_.htp.co_runners[i].start, kPrioArrival,
                     [this, i] { co_runner_burst(i, 0); });
  }
}

RunMetrics GenieEngine::Impl::finish() {
  if (!stopped_ || turn_) throw std::logic_error("the dialog run ended with a turn in flight");

  RunMetrics m = shell_.common_metrics(s_.policy().display_name(), passes_, end_time_);
  const GenieAccounting acc = policy_->accounting();
  m.kv_cache.capacity_tokens = policy_->capacity_tokens(1);
  m.kv_cache.kv_bytes_per_token = shape_.column_bytes();
  m.kv_cache.peak_used_bytes = kv_used_.peak();
  m.kv_cache.mean_used_bytes = kv_used_.mean(static_cast<double>(end_time_));
  m.kv_cache.bytes_moved = acc.bytes_moved;
  m.kv_cache.pointer_updates = acc.pointer_updates;
  m.kv_cache.window_evicted_tokens = acc.window_evicted_tokens;
  GenieRunMetrics& g = m.part<GenieRunMetrics>();
  g.buffer_bytes = acc.buffer_bytes;
  g.compactions = acc.compactions;
  g.tensor_registrations = acc.tensor_registrations;
  g.mask_bytes = mask_bytes_;
  g.variant_switches = acc.variant_switches;
  g.rewinds = acc.rewinds;
  g.attention_read_tokens = attention_read_;
  g.attention_useful_tokens = attention_useful_;
  g.context_resets = context_resets_;
  g.session_io_bytes = session_io_bytes_;
  m.memory.device_bytes = s_.device.memory_bytes;
  m.memory.weights_bytes = s_.model.weight_bytes();
  m.memory.kv_bytes = acc.buffer_bytes;
  g.sessions = vtcm_.report();
  g.vtcm_bytes = g.sessions.front().vtcm_granted_bytes;
  g.vtcm.requested_bytes = vtcm_request_;
  g.vtcm.granted_bytes = g.sessions.front().vtcm_granted_bytes;
  g.vtcm.wait_ms = vtcm_.total_wait_ms();
  g.vtcm.sessions_waited = vtcm_.sessions_waited();
  report_kv_vtcm(g);
  if (dialog_.bench) {
    LlamaBenchMetrics& b = m.part<LlamaBenchMetrics>();
    for (size_t i = 0; i < dialog_.bench->tests.size(); ++i) {
      const LlamaBenchTest& t = dialog_.bench->tests[i];
      b.tests.push_back({t.name, t.key, t.n_prompt, t.n_gen, t.n_depth, bench_samples_[i]});
    }
  }
  policy_->report(m);
  if (host_work_) host_work_->report(m);
  for (const auto& o : observers_) o->report(m);
  return m;
}

// No paged pool on a phone: the report's memory table shows the device, the
// weights and the Genie buffers (memory.kv_bytes).
PoolSizing GenieEngine::Impl::memory_plan() const {
  PoolSizing p;
  p.budget =
      static_cast<Bytes>(static_cast<double>(s_.device.memory_bytes) * s_.kv.memory_fraction);
  p.weights_bytes = s_.model.weight_bytes();
  p.kv_budget = policy_->accounting().buffer_bytes;
  p.kv_bytes_per_token = shape_.column_bytes();
  p.capacity_tokens = policy_->capacity_tokens(1);
  return p;
}

// ---------------------------------------------------------------------------

GenieEngine::GenieEngine(const InstanceSpec& scenario, RunSink* sink)
    : GenieEngine(scenario, sink, scenario_policy(scenario)) {}

GenieEngine::GenieEngine(const InstanceSpec& scenario, RunSink* sink,
                         std::unique_ptr<GenieKvPolicy> policy)
    : solo_(std::make_unique<SoloRig>(scenario)),
      impl_(std::make_unique<Impl>(scenario, solo_->sim, solo_->pump, sink, std::move(policy))) {}

GenieEngine::GenieEngine(const InstanceSpec& scenario, Simulator& sim, EngineUplink& uplink,
                         RunSink* sink)
    : impl_(std::make_unique<Impl>(scenario, sim, uplink, sink, scenario_policy(scenario))) {}

GenieEngine::~GenieEngine() = default;

RunMetrics GenieEngine::run() {
  if (!solo_)
    throw std::logic_error("GenieEngine::run: the engine is on a shared clock; run that clock");
  return run_engine_alone(*this, solo_->sim, solo_->pump);
}

void GenieEngine::start() {
  impl_->start();
}

void GenieEngine::submit(Request request) {
  impl_->submit(std::move(request));
}

RunMetrics GenieEngine::finish() {
  return impl_->finish();
}

PoolSizing GenieEngine::memory_plan() const {
  return impl_->memory_plan();
}

void GenieEngine::set_progress(std::function<void(const RunProgress&)> callback) {
  impl_->shell_.set_progress(std::move(callback));
}

void GenieEngine::set_pass_callback(std::function<void(const GeniePassRecord&)> callback) {
  impl_->pass_callback_ = std::move(callback);
}

void GenieEngine::add_observer(std::unique_ptr<GenieObserver> observer) {
  impl_->observers_.push_back(std::move(observer));
}

const GenieKvPolicy& GenieEngine::policy() const {
  return *impl_->policy_;
}

}  // namespace kvsim
