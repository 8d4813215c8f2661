// Session KV retention (sim/serve/session_retention.hpp): a finished call
// whose session goes on keeps its blocks pinned until the session's next
// call is admitted or its TTL runs out; under pressure the oldest pins go
// (evict_oldest) or hold (keep). Streams are built by hand on a shared
// clock, so every time below is a choice of the test, not of a workload.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/engine/arrival_pump.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "sim/serve/engine.hpp"
#include "sim/serve/session_retention_metrics.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::CapturingSink;
using testing::scenario_from_text;

constexpr int64_t kBlock = 16;

// A small pool (a few hundred blocks of 16 tokens) and its engine's keys;
// `retention` is the scheduler.session_retention map, empty for none.
std::string scenario_text(const std::string& retention) {
  std::string s = R"(name: retention
seed: 3
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 16, memory_fraction: 0.06, activation_reserve: 1GiB}
)";
  s += retention.empty()
           ? "scheduler: {max_batched_tokens: 8192}\n"
           : "scheduler: {max_batched_tokens: 8192, session_retention: " + retention + "}\n";
  s +=
      R"(workload: {kind: synthetic, requests: 1, arrival: {process: poisson, rate_per_s: 1}, input_tokens: 16, output_tokens: 2}
)";
  return s;
}

// The feeder of a hand-built stream: it says when no request will come.
struct TestUplink final : EngineUplink {
  bool exhausted = false;
  void request_done(const Request&, TimeNs) override {}
  bool requests_exhausted() const override { return exhausted; }
  void engine_stopped() override {}
};

// Token ids unique to `tag` (a session's history, a filler's prompt).
std::vector<int32_t> tokens(int32_t tag, int64_t n) {
  std::vector<int32_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<int32_t>(1000 + tag * 7919 + i) % 120000);
  return v;
}

struct Call {
  TimeNs at = 0;
  std::vector<int32_t> prompt;
  int64_t output = 0;
  int32_t output_tag = 0;
  uint64_t session = 0;
  int32_t turn = 0;
  bool continues = false;
};

// One engine on a clock of the test's, fed `calls` at their times; `probes`
// run at their times (after the engine's own events of that instant).
struct Rig {
  explicit Rig(const std::string& retention) : spec(scenario_from_text(scenario_text(retention))) {
    engine = std::make_unique<ServingEngine>(spec, sim, uplink, &sink);
  }
  ScenarioSpec spec;
  Simulator sim;
  TestUplink uplink;
  CapturingSink sink;
  std::unique_ptr<ServingEngine> engine;
  uint64_t next_id = 0;

  void add(const Call& c) {
    Request r;
    r.id = next_id++;
    r.arrival = c.at;
    r.prompt = TokenContent(c.prompt);
    r.output = TokenContent(tokens(c.output_tag, c.output));
    r.session = c.session;
    r.turn = c.turn;
    r.session_continues = c.continues;
    sim.schedule_at(c.at, kArrivalPriority, [this, r = std::move(r)]() mutable {
      engine->submit(std::move(r));
      engine->arrivals_done();
    });
  }
  void probe(TimeNs at, std::function<void()> f) { sim.schedule_at(at, 9, std::move(f)); }
  // Runs to the end; the last arrival at `last` says no request comes after.
  RunMetrics run(TimeNs last) {
    sim.schedule_at(last, kArrivalPriority + 0, [this] { uplink.exhausted = true; });
    engine->start();
    sim.run();
    return engine->finish();
  }
  int64_t num_blocks() const { return engine->sizing().num_blocks; }
  int64_t blocks_used() const { return engine->cache_policy()->accounting().blocks_used; }
  const RequestRow& row(uint64_t id) const {
    for (const RequestRow& r : sink.request_rows)
      if (r.id == id) return r;
    throw std::logic_error("no such row");
  }
};

constexpr TimeNs kMs = kNsPerMs;
constexpr TimeNs kS = kNsPerS;

