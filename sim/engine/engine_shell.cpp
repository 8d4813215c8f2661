#include "sim/engine/engine_shell.hpp"

#include <algorithm>

#include "base/cancellation.hpp"

#include "sim/core/link_metrics.hpp"
#include "sim/core/served_metrics.hpp"
#include "sim/spec/instance_spec.hpp"
#include "workloads/workload.hpp"

namespace kvsim {

EngineShell::EngineShell(std::string_view engine_kind, const InstanceSpec& scenario, Simulator& sim,
                         EngineUplink& uplink, RunSink* sink)
    : engine_kind_(engine_kind),
      scenario_(scenario),
      sim_(sim),
      uplink_(uplink),
      sink_(sink ? sink : &null_sink_),
      wall_start_(std::chrono::steady_clock::now()),
      slo_(scenario.slo),
      spans_(sink_->wants_spans()) {
  if (scenario.workload && workload_has_session_graph(*scenario.workload)) enable_session_metrics();
}

void EngineShell::start() {
  wall_start_ = std::chrono::steady_clock::now();
}

void EngineShell::complete(const LeavingRequest& r) {
  const TimeNs now = sim_.now();
  const Request& q = r.request;
  last_completion_ = now;
  ++completed_;
  prompt_tokens_done_ += r.prompt_tokens;
  output_tokens_done_ += r.output_tokens;
  const TimeNs ttft = r.first_token - q.arrival;
  const TimeNs e2e = now - q.arrival;
  const TimeNs tpot = r.output_tokens > 1 ? (now - r.first_token) / (r.output_tokens - 1) : -1;
  ttft_.prefetch(ttft);
  e2e_.prefetch(e2e);
  if (tpot >= 0) tpot_.prefetch(tpot);
  ttft_.add(ttft);
  e2e_.add(e2e);
  if (tpot >= 0) tpot_.add(tpot);
  kv_wait_.add(r.kv_wait);
  if (slo_.met(ttft, tpot, e2e)) ++met_slo_;
  sink_->request({q.id, "completed", q.arrival, r.first_token, now, r.prompt_tokens,
                  r.output_tokens, r.cached_tokens, r.preemptions, q.session, q.turn, r.started,
                  r.kv_wait});
  if (sessions_) sessions_->completed(q, now, r.prompt_tokens, r.output_tokens, r.cached_tokens);
  uplink_.request_done(q, now);
}

void EngineShell::tokens_emitted(TimeNs& last_token, int64_t count) {
  if (count <= 0) return;
  const TimeNs now = sim_.now();
  if (last_token >= 0) {
    itl_.add(now - last_token);
    if (itl_mirror_) itl_mirror_->add(now - last_token);
  }
  for (int64_t i = 1; i < count; ++i) {
    itl_.add(0);
    if (itl_mirror_) itl_mirror_->add(0);
  }
  last_token = now;
}

void EngineShell::tokens_emitted_after(TimeNs last_token, int64_t times) {
  if (times <= 0) return;
  const TimeNs itl = sim_.now() - last_token;
  itl_.add_repeated(itl, static_cast<uint64_t>(times));
  if (itl_mirror_) itl_mirror_->add_repeated(itl, static_cast<uint64_t>(times));
}

void EngineShell::reject(const LeavingRequest& r) {
  const TimeNs now = sim_.now();
  const Request& q = r.request;
  ++rejected_;
  sink_->request({q.id, "rejected", q.arrival, -1, now, r.prompt_tokens, r.output_tokens, 0, 0,
                  q.session, q.turn, r.started});
  uplink_.request_done(q, now);
}

// Taken by reference and copied only when a row is written: most steps
// fall inside the interval, and a row passed by value is copied twice a step.
void EngineShell::timeline(const TimelineRow& step, bool force) {
  if (timeline_due(step.time, step.step_tokens, step.step_latency, step.step_seqs, force))
    write_timeline(step);
}

bool EngineShell::timeline_due(TimeNs now, int64_t step_tokens, TimeNs step_latency,
                               int64_t step_seqs, bool force) {
  pending_step_tokens_ += step_tokens;
  pending_step_time_ += step_latency;
  if (step_tokens > 0 || step_latency > 0) ++pending_steps_;
  pending_step_seqs_ += step_seqs;
  return force || last_timeline_ < 0 || now - last_timeline_ >= scenario_.output.timeline_interval;
}

void EngineShell::write_timeline(const TimelineRow& step) {
  last_timeline_ = step.time;
  TimelineRow row = step;
  row.step_tokens = pending_step_tokens_;
  row.step_latency = pending_step_time_;
  row.steps = pending_steps_;
  row.step_seqs = pending_step_seqs_;
  pending_step_tokens_ = 0;
  pending_step_time_ = 0;
  pending_steps_ = 0;
  pending_step_seqs_ = 0;
  sink_->timeline(row);
}

void EngineShell::step_started(int64_t step, int64_t running, int64_t waiting) {
  // An embedding's stop request (base/cancellation.hpp) lands within 256
  // steps: a relaxed load, far below a step's cost.
  if (step % 256 == 0) throw_if_cancelled();
  if (progress_ && step % 4096 == 0)
    progress_({arrived_, completed_, rejected_, running, waiting, sim_.now()});
}

RunMetrics EngineShell::common_metrics(std::string policy, int64_t steps, TimeNs simulated) const {
  RunMetrics m;
  m.engine = std::string(engine_kind_);
  m.scenario = scenario_.name;
  m.seed = scenario_.seed;
  m.device = scenario_.device.name;
  m.model = scenario_.model.name;
  m.policy = std::move(policy);
  m.requests.arrived = arrived_;
  m.requests.completed = completed_;
  m.requests.rejected = rejected_;
  fill_served_metrics({ttft_, tpot_, e2e_, itl_, completed_, prompt_tokens_done_,
                       output_tokens_done_, last_completion_, arrived_, met_slo_},
                      m);
  m.numerics.mode = scenario_.numerics.mode;
  auto& wait = m.part<KvMovementMetrics>().request_wait_ms;
  wait.mean = kv_wait_.mean() / 1e6;
  wait.p50 = kv_wait_.percentile(50) / 1e6;
  wait.p99 = kv_wait_.percentile(99) / 1e6;
  wait.max = static_cast<double>(kv_wait_.max()) / 1e6;
  if (sessions_) m.part<SessionMetrics>() = sessions_->summary();
  m.sim.events = sim_.events_processed();
  m.sim.steps = steps;
  m.sim.simulated_s = static_cast<double>(simulated) / 1e9;
  m.sim.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
  return m;
}

}  // namespace kvsim
