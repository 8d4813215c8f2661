// The agentic trace format: one JSON object per LLM call of an agent session.
//
//   {"session_id": "s1", "timestamp": 0, "input_length": 1200,
//    "output_length": 80, "hash_ids": [0, 1, 2]}
//   {"session_id": "s1", "delay": 1500, "input_length": 1700, ...}
//   {"session_id": "s1.a", "parent_session_id": "s1", "branch_call": 1,
//    "delay": 0, "input_length": 2100, ...}
//
// The fields follow NVIDIA AIPerf's Mooncake trace replay
// (ai-dynamo/aiperf, docs/benchmark-modes/trace-replay.md): `session_id`
// groups the calls of a session in file order, the first call carries
// `timestamp` (ms) and a later one `delay` (ms after the previous call of
// its session completes), and Mooncake's input_length / output_length /
// hash_ids (kvcache-ai/Mooncake FAST25-release/traces; one id per 512-token
// block, workloads/trace_mooncake.cpp) give the content, so the hash ids of
// a later call repeat its history's. Sub-agents follow AIPerf's
// conversation DAGs (ai-dynamo/aiperf, docs/benchmark-modes/dag.md: a
// spawned child runs while its parent waits at the next turn, the join):
// `parent_session_id` names the parent and `branch_call` (0-based) the
// parent's call after whose completion the sub-agent's first call arrives
// (its `delay` later); the parent's call branch_call + 1 waits for every
// sub-agent branching there to complete its last call, then its own delay.
// Sub-agents branching at a parent's last call are not waited for.
#include "workloads/trace_agentic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "base/checked_math.hpp"
#include "base/diagnostics.hpp"
#include "workloads/distribution.hpp"
#include "workloads/mooncake_record_fields.hpp"
#include "workloads/trace_format.hpp"
#include "workloads/trace_workload.hpp"
#include "workloads/workload_kinds.hpp"