// Session 1's first call (20 prompt blocks, one output block), then fillers
// of unique content that together allocate every block of the pool several
// times over (each alone fits beside the pin), then session 1's second call
// carrying the first call's prompt and reply. The second call's id is 1.
void two_turns_under_fillers(Rig& rig, TimeNs second_at, int fillers) {
  const std::vector<int32_t> p1 = tokens(1, 20 * kBlock);
  rig.add({0, p1, kBlock, 2, 1, 0, true});
  std::vector<int32_t> p2 = p1;
  const std::vector<int32_t> out1 = tokens(2, kBlock);
  p2.insert(p2.end(), out1.begin(), out1.end());
  const std::vector<int32_t> user = tokens(3, 2 * kBlock);
  p2.insert(p2.end(), user.begin(), user.end());
  rig.add({second_at, p2, 4, 4, 1, 1, false});
  const int64_t filler_blocks = rig.num_blocks() / 2;
  for (int i = 0; i < fillers; ++i)
    rig.add({1 * kS + i * 300 * kMs, tokens(100 + i, filler_blocks * kBlock), 2, 50 + i});
}

const SessionRetentionMetrics& retention_of(const RunMetrics& m) {
  const SessionRetentionMetrics* r = m.find<SessionRetentionMetrics>();
  if (r == nullptr) throw std::logic_error("no session_retention part");
  return *r;
}

TEST(SessionRetention, OffByDefaultAndTheFillersEvictTheSession) {
  Rig rig("");
  two_turns_under_fillers(rig, 3 * kS, 4);
  const RunMetrics m = rig.run(3 * kS);
  EXPECT_EQ(m.find<SessionRetentionMetrics>(), nullptr);
  EXPECT_EQ(rig.engine->retention(), nullptr);
  // vLLM's free queue: the first call's blocks were evicted by the fillers.
  EXPECT_EQ(rig.row(1).cached_tokens, 0);
  EXPECT_FALSE(metrics_to_json(m).contains("session_retention"));
}

class EitherMode : public ::testing::TestWithParam<const char*> {};

TEST_P(EitherMode, SecondCallHitsItsPinnedBlocksWithinTheTtl) {
  Rig rig(std::string("{ttl: 30s, on_pressure: ") + GetParam() + "}");
  two_turns_under_fillers(rig, 3 * kS, 4);
  std::optional<int64_t> pinned_before, used_before, pins_after;
  rig.probe(2900 * kMs, [&] {
    pinned_before = rig.engine->retention()->pinned_blocks();
    used_before = rig.blocks_used();
  });
  rig.probe(3 * kS + 1,
            [&] { pins_after = static_cast<int64_t>(rig.engine->retention()->pins()); });
  const RunMetrics m = rig.run(3 * kS);
  // 20 prompt blocks and the first output block's 15 computed tokens: 21.
  ASSERT_TRUE(pinned_before.has_value());
  EXPECT_EQ(*pinned_before, 21);
  // Pinned blocks are used memory (the fillers are done by then).
  EXPECT_EQ(*used_before, 21);
  // The second call took its own references at admission: the pin went.
  EXPECT_EQ(pins_after, 0);
  const SessionRetentionMetrics& r = retention_of(m);
  EXPECT_EQ(r.pins, 1);
  EXPECT_EQ(r.hits, 1);
  EXPECT_EQ(r.expired, 0);
  EXPECT_EQ(r.dropped, 0);
  EXPECT_EQ(r.peak_pinned_blocks, 21);
  // The prompt's 20 blocks (the reply's block was not full when it ended).
  EXPECT_EQ(r.saved_prompt_tokens, 20 * kBlock);
  EXPECT_EQ(rig.row(1).cached_tokens, 20 * kBlock);
  // Held from the first call's end (a few ms) to the second's admission at 3 s.
  const TimeNs first_end = rig.row(0).finished;
  EXPECT_LT(first_end, 1 * kS);  // before the fillers: the pin is what kept it
  EXPECT_NEAR(r.pinned_block_seconds, 21 * static_cast<double>(3 * kS - first_end) / 1e9, 1e-9);
  EXPECT_TRUE(metrics_to_json(m).contains("session_retention"));
}

