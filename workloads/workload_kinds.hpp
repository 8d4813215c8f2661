#pragma once
// Internal to workloads/: one entry per workload kind (`kind: synthetic`),
// listed in the explicit table of workload.cpp. Each kind keeps its parser,
// bounds and request source in one file (synthetic_workload.cpp,
// chat_workload.cpp).
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/params.hpp"
#include "base/reader.hpp"
#include "workloads/rng.hpp"
#include "workloads/workload.hpp"

namespace kvsim::detail {

struct WorkloadKind {
  const char* name;
  // Its keys (workload_params.hpp); `parse` reads them through it.
  config::ComponentInfo (*info)();
  // Reads the kind's keys from `reader` (which has read `kind`) into spec.body.
  void (*parse)(config::MapReader& reader, WorkloadSpec& spec);
  std::unique_ptr<WorkloadSource> (*make_source)(const WorkloadSpec& spec, uint64_t seed,
                                                 int64_t vocab_size);
  WorkloadBounds (*bounds)(const WorkloadSpec& spec);
};

config::ComponentInfo synthetic_workload_info();
config::ComponentInfo shared_prefix_info();  // workload.shared_prefix
void parse_synthetic_workload(config::MapReader& reader, WorkloadSpec& spec);
std::unique_ptr<WorkloadSource> make_synthetic_source(const WorkloadSpec& spec, uint64_t seed,
                                                      int64_t vocab_size);
WorkloadBounds synthetic_bounds(const WorkloadSpec& spec);

config::ComponentInfo chat_workload_info();
void parse_chat_workload(config::MapReader& reader, WorkloadSpec& spec);
std::unique_ptr<WorkloadSource> make_chat_source(const WorkloadSpec& spec, uint64_t seed,
                                                 int64_t vocab_size);
WorkloadBounds chat_bounds(const WorkloadSpec& spec);

config::ComponentInfo agentic_workload_info();
config::ComponentInfo agentic_fanout_info();  // workload.fanout
void parse_agentic_workload(config::MapReader& reader, WorkloadSpec& spec);
std::unique_ptr<WorkloadSource> make_agentic_source(const WorkloadSpec& spec, uint64_t seed,
                                                    int64_t vocab_size);
WorkloadBounds agentic_bounds(const WorkloadSpec& spec);

config::ComponentInfo trace_workload_info();
config::ComponentInfo trace_map_info();  // workload.trace
void parse_trace_workload(config::MapReader& reader, WorkloadSpec& spec);
std::unique_ptr<WorkloadSource> make_trace_source(const WorkloadSpec& spec, uint64_t seed,
                                                  int64_t vocab_size);
WorkloadBounds trace_bounds(const WorkloadSpec& spec);

config::ComponentInfo dialog_workload_info();
config::ComponentInfo speculative_info();    // workload.speculative
config::ComponentInfo session_cache_info();  // workload.session_cache
void parse_dialog_workload(config::MapReader& reader, WorkloadSpec& spec);
std::unique_ptr<WorkloadSource> make_dialog_source(const WorkloadSpec& spec, uint64_t seed,
                                                   int64_t vocab_size);
WorkloadBounds dialog_bounds(const WorkloadSpec& spec);
// A dialog turn's new user tokens and reply tokens: pure functions of (seed,
// turn), shared by the source and the engine's context-fit checks.
int64_t dialog_prompt_length(const DialogWorkloadSpec& spec, uint64_t seed, int32_t turn);
int64_t dialog_reply_length(const DialogWorkloadSpec& spec, uint64_t seed, int32_t turn);

config::ComponentInfo llama_bench_workload_info();
void parse_llama_bench_workload(config::MapReader& reader, WorkloadSpec& spec);
std::unique_ptr<WorkloadSource> make_llama_bench_source(const WorkloadSpec& spec, uint64_t seed,
                                                        int64_t vocab_size);
WorkloadBounds llama_bench_bounds(const WorkloadSpec& spec);

config::ComponentInfo fixed_workload_info();
config::ComponentInfo fixed_prefix_info();  // workload.prefix
void parse_fixed_workload(config::MapReader& reader, WorkloadSpec& spec);
std::unique_ptr<WorkloadSource> make_fixed_source(const WorkloadSpec& spec, uint64_t seed,
                                                  int64_t vocab_size);
WorkloadBounds fixed_bounds(const WorkloadSpec& spec);

// Benchmark clients around any kind's stream (client_loop.cpp): a closed loop
// when the kind's `arrival` is `process: closed`, then the
// `workload.max_concurrency` cap. Returns `source` itself when neither applies.
std::unique_ptr<WorkloadSource> wrap_benchmark_clients(const WorkloadSpec& spec,
                                                       std::unique_ptr<WorkloadSource> source,
                                                       uint64_t seed);
// Reads `max_concurrency` (any kind) and refuses `process: closed` where
// it has no meaning (chat: turns follow their own session's completions).
void parse_benchmark_clients(config::MapReader& reader, WorkloadSpec& spec);
// The kind's arrival process, or nullptr when the kind has none (trace).
const ArrivalProcess* arrival_of(const WorkloadSpec& spec);

config::ComponentInfo rag_workload_info();
config::ComponentInfo rag_docs_info();  // workload.docs
void parse_rag_workload(config::MapReader& reader, WorkloadSpec& spec);
std::unique_ptr<WorkloadSource> make_rag_source(const WorkloadSpec& spec, uint64_t seed,
                                                int64_t vocab_size);
WorkloadBounds rag_bounds(const WorkloadSpec& spec);
// The documents of request `index` in prompt order (tests).
std::vector<int64_t> rag_documents_of(const WorkloadSpec& spec, uint64_t seed, uint64_t index);

// Shared readers: a required distribution / arrival map under `key`
// (nullptr after reporting errors).
std::shared_ptr<const ClampedDistribution> read_distribution(config::MapReader& reader,
                                                             std::string_view key,
                                                             const QuantityRules& rules);
std::shared_ptr<const ArrivalProcess> read_arrival(config::MapReader& reader, std::string_view key);

// `workload:`'s keys every kind shares (kind, max_concurrency; workload.cpp).
config::ComponentInfo workload_section_info();
// The keys of a shared section (to leave out of report_foreign_keys).
std::vector<std::string> shared_keys(const config::ComponentInfo& section);

// The floor of every output length: a request generates at least its first
// token (prefill ends with it; TTFT is defined by it; vLLM's max_tokens >= 1).
QuantityRules output_length_rules();

// Appends `count` tokens of `stream` (positions 0..count-1) to `out`.
void append_tokens(std::vector<int32_t>& out, const TokenStream& stream, int64_t count);
void append_tokens(TokenContent& out, const TokenStream& stream, int64_t count);
// The same tokens described (TokenContent::append_stream), never generated
// unless read: for content no other request holds generated.
void append_described(TokenContent& out, const TokenStream& stream, int64_t count);

// One counter-based draw of `quantity` (a length, a count, a think time), its
// generator keyed by (seed, stream, a, b): no draw ever shifts another (rng.hpp).
inline int64_t keyed_sample(const ClampedDistribution& quantity, uint64_t seed, RandomStream stream,
                            uint64_t a, uint64_t b = 0) {
  Rng rng = Rng::keyed(seed, stream, a, b);
  return quantity.sample(rng);
}

}  // namespace kvsim::detail
