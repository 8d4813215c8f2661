#include "sim/engine/round_robin_router.hpp"

#include <stdexcept>

namespace kvsim {

void RoundRobinRouter::connect(ArrivalPump& pump) {
  pump.connect([this](Request request) { submit(std::move(request)); },
               [this] { arrivals_done(); });
}

void RoundRobinRouter::submit(Request request) {
  if (engines_.empty()) throw std::logic_error("RoundRobinRouter: no engine to route to");
  const size_t i = next_;
  next_ = (next_ + 1) % engines_.size();
  touched_[i] = true;
  engines_[i]->submit(std::move(request));
}

void RoundRobinRouter::arrivals_done() {
  for (size_t i = 0; i < engines_.size(); ++i) {
    if (!touched_[i]) continue;
    touched_[i] = false;
    engines_[i]->arrivals_done();
  }
}

void RoundRobinRouter::engine_stopped() {
  if (++stopped_ == engines_.size()) upstream_.engine_stopped();
}

std::vector<RunMetrics> run_engines_together(RoundRobinRouter& router, Simulator& sim,
                                             ArrivalPump& pump) {
  router.connect(pump);
  for (InferenceEngine* e : router.engines()) e->start();
  pump.arm();
  sim.run();
  std::vector<RunMetrics> out;
  for (InferenceEngine* e : router.engines()) {
    out.push_back(e->finish());
    out.back().workload.skipped_records = pump.source().skipped_records();
  }
  return out;
}

}  // namespace kvsim