INSTANTIATE_TEST_SUITE_P(Modes, EitherMode, ::testing::Values("evict_oldest", "keep"));

TEST(SessionRetention, AfterTheTtlTheFillersEvictItAndTheSecondCallMisses) {
  Rig rig("{ttl: 50ms}");
  two_turns_under_fillers(rig, 3 * kS, 4);
  std::optional<int64_t> pins_mid, used_mid;
  // The pin expired before the first filler (1 s) arrived.
  rig.probe(900 * kMs, [&] {
    pins_mid = static_cast<int64_t>(rig.engine->retention()->pins());
    used_mid = rig.blocks_used();
  });
  const RunMetrics m = rig.run(3 * kS);
  EXPECT_EQ(pins_mid, 0);
  EXPECT_EQ(used_mid, 0);  // expiry gave the blocks back
  const SessionRetentionMetrics& r = retention_of(m);
  EXPECT_EQ(r.pins, 1);
  EXPECT_EQ(r.expired, 1);
  EXPECT_EQ(r.hits, 0);
  EXPECT_EQ(r.saved_prompt_tokens, 0);
  EXPECT_EQ(rig.row(1).cached_tokens, 0);
  EXPECT_NEAR(r.pinned_block_seconds, 21 * 0.05, 1e-9);
}

TEST(SessionRetention, ExpiryFreesThePinWithNoOtherTraffic) {
  Rig rig("{ttl: 500ms}");
  rig.add({0, tokens(1, 20 * kBlock), kBlock, 2, 1, 0, true});
  rig.add({2 * kS, tokens(9, 4 * kBlock), 2, 9});  // keeps the run going past the TTL
  std::optional<int64_t> pinned, expired;
  rig.probe(450 * kMs, [&] { pinned = rig.blocks_used(); });
  rig.probe(1500 * kMs, [&] { expired = rig.blocks_used(); });
  const RunMetrics m = rig.run(2 * kS);
  EXPECT_LT(rig.row(0).finished, 450 * kMs);
  EXPECT_EQ(pinned, 21);
  EXPECT_EQ(expired, 0);
  EXPECT_EQ(retention_of(m).expired, 1);
  EXPECT_NEAR(retention_of(m).pinned_block_seconds, 21 * 0.5, 1e-9);
}

// A filler that fits only without the pin: evict_oldest releases the pin
// and serves it at once; under keep its first chunk (chunked prefill admits
// a chunk's blocks) runs until the pool is out of blocks, it is preempted
// (recompute) and waits for the pin's expiry.
TEST(SessionRetention, PressureEvictOldestDropsThePinKeepWaitsForTheTtl) {
  struct Outcome {
    SessionRetentionMetrics r;
    TimeNs first_end = 0;
    RequestRow filler;
  };
  auto run = [](const char* mode) {
    Rig rig(std::string("{ttl: 2s, on_pressure: ") + mode + "}");
    rig.add({0, tokens(1, 20 * kBlock), kBlock, 2, 1, 0, true});
    const int64_t filler = rig.num_blocks() - 10;  // needs some of the pin's 21 blocks
    rig.add({500 * kMs, tokens(7, filler * kBlock - 8), 2, 7});
    const RunMetrics m = rig.run(500 * kMs);
    return Outcome{retention_of(m), rig.row(0).finished, rig.row(1)};
  };
  const Outcome evict = run("evict_oldest");
  const Outcome keep = run("keep");
  ASSERT_LT(evict.first_end, 500 * kMs);  // the filler came while the pin held
  EXPECT_EQ(evict.r.dropped, 1);
  EXPECT_EQ(evict.r.expired, 0);
  EXPECT_EQ(evict.filler.started, 500 * kMs);
  EXPECT_EQ(evict.filler.preemptions, 0);
  EXPECT_LT(evict.filler.first_token, 1 * kS);
  EXPECT_EQ(keep.r.dropped, 0);
  EXPECT_EQ(keep.r.expired, 1);
  EXPECT_GE(keep.filler.preemptions, 1);
  EXPECT_GT(keep.filler.first_token, keep.first_end + 2 * kS);  // after the expiry
}

