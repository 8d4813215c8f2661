#pragma once
// Per-session metrics of agentic runs (metrics.json `agent_sessions`): what a
// session of LLM calls separated by tool calls costs end to end, how much of
// it is spent waiting on tools, and how much of its history the engine had
// to prefill again because it was no longer cached when the next call came.
//
// Definitions (per session = one Request::session id, roots and sub-agents):
// - a session's own span: its first call's arrival to its last completed
//   call's completion;
// - a ROOT session's e2e (agent_sessions.e2e_ms.*): its first call's arrival to
//   the last completion anywhere in its tree (its sub-agents, their
//   sub-agents, found through Request::parent_session), so a parent that
//   joins on its children spans them;
// - engine time: the sum over its calls of completion - arrival (queueing
//   included); tool wait: the sum over calls after the first of arrival -
//   the previous call's completion (tool time, and a parent's join wait);
//   tool_wait_share: tool wait / own span, the mean over sessions whose span
//   is > 0;
// - history tokens of a call after the first: what the previous call left
//   in the context, min(previous prompt + previous output, this prompt);
//   re-prefilled tokens: max(0, history - cached tokens), summed over those
//   calls (reprefilled_tokens_per_call divides by their number).
// Only completed calls count; a rejected call leaves a gap in the chain.
// Written only for runs whose workload has a session graph (kind: agentic,
// trace format agentic): every other run's metrics.json keeps its keys.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/units.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {

struct Request;

struct SessionMetrics {
  int64_t sessions = 0;  // sessions with a completed call (roots and sub-agents)
  int64_t roots = 0;     // of them without a parent
  int64_t calls = 0;     // completed calls
  double e2e_ms_mean = 0, e2e_ms_p50 = 0, e2e_ms_p99 = 0, e2e_ms_max = 0;  // root trees
  double engine_s = 0;                                                     // summed over sessions
  double tool_wait_s = 0;                                                  // summed over sessions
  double tool_wait_share = 0;
  int64_t followup_calls = 0;  // calls after a session's first
  int64_t history_tokens = 0;
  int64_t reprefilled_tokens = 0;
  double reprefilled_tokens_per_call = 0;
};

// Hears of every completed call (EngineShell::complete) and summarises at
// the end. Memory: one entry per session, never per call.
class SessionMetricsCollector {
 public:
  void completed(const Request& request, TimeNs done, int64_t prompt_tokens, int64_t output_tokens,
                 int64_t cached_tokens);
  SessionMetrics summary() const;

 private:
  struct Session {
    uint64_t parent = 0;
    TimeNs first_arrival = 0, last_done = 0;
    TimeNs engine = 0, tool_wait = 0;
    int64_t calls = 0;
    int64_t previous_context = 0;  // prompt + output of the last completed call
  };
  // By session id. Hashed, not ordered: a call's completion looks its
  // session up among every session seen (tens of thousands on a cluster),
  // and summary() sorts the ids once so its sums run in id order.
  std::unordered_map<uint64_t, Session> sessions_;
  int64_t followup_calls_ = 0, history_tokens_ = 0, reprefilled_ = 0;
};

MetricsSection session_metrics_section();
// The summary's line of an agentic run ("" for any other run): the root
// sessions' end-to-end time, the tool waits' share and the history
// prefilled again, the figures a user compares routers and TTLs by.
std::string session_summary(const RunMetrics& m);

}  // namespace kvsim
