// `workload.trace`: replays a recorded trace (SPEC 5). The file is read as the
// simulation reaches each request (trace_file_reader.cpp), so memory does not
// depend on the trace length. Content: Mooncake requests get their prompt
// from their hash ids (prefix sharing exactly as the trace records it); the
// formats without prefix information get unique prompts; every output is
// unique to its request.
#include "workloads/trace_workload.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "workloads/trace_agentic.hpp"
#include "workloads/trace_file_reader.hpp"
#include "workloads/workload_kinds.hpp"
#include "workloads/workload_params.hpp"

namespace kvsim {

void append_mooncake_prompt(TokenContent& out, const std::vector<int64_t>& hash_ids,
                            int64_t input_tokens, uint64_t seed, int64_t pass,
                            const FastModulo& vocabulary) {
  const StreamKeys keys(seed, RandomStream::prefix_tokens);
  const auto blocks =
      std::min<int64_t>(static_cast<int64_t>(hash_ids.size()),
                        (input_tokens + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens);
  out.reserve_runs(out.runs().size() + static_cast<size_t>(std::max<int64_t>(blocks, 0)));
  for (size_t i = 0; i < hash_ids.size(); ++i) {
    const int64_t begin = static_cast<int64_t>(i) * kMooncakeBlockTokens;
    const int64_t count = std::min(kMooncakeBlockTokens, input_tokens - begin);
    if (count <= 0) break;
    // b = pass + 1 keeps these keys apart from the synthetic shared-prefix
    // groups, which use the same stream with b = 0.
    const TokenStream block(
        keys(static_cast<uint64_t>(hash_ids[i]), static_cast<uint64_t>(pass) + 1), vocabulary);
    // Described: every request naming this id describes it the same way.
    detail::append_described(out, block, count);
  }
}

namespace detail {
namespace {

constexpr int64_t kMaxLoop = 1'000'000'000;
constexpr double kMaxSeconds = 1e9;

const TraceWorkloadSpec& trace_of(const WorkloadSpec& spec) {
  return std::get<TraceWorkloadSpec>(spec.body);
}

TimeNs trace_seconds_to_ns(double s) {
  return static_cast<TimeNs>(std::llround(s * 1e9));
}

class TraceSource final : public WorkloadSource {
 public:
  TraceSource(const TraceWorkloadSpec& spec, uint64_t seed, int64_t vocab_size)
      : reader_(spec), seed_(seed), vocabulary_(static_cast<uint64_t>(vocab_size)) {
    has_next_ = reader_.next(next_);
    // A replay of nothing is a mistake (start_s past the end, an empty file),
    // not an empty run that passes its checks.
    if (!has_next_) reader_.fail_empty();
  }

  std::optional<TimeNs> next_arrival() const override {
    if (!has_next_) return std::nullopt;
    return next_.arrival;
  }

  Request take() override {
    if (!has_next_) throw std::logic_error("take() on an exhausted trace request source");
    const TraceRecord& r = next_.record;
    Request request;
    request.id = taken_;
    request.arrival = next_.arrival;
    if (!r.hash_ids.empty()) {
      append_mooncake_prompt(request.prompt, r.hash_ids, r.input_tokens, seed_, next_.pass,
                             vocabulary_);
    } else {
      append_described(
          request.prompt,
          TokenStream(stream_key(seed_, RandomStream::prompt_tokens, taken_), vocabulary_),
          r.input_tokens);
    }
    append_described(
        request.output,
        TokenStream(stream_key(seed_, RandomStream::output_tokens, taken_), vocabulary_),
        r.output_tokens);
    ++taken_;
    // Read one record ahead so next_arrival() can answer; a malformed line
    // under on_error: fail throws here, as the replay reaches it.
    has_next_ = reader_.next(next_);
    return request;
  }

  bool exhausted() const override { return !has_next_; }
  int64_t skipped_records() const override { return reader_.skipped_records(); }
  size_t held_entries() const override { return 0; }
  uint64_t taken() const override { return taken_; }

 private:
  TraceFileReader reader_;
  uint64_t seed_;
  FastModulo vocabulary_;  // built once: each one costs a 128-bit divide
  ReplayedRecord next_;
  bool has_next_ = false;
  uint64_t taken_ = 0;
};

}  // namespace

config::ComponentInfo trace_map_info() {
  using namespace config;
  return {
      "section",
      "workload.trace",
      "kind: trace: the recorded trace and the window of it to replay",
      {choice_param("format", std::nullopt, trace_formats(),
                    "which reader parses the lines (trace_formats.cpp)"),
       own_reader(string_param("path", std::nullopt,
                               "the trace file (required); relative to the YAML file's folder")),
       number_param("time_scale", 1.0, 1e-6, 1e6, "",
                    "simulated gap = trace gap * time_scale (0.5 replays twice as fast)"),
       number_param("rate_scale", 1.0, 1e-6, 1e6, "",
                    "simulated gap = trace gap / rate_scale (0.25: a quarter of the trace's "
                    "rate, one instance's share of four; what kvsim search ladders)"),
       number_param("start_s", 0.0, 0.0, kMaxSeconds, "seconds",
                    "replay from this long after the trace's first record"),
       optional_param(number_param("duration_s", std::nullopt, 1e-9, kMaxSeconds, "seconds",
                                   "replay this much trace time (absent: to the end)")),
       optional_param(int_param("max_requests", std::nullopt, 1, INT64_MAX, "requests",
                                "stop after this many requests (absent: all)")),
       choice_param("on_error", std::string("fail"), {"fail", "skip"},
                    "fail: a malformed line stops the run, naming file and line; skip: count "
                    "and drop it"),
       int_param("loop", 1, 1, kMaxLoop, "passes",
                 "replay the window this many times back to back, each pass with new content")}};
}

config::ComponentInfo trace_workload_info() {
  using namespace config;
  return {"workload",
          "trace",
          "replays a recorded trace, streamed from its file (SPEC 5)",
          {section_param("trace", true, "{format, path, ...}", "the trace and its window")}};
}

void parse_trace_workload(config::MapReader& reader, WorkloadSpec& spec) {
  TraceWorkloadSpec trace;
  // trace: {format, path, time_scale, start_s, duration_s, max_requests, on_error, loop}
  const config::Node node = reader.child("trace");
  if (!node.defined()) {
    reader.node().context().diagnostics.error(
        reader.node().location(), node.path(), "is required but missing",
        "trace: {format: mooncake | azure | prefill_decode_csv, path: FILE}");
    spec.body = std::move(trace);
    return;
  }
  auto& diagnostics = node.context().diagnostics;
  const size_t errors_before = diagnostics.size();
  config::MapReader t(node);
  if (!t.valid()) {
    spec.body = std::move(trace);
    return;
  }
  trace.key_path = node.path();
  const config::ParamValues values = config::read_params(t, trace_map_info());
  trace.format = values.string("format");
  // path: its own reader, below (relative to the YAML file's folder)
  const config::Node path_node = t.child("path");
  trace.time_scale = values.number("time_scale") / values.number("rate_scale");
  trace.start = trace_seconds_to_ns(values.number("start_s"));
  if (values.has("duration_s")) trace.duration = trace_seconds_to_ns(values.number("duration_s"));
  if (values.has("max_requests")) trace.max_requests = values.integer("max_requests");
  trace.skip_malformed = values.string("on_error") == "skip";
  trace.loop = values.integer("loop");
  // The agentic format replays whole session graphs: a window or a loop
  // would cut sessions apart from their parents.
  if (trace.format == "agentic") {
    for (const char* key : {"start_s", "duration_s", "max_requests", "loop"})
      if (const config::Node n = t.child(key); n.defined())
        n.error(
            "does not apply to format: agentic (sessions are replayed whole, with their "
            "sub-agents)",
            "leave it out; time_scale / rate_scale scale timestamps and delays");
  }
  t.finish();

  if (!path_node.defined()) {
    diagnostics.error(node.location(), path_node.path(), "is required but missing",
                      "path: a trace file, relative to the YAML file's folder");
  } else if (const auto path = path_node.as_string()) {
    std::filesystem::path file(*path);
    if (file.is_relative()) file = std::filesystem::path(path_node.file()).parent_path() / file;
    trace.path = file.lexically_normal().string();
    if (diagnostics.size() == errors_before) {
      // Open it now, so `kvsim validate` and the pre-run checks catch a
      // missing file or a wrong header before any output is written.
      try {
        if (trace.format == "agentic")
          (void)load_agentic_trace(trace);  // the whole graph, checked before the run
        else
          TraceFileReader probe(trace);
      } catch (const config::ConfigError& e) {
        for (const config::Diagnostic& d : e.diagnostics()) {
          if (d.where.line == 0)  // the file itself: point at the YAML key
            path_node.error(fmt::format("cannot read '{}': {}", trace.path, d.problem), d.allowed);
          else
            diagnostics.error(d.where, d.key_path, d.problem, d.allowed);
        }
      }
    }
  }
  spec.body = std::move(trace);
}

std::unique_ptr<WorkloadSource> make_trace_source(const WorkloadSpec& spec, uint64_t seed,
                                                  int64_t vocab_size) {
  if (trace_of(spec).format == "agentic")
    return make_agentic_trace_source(trace_of(spec), seed, vocab_size);
  return std::make_unique<TraceSource>(trace_of(spec), seed, vocab_size);
}

WorkloadBounds trace_bounds(const WorkloadSpec& spec) {
  (void)spec;
  // A trace is streamed, so its longest request is not known before the run
  // (finding it would mean reading the whole file first). The engine rejects
  // at arrival a request beyond max_model_len or the pool, and without
  // chunked prefill a prompt larger than max_batched_tokens is rejected when
  // it reaches the head of an idle queue.
  return {0, 0};
}

}  // namespace detail
}  // namespace kvsim
