#pragma once
// `kind: agentic`: sessions of LLM calls separated by tool calls, each call's
// prompt extending the session's history, with optional sub-agents that
// branch off the parent's context and join before its next call
// (agentic_workload.cpp).
#include <cstdint>
#include <memory>
#include <optional>

#include "workloads/arrival.hpp"
#include "workloads/distribution.hpp"

namespace kvsim {

// `fanout:` of an agentic workload: at a call that is not the session's last,
// with `probability`, the session spawns `agents` sub-agent sessions.
struct AgenticFanoutSpec {
  double probability = 0;
  std::shared_ptr<const ClampedDistribution> agents;          // sub-agents per fan-out (>= 1)
  std::shared_ptr<const ClampedDistribution> calls;           // calls of each sub-agent (>= 1)
  std::shared_ptr<const ClampedDistribution> summary_tokens;  // each sub-agent's result
};

struct AgenticWorkloadSpec {
  int64_t sessions = 0;                           // root sessions
  std::shared_ptr<const ArrivalProcess> arrival;  // root session starts
  std::shared_ptr<const ClampedDistribution> calls;
  int64_t system_prompt_tokens = 0;                          // shared by every session; 0 for none
  std::shared_ptr<const ClampedDistribution> input_tokens;   // new tokens of each call
  std::shared_ptr<const ClampedDistribution> output_tokens;  // each call's reply
  std::shared_ptr<const ClampedDistribution> tool_output_tokens;  // appended after each call
  std::shared_ptr<const ClampedDistribution> tool_time;           // ns, completion to next call
  std::optional<AgenticFanoutSpec> fanout;
};

}  // namespace kvsim
