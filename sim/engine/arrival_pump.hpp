#pragma once
// The arrival pump: arms one event at the next arrival a RequestSource knows
// of, and at that event hands every request that is due to a receiver (one
// engine, or a router in front of several). Completions come back through
// the EngineUplink it implements: the source hears of them (a closed-loop
// source learns its next request) and the pump re-arms, earlier if need be.
#include <functional>
#include <memory>

#include "sim/core/simulator.hpp"
#include "sim/engine/inference_engine.hpp"
#include "workloads/workload.hpp"

namespace kvsim {

struct InstanceSpec;

// Same-time events of every engine: what finishes runs first (its resources
// come back), then arrivals, then what starts. Engines use 0 for "done" and
// 2 and above for "start".
inline constexpr int32_t kArrivalPriority = 1;

class ArrivalPump final : public EngineUplink {
 public:
  ArrivalPump(Simulator& sim, RequestSource& source);
  ArrivalPump(const ArrivalPump&) = delete;
  ArrivalPump& operator=(const ArrivalPump&) = delete;

  // Where due requests go, and what runs once they all went (InferenceEngine::submit
  // and InferenceEngine::arrivals_done, or a router's). Must be set before arm().
  // The receiver takes the request by reference to the pump's own: a
  // Request is two TokenContents, and each hop by value moved both and
  // destroyed what it left (every arrival of a run passes here).
  void connect(std::function<void(Request&&)> receiver, std::function<void()> after_arrivals) {
    receiver_ = std::move(receiver);
    after_arrivals_ = std::move(after_arrivals);
  }
  // Arms the arrival event at the source's next known arrival (not before
  // now), unless one is armed already at that time or earlier.
  void arm();

  void request_done(const Request& request, TimeNs now) override;
  bool requests_exhausted() const override { return source_.exhausted(); }
  void engine_stopped() override { sim_.stop(); }

  RequestSource& source() { return source_; }

 private:
  void on_arrival();

  Simulator& sim_;
  RequestSource& source_;
  std::function<void(Request&&)> receiver_;
  std::function<void()> after_arrivals_;
  EventHandle event_;
  TimeNs event_time_ = -1;
};

// One engine alone on a clock of its own, fed by the scenario's workload:
// what `kvsim run` does, and what an engine's scenario-only constructor
// builds for tests and studies.
struct SoloRig {
  explicit SoloRig(const InstanceSpec& scenario, SourceOptions options = {});
  Simulator sim;
  std::unique_ptr<RequestSource> source;
  ArrivalPump pump;
};

// Runs `engine` (fed by `pump` on `sim`) to the end and returns its metrics.
RunMetrics run_engine_alone(InferenceEngine& engine, Simulator& sim, ArrivalPump& pump);

}  // namespace kvsim
