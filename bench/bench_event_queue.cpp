// Event engine throughput (DESIGN practice 7: the queue has a benchmark so a
// faster one can be swapped in). Target from the issue: at least 20 million
// schedule+pop pairs per second with a realistic resident queue.
//
// Run: build-dir/bench_event_queue [--benchmark_filter=Hold]
// items_per_second is schedule+pop pairs (or events) per second.
//
// Measured on the 2-core development VM (AMD EPYC, Release, best of 5), BM_Hold
// with 1 / 64 / 1024 / 65536 resident events, in million pairs per second:
//   quaternary_heap  60 / 25 / 19 / 6.0      binary_heap  63 / 21 / 16 / 5.8
//   aligned_quaternary_heap  63 / 24 / 19 / 9.1-9.3 (same load, alternating
//   with quaternary_heap at 6.1-8.2; load average 2.1-2.3)
// From 1024 up the sift-down's chain of dependent loads dominates (the bare
// 4-ary key heap alone does ~24M/s at 1024); at 65536 the callback slot read
// by pop() is a cache miss.
//   radix_heap (the default since), medians of 3, load average 4.2 (CPU
//   time, so other processes' slices are not counted), same run:
//   radix_heap 59 / 24 / 22.1 / 13.5    quaternary_heap 62 / 25 / 19.5 / 5.0
//   Its pops read buckets in order and the keys due at one instant are
//   known early, so their callbacks are prefetched several pops ahead.
#include <benchmark/benchmark.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "sim/core/event_queue.hpp"
#include "sim/core/simulator.hpp"

