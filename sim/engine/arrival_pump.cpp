#include "sim/engine/arrival_pump.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/spec/instance_spec.hpp"

namespace kvsim {

ArrivalPump::ArrivalPump(Simulator& sim, RequestSource& source) : sim_(sim), source_(source) {}

void ArrivalPump::arm() {
  const std::optional<TimeNs> next = source_.next_arrival();
  if (!next) return;
  const TimeNs at = std::max(*next, sim_.now());
  if (event_.valid()) {
    if (at >= event_time_) return;
    sim_.cancel(event_);
  }
  event_time_ = at;
  event_ = sim_.schedule_at(at, kArrivalPriority, [this] { on_arrival(); });
}

void ArrivalPump::on_arrival() {
  if (!receiver_) throw std::logic_error("ArrivalPump: no receiver connected");
  event_ = EventHandle{};
  const TimeNs now = sim_.now();
  for (std::optional<TimeNs> t = source_.next_arrival(); t && *t <= now; t = source_.next_arrival())
    receiver_(source_.take());
  arm();
  if (after_arrivals_) after_arrivals_();
}

void ArrivalPump::request_done(const Request& request, TimeNs now) {
  source_.on_complete(request, now);
  arm();
}

SoloRig::SoloRig(const InstanceSpec& scenario, SourceOptions options)
    : source(make_request_source(*scenario.workload, scenario.seed, scenario.model.vocab_size,
                                 options)),
      pump(sim, *source) {}

RunMetrics run_engine_alone(InferenceEngine& engine, Simulator& sim, ArrivalPump& pump) {
  pump.connect([&engine](Request&& request) { engine.submit(std::move(request)); },
               [&engine] { engine.arrivals_done(); });
  engine.start();
  pump.arm();
  sim.run();
  RunMetrics m = engine.finish();
  // The workload's own counter: the source belongs to the feeder, not the engine.
  m.workload.skipped_records = pump.source().skipped_records();
  return m;
}

}  // namespace kvsim