namespace kvsim {
namespace detail {
namespace {

using nlohmann::json;

// A session name: a string, or an integer written as one.
std::string read_name(const json& v, const char* field, std::string& out) {
  if (v.is_string() && !v.get<std::string>().empty()) {
    out = v.get<std::string>();
    return {};
  }
  if (v.is_number_integer()) {
    out = std::to_string(v.get<int64_t>());
    return {};
  }
  return fmt::format("\"{}\" is {}, not a non-empty string or an integer", field, v.dump());
}

std::string read_ms(const json& v, const char* field, const char* meaning, TimeNs& out) {
  if (!v.is_number())
    return fmt::format("\"{}\" is {}, not a number of milliseconds", field, v.dump());
  const double ms = v.get<double>();
  if (!(ms >= 0) || ms > 1e12)
    return fmt::format("\"{}\" is {}: {} is >= 0 ms", field, v.dump(), meaning);
  out = static_cast<TimeNs>(std::llround(ms * 1e6));
  return {};
}

bool nested_too_deep(std::string_view line) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxTraceNesting) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace

LineResult parse_agentic_line(std::string_view line, const CsvColumns& columns, TraceRecord& out) {
  (void)columns;
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return {LineKind::blank, {}};
  if (nested_too_deep(line))
    return malformed_line(fmt::format("nested deeper than {} levels", kMaxTraceNesting));
  const json object = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return malformed_line("not valid JSON");
  if (!object.is_object()) return malformed_line("not a JSON object");
  static const std::set<std::string> known = {
      "session_id", "parent_session_id", "branch_call",   "timestamp",
      "delay",      "input_length",      "output_length", "hash_ids"};
  for (const auto& [key, value] : object.items()) {
    (void)value;
    if (known.count(key) == 0)
      return malformed_line(
          fmt::format("unknown field \"{}\"; the fields are session_id, "
                      "parent_session_id, branch_call, timestamp, delay, "
                      "input_length, output_length, hash_ids",
                      key));
  }
  out = TraceRecord{};
  const auto session = object.find("session_id");
  if (session == object.end()) return malformed_line("the field \"session_id\" is missing");
  if (auto p = read_name(*session, "session_id", out.session_id); !p.empty())
    return malformed_line(p);
  if (const auto parent = object.find("parent_session_id"); parent != object.end()) {
    if (auto p = read_name(*parent, "parent_session_id", out.parent_session_id); !p.empty())
      return malformed_line(p);
    const auto branch = object.find("branch_call");
    if (branch == object.end())
      return malformed_line(
          "\"parent_session_id\" needs \"branch_call\": the parent's call (0-based) "
          "after which this sub-agent starts");
    if (!branch->is_number_integer() || branch->get<int64_t>() < 0)
      return malformed_line(
          fmt::format("\"branch_call\" is {}, not a call index >= 0", branch->dump()));
    out.branch_call = branch->get<int64_t>();
  } else if (object.contains("branch_call")) {
    return malformed_line("\"branch_call\" without \"parent_session_id\"");
  }
  out.timed = false;
  if (const auto ts = object.find("timestamp"); ts != object.end()) {
    if (auto p = read_ms(*ts, "timestamp", "a root session's start", out.time); !p.empty())
      return malformed_line(p);
    out.timed = true;
  }
  if (const auto d = object.find("delay"); d != object.end()) {
    if (out.timed)
      return malformed_line("both \"timestamp\" and \"delay\": a call has one or the other");
    if (auto p = read_ms(*d, "delay", "a tool gap", out.delay); !p.empty())
      return malformed_line(p);
  }
  if (auto p = read_count(object, "input_length", "prompt", out.input_tokens); !p.empty())
    return malformed_line(p);
  if (auto p = read_count(object, "output_length", "output", out.output_tokens); !p.empty())
    return malformed_line(p);
  if (auto p = read_hash_ids(object, out.input_tokens, out.hash_ids); !p.empty())
    return malformed_line(p);
  return {};
}

}  // namespace detail

namespace {

[[noreturn]] void fail_at(const TraceWorkloadSpec& spec, int64_t line, std::string problem,
                          std::string allowed) {
  config::Diagnostic d;
  d.where.file = spec.path;
  d.where.line = static_cast<int>(line);
  d.where.col = line > 0 ? 1 : 0;
  d.key_path = line > 0 ? spec.key_path : spec.key_path + ".path";
  d.problem = std::move(problem);
  d.allowed = std::move(allowed);
  std::vector<config::Diagnostic> all;
  all.push_back(std::move(d));
  throw config::ConfigError(std::move(all));
}

constexpr const char* kGraphRule =
    "every parent_session_id names a session of the file, parent links form a tree";

}  // namespace

std::shared_ptr<const AgenticTrace> load_agentic_trace(const TraceWorkloadSpec& spec) {
  std::ifstream in(spec.path);
  if (!in)
    fail_at(spec, 0, "cannot be opened",
            "a readable file; a relative path is from the YAML file's folder");
  auto trace = std::make_shared<AgenticTrace>();
  std::map<std::string, uint64_t> ids;
  // Per session: the parent's name and the line that named it.
  std::vector<std::pair<std::string, int64_t>> parent_names;
  std::string text;
  int64_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    TraceRecord r;
    const LineResult result = detail::parse_agentic_line(text, {}, r);
    if (result.kind == LineKind::blank) continue;
    if (result.kind == LineKind::malformed) {
      if (spec.skip_malformed) {
        ++trace->skipped_records;
        continue;
      }
      fail_at(spec, line, fmt::format("agentic trace: {}", result.problem),
              "one JSON object per call (docs/yaml.md, trace format agentic)");
    }
    auto [it, fresh] = ids.try_emplace(r.session_id, trace->sessions.size() + 1);
    if (fresh) {
      AgenticTraceSession s;
      s.name = r.session_id;
      s.id = it->second;
      s.branch_call = static_cast<int32_t>(std::min<int64_t>(r.branch_call, INT32_MAX));
      trace->sessions.push_back(std::move(s));
      parent_names.emplace_back(r.parent_session_id, line);
      if (r.parent_session_id.empty() && !r.timed)
        fail_at(spec, line,
                fmt::format("agentic trace: session \"{}\" starts here without a \"timestamp\"",
                            r.session_id),
                "a root session's first call has a timestamp (ms); a sub-agent names its parent");
      if (!r.parent_session_id.empty() && r.timed)
        fail_at(spec, line,
                fmt::format("agentic trace: sub-agent \"{}\" has a \"timestamp\"; it starts a "
                            "\"delay\" after its parent's branch_call completes",
                            r.session_id),
                "delay (ms) on a sub-agent's calls");
    } else {
      const std::string& parent = parent_names[it->second - 1].first;
      if (r.timed)
        fail_at(spec, line,
                fmt::format("agentic trace: call {} of session \"{}\" has a \"timestamp\"; a later "
                            "call arrives a \"delay\" after the previous one completes",
                            trace->sessions[it->second - 1].calls.size(), r.session_id),
                "delay (ms)");
      if (!r.parent_session_id.empty() &&
          (r.parent_session_id != parent ||
           r.branch_call != trace->sessions[it->second - 1].branch_call))
        fail_at(spec, line,
                fmt::format("agentic trace: session \"{}\" names another parent or branch_call "
                            "than on its first line ({})",
                            r.session_id, parent_names[it->second - 1].second),
                "the same parent_session_id and branch_call on every record, or only on the first");
    }
    AgenticTraceSession& s = trace->sessions[it->second - 1];
    if (fresh && r.timed) s.start = r.time;
    AgenticTraceCall call;
    call.line = line;
    call.delay = r.delay;
    call.input_tokens = r.input_tokens;
    call.output_tokens = r.output_tokens;
    call.hash_ids = std::move(r.hash_ids);
    s.calls.push_back(std::move(call));
  }
  if (in.bad())
    fail_at(spec, line + 1, "cannot be read (an input/output error)", "a readable regular file");
  if (trace->sessions.empty())
    fail_at(spec, std::max<int64_t>(line, 1), "agentic trace: the file holds no call",
            "at least one well-formed record");
  // Parent links: each names a session of the file ...
  for (size_t i = 0; i < trace->sessions.size(); ++i) {
    const auto& [name, at] = parent_names[i];
    if (name.empty()) continue;
    const auto parent = ids.find(name);
    if (parent == ids.end())
      fail_at(spec, at,
              fmt::format("agentic trace: session \"{}\" names parent_session_id \"{}\", which no "
                          "record of the file has",
                          trace->sessions[i].name, name),
              kGraphRule);
    trace->sessions[i].parent = parent->second;
  }
  // ... and following them from any session ends at a root (no cycle).
  for (size_t i = 0; i < trace->sessions.size(); ++i) {
    std::vector<uint64_t> path{trace->sessions[i].id};
    uint64_t at = trace->sessions[i].parent;
    while (at != 0) {
      if (std::find(path.begin(), path.end(), at) != path.end()) {
        std::vector<std::string> names;
        for (uint64_t p : path) names.push_back("\"" + trace->sessions[p - 1].name + "\"");
        names.push_back("\"" + trace->sessions[at - 1].name + "\"");
        fail_at(spec, parent_names[i].second,
                fmt::format("agentic trace: the session graph has a cycle: {} (each names the "
                            "next as its parent_session_id)",
                            fmt::join(names, " -> ")),
                kGraphRule);
      }
      path.push_back(at);
      at = trace->sessions[at - 1].parent;
    }
  }
  for (auto& s : trace->sessions) s.children.resize(s.calls.size());
  for (size_t i = 0; i < trace->sessions.size(); ++i) {
    const AgenticTraceSession& s = trace->sessions[i];
    if (s.parent == 0) continue;
    AgenticTraceSession& parent = trace->sessions[s.parent - 1];
    if (s.branch_call >= static_cast<int64_t>(parent.calls.size()))
      fail_at(spec, parent_names[i].second,
              fmt::format("agentic trace: session \"{}\" branches after call {} of \"{}\", which "
                          "has {} call{}",
                          s.name, s.branch_call, parent.name, parent.calls.size(),
                          parent.calls.size() == 1 ? "" : "s"),
              fmt::format("branch_call in [0, {}]", parent.calls.size() - 1));
    parent.children[static_cast<size_t>(s.branch_call)].push_back(s.id);
  }
  // Roots start relative to the earliest root.
  TimeNs origin = INT64_MAX;
  for (const auto& s : trace->sessions)
    if (s.parent == 0) origin = std::min(origin, s.start);
  for (auto& s : trace->sessions)
    if (s.parent == 0) s.start -= origin;
  // Every start and delay stays in the simulated span once scaled (a delay
  // of 1e12 ms slowed down a million-fold would wrap), so the replay's sums
  // of a few of them stay in int64 (kMaxSimulatedTimeNs).
  auto check_scaled = [&](TimeNs t, int64_t at_line, const char* what) {
    if (!round_in_range(static_cast<double>(t) * spec.time_scale, 0, kMaxSimulatedTimeNs))
      fail_at(spec, at_line,
              fmt::format("agentic trace: this call's {} times time_scale {} lies beyond {}", what,
                          spec.time_scale, simulated_span_text()),
              "a smaller time_scale, or shorter timestamps and delays");
  };
  for (const auto& s : trace->sessions) {
    if (s.parent == 0) check_scaled(s.start, s.calls.front().line, "timestamp");
    for (const AgenticTraceCall& c : s.calls) check_scaled(c.delay, c.line, "delay");
  }
  return trace;
}