namespace kvsim {
namespace {

// Precomputed exponential inter-event delays (mean 1 us) and priorities, so
// the timed loop measures the queue, not the random number generator.
struct DelayTable {
  static constexpr size_t kSize = 1 << 14;  // power of two: index with a mask
  std::vector<TimeNs> delays;
  std::vector<int32_t> priorities;
  DelayTable() : delays(kSize), priorities(kSize) {
    std::mt19937_64 rng(12345);
    std::exponential_distribution<double> exponential(1.0 / 1000.0);
    for (size_t i = 0; i < kSize; ++i) {
      delays[i] = static_cast<TimeNs>(std::llround(exponential(rng)));
      priorities[i] = static_cast<int32_t>(rng() % 3);
    }
  }
  TimeNs delay(size_t i) const { return delays[i & (kSize - 1)]; }
  int32_t priority(size_t i) const { return priorities[i & (kSize - 1)]; }
};

const DelayTable& delay_table() {
  static const DelayTable table;
  return table;
}

// The classic "hold" model: N events resident; each step pops the earliest
// and pushes one at its time plus a random delay, so the queue stays at N.
// The callback captures a pointer and an id (16 bytes), like a component
// scheduling work for one request.
void BM_Hold(benchmark::State& state, const char* queue_name) {
  const DelayTable& table = delay_table();
  const auto resident = static_cast<size_t>(state.range(0));
  auto queue = make_event_queue(queue_name);
  uint64_t checksum = 0;
  size_t step = 0;
  for (size_t i = 0; i < resident; ++i, ++step) {
    queue->push(table.delay(step), table.priority(step),
                [&checksum, id = uint64_t{i}] { checksum += id; });
  }
  for (auto _ : state) {
    PoppedEvent event = queue->pop();
    event.callback();
    queue->push(event.time + table.delay(step), table.priority(step),
                [&checksum, id = uint64_t{step}] { checksum += id; });
    ++step;
  }
  benchmark::DoNotOptimize(checksum);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["resident"] = static_cast<double>(queue->size());
}
BENCHMARK_CAPTURE(BM_Hold, binary_heap, "binary_heap")->Arg(1)->Arg(64)->Arg(1024)->Arg(65536);
BENCHMARK_CAPTURE(BM_Hold, quaternary_heap, "quaternary_heap")
    ->Arg(1)
    ->Arg(64)
    ->Arg(1024)
    ->Arg(65536);
BENCHMARK_CAPTURE(BM_Hold, aligned_quaternary_heap, "aligned_quaternary_heap")
    ->Arg(1)
    ->Arg(64)
    ->Arg(1024)
    ->Arg(65536);
BENCHMARK_CAPTURE(BM_Hold, radix_heap, "radix_heap")->Arg(1)->Arg(64)->Arg(1024)->Arg(65536);

// The time-out pattern: every step schedules a completion and a later
// time-out, and the completion cancels the time-out. Half of all pushes are
// cancelled, which exercises lazy deletion. Items = events run.
void BM_HoldWithCancelledTimeouts(benchmark::State& state, const char* queue_name) {
  const DelayTable& table = delay_table();
  const auto resident = static_cast<size_t>(state.range(0));
  auto queue = make_event_queue(queue_name);
  std::vector<EventHandle> timeout_of(resident);
  uint64_t fired_timeouts = 0;
  size_t step = 0;
  for (size_t i = 0; i < resident; ++i, ++step) {
    queue->push(table.delay(step), 0, [] {});
  }
  for (auto _ : state) {
    PoppedEvent event = queue->pop();
    event.callback();
    const size_t owner = step % resident;
    queue->cancel(timeout_of[owner]);
    queue->push(event.time + table.delay(step), 0, [] {});
    timeout_of[owner] = queue->push(event.time + 100 * table.delay(step + 1), 1,
                                    [&fired_timeouts] { ++fired_timeouts; });
    ++step;
  }
  benchmark::DoNotOptimize(fired_timeouts);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK_CAPTURE(BM_HoldWithCancelledTimeouts, binary_heap, "binary_heap")->Arg(64)->Arg(65536);
BENCHMARK_CAPTURE(BM_HoldWithCancelledTimeouts, quaternary_heap, "quaternary_heap")
    ->Arg(64)
    ->Arg(65536);
BENCHMARK_CAPTURE(BM_HoldWithCancelledTimeouts, aligned_quaternary_heap, "aligned_quaternary_heap")
    ->Arg(64)
    ->Arg(65536);
BENCHMARK_CAPTURE(BM_HoldWithCancelledTimeouts, radix_heap, "radix_heap")->Arg(64)->Arg(65536);

// The whole engine: N clients, each event reschedules its client through
// Simulator::schedule_in. Includes the run loop, now() and events_processed.
void BM_SimulatorSelfScheduling(benchmark::State& state) {
  const DelayTable& table = delay_table();
  const auto clients = static_cast<size_t>(state.range(0));
  Simulator sim;
  uint64_t stop_after = 0;
  size_t step = 0;
  std::function<void(size_t)> tick = [&](size_t client) {
    if (sim.events_processed() == stop_after) sim.stop();
    ++step;
    sim.schedule_in(table.delay(step), table.priority(step), [&tick, client] { tick(client); });
  };
  for (size_t client = 0; client < clients; ++client) {
    sim.schedule_at(table.delay(client), 0, [&tick, client] { tick(client); });
  }
  constexpr uint64_t kBatch = 4096;
  while (state.KeepRunningBatch(kBatch)) {
    stop_after = sim.events_processed() + kBatch;
    sim.run();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_SimulatorSelfScheduling)->Arg(1)->Arg(1024)->Arg(65536);

// Callback cost alone: construct, move into a slot pool, move out, invoke,
// as push and pop do. 16-byte captures fit both std::function's local buffer
// and EventCallback's; 32-byte ones make std::function allocate.
template <class Callback, size_t kCaptureWords>
void BM_CallbackRoundTrip(benchmark::State& state) {
  std::vector<Callback> slots(1024);
  uint64_t sum = 0;
  uint64_t i = 0;
  for (auto _ : state) {
    std::array<uint64_t, kCaptureWords - 1> payload{};
    payload[0] = i;
    Callback callback = [&sum, payload] { sum += payload[0]; };
    Callback& slot = slots[i & 1023];
    slot = std::move(callback);
    Callback taken = std::move(slot);
    taken();
    ++i;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_CallbackRoundTrip<std::function<void()>, 2>)
    ->Name("BM_CallbackRoundTrip/std_function/16B");
BENCHMARK(BM_CallbackRoundTrip<EventCallback, 2>)->Name("BM_CallbackRoundTrip/EventCallback/16B");
BENCHMARK(BM_CallbackRoundTrip<std::function<void()>, 4>)
    ->Name("BM_CallbackRoundTrip/std_function/32B");
BENCHMARK(BM_CallbackRoundTrip<EventCallback, 4>)->Name("BM_CallbackRoundTrip/EventCallback/32B");

}  // namespace
}  // namespace kvsim

BENCHMARK_MAIN();
