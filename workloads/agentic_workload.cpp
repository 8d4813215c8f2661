// `kind: agentic`: sessions of LLM calls separated by tool calls, as an agent
// loop issues them. Call k's prompt is the system prompt, then for every
// earlier call its new tokens, its reply and the tool's output (and, after a
// fan-out, each sub-agent's result), then call k's new tokens: the prompt
// extends the session's history exactly, so a prefix cache can reuse it.
// Call k+1 arrives a tool time after call k COMPLETES (on_complete), as an
// agent waits for the reply, runs the tool, then calls again.
//
// Fan-out: at a call that is not its last, a root session may spawn
// sub-agent sessions (as agent frameworks run sub-agents on a shared
// context; NVIDIA AIPerf's conversation DAGs fork children that inherit the
// parent's history, ai-dynamo/aiperf docs/benchmark-modes/dag.md). A child's
// prompts start with the parent's history up to and including the spawning
// call's reply; the children start when that call completes, and the
// parent's next call arrives when the last child's last call completes (the
// join), its history extended by the call's tool output and every child's
// result (summary_tokens), in child order. Sub-agents do not fan out again.
//
// Every length, tool time, fan-out and token of a session is a pure function
// of (seed, root index, child ordinal, call): the stream holds only the
// sessions in flight, and neither content nor session ids depend on the order
// in which the engine completes calls. Ids: root r takes the next id, its
// children the ids after it (in spawn order), so ids are 1-based and unique
// across roots and children.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "workloads/workload_kinds.hpp"
#include "workloads/workload_params.hpp"

namespace kvsim::detail {
namespace {

constexpr int64_t kMaxAgentSessions = 1'000'000'000;
// A session's key is (root index << kOrdinalBits) | child ordinal.
constexpr int kOrdinalBits = 24;
constexpr int64_t kMaxChildren = (int64_t{1} << kOrdinalBits) - 1;
// Draws of the fan-out coin and of its size use the same stream apart by b.
constexpr uint64_t kFanoutSizeTag = uint64_t{1} << 40;

const AgenticWorkloadSpec& agentic_of(const WorkloadSpec& spec) {
  return std::get<AgenticWorkloadSpec>(spec.body);
}

// What a root session's whole tree is, drawn when it starts.
struct RootPlan {
  uint64_t index = 0;                // 0-based root index
  uint64_t id = 0;                   // Request::session of the root
  int32_t calls = 0;                 // the root's calls
  std::vector<int32_t> spawns;       // sub-agents spawned at each call
  std::vector<int32_t> first_child;  // ordinal of the first child spawned at each call
  int64_t children = 0;              // total sub-agents
};

struct AgenticSession {
  std::shared_ptr<const RootPlan> root;
  int32_t ordinal = 0;      // 0: the root; 1..: a sub-agent
  int32_t branch_call = 0;  // a sub-agent: the root's call it branched after
  int32_t calls = 0;
  int32_t next_call = 0;
  TimeNs arrival = 0;  // of next_call, once known
  uint64_t id() const { return root->id + static_cast<uint64_t>(ordinal); }
  uint64_t key() const { return (root->index << kOrdinalBits) | static_cast<uint64_t>(ordinal); }
};

bool call_arrives_later(const AgenticSession& a, const AgenticSession& b) {
  if (a.arrival != b.arrival) return a.arrival > b.arrival;
  return a.id() > b.id();
}

class AgenticSource final : public WorkloadSource {
 public:
  AgenticSource(AgenticWorkloadSpec spec, uint64_t seed, int64_t vocab_size)
      : spec_(std::move(spec)), seed_(seed), vocabulary_(static_cast<uint64_t>(vocab_size)) {
    start_next_root();
  }

  std::optional<TimeNs> next_arrival() const override {
    const AgenticSession* next = next_session();
    if (next == nullptr) return std::nullopt;
    return next->arrival;
  }

  Request take() override {
    const AgenticSession* next = next_session();
    if (next == nullptr)
      throw std::logic_error("take() on an agentic source with no known arrival");
    AgenticSession session = *next;
    if (starting_ && next == &*starting_) {
      start_next_root();
    } else {
      std::pop_heap(waiting_.begin(), waiting_.end(), call_arrives_later);
      waiting_.pop_back();
    }
    const int32_t t = session.next_call;
    Request request;
    request.id = taken_++;
    request.arrival = session.arrival;
    request.session = session.id();
    request.turn = t;
    request.parent_session = session.ordinal == 0 ? 0 : session.root->id;
    request.prefix_group = spec_.system_prompt_tokens > 0 ? 0 : -1;
    build_prompt(session, t, request.prompt);
    append_described(request.output, tokens(RandomStream::output_tokens, session.key(), t),
                     output_length(session.key(), t));
    session.next_call = t + 1;
    request.session_continues = session.next_call < session.calls;
    // A call with a follow-up, and a sub-agent's last call (its parent joins
    // on it), wait for their completion.
    if (request.session_continues || session.ordinal != 0) awaiting_.emplace(session.id(), session);
    return request;
  }

