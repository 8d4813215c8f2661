// The table of workload kinds and the public entry points.
#include "workloads/workload.hpp"

#include "workloads/conversation_history.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "workloads/workload_kinds.hpp"
#include "workloads/workload_params.hpp"

namespace kvsim {
namespace {

// Every kind `kind:` accepts. Adding one: write its file (parse, bounds,
// source) and list it here; a test compares workload_kinds() with the docs.
constexpr detail::WorkloadKind kWorkloadKinds[] = {
    {"agentic", detail::agentic_workload_info, detail::parse_agentic_workload,
     detail::make_agentic_source, detail::agentic_bounds},
    {"chat", detail::chat_workload_info, detail::parse_chat_workload, detail::make_chat_source,
     detail::chat_bounds},
    {"dialog", detail::dialog_workload_info, detail::parse_dialog_workload,
     detail::make_dialog_source, detail::dialog_bounds},
    {"fixed", detail::fixed_workload_info, detail::parse_fixed_workload, detail::make_fixed_source,
     detail::fixed_bounds},
    {"llama_bench", detail::llama_bench_workload_info, detail::parse_llama_bench_workload,
     detail::make_llama_bench_source, detail::llama_bench_bounds},
    {"rag", detail::rag_workload_info, detail::parse_rag_workload, detail::make_rag_source,
     detail::rag_bounds},
    {"synthetic", detail::synthetic_workload_info, detail::parse_synthetic_workload,
     detail::make_synthetic_source, detail::synthetic_bounds},
    {"trace", detail::trace_workload_info, detail::parse_trace_workload, detail::make_trace_source,
     detail::trace_bounds},
};

const detail::WorkloadKind& kind_of(const WorkloadSpec& spec) {
  for (const auto& k : kWorkloadKinds)
    if (spec.kind == k.name) return k;
  throw std::invalid_argument(fmt::format("unknown workload kind '{}'", spec.kind));
}

void report_missing(config::MapReader& reader, const config::Node& child, const char* example) {
  reader.node().context().diagnostics.error(reader.node().location(), child.path(),
                                            "is required but missing", example);
}

}  // namespace

namespace detail {

// Largest cap on requests in flight (as many clients as a closed loop may have).
constexpr int64_t kMaxConcurrency = 1'000'000;

// The keys of `workload:` every kind shares.
config::ComponentInfo workload_section_info() {
  using namespace config;
  return {"section",
          "workload",
          "keys every workload kind shares",
          {choice_param("kind", std::nullopt, workload_kinds(),
                        "the generator; its own keys follow in its table (a `trace:` map alone "
                        "means kind: trace)"),
           optional_param(int_param("max_concurrency", std::nullopt, 1, kMaxConcurrency, "requests",
                                    "cap on requests in flight; later ones wait at the client "
                                    "and that wait counts in their TTFT"))}};
}

std::shared_ptr<const ClampedDistribution> read_distribution(config::MapReader& reader,
                                                             std::string_view key,
                                                             const QuantityRules& rules) {
  const config::Node node = reader.child(key);
  if (!node.defined()) {
    report_missing(reader, node,
                   rules.kind == QuantityKind::tokens
                       ? "a distribution such as {dist: uniform, min: 64, max: 512}"
                       : "a distribution such as {dist: exponential, mean: 10s}");
    return nullptr;
  }
  auto parsed = parse_distribution(node, rules);
  if (!parsed) return nullptr;
  return std::make_shared<const ClampedDistribution>(std::move(*parsed));
}

std::shared_ptr<const ArrivalProcess> read_arrival(config::MapReader& reader,
                                                   std::string_view key) {
  const config::Node node = reader.child(key);
  if (!node.defined()) {
    report_missing(reader, node, "e.g. {process: poisson, rate_per_s: 4}");
    return nullptr;
  }
  return parse_arrival(node);
}

std::vector<std::string> shared_keys(const config::ComponentInfo& section) {
  std::vector<std::string> keys;
  for (const auto& p : section.params) keys.push_back(p.key);
  return keys;
}

QuantityRules output_length_rules() {
  return {QuantityKind::tokens, 1, "every request generates at least 1 token"};
}

void append_tokens(std::vector<int32_t>& out, const TokenStream& stream, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out.push_back(stream.at(static_cast<uint64_t>(i)));
}

void append_tokens(TokenContent& out, const TokenStream& stream, int64_t count) {
  append_tokens(out.mutable_ids(), stream, count);
}

void append_described(TokenContent& out, const TokenStream& stream, int64_t count) {
  out.append_stream(stream.key(), stream.modulo(), count);
}

}  // namespace detail

config::ParamSpec distribution_param(std::string key, bool required, std::string unit,
                                     std::string doc) {
  config::ParamSpec p = config::section_param(std::move(key), required,
                                              "{dist: ..., ...} or a number", std::move(doc));
  p.unit = std::move(unit);
  return p;
}

std::vector<config::ComponentInfo> workload_kind_infos() {
  std::vector<config::ComponentInfo> infos;
  for (const auto& k : kWorkloadKinds) infos.push_back(k.info());
  return infos;
}

std::vector<config::ComponentInfo> workload_infos() {
  std::vector<config::ComponentInfo> infos = workload_kind_infos();
  infos.insert(infos.begin(), detail::workload_section_info());
  for (auto* nested : {detail::shared_prefix_info, detail::fixed_prefix_info, detail::rag_docs_info,
                       detail::speculative_info, detail::session_cache_info, detail::trace_map_info,
                       detail::agentic_fanout_info})
    infos.push_back(nested());
  return infos;
}

std::vector<std::string> workload_kinds() {
  std::vector<std::string> names;
  for (const auto& k : kWorkloadKinds) names.emplace_back(k.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::shared_ptr<const WorkloadSpec> parse_workload(const config::Node& node) {
  auto& diagnostics = node.context().diagnostics;
  const size_t errors_before = diagnostics.size();
  if (!node.defined()) {
    node.error("is required but missing", "a map with kind: chat | synthetic, or trace: {...}");
    return nullptr;
  }
  config::MapReader reader(node);
  if (!reader.valid()) return nullptr;
  auto spec = std::make_shared<WorkloadSpec>();
  // kind: chat | synthetic | trace — which generator; the other keys depend
  // on it. A `trace:` map alone means kind: trace (SPEC 5 `workload.trace`).
  spec->kind = !reader.has("kind") && reader.has("trace")
                   ? std::string("trace")
                   : reader.choice("kind", std::nullopt, workload_kinds());
  if (diagnostics.size() != errors_before) return nullptr;  // the keys depend on the kind
  const detail::WorkloadKind& kind = kind_of(*spec);
  // A key of another kind is named as such, before the kind reads its own.
  config::report_foreign_keys(reader, kind.info(), workload_kind_infos(),
                              detail::shared_keys(detail::workload_section_info()));
  kind.parse(reader, *spec);
  detail::parse_benchmark_clients(reader, *spec);  // max_concurrency, closed-loop checks
  reader.finish();
  if (diagnostics.size() != errors_before) return nullptr;
  return spec;
}

std::unique_ptr<RequestSource> make_request_source(const WorkloadSpec& spec, uint64_t seed,
                                                   int64_t vocab_size, SourceOptions options) {
  if (vocab_size < 1)
    throw std::invalid_argument(fmt::format("vocab_size must be >= 1, got {}", vocab_size));
  std::unique_ptr<WorkloadSource> source = kind_of(spec).make_source(spec, seed, vocab_size);
  if (options.turns_carry_history && std::holds_alternative<DialogWorkloadSpec>(spec.body))
    source = with_conversation_history(std::move(source));
  return detail::wrap_benchmark_clients(spec, std::move(source), seed);
}

bool workload_has_session_graph(const WorkloadSpec& spec) {
  if (std::holds_alternative<AgenticWorkloadSpec>(spec.body)) return true;
  const auto* trace = std::get_if<TraceWorkloadSpec>(&spec.body);
  return trace != nullptr && trace->format == "agentic";
}

WorkloadBounds workload_bounds(const WorkloadSpec& spec) {
  return kind_of(spec).bounds(spec);
}

}  // namespace kvsim