TEST(SessionRetention, MaxPinnedFractionRefusesUnderKeepAndReleasesOlderUnderEvictOldest) {
  // Two sessions of 21 pinned blocks each, a cap that holds one of them.
  auto run = [](const char* mode) {
    Rig probe_rig("{ttl: 10s}");
    const double fraction = 30.5 / static_cast<double>(probe_rig.num_blocks());
    Rig rig(fmt::format("{{ttl: 10s, on_pressure: {}, max_pinned_fraction: {}}}", mode, fraction));
    rig.add({0, tokens(1, 20 * kBlock), kBlock, 2, 1, 0, true});
    rig.add({1 * kS, tokens(3, 20 * kBlock), kBlock, 4, 2, 0, true});
    return retention_of(rig.run(1 * kS));
  };
  const SessionRetentionMetrics keep = run("keep");
  EXPECT_EQ(keep.pins, 1);
  EXPECT_EQ(keep.refused, 1);
  EXPECT_EQ(keep.closed, 1);  // the run ended with session 1 pinned
  EXPECT_EQ(keep.peak_pinned_blocks, 21);
  const SessionRetentionMetrics evict = run("evict_oldest");
  EXPECT_EQ(evict.pins, 2);
  EXPECT_EQ(evict.dropped, 1);
  EXPECT_EQ(evict.closed, 1);
  EXPECT_EQ(evict.peak_pinned_blocks, 21);
}

TEST(SessionRetention, PinsLeftAtTheEndAreReleasedWithoutStretchingTheRun) {
  // A call says its session goes on, and nothing else ever comes.
  Rig rig("{ttl: 60s, on_pressure: keep}");
  rig.add({0, tokens(1, 20 * kBlock), kBlock, 2, 1, 0, true});
  const RunMetrics m = rig.run(0);  // check_drained held inside finish()
  const SessionRetentionMetrics& r = retention_of(m);
  EXPECT_EQ(r.pins, 1);
  EXPECT_EQ(r.closed, 1);
  EXPECT_EQ(r.expired, 0);
  EXPECT_LT(m.sim.simulated_s, 1.0);  // not 60 s: no expiry outlived the run
  EXPECT_EQ(rig.sim.pending_events(), 0u);
  EXPECT_EQ(rig.blocks_used(), 0);
}

// A chat workload on a small pool, alone on its clock: the whole path from
// YAML (its turns set session_continues) to the summary.
std::string chat_text(const std::string& retention) {
  std::string s = R"(name: chat-retention
seed: 11
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 16, memory_fraction: 0.06, activation_reserve: 1GiB}
)";
  s += "scheduler: {max_batched_tokens: 8192" +
       (retention.empty() ? std::string() : ", session_retention: " + retention) + "}\n";
  s += R"(workload: {kind: chat, sessions: 60, arrival: {process: poisson, rate_per_s: 6},
           turns: {dist: constant, value: 4}, think_time: {dist: exponential, mean: 3s},
           system_prompt_tokens: 128, user_tokens: {dist: constant, value: 400},
           output_tokens: {dist: constant, value: 96}}
)";
  return s;
}

