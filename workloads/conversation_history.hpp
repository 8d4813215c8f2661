#pragma once
// A dialog's turns (SPEC 5 `dialog`) as requests that each carry the
// conversation so far: for an engine that keeps nothing of a request once
// it leaves (the serving engine), each turn's prompt is every earlier
// turn's prompt and reply followed by the new prompt, as a chat client
// sends it. Genie's dialog engine keeps the conversation in its buffers and
// takes the turns as they are.
#include <memory>
#include <vector>

#include "workloads/workload.hpp"

namespace kvsim {

std::unique_ptr<WorkloadSource> with_conversation_history(std::unique_ptr<WorkloadSource> turns);

}  // namespace kvsim
