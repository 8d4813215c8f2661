// Engines are components on a shared clock: two serving instances behind one
// round-robin router, fed by one request source on one Simulator. Each
// instance must serve exactly what the same half of the stream gives it when
// it runs alone, while the two interleave in time on the one clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>

#include "scenario_helpers.hpp"
#include "sim/engine/arrival_pump.hpp"
#include "sim/engine/round_robin_router.hpp"
#include "sim/genie/genie_engine.hpp"
#include "sim/scenario/engine_registry.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::CapturingSink;

// Requests overlap (0.2 s apart, each busy for longer), prompts share a
// prefix so the cache's state matters, and every request fits.
const char* kTwoInstances = R"(
name: two-instances
seed: 7
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 16}
workload:
  kind: synthetic
  requests: 40
  arrival: {process: poisson, rate_per_s: 40}
  input_tokens: {dist: uniform, min: 64, max: 512}
  output_tokens: {dist: uniform, min: 16, max: 96}
  shared_prefix: {groups: 3, tokens: 64, popularity: uniform}
)";

// The requests of `upstream` whose position in the stream is `parity` mod 2,
// at their own arrival times: the half a round-robin router sends to one of
// two instances (open-loop workloads only: every arrival is known up front).
class HalfStream final : public RequestSource {
 public:
  HalfStream(RequestSource& upstream, size_t parity) {
    for (size_t k = 0; upstream.next_arrival(); ++k) {
      Request r = upstream.take();
      if (k % 2 == parity) requests_.push_back(std::move(r));
    }
  }
  std::optional<TimeNs> next_arrival() const override {
    if (requests_.empty()) return std::nullopt;
    return requests_.front().arrival;
  }
  Request take() override {
    Request r = std::move(requests_.front());
    requests_.pop_front();
    return r;
  }
  bool exhausted() const override { return requests_.empty(); }

 private:
  std::deque<Request> requests_;
};

struct Alone {
  RunMetrics metrics;
  CapturingSink sink;
};

Alone run_half_alone(const ScenarioSpec& s, size_t parity) {
  Simulator sim;
  auto full = make_request_source(*s.workload, s.seed, s.model.vocab_size);
  HalfStream half(*full, parity);
  ArrivalPump pump(sim, half);
  Alone a;
  ServingEngine engine(s, sim, pump, &a.sink);
  a.metrics = run_engine_alone(engine, sim, pump);
  return a;
}

void expect_same_rows(const std::vector<RequestRow>& shared, const std::vector<RequestRow>& alone,
                      const char* which) {
  ASSERT_EQ(shared.size(), alone.size()) << which;
  for (size_t i = 0; i < shared.size(); ++i) {
    EXPECT_EQ(shared[i].id, alone[i].id) << which << " row " << i;
    EXPECT_EQ(shared[i].status, alone[i].status) << which << " row " << i;
    EXPECT_EQ(shared[i].first_token, alone[i].first_token) << which << " row " << i;
    EXPECT_EQ(shared[i].finished, alone[i].finished) << which << " row " << i;
    EXPECT_EQ(shared[i].cached_tokens, alone[i].cached_tokens) << which << " row " << i;
  }
}

// The request-level metrics and what the instance's cache did. Not compared:
// sim.events (the shared clock counts both instances' events),
// sim.simulated_s and kv_cache.mean_used_bytes (over the shared run's span,
// which the later instance sets), wall time.
void expect_same_served(const RunMetrics& shared, const RunMetrics& alone, const char* which) {
  EXPECT_EQ(shared.requests.arrived, alone.requests.arrived) << which;
  EXPECT_EQ(shared.requests.completed, alone.requests.completed) << which;
  EXPECT_EQ(shared.requests.preemptions, alone.requests.preemptions) << which;
  EXPECT_EQ(shared.latency_ms.ttft.mean, alone.latency_ms.ttft.mean) << which;
  EXPECT_EQ(shared.latency_ms.tpot.p99, alone.latency_ms.tpot.p99) << which;
  EXPECT_EQ(shared.latency_ms.e2e.max, alone.latency_ms.e2e.max) << which;
  EXPECT_EQ(shared.throughput.output_tokens_per_s, alone.throughput.output_tokens_per_s) << which;
  EXPECT_EQ(shared.kv_cache.peak_used_bytes, alone.kv_cache.peak_used_bytes) << which;
  EXPECT_EQ(testing::pool_of(shared).prefix_hit_rate, testing::pool_of(alone).prefix_hit_rate)
      << which;
  EXPECT_EQ(shared.sim.steps, alone.sim.steps) << which;
}

