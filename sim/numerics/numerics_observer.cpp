// numerics.mode selects the checker. Only `off` passes validation in this
// build (sim/scenario.cpp rejects the others), so there is no checker yet.
#include "sim/serve/step_observer.hpp"

namespace kvsim {

std::unique_ptr<StepObserver> make_numerics_observer(const ScenarioSpec&, const PoolSizing&) { return nullptr; }

}  // namespace kvsim
