// kind: agentic and the agentic trace format: each call extends its
// session's history, the next call arrives a tool time after completion,
// sub-agents share the parent's prefix and the parent joins on them, content
// does not depend on completion order; the trace's session graph and its bad
// inputs; per-session metrics on a hand-built run.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <queue>
#include <set>

#include "sim/core/metrics.hpp"
#include "sim/engine/session_metrics.hpp"
#include "support/test_paths.hpp"
#include "workload_helpers.hpp"
#include "workloads/workload.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::parse_ok;

const char* kAgentic = R"(
kind: agentic
sessions: 20
arrival: {process: poisson, rate_per_s: 0.5}
calls: {dist: uniform, min: 2, max: 6}
system_prompt_tokens: 32
input_tokens: {dist: constant, value: 5}
output_tokens: {dist: uniform, min: 4, max: 30}
tool_output_tokens: {dist: constant, value: 7}
tool_time: {dist: constant, value: 3s}
)";

const char* kFanout = R"(
kind: agentic
sessions: 12
arrival: {process: poisson, rate_per_s: 1}
calls: {dist: constant, value: 3}
system_prompt_tokens: 16
input_tokens: {dist: uniform, min: 3, max: 20}
output_tokens: {dist: uniform, min: 4, max: 30}
tool_output_tokens: {dist: uniform, min: 0, max: 40}
tool_time: {dist: lognormal, mean: 2s, sigma: 0.5, min: 100ms, max: 10s}
fanout: {probability: 0.5, agents: {dist: uniform, min: 1, max: 3}, calls: 2, summary_tokens: 9}
)";

struct Served {
  Request request;
  TimeNs completed = 0;
};

// A toy engine: unlimited parallelism, each request takes service(request);
// completions are delivered in time order, before arrivals at the same time.
template <typename Service>
std::vector<Served> serve(RequestSource& source, Service service) {
  std::vector<Served> served;
  using Pending = std::pair<TimeNs, size_t>;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> in_flight;
  while (true) {
    const auto arrival = source.next_arrival();
    if (!arrival && in_flight.empty()) break;
    if (arrival && (in_flight.empty() || *arrival < in_flight.top().first)) {
      Served s{source.take(), 0};
      s.completed = s.request.arrival + service(s.request);
      in_flight.emplace(s.completed, served.size());
      served.push_back(std::move(s));
    } else {
      const auto [at, index] = in_flight.top();
      in_flight.pop();
      source.on_complete(served[index].request, at);
    }
  }
  EXPECT_TRUE(source.exhausted());
  return served;
}

TimeNs fixed_service(const Request&) {
  return 500'000'000;
}

using Calls = std::map<std::pair<uint64_t, int32_t>, const Served*>;
Calls by_call(const std::vector<Served>& served) {
  Calls calls;
  for (const Served& s : served) {
    const bool fresh = calls.emplace(std::make_pair(s.request.session, s.request.turn), &s).second;
    EXPECT_TRUE(fresh) << "session " << s.request.session << " call " << s.request.turn;
  }
  return calls;
}

std::vector<int32_t> history_of(const Request& r) {
  std::vector<int32_t> h = r.prompt.tokens();
  const std::vector<int32_t>& out = r.output.tokens();
  h.insert(h.end(), out.begin(), out.end());
  return h;
}

bool starts_with(const std::vector<int32_t>& a, const std::vector<int32_t>& prefix) {
  return a.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), a.begin());
}

TEST(AgenticWorkload, EachCallExtendsTheHistoryByOutputToolOutputAndNewTokens) {
  const auto spec = parse_ok(kAgentic);
  auto source = make_request_source(*spec, 7, 32000);
  const auto served = serve(*source, fixed_service);
  const Calls calls = by_call(served);
  int followups = 0;
  for (const auto& [key, s] : calls) {
    const auto next = calls.find({key.first, key.second + 1});
    EXPECT_EQ(s->request.session_continues, next != calls.end());
    EXPECT_EQ(s->request.parent_session, 0u);
    if (next == calls.end()) continue;
    const Request& r = next->second->request;
    const std::vector<int32_t> history = history_of(s->request);
    EXPECT_TRUE(starts_with(r.prompt.tokens(), history));
    // 7 tool output tokens, then 5 new tokens.
    EXPECT_EQ(r.prompt.size(), history.size() + 7 + 5);
    ++followups;
  }
  EXPECT_GT(followups, 20);
}

