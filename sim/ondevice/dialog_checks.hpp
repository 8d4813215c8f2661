#pragma once
// Cross-field checks of on-device dialog scenarios (issue 4), run from the
// scenario's second pass (sim/scenario.cpp cross_checks): device, workload and
// policy belong together, a turn fits the context, the speculative drafts
// fit a shipped variant, VTCM requests fit the device's VTCM. The policies'
// own checks (variants below ctx_size, window within the cache) are in
// ondevice_cache_checks of sim/scenario.cpp.
#include "sim/config/reader.hpp"

namespace kvsim {

struct ScenarioSpec;

void dialog_cross_checks(const ScenarioSpec& s, config::LoadContext& ctx);

}  // namespace kvsim
