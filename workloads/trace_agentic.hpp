#pragma once
// The agentic trace format (`workload.trace.format: agentic`): one JSON
// object per LLM call, Mooncake's fields (input_length, output_length,
// hash_ids per 512-token block) plus the session graph: session_id, an
// optional parent_session_id and branch_call for a sub-agent, a timestamp
// on a root's first call and a delay (the tool gap) on every other call,
// counted from the completion of what the call depends on
// (trace_agentic.cpp has the rules and their sources).
//
// Unlike the other formats the file is read whole before the run: a
// session graph (a cycle, a parent that never appears) can only be checked
// on all of it, and arrivals follow completions, not the file's order.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/units.hpp"
#include "workloads/workload.hpp"

namespace kvsim {

struct AgenticTraceCall {
  int64_t line = 0;  // 1-based line of the record
  TimeNs delay = 0;  // ns after the dependency completes (not the root's first call)
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  std::vector<int64_t> hash_ids;
};

struct AgenticTraceSession {
  std::string name;                     // session_id as written
  uint64_t id = 0;                      // Request::session: 1-based, in order of first appearance
  uint64_t parent = 0;                  // the parent's id, 0 for a root
  int32_t branch_call = -1;             // a sub-agent: the parent's call it starts after
  TimeNs start = 0;                     // a root: its timestamp (ns from the earliest root)
  std::vector<AgenticTraceCall> calls;  // in file order
  std::vector<std::vector<uint64_t>> children;  // per call: ids of sub-agents branching there
};

struct AgenticTrace {
  std::vector<AgenticTraceSession> sessions;  // sessions[id - 1]
  int64_t skipped_records = 0;                // malformed lines under on_error: skip
};

// Reads and checks the whole file. Throws config::ConfigError naming
// FILE:LINE and the record's session on a malformed line (on_error: fail),
// a negative delay, a sub-agent whose parent never appears, a cycle of
// parent links, a branch_call beyond the parent's calls, a root's first call
// without a timestamp.
std::shared_ptr<const AgenticTrace> load_agentic_trace(const TraceWorkloadSpec& spec);

namespace detail {
std::unique_ptr<WorkloadSource> make_agentic_trace_source(const TraceWorkloadSpec& spec,
                                                          uint64_t seed, int64_t vocab_size);
}  // namespace detail

}  // namespace kvsim
