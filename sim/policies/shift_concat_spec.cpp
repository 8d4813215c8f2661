// shift_concat (seed 002, Genie SHIFT_CONCAT) as a policy: Genie's buffers,
// priced by sim/cache/shift_concat_policy.cpp.
#include "sim/policies/genie_buffer_spec.hpp"
#include "sim/policies/policy_registry.hpp"

namespace kvsim {

PolicyEntry shift_concat_policy_entry() {
  return {{"policy", "shift_concat",
           "Genie SHIFT_CONCAT: shift the cache left, concatenate the new entries (seed 002)",
           genie_buffer_params()},
          "",
          [](const PolicyValues& v) -> std::shared_ptr<PolicySpec> {
            return std::make_shared<GenieModeSpec>("shift_concat", v,
                                                   kernels::GenieUpdateMode::shift_concat,
                                                   make_shift_concat_policy);
          }};
}

}  // namespace kvsim
