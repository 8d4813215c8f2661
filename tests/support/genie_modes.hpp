#pragma once
// Tests build Genie's update modes (seed 002) on a shape of their own, by
// the mode's name, through the mode's spec (sim/policies/): the mode's own
// policy, a sliding window over it, and the kernels' mode of its buffers.
#include <memory>
#include <string>

#include "sim/cache/genie_mode_policy.hpp"
#include "sim/policies/genie_buffer_spec.hpp"
#include "sim/policies/policy_registry.hpp"

namespace kvsim::testing {

inline std::unique_ptr<GenieModePolicy> make_mode_policy(const std::string& mode,
                                                         const GenieCacheShape& shape) {
  const std::shared_ptr<const PolicySpec> spec = make_policy_spec(mode);
  return dynamic_cast<const GenieModeSpec&>(*spec).make_mode(shape);
}

inline std::unique_ptr<GenieKvPolicy> make_window_policy(const std::string& mode,
                                                         const GenieCacheShape& shape) {
  return make_sliding_window_policy(make_mode_policy(mode, shape), shape.window);
}

inline kernels::GenieUpdateMode kernel_mode(const std::string& mode) {
  return *make_policy_spec(mode)->device_buffers()->numerics_mode();
}

}  // namespace kvsim::testing
