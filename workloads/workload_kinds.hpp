#pragma once
// Internal to workloads/: one entry per workload kind (`kind: synthetic`),
// listed in the explicit table of workload.cpp. Each kind keeps its parser,
// bounds and request source in one file (synthetic_workload.cpp,
// chat_workload.cpp).
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "sim/config/reader.hpp"
#include "workloads/rng.hpp"
#include "workloads/workload.hpp"

namespace kvsim::detail {

struct WorkloadKind {
  const char* name;
  // Reads the kind's keys from `reader` (which has read `kind`) into spec.body.
  void (*parse)(config::MapReader& reader, WorkloadSpec& spec);
  std::unique_ptr<WorkloadSource> (*make_source)(const WorkloadSpec& spec, uint64_t seed,
                                                 int64_t vocab_size);
  WorkloadBounds (*bounds)(const WorkloadSpec& spec);
};

void parse_synthetic_workload(config::MapReader& reader, WorkloadSpec& spec);
std::unique_ptr<WorkloadSource> make_synthetic_source(const WorkloadSpec& spec, uint64_t seed,
                                                      int64_t vocab_size);
WorkloadBounds synthetic_bounds(const WorkloadSpec& spec);

void parse_chat_workload(config::MapReader& reader, WorkloadSpec& spec);
std::unique_ptr<WorkloadSource> make_chat_source(const WorkloadSpec& spec, uint64_t seed,
                                                 int64_t vocab_size);
WorkloadBounds chat_bounds(const WorkloadSpec& spec);

void parse_trace_workload(config::MapReader& reader, WorkloadSpec& spec);
std::unique_ptr<WorkloadSource> make_trace_source(const WorkloadSpec& spec, uint64_t seed,
                                                  int64_t vocab_size);
WorkloadBounds trace_bounds(const WorkloadSpec& spec);

// Shared readers: a required distribution / arrival map under `key`
// (nullptr after reporting errors).
std::shared_ptr<const ClampedDistribution> read_distribution(config::MapReader& reader,
                                                             std::string_view key,
                                                             const QuantityRules& rules);
std::shared_ptr<const ArrivalProcess> read_arrival(config::MapReader& reader, std::string_view key);

// The floor of every output length: a request generates at least its first
// token (prefill ends with it; TTFT is defined by it; vLLM's max_tokens >= 1).
QuantityRules output_length_rules();

// Appends `count` tokens of `stream` (positions 0..count-1) to `out`.
void append_tokens(std::vector<int32_t>& out, const TokenStream& stream, int64_t count);

}  // namespace kvsim::detail
