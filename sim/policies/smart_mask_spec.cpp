// smart_mask (seed 002, Genie SMART_MASK) as a policy: Genie's buffers,
// priced by sim/cache/smart_mask_policy.cpp.
#include "sim/policies/genie_buffer_spec.hpp"
#include "sim/policies/policy_registry.hpp"

namespace kvsim {

PolicyEntry smart_mask_policy_entry() {
  return {{"policy", "smart_mask",
           "Genie SMART_MASK: fixed buffer, new entries in place, an attention mask (seed 002)",
           genie_buffer_params()},
          "",
          [](const PolicyValues& v) -> std::shared_ptr<PolicySpec> {
            return std::make_shared<GenieModeSpec>(
                "smart_mask", v, kernels::GenieUpdateMode::smart_mask, make_smart_mask_policy);
          }};
}

}  // namespace kvsim
