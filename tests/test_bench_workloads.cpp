// Benchmark-style workloads: closed-loop clients, the
// max_concurrency cap, and `kind: fixed` prompts with a controlled prefix.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "scenario_helpers.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/metric_parts.hpp"
#include "workloads/workload.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::CapturingSink;
using testing::scenario_from_text;

std::string scenario_yaml(const std::string& workload, const std::string& extra = "") {
  return "name: bench\nseed: 3\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
         "kv_cache: {policy: paged, block_size: 16}\n"
         "scheduler: {max_num_seqs: 8, max_batched_tokens: 2048}\n"
         "output: {timeline_interval: 1ns}\n"
         "workload:\n" +
         workload + extra;
}

struct Run {
  RunMetrics metrics;
  CapturingSink sink;
};

std::unique_ptr<Run> run(const std::string& yaml) {
  const ScenarioSpec spec = scenario_from_text(yaml);
  auto r = std::make_unique<Run>();
  ServingEngine engine(spec, &r->sink);
  r->metrics = engine.run();
  return r;
}

// Completion times of the completed requests, sorted.
std::vector<TimeNs> finish_times(const CapturingSink& sink) {
  std::vector<TimeNs> t;
  for (const auto& r : sink.request_rows) t.push_back(r.finished);
  std::sort(t.begin(), t.end());
  return t;
}

int64_t count_at_or_before(const std::vector<TimeNs>& sorted, TimeNs t) {
  return std::upper_bound(sorted.begin(), sorted.end(), t) - sorted.begin();
}
int64_t count_before(const std::vector<TimeNs>& sorted, TimeNs t) {
  return std::lower_bound(sorted.begin(), sorted.end(), t) - sorted.begin();
}

TEST(ClosedLoop, KeepsExactlyNInFlightWhileRequestsRemain) {
  constexpr int64_t kClients = 12, kRequests = 100;
  // More clients than max_num_seqs (8): some wait in the server's queue, and
  // running + waiting still sums to the clients.
  const auto r = run(scenario_yaml(
      "  kind: fixed\n  requests: 100\n  arrival: {process: closed, concurrency: 12}\n"
      "  input_tokens: {dist: uniform, min: 32, max: 300}\n"
      "  output_tokens: {dist: uniform, min: 4, max: 40}\n"));
  EXPECT_EQ(r->metrics.requests.arrived, kRequests);
  EXPECT_EQ(r->metrics.requests.completed, kRequests);
  EXPECT_EQ(r->metrics.requests.rejected, 0);
  const std::vector<TimeNs> done = finish_times(r->sink);
  int64_t rows_with_all_clients = 0;
  for (const TimelineRow& row : r->sink.timeline_rows) {
    // A row is written when a step ends, after that step's completions and
    // before the clients' next requests (think time 0) arrive at the same
    // instant: sent = N + completions strictly before, capped at `requests`.
    const int64_t sent = std::min(kRequests, kClients + count_before(done, row.time));
    const int64_t in_flight = sent - count_at_or_before(done, row.time);
    ASSERT_EQ(row.running + row.waiting + row.swapped, in_flight) << "at t=" << row.time;
    if (count_at_or_before(done, row.time) == count_before(done, row.time) && sent < kRequests) {
      EXPECT_EQ(row.running + row.waiting + row.swapped, kClients) << "at t=" << row.time;
      ++rows_with_all_clients;
    }
  }
  EXPECT_GT(rows_with_all_clients, 10);
  // Every request after the first N is sent the instant another completes.
  for (const auto& row : r->sink.request_rows) {
    if (row.arrival == 0) continue;
    EXPECT_TRUE(std::binary_search(done.begin(), done.end(), row.arrival)) << row.id;
  }
  int64_t at_zero = 0;
  for (const auto& row : r->sink.request_rows) at_zero += row.arrival == 0 ? 1 : 0;
  EXPECT_EQ(at_zero, kClients);
}

TEST(ClosedLoop, ThinkTimeSeparatesACompletionFromTheNextSend) {
  const auto r =
      run(scenario_yaml("  kind: synthetic\n  requests: 30\n"
                        "  arrival: {process: closed, concurrency: 3, think_time: 250ms}\n"
                        "  input_tokens: 64\n  output_tokens: 8\n"));
  EXPECT_EQ(r->metrics.requests.completed, 30);
  const std::vector<TimeNs> done = finish_times(r->sink);
  for (const auto& row : r->sink.request_rows) {
    if (row.arrival == 0) continue;
    EXPECT_TRUE(std::binary_search(done.begin(), done.end(), row.arrival - 250 * kNsPerMs))
        << "request " << row.id << " sent at " << row.arrival;
  }
  // At most 3 in flight at any row.
  for (const auto& row : r->sink.timeline_rows) EXPECT_LE(row.running + row.waiting, 3);
}

