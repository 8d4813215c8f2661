// Genie's KV update modes on this machine's CPU (seed 002): one AR-1 decode
// update of one layer shaped like Llama-3.2-3B (8 KV heads, head_dim 128,
// fp16, ctx 4096) at n_past = 1024 and 3072, as the phone's update threads
// run it: SHIFT_CONCAT memmoves the kept columns, POINTER_SHIFT and
// SMART_MASK copy one column. Reported as updates/s and bytes moved per
// second (the bytes are the kernel's own count, equal to the policy's
// closed form). Each iteration rewinds the token it appended so the cache
// stays at n_past; the rewind's cost is excluded (PauseTiming).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kernels/genie_kv_buffer.hpp"

namespace {

using namespace kvsim::kernels;

constexpr int64_t kCtx = 4096, kKvHeads = 8, kHeadDim = 128;

void BM_GenieDecodeUpdate(benchmark::State& state) {
  const auto mode = static_cast<GenieUpdateMode>(state.range(0));
  const int64_t n_past = state.range(1);
  GenieKvBuffer b(kCtx, kKvHeads, kHeadDim, KvDtype::fp16, mode, 1);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> k(static_cast<size_t>(256 * kKvHeads * kHeadDim)), v(k.size());
  for (auto& x : k) x = u(rng);
  for (auto& x : v) x = u(rng);
  for (int64_t done = 0; done < n_past; done += 256) b.append(k.data(), v.data(), 256);
  uint64_t moved = 0;
  for (auto _ : state) {
    const uint64_t before = b.bytes_moved();
    b.append(k.data(), v.data(), 1);
    moved += b.bytes_moved() - before;
    state.PauseTiming();
    b.rewind(1);
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(moved));
  state.counters["bytes_per_update"] =
      static_cast<double>(moved) / static_cast<double>(std::max<int64_t>(1, state.iterations()));
}

BENCHMARK(BM_GenieDecodeUpdate)
    ->ArgNames({"mode", "n_past"})
    ->ArgsProduct({{static_cast<int64_t>(GenieUpdateMode::shift_concat),
                    static_cast<int64_t>(GenieUpdateMode::pointer_shift),
                    static_cast<int64_t>(GenieUpdateMode::smart_mask)},
                   {1024, 3072}});

}  // namespace

BENCHMARK_MAIN();
