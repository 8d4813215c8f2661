// EngineShell's timeline in two halves (timeline_due, then write_timeline
// with the row built only when one is due) writes the rows timeline() writes
// for the same observations: the same times, step sums and state columns.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sim/core/simulator.hpp"
#include "sim/engine/engine_shell.hpp"
#include "sim/engine/run_sink.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

class RowSink final : public RunSink {
 public:
  void request(const RequestRow&) override {}
  void timeline(const TimelineRow& row) override { rows.push_back(row); }
  std::vector<TimelineRow> rows;
};

class NoUplink final : public EngineUplink {
 public:
  void request_done(const Request&, TimeNs) override {}
  bool requests_exhausted() const override { return true; }
  void engine_stopped() override {}
};

bool same_row(const TimelineRow& a, const TimelineRow& b) {
  return a.time == b.time && a.running == b.running && a.waiting == b.waiting &&
         a.swapped == b.swapped && a.blocks_used == b.blocks_used &&
         a.kv_used_bytes == b.kv_used_bytes && a.tokens_held == b.tokens_held &&
         a.step_tokens == b.step_tokens && a.step_latency == b.step_latency && a.steps == b.steps &&
         a.step_seqs == b.step_seqs && a.prefix_query_tokens == b.prefix_query_tokens &&
         a.prefix_hit_tokens == b.prefix_hit_tokens && a.pool_of_blocks == b.pool_of_blocks;
}

TEST(EngineShellTimeline, DueThenWriteGivesTheRowsOfOneCall) {
  const ScenarioSpec scenario = load_scenario_text(R"(
name: shell-timeline
device: ascend-910b2
model: llama-3-8b
output: {timeline_interval: 10ms}
workload:
  kind: synthetic
  requests: 1
  arrival: {process: poisson, rate_per_s: 4}
  input_tokens: {dist: uniform, min: 64, max: 512}
  output_tokens: {dist: uniform, min: 64, max: 512}
)",
                                                   "shell.yaml", KVSIM_CONFIG_DIR);
  Simulator sim;
  NoUplink uplink;
  RowSink whole_sink, halves_sink;
  EngineShell whole("serving", scenario, sim, uplink, &whole_sink);
  EngineShell halves("serving", scenario, sim, uplink, &halves_sink);
  std::mt19937_64 rng(31);
  TimeNs now = 0;
  for (int i = 0; i < 2000; ++i) {
    // Observations at one instant (a step's end and the next start), others
    // a few milliseconds apart, some forced, some without a step.
    if (rng() % 3 != 0) now += static_cast<TimeNs>(rng() % 7'000'000);
    TimelineRow row;
    row.time = now;
    row.running = static_cast<int64_t>(rng() % 50);
    row.waiting = static_cast<int64_t>(rng() % 9);
    row.blocks_used = static_cast<int64_t>(rng() % 1000);
    row.kv_used_bytes = row.blocks_used * 4096;
    row.tokens_held = static_cast<int64_t>(rng() % 100000);
    row.prefix_query_tokens = i * 10;
    row.prefix_hit_tokens = i * 3;
    if (rng() % 2 == 0) {
      row.step_tokens = static_cast<int64_t>(rng() % 300);
      row.step_latency = static_cast<TimeNs>(rng() % 30'000'000);
      row.step_seqs = static_cast<int64_t>(rng() % 40);
    }
    const bool force = rng() % 50 == 0;
    whole.timeline(row, force);
    if (halves.timeline_due(row.time, row.step_tokens, row.step_latency, row.step_seqs, force)) {
      TimelineRow state = row;  // the step columns are the shell's to fill
      state.step_tokens = state.step_latency = state.step_seqs = 0;
      halves.write_timeline(state);
    }
  }
  ASSERT_GT(whole_sink.rows.size(), 100u);
  ASSERT_EQ(whole_sink.rows.size(), halves_sink.rows.size());
  for (size_t i = 0; i < whole_sink.rows.size(); ++i)
    ASSERT_TRUE(same_row(whole_sink.rows[i], halves_sink.rows[i])) << "row " << i;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