  void on_complete(const Request& request, TimeNs now) override {
    if (request.session == 0) return;
    const auto it = awaiting_.find(request.session);
    if (it == awaiting_.end()) return;  // a root's last call
    AgenticSession session = it->second;
    if (request.turn + 1 != session.next_call) {
      throw std::invalid_argument(
          fmt::format("on_complete: session {} call {} completed, but call {} is the one in flight",
                      request.session, request.turn, session.next_call - 1));
    }
    awaiting_.erase(it);
    if (session.next_call >= session.calls) {  // a sub-agent is done: its parent may join
      const auto parent = joining_.find(session.root->id);
      if (parent == joining_.end())
        throw std::logic_error(
            fmt::format("sub-agent {} ended without a parent waiting", request.session));
      if (--parent->second.pending == 0) {
        AgenticSession p = parent->second.session;
        joining_.erase(parent);
        p.arrival = now;
        push_waiting(p);
      }
      return;
    }
    const int32_t done = request.turn;
    const int32_t children =
        session.ordinal == 0 ? session.root->spawns[static_cast<size_t>(done)] : 0;
    if (children > 0) {
      for (int32_t c = 0; c < children; ++c) {
        AgenticSession child;
        child.root = session.root;
        child.ordinal = session.root->first_child[static_cast<size_t>(done)] + c;
        child.branch_call = done;
        child.calls = static_cast<int32_t>(
            keyed_sample(*spec_.fanout->calls, seed_, RandomStream::subagent_calls, child.key()));
        child.arrival = now;
        push_waiting(child);
      }
      joining_.emplace(session.id(), Joining{session, children});
      return;
    }
    session.arrival = now + keyed_sample(*spec_.tool_time, seed_, RandomStream::tool_time,
                                         session.key(), static_cast<uint64_t>(session.next_call));
    push_waiting(session);
  }

  bool exhausted() const override {
    return !starting_ && waiting_.empty() && awaiting_.empty() && joining_.empty();
  }
  size_t held_entries() const override {
    return waiting_.size() + awaiting_.size() + joining_.size();
  }
  uint64_t taken() const override { return taken_; }

 private:
  struct Joining {
    AgenticSession session;  // the parent, its next call waiting for the join
    int32_t pending = 0;     // children still running
  };

  int64_t input_length(uint64_t key, int32_t t) const {
    return keyed_sample(*spec_.input_tokens, seed_, RandomStream::input_length, key,
                        static_cast<uint64_t>(t));
  }
  int64_t output_length(uint64_t key, int32_t t) const {
    return keyed_sample(*spec_.output_tokens, seed_, RandomStream::output_length, key,
                        static_cast<uint64_t>(t));
  }
  int64_t tool_length(uint64_t key, int32_t t) const {
    return keyed_sample(*spec_.tool_output_tokens, seed_, RandomStream::tool_length, key,
                        static_cast<uint64_t>(t));
  }
  TokenStream tokens(RandomStream stream, uint64_t key, int32_t t) const {
    return TokenStream(stream_key(seed_, stream, key, static_cast<uint64_t>(t)), vocabulary_);
  }
  void append_part(TokenContent& out, RandomStream stream, uint64_t key, int32_t t,
                   int64_t count) const {
    append_described(out, tokens(stream, key, t), count);
  }
  // Call j of a session as later calls carry it: new tokens, reply, tool
  // output, then (a root's fan-out) every sub-agent's result.
  void append_call(TokenContent& out, const AgenticSession& s, int32_t j) const {
    const uint64_t key = s.key();
    append_part(out, RandomStream::user_tokens, key, j, input_length(key, j));
    append_part(out, RandomStream::output_tokens, key, j, output_length(key, j));
    append_part(out, RandomStream::tool_tokens, key, j, tool_length(key, j));
    if (s.ordinal != 0) return;
    const RootPlan& plan = *s.root;
    for (int32_t c = 0; c < plan.spawns[static_cast<size_t>(j)]; ++c) {
      const uint64_t child_key =
          (plan.index << kOrdinalBits) |
          static_cast<uint64_t>(plan.first_child[static_cast<size_t>(j)] + c);
      append_part(out, RandomStream::summary_tokens, child_key, 0,
                  keyed_sample(*spec_.fanout->summary_tokens, seed_, RandomStream::summary_length,
                               child_key));
    }
  }
  // Described, not generated (TokenContent::append_stream): a call's prompt
  // is its whole history, so generating it cost each call as many token
  // draws as its context, where a description costs a run per part; the
  // engine hashes a block inside a run from the run's key, and every call
  // of a session describes the same parts with the same keys, so a
  // history's blocks hash alike in every call that carries them (the
  // replies included: a call's output is described too).
  void build_prompt(const AgenticSession& s, int32_t t, TokenContent& out) const {
    out.reserve_runs(static_cast<size_t>(3 * (s.branch_call + t) + 4));
    append_part(out, RandomStream::system_tokens, 0, 0, spec_.system_prompt_tokens);
    if (s.ordinal != 0) {  // the parent's history up to the branching call's reply
      AgenticSession parent;
      parent.root = s.root;
      parent.calls = s.root->calls;
      for (int32_t j = 0; j < s.branch_call; ++j) append_call(out, parent, j);
      const uint64_t key = parent.key();
      append_part(out, RandomStream::user_tokens, key, s.branch_call,
                  input_length(key, s.branch_call));
      append_part(out, RandomStream::output_tokens, key, s.branch_call,
                  output_length(key, s.branch_call));
    }
    for (int32_t j = 0; j < t; ++j) append_call(out, s, j);
    append_part(out, RandomStream::user_tokens, s.key(), t, input_length(s.key(), t));
  }