namespace detail {
namespace {

struct Pending {
  TimeNs arrival = 0;
  uint64_t session = 0;  // id
  int32_t call = 0;
};
bool later(const Pending& a, const Pending& b) {
  if (a.arrival != b.arrival) return a.arrival > b.arrival;
  if (a.session != b.session) return a.session > b.session;
  return a.call > b.call;
}

// Arrivals follow completions as the file's graph says; content from the
// hash ids (trace_workload.hpp), outputs keyed by (session, call), so a
// request's tokens never depend on the order of completions.
class AgenticTraceSource final : public WorkloadSource {
 public:
  AgenticTraceSource(const TraceWorkloadSpec& spec, uint64_t seed, int64_t vocab_size)
      : spec_(spec),
        trace_(load_agentic_trace(spec)),
        scale_(spec.time_scale),
        seed_(seed),
        vocabulary_(static_cast<uint64_t>(vocab_size)) {
    state_.resize(trace_->sessions.size());
    for (const auto& s : trace_->sessions)
      if (s.parent == 0) push({scaled(s.start), s.id, 0});
  }

  std::optional<TimeNs> next_arrival() const override {
    if (ready_.empty()) return std::nullopt;
    return ready_.front().arrival;
  }

  Request take() override {
    if (ready_.empty()) throw std::logic_error("take() on an agentic trace with no known arrival");
    std::pop_heap(ready_.begin(), ready_.end(), later);
    const Pending p = ready_.back();
    ready_.pop_back();
    const AgenticTraceSession& s = trace_->sessions[p.session - 1];
    const AgenticTraceCall& c = s.calls[static_cast<size_t>(p.call)];
    Request request;
    request.id = taken_++;
    request.arrival = p.arrival;
    request.session = s.id;
    request.turn = p.call;
    request.parent_session = s.parent;
    request.session_continues = static_cast<size_t>(p.call) + 1 < s.calls.size();
    append_mooncake_prompt(request.prompt, c.hash_ids, c.input_tokens, seed_, 0, vocabulary_);
    append_described(request.output,
                     TokenStream(stream_key(seed_, RandomStream::output_tokens, s.id,
                                            static_cast<uint64_t>(p.call)),
                                 vocabulary_),
                     c.output_tokens);
    ++in_flight_;
    return request;
  }

