#pragma once
// The genie engine's checks of on-device dialog scenarios, run from the
// scenario's second pass when it is the engine (sim/scenario/scenario.cpp):
// a turn fits the context, the speculative drafts fit a shipped variant,
// VTCM requests fit the device's VTCM. The policies'
// own checks (variants below ctx_size, window within the cache) are the
// policies (sim/policies/).
#include <optional>

#include "base/reader.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

// Why the genie engine cannot run `s` apart from the policy's contract: a
// device whose family declares no NPU graph executor, a workload that is
// not a dialog. None when it can.
std::optional<EngineRefusal> genie_engine_refusal(const InstanceSpec& s);

void genie_cross_checks(const InstanceSpec& s, config::LoadContext& ctx);

// The genie engine's checks, in order: these cross checks, then the
// address-space ones (genie_address_checks.hpp).
void genie_engine_checks(const InstanceSpec& s, config::LoadContext& ctx);

}  // namespace kvsim