TEST(SharedClock, TwoServingInstancesEachServeTheirHalfAsIfAlone) {
  const ScenarioSpec s = testing::scenario_from_text(kTwoInstances);
  Simulator sim;
  auto source = make_request_source(*s.workload, s.seed, s.model.vocab_size);
  ArrivalPump pump(sim, *source);
  RoundRobinRouter router(pump);
  CapturingSink sink_a, sink_b;
  ServingEngine a(s, sim, router, &sink_a), b(s, sim, router, &sink_b);
  router.add(a);
  router.add(b);
  const std::vector<RunMetrics> shared = run_engines_together(router, sim, pump);
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_EQ(shared[0].requests.arrived + shared[1].requests.arrived, 40);
  EXPECT_EQ(shared[0].requests.completed, 20);
  EXPECT_EQ(shared[1].requests.completed, 20);
  EXPECT_TRUE(source->exhausted());

  // One clock: both instances' events advanced the same Simulator.
  EXPECT_EQ(shared[0].sim.events, sim.events_processed());
  EXPECT_EQ(shared[1].sim.events, sim.events_processed());

  const Alone alone_a = run_half_alone(s, 0), alone_b = run_half_alone(s, 1);
  // The two instances together took as many events as each alone, less the
  // arrival events they now share (one pump instead of two): more than either.
  EXPECT_GT(sim.events_processed(), alone_a.metrics.sim.events);
  EXPECT_GT(sim.events_processed(), alone_b.metrics.sim.events);
  expect_same_rows(sink_a.request_rows, alone_a.sink.request_rows, "instance a");
  expect_same_rows(sink_b.request_rows, alone_b.sink.request_rows, "instance b");
  expect_same_served(shared[0], alone_a.metrics, "instance a");
  expect_same_served(shared[1], alone_b.metrics, "instance b");

  // Even ids went to a, odd ones to b.
  for (const auto& r : sink_a.request_rows) EXPECT_EQ(r.id % 2, 0u);
  for (const auto& r : sink_b.request_rows) EXPECT_EQ(r.id % 2, 1u);

  // They ran at the same time: their busy spans overlap and their
  // completions interleave (some b finishes between two a finishes).
  std::vector<TimeNs> done_a, done_b;
  for (const auto& r : sink_a.request_rows) done_a.push_back(r.finished);
  for (const auto& r : sink_b.request_rows) done_b.push_back(r.finished);
  ASSERT_TRUE(std::is_sorted(done_a.begin(), done_a.end()));
  int b_between_a = 0;
  for (TimeNs t : done_b)
    if (t > done_a.front() && t < done_a.back()) ++b_between_a;
  EXPECT_GE(b_between_a, 10);
  // Timeline rows of both instances come from the one clock.
  const TimeNs end = std::max(sink_a.timeline_rows.back().time, sink_b.timeline_rows.back().time);
  EXPECT_EQ(end, sim.now());
}

TEST(SharedClock, AnEngineBuiltOnASharedClockCannotRunItAlone) {
  const ScenarioSpec s = testing::scenario_from_text(kTwoInstances);
  Simulator sim;
  auto source = make_request_source(*s.workload, s.seed, s.model.vocab_size);
  ArrivalPump pump(sim, *source);
  ServingEngine engine(s, sim, pump, nullptr);
  EXPECT_THROW(engine.run(), std::logic_error);
}

TEST(SharedClock, ArunOfOneEngineOnAGivenClockEqualsTheSelfContainedRun) {
  const ScenarioSpec s = testing::scenario_from_text(kTwoInstances);
  RunMetrics own = ServingEngine(s, nullptr).run();
  Simulator sim;
  auto source = make_request_source(*s.workload, s.seed, s.model.vocab_size);
  ArrivalPump pump(sim, *source);
  ServingEngine engine(s, sim, pump, nullptr);
  RunMetrics given = run_engine_alone(engine, sim, pump);
  own.sim.wall_s = given.sim.wall_s = 0;
  EXPECT_EQ(metrics_to_json(own).dump(), metrics_to_json(given).dump());
  EXPECT_EQ(given.engine, "serving");
}

TEST(EngineRegistry, ListsTheEnginesAndPicksTheOneTheDeviceFamilyNames) {
  EXPECT_EQ(engine_names(), (std::vector<std::string>{"genie", "serving"}));
  const ScenarioSpec s = testing::scenario_from_text(kTwoInstances);
  EXPECT_EQ(engine_for(s).name, "serving");
  // What the registry builds is the engine it names.
  Simulator sim;
  auto source = make_request_source(*s.workload, s.seed, s.model.vocab_size);
  ArrivalPump pump(sim, *source);
  const auto engine = engine_for(s).make(s, sim, pump, nullptr);
  EXPECT_EQ(engine->kind(), "serving");
  EXPECT_NE(dynamic_cast<ServingEngine*>(engine.get()), nullptr);
}

TEST(EngineRegistry, AnUnknownDeviceKindIsNamed) {
  ScenarioSpec s = testing::scenario_from_text(kTwoInstances);
  s.device.kind = "tpu";
  try {
    config::LoadContext ctx;
    (void)resolve_engine(s, std::nullopt, ctx);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("kind 'tpu', which no device family is"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