  void push_waiting(const AgenticSession& s) {
    waiting_.push_back(s);
    std::push_heap(waiting_.begin(), waiting_.end(), call_arrives_later);
  }
  const AgenticSession* next_session() const {
    const AgenticSession* best = starting_ ? &*starting_ : nullptr;
    if (!waiting_.empty() && (best == nullptr || call_arrives_later(*best, waiting_.front())))
      best = &waiting_.front();
    return best;
  }

  // Draws the next root's start and its whole plan (calls, fan-outs).
  void start_next_root() {
    starting_.reset();
    if (next_index_ >= static_cast<uint64_t>(spec_.sessions)) return;
    const uint64_t r = next_index_++;
    if (r > 0) {
      Rng arrival_rng = Rng::keyed(seed_, RandomStream::arrival, r);
      last_start_ = spec_.arrival->next_arrival(last_start_, r, arrival_rng);
    }
    auto plan = std::make_shared<RootPlan>();
    plan->index = r;
    plan->id = next_id_;
    const uint64_t key = r << kOrdinalBits;
    plan->calls =
        static_cast<int32_t>(keyed_sample(*spec_.calls, seed_, RandomStream::session_turns, key));
    plan->spawns.assign(static_cast<size_t>(plan->calls), 0);
    plan->first_child.assign(static_cast<size_t>(plan->calls), 0);
    int64_t ordinal = 1;
    if (spec_.fanout) {
      for (int32_t k = 0; k + 1 < plan->calls; ++k) {
        Rng coin = Rng::keyed(seed_, RandomStream::fanout, key, static_cast<uint64_t>(k));
        if (!(coin.uniform01() < spec_.fanout->probability)) continue;
        const int64_t m =
            std::min<int64_t>(keyed_sample(*spec_.fanout->agents, seed_, RandomStream::fanout, key,
                                           static_cast<uint64_t>(k) | kFanoutSizeTag),
                              kMaxChildren - (ordinal - 1));
        if (m <= 0) continue;
        plan->first_child[static_cast<size_t>(k)] = static_cast<int32_t>(ordinal);
        plan->spawns[static_cast<size_t>(k)] = static_cast<int32_t>(m);
        ordinal += m;
      }
    }
    plan->children = ordinal - 1;
    next_id_ += 1 + static_cast<uint64_t>(plan->children);
    AgenticSession session;
    session.root = std::move(plan);
    session.calls = session.root->calls;
    session.arrival = last_start_;
    starting_ = session;
  }

