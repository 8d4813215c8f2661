#pragma once
// The parsed `workload:` map of a scenario. Immutable once parsed; sources
// copy what they need (distributions share their immutable state).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "workloads/agentic_workload_spec.hpp"
#include "workloads/arrival.hpp"
#include "workloads/dialog_workload_spec.hpp"
#include "workloads/distribution.hpp"
#include "workloads/fixed_workload_spec.hpp"
#include "workloads/rag_workload_spec.hpp"

namespace kvsim {

// `shared_prefix:` of a synthetic workload: every request of a group starts
// with the same `tokens` tokens (a system prompt or few-shot header), groups
// differ. Popularity picks the group of each request.
struct SharedPrefixSpec {
  int64_t groups = 1;
  int64_t tokens = 0;
  std::string popularity = "uniform";  // uniform | zipf
  double zipf_s = 1.0;                 // zipf exponent (popularity: zipf only)
  // Group index 0..groups-1 per request (group 0 the most popular under zipf).
  std::shared_ptr<const ClampedDistribution> group;
};

// `kind: synthetic`: independent single-shot requests.
struct SyntheticWorkloadSpec {
  int64_t requests = 0;
  std::shared_ptr<const ArrivalProcess> arrival;
  std::shared_ptr<const ClampedDistribution> input_tokens;  // unique tokens after the prefix
  std::shared_ptr<const ClampedDistribution> output_tokens;
  std::optional<SharedPrefixSpec> shared_prefix;
};

// `kind: chat`: sessions of several turns; each turn's prompt carries the
// whole history, the next turn arrives a think time after this one completes.
struct ChatWorkloadSpec {
  int64_t sessions = 0;
  std::shared_ptr<const ArrivalProcess> arrival;  // session starts
  std::shared_ptr<const ClampedDistribution> turns;
  int64_t system_prompt_tokens = 0;  // shared by every session; 0 for none
  std::shared_ptr<const ClampedDistribution> user_tokens;
  std::shared_ptr<const ClampedDistribution> output_tokens;
  std::shared_ptr<const ClampedDistribution> think_time;  // ns
  // A session ends before a turn whose prompt + output would exceed this.
  std::optional<int64_t> max_context_tokens;
};

// `trace:` a recorded trace replayed line by line (trace_workload.cpp).
struct TraceWorkloadSpec {
  std::string format;       // a name of trace_formats(): mooncake | azure | prefill_decode_csv
  std::string path;         // resolved: a relative path is from the YAML file's folder
  std::string key_path;     // "workload.trace", for errors found while replaying
  double time_scale = 1.0;  // simulated gap = trace gap * time_scale (0.5: twice the load)
  TimeNs start = 0;         // replay from this trace time (after the first record)
  std::optional<TimeNs> duration;       // ... for this long (trace time)
  std::optional<int64_t> max_requests;  // stop after this many requests
  bool skip_malformed = false;          // on_error: skip (count and drop) instead of fail
  int64_t loop = 1;                     // replay the window this many times, back to back
};

struct WorkloadSpec {
  std::string kind;  // "synthetic" | "chat" | "agentic" | "trace" | "rag" | "dialog" | "fixed"
  std::variant<SyntheticWorkloadSpec, ChatWorkloadSpec, TraceWorkloadSpec, RagWorkloadSpec,
               DialogWorkloadSpec, FixedWorkloadSpec, AgenticWorkloadSpec>
      body;
  // `workload.max_concurrency`: at most this many requests in flight; later
  // ones wait at the client (client_loop.cpp). Any kind.
  std::optional<int64_t> max_concurrency;
};

}  // namespace kvsim
