#pragma once
// N engines behind one feeder, on one clock: request k of the stream goes to
// engine k mod N. The smallest router, and the shape a smarter one takes
// (least loaded, prefix-aware): it receives what an ArrivalPump delivers,
// submits each request to the instance it picks, and is the uplink every
// instance reports back to, so the source still hears of every completion.
#include <cstddef>
#include <vector>

#include "sim/engine/arrival_pump.hpp"
#include "sim/engine/inference_engine.hpp"

namespace kvsim {

class RoundRobinRouter final : public EngineUplink {
 public:
  // `upstream` is the feeder's side (the pump); it outlives the router.
  explicit RoundRobinRouter(EngineUplink& upstream) : upstream_(upstream) {}
  RoundRobinRouter(const RoundRobinRouter&) = delete;
  RoundRobinRouter& operator=(const RoundRobinRouter&) = delete;

  // Instances, in the order requests go round. Each was built with this
  // router as its uplink and outlives it.
  void add(InferenceEngine& engine) {
    engines_.push_back(&engine);
    touched_.push_back(false);
  }
  // Makes `pump` deliver to this router.
  void connect(ArrivalPump& pump);
  const std::vector<InferenceEngine*>& engines() const { return engines_; }

  void submit(Request request);
  // Tells the instances that received requests at this instant.
  void arrivals_done();

  void request_done(const Request& request, TimeNs now) override {
    upstream_.request_done(request, now);
  }
  bool requests_exhausted() const override { return upstream_.requests_exhausted(); }
  // The clock stops once every instance has stopped.
  void engine_stopped() override;

 private:
  EngineUplink& upstream_;
  std::vector<InferenceEngine*> engines_;
  std::vector<bool> touched_;  // received a request at the current instant
  size_t next_ = 0;
  size_t stopped_ = 0;
};

// Runs every instance behind `router` (fed by `pump` on `sim`) to the end and
// returns their metrics in the router's order. Each instance reports the
// requests it served; sim.events counts the whole shared clock.
std::vector<RunMetrics> run_engines_together(RoundRobinRouter& router, Simulator& sim,
                                             ArrivalPump& pump);

}  // namespace kvsim