TEST(ClosedLoop, SameSeedSameRun) {
  const std::string yaml = scenario_yaml(
      "  kind: fixed\n  requests: 40\n"
      "  arrival: {process: closed, concurrency: 5, think_time: {dist: exponential, mean: "
      "20ms}}\n  input_tokens: 200\n  output_tokens: {dist: uniform, min: 2, max: 30}\n");
  const auto a = run(yaml);
  const auto b = run(yaml);
  ASSERT_EQ(a->sink.request_rows.size(), b->sink.request_rows.size());
  for (size_t i = 0; i < a->sink.request_rows.size(); ++i) {
    EXPECT_EQ(a->sink.request_rows[i].arrival, b->sink.request_rows[i].arrival);
    EXPECT_EQ(a->sink.request_rows[i].finished, b->sink.request_rows[i].finished);
  }
}

TEST(MaxConcurrency, CapsInFlightAndTheClientWaitCountsInTtft) {
  const std::string open =
      "  kind: synthetic\n  requests: 60\n"
      "  arrival: {process: poisson, rate_per_s: 200}\n"
      "  input_tokens: 256\n  output_tokens: 16\n";
  const auto uncapped = run(scenario_yaml(open));
  const auto capped = run(scenario_yaml(open, "  max_concurrency: 3\n"));
  EXPECT_EQ(capped->metrics.requests.completed, 60);
  for (const auto& row : capped->sink.timeline_rows)
    EXPECT_LE(row.running + row.waiting + row.swapped, 3) << "at t=" << row.time;
  // The arrival a request keeps is when the client wanted to send it: the
  // open-loop time, identical with and without the cap.
  std::map<uint64_t, TimeNs> wanted;
  for (const auto& row : uncapped->sink.request_rows) wanted[row.id] = row.arrival;
  for (const auto& row : capped->sink.request_rows) EXPECT_EQ(row.arrival, wanted.at(row.id));
  // So the wait at the client is inside TTFT: far longer than uncapped.
  EXPECT_GT(capped->metrics.latency_ms.ttft.p90, 2 * uncapped->metrics.latency_ms.ttft.p90);
}

TEST(MaxConcurrency, AppliesToTraceReplay) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "kvsim_bench_cap_trace.csv").string();
  {
    std::ofstream out(path);
    out << "arrived_at,num_prefill_tokens,num_decode_tokens\n";
    for (int i = 0; i < 40; ++i) out << 0.001 * i << ",200,12\n";
  }
  const auto r = run(scenario_yaml("  trace: {format: prefill_decode_csv, path: " + path + "}\n",
                                   "  max_concurrency: 2\n"));
  std::filesystem::remove(path);
  EXPECT_EQ(r->metrics.requests.completed, 40);
  for (const auto& row : r->sink.timeline_rows) EXPECT_LE(row.running + row.waiting, 2);
  for (const auto& row : r->sink.request_rows)
    EXPECT_EQ(row.arrival, static_cast<TimeNs>(row.id) * kNsPerMs) << "the trace time is kept";
}

TEST(MaxConcurrency, AppliesToChatSessions) {
  const auto r =
      run(scenario_yaml("  kind: chat\n  sessions: 20\n"
                        "  arrival: {process: poisson, rate_per_s: 50}\n"
                        "  turns: 3\n  user_tokens: 40\n  output_tokens: 8\n"
                        "  think_time: 10ms\n",
                        "  max_concurrency: 4\n"));
  EXPECT_EQ(r->metrics.requests.completed, 60);
  for (const auto& row : r->sink.timeline_rows) EXPECT_LE(row.running + row.waiting, 4);
}

std::vector<Request> all_requests(const std::string& workload, int64_t vocab = 32000) {
  const ScenarioSpec spec = scenario_from_text(scenario_yaml(workload));
  auto source = make_request_source(*spec.workload, spec.seed, vocab);
  std::vector<Request> out;
  while (source->next_arrival()) {
    out.push_back(source->take());
    source->on_complete(out.back(), 0);
  }
  return out;
}

