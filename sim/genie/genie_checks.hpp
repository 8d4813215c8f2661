#pragma once
// Cross-field checks of on-device dialog scenarios, run from the
// scenario's second pass (sim/scenario.cpp cross_checks): device, workload and
// policy belong together, a turn fits the context, the speculative drafts
// fit a shipped variant, VTCM requests fit the device's VTCM. The policies'
// own checks (variants below ctx_size, window within the cache) are the
// policies' (sim/cache/policy_checks.hpp).
#include "base/reader.hpp"

namespace kvsim {

struct ScenarioSpec;

void genie_cross_checks(const ScenarioSpec& s, config::LoadContext& ctx);

// The genie engine's checks, in order: these cross checks, then the
// address-space ones (genie_address_checks.hpp).
void genie_engine_checks(const ScenarioSpec& s, config::LoadContext& ctx);

}  // namespace kvsim
