// Chat request streams of workloads/: each turn carries its history, the next
// turn arrives a think time after completion, content independent of engine
// timing, max_context_tokens, memory bounded by the sessions in flight.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "workload_helpers.hpp"
#include "workloads/workload.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::parse_ok;

const char* kChat = R"(
kind: chat
sessions: 40
arrival: {process: poisson, rate_per_s: 0.5}
turns: {dist: uniform, min: 2, max: 6}
system_prompt_tokens: 32
user_tokens: {dist: lognormal, mean: 40, sigma: 0.5, min: 8, max: 200}
output_tokens: {dist: lognormal, mean: 30, sigma: 0.5, min: 8, max: 100}
think_time: {dist: constant, value: 2s}
)";

struct Served {
  Request request;
  TimeNs completed = 0;
};

// A toy engine: unlimited parallelism, each request takes `service(request)`.
// Completions are delivered in time order, before arrivals at the same time.
template <typename Service>
std::vector<Served> serve(RequestSource& source, Service service) {
  std::vector<Served> served;
  using Pending = std::pair<TimeNs, size_t>;  // completion time, index into served
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> in_flight;
  const auto* introspect = dynamic_cast<const WorkloadSource*>(&source);
  std::set<uint64_t> active_sessions;
  while (true) {
    const auto arrival = source.next_arrival();
    if (!arrival && in_flight.empty()) break;
    if (arrival && (in_flight.empty() || *arrival < in_flight.top().first)) {
      Served s{source.take(), 0};
      EXPECT_EQ(s.request.arrival, *arrival);
      s.completed = s.request.arrival + service(s.request);
      active_sessions.insert(s.request.session);
      in_flight.emplace(s.completed, served.size());
      served.push_back(std::move(s));
    } else {
      const auto [at, index] = in_flight.top();
      in_flight.pop();
      source.on_complete(served[index].request, at);
    }
    // Memory: never more entries than sessions ever started (and in flight).
    EXPECT_LE(introspect->held_entries(), active_sessions.size());
  }
  EXPECT_TRUE(source.exhausted());
  EXPECT_EQ(introspect->held_entries(), 0u);
  return served;
}

TimeNs fast_service(const Request& r) {
  return 100 * kNsPerMs + static_cast<TimeNs>(r.output.size()) * 10 * kNsPerMs;
}

std::map<std::pair<uint64_t, int32_t>, Served> by_turn(const std::vector<Served>& served) {
  std::map<std::pair<uint64_t, int32_t>, Served> out;
  for (const auto& s : served) out[{s.request.session, s.request.turn}] = s;
  return out;
}

TEST(ChatWorkload, EachTurnCarriesItsHistoryAndArrivesAThinkTimeAfterCompletion) {
  const auto spec = parse_ok(kChat);
  auto source = make_request_source(*spec, 21, 32000);
  const auto served = serve(*source, fast_service);
  const auto turns = by_turn(served);
  std::set<uint64_t> sessions;
  std::vector<int32_t> system_prompt;
  for (size_t i = 0; i < served.size(); ++i) EXPECT_EQ(served[i].request.id, i);
  for (const auto& [key, s] : turns) {
    const auto [session, turn] = key;
    sessions.insert(session);
    EXPECT_GE(session, 1u);
    EXPECT_EQ(s.request.prefix_group, 0);
    const std::vector<int32_t> sys(s.request.prompt.begin(), s.request.prompt.begin() + 32);
    if (system_prompt.empty()) system_prompt = sys;
    EXPECT_EQ(sys, system_prompt);  // the one system prompt every session shares
    if (turn == 0) continue;
    ASSERT_TRUE(turns.count({session, turn - 1})) << session << " " << turn;
    const Served& previous = turns.at({session, turn - 1});
    std::vector<int32_t> history = previous.request.prompt;
    history.insert(history.end(), previous.request.output.begin(), previous.request.output.end());
    ASSERT_GT(s.request.prompt.size(), history.size());
    EXPECT_TRUE(std::equal(history.begin(), history.end(), s.request.prompt.begin()))
        << "session " << session << " turn " << turn;
    EXPECT_EQ(s.request.arrival, previous.completed + 2 * kNsPerS);
  }
  EXPECT_EQ(sessions.size(), 40u);
  // Turns per session in [2, 6]; first user messages differ between sessions.
  std::set<std::vector<int32_t>> first_turns;
  for (uint64_t session : sessions) {
    int32_t last = 0;
    while (turns.count({session, last + 1})) ++last;
    EXPECT_GE(last + 1, 2);
    EXPECT_LE(last + 1, 6);
    first_turns.insert(turns.at({session, 0}).request.prompt);
  }
  EXPECT_EQ(first_turns.size(), 40u);
}

TEST(ChatWorkload, ContentDoesNotDependOnCompletionTiming) {
  // Two engines with very different speeds see the same sessions: same
  // prompts and outputs per (session, turn), only arrival times differ.
  const auto spec = parse_ok(kChat);
  auto a = by_turn(serve(*make_request_source(*spec, 8, 32000), fast_service));
  auto b = by_turn(serve(*make_request_source(*spec, 8, 32000), [](const Request& r) {
    return 30 * kNsPerS + static_cast<TimeNs>(r.prompt.size()) * kNsPerMs;
  }));
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [key, s] : a) {
    ASSERT_TRUE(b.count(key));
    EXPECT_EQ(s.request.prompt, b.at(key).request.prompt);
    EXPECT_EQ(s.request.output, b.at(key).request.output);
    if (key.second == 0) {
      EXPECT_EQ(s.request.arrival, b.at(key).request.arrival);
    }
  }
}

