#pragma once
// The serving engine's numerics checker (SPEC 8) for `numerics.mode`, or
// nullptr when the mode is off: the assembly hands it to the engine
// (StepObserverFactory, sim/serve/step_observer.hpp).
#include <memory>

#include "sim/cache/pool_sizing.hpp"
#include "sim/serve/step_observer.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

std::unique_ptr<StepObserver> make_numerics_observer(const InstanceSpec& s,
                                                     const PoolSizing& sizing);

}  // namespace kvsim