TEST(FixedWorkload, SharedFractionOfEveryPromptComesFromItsGroup) {
  const auto requests = all_requests(
      "  kind: fixed\n  requests: 12\n  arrival: {process: constant, rate_per_s: 10}\n"
      "  input_tokens: 1000\n  output_tokens: 5\n"
      "  prefix: {shared_fraction: 0.75, groups: 3}\n");
  ASSERT_EQ(requests.size(), 12u);
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    ASSERT_EQ(r.prompt.size(), 1000u);
    EXPECT_EQ(r.prefix_group, static_cast<int32_t>(i % 3));
    const Request& first = requests[i % 3];
    // 750 shared tokens, identical within the group...
    EXPECT_TRUE(std::equal(r.prompt.begin(), r.prompt.begin() + 750, first.prompt.begin()));
    // ... and the rest unique to the request.
    if (i >= 3) {
      EXPECT_NE(r.prompt[750], first.prompt[750]);
    }
    // Groups differ from the first token.
    if (i % 3 != 0) {
      EXPECT_NE(r.prompt[0], requests[0].prompt[0]);
    }
  }
}

TEST(FixedWorkload, ZeroFractionGivesUniquePrompts) {
  const auto requests = all_requests(
      "  kind: fixed\n  requests: 6\n  arrival: {process: closed, concurrency: 2}\n"
      "  input_tokens: 64\n  output_tokens: 1\n  prefix: {shared_fraction: 0, groups: 2}\n");
  std::set<int32_t> first_tokens;
  for (const auto& r : requests) {
    EXPECT_EQ(r.prefix_group, -1);
    first_tokens.insert(r.prompt[0]);
  }
  EXPECT_EQ(first_tokens.size(), 6u);
}

TEST(PrefixBenchmarkPair, HitRatesAreZeroAndThreeQuartersOfTheNonFirstRequests) {
  const std::string shape =
      "  kind: fixed\n  requests: 64\n  arrival: {process: closed, concurrency: 8}\n"
      "  input_tokens: 512\n  output_tokens: 4\n";
  const auto none = run(scenario_yaml(shape + "  prefix: {shared_fraction: 0, groups: 4}\n"));
  const auto shared = run(scenario_yaml(shape + "  prefix: {shared_fraction: 0.75, groups: 4}\n"));
  EXPECT_EQ(testing::pool_of(none->metrics).prefix_hit_rate, 0.0);
  // 384 shared tokens = 24 blocks of 16: every request but the first of each
  // group reuses all of them.
  EXPECT_DOUBLE_EQ(testing::pool_of(shared->metrics).prefix_hit_rate, 0.75 * (64 - 4) / 64.0);
  EXPECT_GT(shared->metrics.throughput.output_tokens_per_s,
            none->metrics.throughput.output_tokens_per_s);
}

TEST(PrefixBenchmarkPair, BlockSizeRoundsTheSharedPartDown) {
  // 1000-token prompts, 75% shared = 750 tokens, but only whole blocks of 16
  // are reused: 46 blocks = 736 tokens per request after its group's first.
  const auto shared = run(scenario_yaml(
      "  kind: fixed\n  requests: 20\n  arrival: {process: closed, concurrency: 1}\n"
      "  input_tokens: 1000\n  output_tokens: 2\n  prefix: {shared_fraction: 0.75, groups: 2}\n"));
  EXPECT_DOUBLE_EQ(testing::pool_of(shared->metrics).prefix_hit_rate,
                   736.0 / 1000.0 * (20 - 2) / 20.0);
}

TEST(BenchWorkloadConfig, ErrorsNameTheKey) {
  auto error_of = [](const std::string& workload, const std::string& extra = "") {
    try {
      scenario_from_text(scenario_yaml(workload, extra));
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("  kind: chat\n  sessions: 2\n  arrival: {process: closed, concurrency: 2}\n"
                     "  turns: 2\n  user_tokens: 8\n  output_tokens: 4\n  think_time: 1s\n")
                .find("workload.arrival.process"),
            std::string::npos);
  EXPECT_NE(error_of("  kind: fixed\n  requests: 2\n  arrival: {process: closed, concurrency: 0}\n"
                     "  input_tokens: 8\n  output_tokens: 4\n")
                .find("workload.arrival.concurrency"),
            std::string::npos);
  EXPECT_NE(error_of("  kind: fixed\n  requests: 2\n  arrival: {process: closed, concurrency: 2}\n"
                     "  input_tokens: 8\n  output_tokens: 4\n  prefix: {shared_fraction: 1.5}\n")
                .find("workload.prefix.shared_fraction"),
            std::string::npos);
  EXPECT_NE(error_of("  kind: fixed\n  requests: 2\n  arrival: {process: closed, concurrency: 2}\n"
                     "  input_tokens: 8\n  output_tokens: 4\n",
                     "  max_concurrency: 0\n")
                .find("workload.max_concurrency"),
            std::string::npos);
  EXPECT_NE(error_of("  kind: fixed\n  requests: 2\n  arrival: {process: closed, concurrency: 2}\n"
                     "  input_tokens: 8\n  output_tokens: 4\n  prefix: {shared: 0.5}\n")
                .find("shared_fraction"),
            std::string::npos);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