  void on_complete(const Request& request, TimeNs now) override {
    if (request.session == 0 || request.session > trace_->sessions.size()) return;
    --in_flight_;
    const AgenticTraceSession& s = trace_->sessions[request.session - 1];
    State& st = state_[request.session - 1];
    const auto k = static_cast<size_t>(request.turn);
    st.done_through = request.turn;
    for (uint64_t child : s.children[k])
      push({after(now, trace_->sessions[child - 1].calls[0]), child, 0});
    if (k + 1 < s.calls.size()) {
      st.pending = static_cast<int32_t>(s.children[k].size());
      if (st.pending == 0) release(s, k + 1, now);
    } else if (s.parent != 0) {
      // A sub-agent's last call: the parent's next call may join now.
      const AgenticTraceSession& parent = trace_->sessions[s.parent - 1];
      State& ps = state_[s.parent - 1];
      const auto next = static_cast<size_t>(s.branch_call) + 1;
      if (next < parent.calls.size() && --ps.pending == 0) release(parent, next, now);
    }
  }

  bool exhausted() const override { return ready_.empty() && in_flight_ == 0; }
  int64_t skipped_records() const override { return trace_->skipped_records; }
  size_t held_entries() const override { return ready_.size(); }
  uint64_t taken() const override { return taken_; }

 private:
  struct State {
    int32_t done_through = -1;
    int32_t pending = 0;  // sub-agents the next call still waits for
  };
  // In range: load_agentic_trace checked every start and delay scaled.
  TimeNs scaled(TimeNs t) const {
    return static_cast<TimeNs>(std::llround(static_cast<double>(t) * scale_));
  }
  // A completion plus a delay: a long chain of long delays may still leave
  // the simulated span, an error at the call's line, never a wrap.
  TimeNs after(TimeNs now, const AgenticTraceCall& call) const {
    const std::optional<int64_t> at = checked_add(now, scaled(call.delay));
    if (!at || *at > kMaxSimulatedTimeNs)
      fail_at(spec_, call.line,
              fmt::format("agentic trace: this call would arrive beyond {} (its dependency's "
                          "completion plus its delay)",
                          simulated_span_text()),
              "a smaller time_scale, or shorter delays");
    return *at;
  }
  void push(const Pending& p) {
    ready_.push_back(p);
    std::push_heap(ready_.begin(), ready_.end(), later);
  }
  void release(const AgenticTraceSession& s, size_t call, TimeNs now) {
    push({after(now, s.calls[call]), s.id, static_cast<int32_t>(call)});
  }

  TraceWorkloadSpec spec_;  // its path and key path, for errors while replaying
  std::shared_ptr<const AgenticTrace> trace_;
  double scale_;
  uint64_t seed_;
  FastModulo vocabulary_;
  std::vector<State> state_;
  std::vector<Pending> ready_;  // min-heap by arrival
  int64_t in_flight_ = 0;       // taken, not yet completed
  uint64_t taken_ = 0;
};

}  // namespace

std::unique_ptr<WorkloadSource> make_agentic_trace_source(const TraceWorkloadSpec& spec,
                                                          uint64_t seed, int64_t vocab_size) {
  return std::make_unique<AgenticTraceSource>(spec, seed, vocab_size);
}

}  // namespace detail
}  // namespace kvsim