TEST(AgenticWorkload, TheNextCallArrivesAToolTimeAfterCompletion) {
  const auto spec = parse_ok(kAgentic);
  auto source = make_request_source(*spec, 3, 32000);
  // Service times that differ per call: the gap is from completion, not arrival.
  const auto served = serve(*source, [](const Request& r) {
    return static_cast<TimeNs>(100'000'000 + 37'000'000 * (r.id % 7));
  });
  const Calls calls = by_call(served);
  for (const auto& [key, s] : calls) {
    const auto next = calls.find({key.first, key.second + 1});
    if (next == calls.end()) continue;
    EXPECT_EQ(next->second->request.arrival, s->completed + 3'000'000'000);
  }
}

TEST(AgenticWorkload, SubAgentsShareTheParentPrefixAndTheParentJoins) {
  const auto spec = parse_ok(kFanout);
  auto source = make_request_source(*spec, 11, 32000);
  const auto served = serve(*source, [](const Request& r) {
    return static_cast<TimeNs>(200'000'000 + 50'000'000 * (r.id % 5));
  });
  const Calls calls = by_call(served);
  // Children by (parent, start): the sub-agents of one fan-out start together,
  // when the parent's call that spawned them completes.
  std::map<std::pair<uint64_t, TimeNs>, std::vector<uint64_t>> children;
  std::set<uint64_t> ids;
  for (const auto& [key, s] : calls) ids.insert(key.first);
  int fanouts = 0;
  for (const auto& [key, s] : calls) {
    const Request& r = s->request;
    if (r.parent_session == 0 || r.turn != 0) continue;
    children[{r.parent_session, r.arrival}].push_back(r.session);
    EXPECT_TRUE(ids.count(r.parent_session));
    EXPECT_GT(r.session, r.parent_session);
  }
  for (const auto& [fanout, kids] : children) {
    const uint64_t parent = fanout.first;
    // The parent call a child branched after: the one completing at the
    // child's arrival (children start when it completes).
    const Request& first_child = calls.at({kids.front(), 0})->request;
    const Served* branch = nullptr;
    for (const auto& [key, s] : calls)
      if (key.first == parent && s->completed == first_child.arrival) branch = s;
    ASSERT_NE(branch, nullptr) << "parent " << parent;
    const std::vector<int32_t> history = history_of(branch->request);
    TimeNs last_child_done = 0;
    for (uint64_t kid : kids) {
      EXPECT_TRUE(starts_with(calls.at({kid, 0})->request.prompt.tokens(), history));
      EXPECT_EQ(calls.at({kid, 0})->request.arrival, branch->completed);
      EXPECT_FALSE(calls.at({kid, 1})->request.session_continues);
      last_child_done = std::max(last_child_done, calls.at({kid, 1})->completed);
    }
    const Request& next = calls.at({parent, branch->request.turn + 1})->request;
    EXPECT_EQ(next.arrival, last_child_done);  // the join
    EXPECT_TRUE(starts_with(next.prompt.tokens(), history));
    EXPECT_TRUE(branch->request.session_continues);
    ++fanouts;
  }
  EXPECT_GT(fanouts, 2);
}

TEST(AgenticWorkload, TheStreamIsTheSameWhateverTheCompletionOrder) {
  const auto spec = parse_ok(kFanout);
  auto fast = make_request_source(*spec, 5, 32000);
  auto slow = make_request_source(*spec, 5, 32000);
  const auto a = serve(*fast, fixed_service);
  const auto b = serve(*slow, [](const Request& r) {
    return static_cast<TimeNs>(1'000'000'000 * (1 + (r.id * 7919) % 13));
  });
  const Calls ca = by_call(a), cb = by_call(b);
  ASSERT_EQ(ca.size(), cb.size());
  for (const auto& [key, s] : ca) {
    const auto other = cb.find(key);
    ASSERT_NE(other, cb.end());
    EXPECT_EQ(s->request.prompt.tokens(), other->second->request.prompt.tokens());
    EXPECT_EQ(s->request.output.tokens(), other->second->request.output.tokens());
    EXPECT_EQ(s->request.parent_session, other->second->request.parent_session);
    EXPECT_EQ(s->request.session_continues, other->second->request.session_continues);
  }
}

TEST(AgenticWorkload, BoundsCoverEveryPrompt) {
  const auto spec = parse_ok(kFanout);
  auto source = make_request_source(*spec, 2, 32000);
  const WorkloadBounds bounds = workload_bounds(*spec);
  for (const Served& s : serve(*source, fixed_service)) {
    EXPECT_LE(static_cast<int64_t>(s.request.prompt.size()), bounds.max_prompt_tokens);
    EXPECT_LE(static_cast<int64_t>(s.request.output.size()), bounds.max_output_tokens);
  }
  EXPECT_TRUE(workload_has_session_graph(*spec));
}

// ---- the agentic trace format

std::string trace_yaml(const std::string& path, const std::string& more = "") {
  return "trace: {format: agentic, path: " + path + more + "}\n";
}

TEST(AgenticTrace, ReplaysTheSmallExampleWithItsJoinAndDelays) {
  const std::string path = std::string(KVSIM_SOURCE_DIR) + "/tests/data/agentic_small.jsonl";
  const auto spec = parse_ok(trace_yaml(path));
  EXPECT_TRUE(workload_has_session_graph(*spec));
  auto source = make_request_source(*spec, 1, 32000);
  const auto served = serve(*source, fixed_service);  // every call takes 0.5 s
  ASSERT_EQ(served.size(), 8u);
  const Calls calls = by_call(served);
  // Ids by first appearance: plan 1, plan.a 2, plan.b 3, chat2 4.
  const TimeNs s = 1'000'000'000, ms = 1'000'000, svc = 500 * ms;
  EXPECT_EQ(calls.at({1, 0})->request.arrival, 0);
  EXPECT_EQ(calls.at({4, 0})->request.arrival, 500 * ms);
  EXPECT_EQ(calls.at({1, 1})->request.arrival, svc + 1500 * ms);
  const TimeNs branch_done = svc + 1500 * ms + svc;
  EXPECT_EQ(calls.at({2, 0})->request.arrival, branch_done);
  EXPECT_EQ(calls.at({3, 0})->request.arrival, branch_done + 100 * ms);
  EXPECT_EQ(calls.at({2, 0})->request.parent_session, 1u);
  EXPECT_EQ(calls.at({3, 0})->request.parent_session, 1u);
  const TimeNs a_done = branch_done + svc + 800 * ms + svc;         // plan.a's second call
  EXPECT_EQ(calls.at({1, 2})->request.arrival, a_done + 200 * ms);  // joins after plan.a
  EXPECT_EQ(calls.at({4, 1})->request.arrival, 500 * ms + svc + 3 * s);
  EXPECT_TRUE(calls.at({1, 1})->request.session_continues);
  EXPECT_FALSE(calls.at({1, 2})->request.session_continues);
  // hash ids [0, 1, 2, ...] give the sub-agents the parent's first 3 blocks.
  const std::vector<int32_t> parent = calls.at({1, 1})->request.prompt.tokens();
  const std::vector<int32_t> child = calls.at({2, 0})->request.prompt.tokens();
  EXPECT_TRUE(std::equal(parent.begin(), parent.begin() + 1300, child.begin()));
}

// Parses a trace of `lines` and returns the diagnostics' text.
std::string trace_errors(const std::string& lines, const std::string& more = "") {
  // A folder per process: ctest runs each test in its own, side by side.
  const auto dir =
      std::filesystem::temp_directory_path() / ("kvsim_agentic_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "bad.jsonl";
  std::ofstream(file) << lines;
  config::LoadContext ctx;
  const auto spec = parse_workload(
      config::Node(YAML::Load(trace_yaml(file.string(), more)), "workload", "t.yaml", &ctx));
  EXPECT_EQ(spec, nullptr);
  std::string text;
  for (const auto& d : ctx.diagnostics.all()) text += d.format() + "\n";
  return text;
}

const std::string kRoot =
    R"({"session_id": "r", "timestamp": 0, "input_length": 10, "output_length": 3, "hash_ids": [1]})"
    "\n";

TEST(AgenticTrace, ACycleOfParentLinksIsNamedWithItsLine) {
  const std::string text = trace_errors(
      kRoot +
      R"({"session_id": "a", "parent_session_id": "b", "branch_call": 0, "delay": 0, "input_length": 10, "output_length": 3, "hash_ids": [1]})"
      "\n"
      R"({"session_id": "b", "parent_session_id": "a", "branch_call": 0, "delay": 0, "input_length": 10, "output_length": 3, "hash_ids": [1]})"
      "\n");
  EXPECT_NE(text.find("bad.jsonl:2:"), std::string::npos) << text;
  EXPECT_NE(text.find("cycle: \"a\" -> \"b\" -> \"a\""), std::string::npos) << text;
}

TEST(AgenticTrace, AParentThatNeverAppearsIsNamed) {
  const std::string text = trace_errors(
      kRoot +
      R"({"session_id": "c", "parent_session_id": "ghost", "branch_call": 0, "delay": 0, "input_length": 10, "output_length": 3, "hash_ids": [1]})"
      "\n");
  EXPECT_NE(text.find("bad.jsonl:2:"), std::string::npos) << text;
  EXPECT_NE(text.find("\"ghost\", which no record"), std::string::npos) << text;
}

TEST(AgenticTrace, ANegativeToolGapIsRefused) {
  const std::string text = trace_errors(
      kRoot +
      R"({"session_id": "r", "delay": -5, "input_length": 10, "output_length": 3, "hash_ids": [1]})"
      "\n");
  EXPECT_NE(text.find("bad.jsonl:2:"), std::string::npos) << text;
  EXPECT_NE(text.find("\"delay\" is -5: a tool gap is >= 0 ms"), std::string::npos) << text;
}

TEST(AgenticTrace, OtherGraphMistakesAreRefused) {
  // A branch after a call the parent does not have; a root without a timestamp.
  EXPECT_NE(
      trace_errors(
          kRoot +
          R"({"session_id": "c", "parent_session_id": "r", "branch_call": 4, "delay": 0, "input_length": 10, "output_length": 3, "hash_ids": [1]})"
          "\n")
          .find("branches after call 4"),
      std::string::npos);
  EXPECT_NE(
      trace_errors(R"({"session_id": "r", "input_length": 10, "output_length": 3, "hash_ids": [1]})"
                   "\n")
          .find("without a \"timestamp\""),
      std::string::npos);
}

TEST(AgenticTrace, TimesBeyondTheSimulatedSpanOnceScaledAreRefused) {
  // 1e12 ms is a valid delay, but slowed down a million-fold it would wrap
  // int64 nanoseconds (found by fuzz_trace_agentic): refused at its line.
  const std::string text = trace_errors(
      kRoot +
          R"({"session_id": "r", "delay": 1e12, "input_length": 10, "output_length": 3, "hash_ids": [1]})"
          "\n",
      ", time_scale: 1e6");
  EXPECT_NE(text.find("bad.jsonl:2:"), std::string::npos) << text;
  EXPECT_NE(text.find("delay times time_scale 1000000 lies beyond"), std::string::npos) << text;
  EXPECT_NE(
      trace_errors(
          R"({"session_id": "r", "timestamp": 1e12, "input_length": 10, "output_length": 3, "hash_ids": [1]})"
          "\n"
          R"({"session_id": "s", "timestamp": 0, "input_length": 10, "output_length": 3, "hash_ids": [1]})"
          "\n",
          ", time_scale: 1e6")
          .find("bad.jsonl:1:"),
      std::string::npos);
}

// ---- per-session metrics

Request call(uint64_t session, int32_t turn, uint64_t parent, TimeNs arrival, int64_t prompt) {
  Request r;
  r.session = session;
  r.turn = turn;
  r.parent_session = parent;
  r.arrival = arrival;
  r.prompt = std::vector<int32_t>(static_cast<size_t>(prompt), 1);
  return r;
}

TEST(AgenticSessionMetrics, AHandBuiltRun) {
  const TimeNs s = 1'000'000'000;
  SessionMetricsCollector c;
  // Root 1: call 0 [0, 1 s], prompt 100 + output 10; call 1 arrives at 3 s
  // (2 s of tool), prompt 130 with 60 cached: history 110, 50 re-prefilled;
  // done at 4 s. Its sub-agent 2 runs [1 s, 6 s]: the tree ends at 6 s.
  c.completed(call(1, 0, 0, 0, 100), 1 * s, 100, 10, 0);
  c.completed(call(2, 0, 1, 1 * s, 120), 6 * s, 120, 5, 110);
  c.completed(call(1, 1, 0, 3 * s, 130), 4 * s, 130, 10, 60);
  // Root 3: one call [2 s, 3 s].
  c.completed(call(3, 0, 0, 2 * s, 50), 3 * s, 50, 5, 0);
  const SessionMetrics m = c.summary();
  EXPECT_EQ(m.sessions, 3);
  EXPECT_EQ(m.roots, 2);
  EXPECT_EQ(m.calls, 4);
  EXPECT_DOUBLE_EQ(m.e2e_ms_max, 6000.0);  // root 1's tree, its sub-agent included
  EXPECT_DOUBLE_EQ(m.e2e_ms_p50, 1000.0);  // root 3 (nearest rank of 2)
  EXPECT_DOUBLE_EQ(m.e2e_ms_mean, 3500.0);
  EXPECT_DOUBLE_EQ(m.tool_wait_s, 2.0);
  EXPECT_DOUBLE_EQ(m.engine_s, 1.0 + 1.0 + 5.0 + 1.0);
  // Shares: root 1 2 s of 4 s, sub-agent 0, root 3 0: mean 1/6.
  EXPECT_DOUBLE_EQ(m.tool_wait_share, 0.5 / 3.0);
  EXPECT_EQ(m.followup_calls, 1);
  EXPECT_EQ(m.history_tokens, 110);
  EXPECT_EQ(m.reprefilled_tokens, 50);
  EXPECT_DOUBLE_EQ(m.reprefilled_tokens_per_call, 50.0);

  // The summary's line carries the same figures; a run without sessions has none.
  RunMetrics run;
  EXPECT_EQ(session_summary(run), "");
  run.part<SessionMetrics>() = m;
  EXPECT_EQ(session_summary(run),
            "agent sessions: 2 roots (3 sessions counting sub-agents), 4 calls; end to end p50 "
            "1.0 s, p99 6.0 s; tool waits 17% of a session's span; 50.0 history tokens prefilled "
            "again per follow-up call\n");
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