TEST(SessionRetention, ChatRunIsDeterministicConservedAndReported) {
  auto run = [](const std::string& retention) {
    const ScenarioSpec s = scenario_from_text(chat_text(retention));
    ServingEngine engine(s, nullptr);
    RunMetrics m = engine.run();  // throws if a block is left referenced
    m.sim.wall_s = 0;
    return m;
  };
  const RunMetrics off = run("");
  const RunMetrics on = run("{ttl: 10s}");
  const RunMetrics again = run("{ttl: 10s}");
  const SessionRetentionMetrics& r = retention_of(on);
  EXPECT_EQ(r.pins, r.hits + r.unused + r.expired + r.dropped + r.superseded + r.closed);
  EXPECT_GT(r.hits, 0);
  EXPECT_GT(r.saved_prompt_tokens, 0);
  EXPECT_EQ(on.requests.completed, off.requests.completed);
  // Determinism: the same figures, to the bit.
  nlohmann::ordered_json a = metrics_to_json(on), b = metrics_to_json(again);
  a.erase("provenance");
  b.erase("provenance");
  EXPECT_EQ(a.dump(), b.dump());
  const std::string summary = session_retention_summary(on);
  EXPECT_NE(summary.find("session retention: "), std::string::npos);
  EXPECT_TRUE(session_retention_summary(off).empty());
}

TEST(SessionRetention, ClusterSumsItsInstancesCounters) {
  const std::string cluster = "cluster: {router: {policy: round_robin}, groups: {a: {count: 2}}}\n";
  const ScenarioSpec s = scenario_from_text(chat_text("{ttl: 10s}") + cluster);
  const RunMetrics m = run_scenario(s, nullptr).metrics;
  const SessionRetentionMetrics& r = retention_of(m);
  EXPECT_GT(r.pins, 0);
  EXPECT_EQ(r.pins, r.hits + r.unused + r.expired + r.dropped + r.superseded + r.closed);
  // Round robin sends a session's next call to the other instance half the
  // time: pins there wait unused until their TTL or the run's end.
  EXPECT_GT(r.expired + r.closed, 0);
}

// What the reader refuses, with the key path and what is allowed (the CLI's
// exit 2 is the bad-input catalogue's: tests/test_bad_input_catalogue.cpp).
std::string load_error(const std::string& retention) {
  try {
    (void)scenario_from_text(scenario_text(retention));
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(SessionRetentionYaml, ReadsTheSectionWithItsDefaults) {
  const ScenarioSpec s = scenario_from_text(scenario_text("{ttl: 30s}"));
  const SessionRetentionConfig& r = s.scheduler.session_retention;
  EXPECT_TRUE(r.on);
  EXPECT_EQ(r.ttl, 30 * kNsPerS);
  EXPECT_EQ(r.on_pressure, SessionRetentionConfig::OnPressure::evict_oldest);
  EXPECT_DOUBLE_EQ(r.max_pinned_fraction, 1.0);
  EXPECT_FALSE(scenario_from_text(scenario_text("")).scheduler.session_retention.on);
  const ScenarioSpec k = scenario_from_text(
      scenario_text("{ttl: 2min, on_pressure: keep, max_pinned_fraction: 0.25}"));
  EXPECT_EQ(k.scheduler.session_retention.on_pressure, SessionRetentionConfig::OnPressure::keep);
  EXPECT_DOUBLE_EQ(k.scheduler.session_retention.max_pinned_fraction, 0.25);
}

TEST(SessionRetentionYaml, RefusesBadValuesNamingTheKey) {
  for (const char* bad : {"{ttl: 0s}", "{ttl: -1s}", "{on_pressure: keep}"})
    EXPECT_NE(load_error(bad).find("scheduler.session_retention.ttl"), std::string::npos) << bad;
  for (const char* bad :
       {"{ttl: 1s, max_pinned_fraction: 0}", "{ttl: 1s, max_pinned_fraction: -0.5}",
        "{ttl: 1s, max_pinned_fraction: 1.01}"}) {
    const std::string e = load_error(bad);
    EXPECT_NE(e.find("scheduler.session_retention.max_pinned_fraction"), std::string::npos) << bad;
    EXPECT_NE(e.find("(0, 1]"), std::string::npos) << e;
  }
  const std::string e = load_error("{ttl: 1s, on_pressure: drop}");
  EXPECT_NE(e.find("scheduler.session_retention.on_pressure"), std::string::npos) << e;
  EXPECT_NE(e.find("evict_oldest, keep"), std::string::npos) << e;
  EXPECT_NE(load_error("{ttl: 1s, tll: 2s}").find("tll"), std::string::npos);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
