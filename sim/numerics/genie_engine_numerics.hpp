#pragma once
// `numerics: {mode: full | sampled}` on a dialog scenario (SPEC 8):
// every checked pass runs the real Genie buffers (kernels/genie_kv_buffer)
// through the same update plans as the simulated policy, at the shadow
// width, and compares the attention output with a dense reference. A
// mismatch stops the run naming the turn and the pass (CheckFailed, exit 1).
#include <memory>

#include "sim/genie/genie_engine.hpp"

namespace kvsim {

// nullptr when numerics.mode is off.
std::unique_ptr<GenieObserver> make_genie_numerics_observer(const InstanceSpec& scenario);

}  // namespace kvsim