TEST(ChatWorkload, NextTurnUnknownUntilCompletion) {
  const auto spec = parse_ok(R"(
kind: chat
sessions: 1
arrival: {process: constant, rate_per_s: 1}
turns: 3
user_tokens: 5
output_tokens: 4
think_time: {dist: exponential, mean: 10s}
)");
  auto source = make_request_source(*spec, 2, 1000);
  ASSERT_EQ(source->next_arrival(), std::optional<TimeNs>(0));
  Request first = source->take();
  EXPECT_EQ(first.prompt.size(), 5u);
  EXPECT_EQ(first.prefix_group, -1);  // no system prompt
  EXPECT_FALSE(source->next_arrival().has_value());
  EXPECT_FALSE(source->exhausted());
  Request wrong = first;
  wrong.turn = 1;
  EXPECT_THROW(source->on_complete(wrong, 5 * kNsPerS), std::invalid_argument);
  source->on_complete(first, 5 * kNsPerS);
  ASSERT_TRUE(source->next_arrival().has_value());
  EXPECT_GE(*source->next_arrival(), 5 * kNsPerS);
  Request second = source->take();
  EXPECT_EQ(second.prompt.size(), 5u + 4u + 5u);
  EXPECT_FALSE(source->next_arrival().has_value());
  source->on_complete(second, 20 * kNsPerS);
  Request third = source->take();
  EXPECT_EQ(third.turn, 2);
  EXPECT_TRUE(source->exhausted());          // the last turn is out: nothing more can come
  source->on_complete(third, 40 * kNsPerS);  // a last turn's completion is accepted
  EXPECT_TRUE(source->exhausted());
}

TEST(ChatWorkload, MaxContextEndsSessionsBeforeAnOverlongTurn) {
  const auto spec = parse_ok(R"(
kind: chat
sessions: 30
arrival: {process: poisson, rate_per_s: 1}
turns: 50
system_prompt_tokens: 100
user_tokens: {dist: uniform, min: 50, max: 150}
output_tokens: {dist: uniform, min: 50, max: 150}
think_time: 1s
max_context_tokens: 1500
)");
  const auto served = serve(*make_request_source(*spec, 17, 32000), fast_service);
  std::map<uint64_t, int32_t> turns_of;
  for (const auto& s : served) {
    EXPECT_LE(s.request.prompt.size() + s.request.output.size(), 1500u);
    turns_of[s.request.session] = std::max(turns_of[s.request.session], s.request.turn + 1);
  }
  EXPECT_EQ(turns_of.size(), 30u);
  for (const auto& [session, turns] : turns_of) {
    // Each turn adds 100..300 tokens to 100 of system prompt: 5 to 14 turns fit.
    EXPECT_GE(turns, 5) << session;
    EXPECT_LE(turns, 14) << session;
  }
  const auto bounds = workload_bounds(*spec);
  EXPECT_EQ(bounds.max_prompt_tokens, 1500 - 50);
  EXPECT_EQ(bounds.max_output_tokens, 150);
}

TEST(ChatWorkload, ManySessionsHoldOnlyTheActiveOnes) {
  const auto spec = parse_ok(R"(
kind: chat
sessions: 3000
arrival: {process: constant, rate_per_s: 10}
turns: {dist: uniform, min: 1, max: 4}
user_tokens: 4
output_tokens: 2
think_time: {dist: uniform, min: 1s, max: 3s}
)");
  auto source = make_request_source(*spec, 1, 1000);
  const auto* introspect = dynamic_cast<const WorkloadSource*>(source.get());
  size_t peak = 0;
  // Every request completes 1 s after it arrives: at most ~10/s x (1 s + 3 s
  // + 1 s) sessions are ever in flight, far fewer than 3000.
  std::queue<Request> in_flight;
  while (!source->exhausted()) {
    const auto next = source->next_arrival();
    if (next && (in_flight.empty() || *next <= in_flight.front().arrival + kNsPerS)) {
      in_flight.push(source->take());
    } else {
      ASSERT_FALSE(in_flight.empty());
      source->on_complete(in_flight.front(), in_flight.front().arrival + kNsPerS);
      in_flight.pop();
    }
    peak = std::max(peak, introspect->held_entries());
  }
  EXPECT_GT(introspect->taken(), 3000u);
  EXPECT_LT(peak, 100u);
}

TEST(ChatWorkload, BoundsWithoutMaxContext) {
  const auto spec = parse_ok(R"(
kind: chat
sessions: 200
arrival: {process: poisson, rate_per_s: 0.5}
turns: {dist: uniform, min: 2, max: 6}
system_prompt_tokens: 256
user_tokens: {dist: lognormal, mean: 200, sigma: 0.5, min: 8, max: 2048}
output_tokens: {dist: lognormal, mean: 150, sigma: 0.5, min: 8, max: 1024}
think_time: {dist: exponential, mean: 10s}
)");
  const auto bounds = workload_bounds(*spec);
  EXPECT_EQ(bounds.max_prompt_tokens, 256 + 5 * (2048 + 1024) + 2048);
  EXPECT_EQ(bounds.max_output_tokens, 1024);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
