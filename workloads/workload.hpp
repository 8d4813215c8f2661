#pragma once
// Public entry points of workloads/: parse a scenario's `workload:` map, make
// a deterministic request stream from it, and bound what it can produce.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/reader.hpp"
#include "workloads/request.hpp"
#include "workloads/workload_spec.hpp"

namespace kvsim {

// Parses the `workload:` map of a scenario. Errors go to
// node.context().diagnostics (file:line:col + key path; never throws, never
// exits); returns nullptr when this map had any error.
std::shared_ptr<const WorkloadSpec> parse_workload(const config::Node& node);

// What the engine that takes the stream needs of it.
struct SourceOptions {
  // A dialog's turns carry the conversation so far in their prompts, for an
  // engine that keeps nothing between requests (workloads/conversation_history.hpp).
  bool turns_carry_history = false;
};

// A fresh stream; same spec + seed -> identical stream, byte for byte. Token
// ids are in [0, vocab_size). The stream copies what it needs from `spec`.
// Throws std::invalid_argument when vocab_size < 1 (a caller bug).
std::unique_ptr<RequestSource> make_request_source(const WorkloadSpec& spec, uint64_t seed,
                                                   int64_t vocab_size, SourceOptions options = {});

// Upper bounds for cross-field validation before a run (e.g. the longest
// prompt the workload can produce against the model's context).
struct WorkloadBounds {
  int64_t max_prompt_tokens;
  int64_t max_output_tokens;
};
WorkloadBounds workload_bounds(const WorkloadSpec& spec);

// Whether the stream's requests form a session graph of agent calls
// (kind: agentic, or a trace in the agentic format): runs of such workloads
// report per-session metrics (sim/engine/session_metrics.hpp).
bool workload_has_session_graph(const WorkloadSpec& spec);

std::vector<std::string> workload_kinds();        // {"chat", "synthetic", "trace"}
std::vector<std::string> arrival_processes();     // {"constant", "gamma", "poisson"}
std::vector<std::string> length_distributions();  // {"constant", "empirical", ...}

// What every generated stream also offers (dynamic_cast a RequestSource):
// introspection for tests and progress display.
class WorkloadSource : public RequestSource {
 public:
  // Entries held in internal containers now (chat sessions waiting for a
  // completion or a think time). Bounded by the sessions in flight, never by
  // the length of the stream; always 0 for a synthetic stream.
  virtual size_t held_entries() const = 0;
  // Requests taken so far (the next request's id).
  virtual uint64_t taken() const = 0;
};

}  // namespace kvsim
