// The arrival pump hands each request on at its own arrival time, whole and in
// stream order. It passes a request to its receiver by reference to the one it
// took (each by-value hop moved two TokenContents), so a receiver that keeps
// the request must get exactly what the source made: the same id and arrival,
// and the same described content (a few runs, never generated ids).
#include <gtest/gtest.h>

#include <vector>

#include "scenario_helpers.hpp"
#include "sim/engine/arrival_pump.hpp"
#include "workloads/workload.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

const char* kStream = R"(
name: pump-stream
seed: 5
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 16}
workload:
  kind: synthetic
  requests: 12
  arrival: {process: poisson, rate_per_s: 50}
  input_tokens: {dist: uniform, min: 20, max: 90}
  output_tokens: {dist: uniform, min: 4, max: 40}
  shared_prefix: {groups: 2, tokens: 40, popularity: uniform}
)";

struct Received {
  TimeNs at;
  Request request;
};

TEST(ArrivalPump, HandsEachRequestOnWholeAtItsArrival) {
  const ScenarioSpec s = testing::scenario_from_text(kStream);
  Simulator sim;
  auto source = make_request_source(*s.workload, s.seed, s.model.vocab_size);
  ArrivalPump pump(sim, *source);
  std::vector<Received> received;
  int batches = 0;
  pump.connect(
      [&](Request&& r) {
        received.push_back({sim.now(), std::move(r)});
      },
      [&] { ++batches; });
  pump.arm();
  sim.run();

  // The same stream taken directly: what each receiver call must equal.
  auto reference = make_request_source(*s.workload, s.seed, s.model.vocab_size);
  ASSERT_EQ(received.size(), 12u);
  EXPECT_GE(batches, 1);
  for (const Received& got : received) {
    const Request want = reference->take();
    EXPECT_EQ(got.request.id, want.id);
    EXPECT_EQ(got.at, want.arrival) << "request " << want.id << " delivered off its arrival";
    EXPECT_EQ(got.request.arrival, want.arrival);
    EXPECT_EQ(got.request.prefix_group, want.prefix_group);
    // Still described, run for run: nothing read the ids on the way.
    ASSERT_TRUE(got.request.prompt.described());
    ASSERT_TRUE(got.request.output.described());
    ASSERT_EQ(got.request.prompt.runs().size(), want.prompt.runs().size());
    for (size_t i = 0; i < want.prompt.runs().size(); ++i) {
      EXPECT_EQ(got.request.prompt.runs()[i].key, want.prompt.runs()[i].key);
      EXPECT_EQ(got.request.prompt.runs()[i].length, want.prompt.runs()[i].length);
    }
    EXPECT_EQ(got.request.output.size(), want.output.size());
    EXPECT_EQ(got.request.prompt.tokens(), want.prompt.tokens());
    EXPECT_EQ(got.request.output.tokens(), want.output.tokens());
  }
  EXPECT_TRUE(source->exhausted());
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