  AgenticWorkloadSpec spec_;
  uint64_t seed_;
  FastModulo vocabulary_;
  uint64_t taken_ = 0;
  uint64_t next_index_ = 0;  // next root to draw
  uint64_t next_id_ = 1;     // Request::session of the next root
  TimeNs last_start_ = 0;
  std::optional<AgenticSession> starting_;
  std::vector<AgenticSession> waiting_;          // min-heap: next call's arrival is known
  std::map<uint64_t, AgenticSession> awaiting_;  // by id: a call in flight
  std::map<uint64_t, Joining> joining_;          // by id: a parent waiting for its sub-agents
};

}  // namespace

config::ComponentInfo agentic_fanout_info() {
  using namespace config;
  return {"section",
          "workload.fanout",
          "kind: agentic: sub-agents that branch off a session's history and join",
          {number_param("probability", std::nullopt, 0.0, 1.0, "",
                        "chance that a call (not a session's last) spawns sub-agents"),
           distribution_param("agents", true, "sessions", "sub-agents per fan-out (>= 1)"),
           distribution_param("calls", true, "calls", "calls of each sub-agent (>= 1)"),
           distribution_param("summary_tokens", true, "tokens",
                              "each sub-agent's result, appended to the parent's history")}};
}

config::ComponentInfo agentic_workload_info() {
  using namespace config;
  return {
      "workload",
      "agentic",
      "agent sessions: LLM calls separated by tool calls, each prompt extending the history; "
      "optional sub-agents that share the parent's prefix and join",
      {int_param("sessions", std::nullopt, 1, kMaxAgentSessions, "sessions",
                 "how many root sessions start"),
       section_param("arrival", true, "{process: ..., ...}",
                     "when root sessions start (poisson, gamma or constant; not closed)"),
       distribution_param("calls", true, "calls", "LLM calls per root session (>= 1)"),
       int_param("system_prompt_tokens", 0, 0, kMaxTokensPerValue, "tokens",
                 "shared by every session (a real shared prefix); 0 for none"),
       distribution_param("input_tokens", true, "tokens", "new tokens of each call (>= 1)"),
       distribution_param("output_tokens", true, "tokens", "tokens each call generates (>= 1)"),
       distribution_param("tool_output_tokens", true, "tokens",
                          "the tool's output appended to the history after each call (>= 0)"),
       distribution_param("tool_time", true, "time",
                          "from a call's completion to the next call's arrival"),
       optional_param(section_param("fanout", false, "{probability, agents, calls, summary_tokens}",
                                    "sub-agents (absent: none)"))}};
}

void parse_agentic_workload(config::MapReader& reader, WorkloadSpec& spec) {
  const config::ParamValues values = config::read_params(reader, agentic_workload_info());
  AgenticWorkloadSpec a;
  a.sessions = values.integer("sessions");
  a.arrival = read_arrival(reader, "arrival");
  a.calls = read_distribution(reader, "calls",
                              {QuantityKind::tokens, 1, "a session makes at least 1 call"});
  a.system_prompt_tokens = values.integer("system_prompt_tokens");
  a.input_tokens = read_distribution(reader, "input_tokens",
                                     {QuantityKind::tokens, 1, "a call adds at least 1 token"});
  a.output_tokens = read_distribution(reader, "output_tokens", output_length_rules());
  a.tool_output_tokens =
      read_distribution(reader, "tool_output_tokens", {QuantityKind::tokens, 0, ""});
  // tool_time: durations with units; a negative draw is refused by the floor 0
  a.tool_time = read_distribution(reader, "tool_time", {QuantityKind::duration, 0, ""});
  if (const config::Node node = reader.child("fanout"); node.defined()) {
    config::MapReader f(node);
    if (f.valid()) {
      const config::ParamValues fv = config::read_params(f, agentic_fanout_info());
      AgenticFanoutSpec fan;
      fan.probability = fv.number("probability");
      fan.agents = read_distribution(
          f, "agents", {QuantityKind::tokens, 1, "a fan-out spawns at least 1 agent"});
      fan.calls = read_distribution(f, "calls",
                                    {QuantityKind::tokens, 1, "a sub-agent makes at least 1 call"});
      fan.summary_tokens = read_distribution(f, "summary_tokens", {QuantityKind::tokens, 0, ""});
      f.finish();
      a.fanout = std::move(fan);
    }
  }
  spec.body = std::move(a);
}

std::unique_ptr<WorkloadSource> make_agentic_source(const WorkloadSpec& spec, uint64_t seed,
                                                    int64_t vocab_size) {
  return std::make_unique<AgenticSource>(agentic_of(spec), seed, vocab_size);
}

WorkloadBounds agentic_bounds(const WorkloadSpec& spec) {
  const AgenticWorkloadSpec& a = agentic_of(spec);
  // Each value is at most 2^26 tokens: products stay far below int64.
  const int64_t in = a.input_tokens->upper_bound();
  const int64_t out = a.output_tokens->upper_bound();
  const int64_t tool = a.tool_output_tokens->upper_bound();
  int64_t per_call = in + out + tool;
  int64_t child_calls = 0;
  if (a.fanout) {
    per_call += a.fanout->agents->upper_bound() * a.fanout->summary_tokens->upper_bound();
    child_calls = a.fanout->calls->upper_bound();
  }
  const int64_t calls = a.calls->upper_bound();
  const int64_t root = a.system_prompt_tokens + (calls - 1) * per_call + in;
  // A sub-agent branches at most after the root's second-to-last call.
  const int64_t child = child_calls == 0 ? 0
                                         : a.system_prompt_tokens + (calls - 2) * per_call + in +
                                               out + (child_calls - 1) * (in + out + tool) + in;
  return {std::max(root, child), out};
}

}  // namespace kvsim::detail
