#pragma once
// The serving engine as a component (SPEC 5, seed 001): its section
// (`scheduler:`), what it refuses to run and its checks once the whole
// scenario is read. The engine registry (sim/scenario/engine_registry.cpp)
// lists it.
#include <string>

#include "base/params.hpp"
#include "base/reader.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

// Its keys: the `scheduler:` section.
config::ComponentInfo serving_engine_info();
// `scheduler:` of `top`.
SchedulerConfig read_scheduler_section(config::MapReader& top);
// Why it cannot run `s` apart from the policy's contract (a dialog feature
// only the genie engine has, the genie engine's section); none when it can.
std::optional<EngineRefusal> serving_engine_refusal(const InstanceSpec& s);
// Its checks against the model, the workload and its pool.
void serving_engine_checks(const InstanceSpec& s, config::LoadContext& ctx);

}  // namespace kvsim
