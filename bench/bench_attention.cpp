// Attention kernels on this machine (SPEC 8): decode over a paged fp16 cache
// as effective GB/s (K and V bytes read per call / time) next to a plain
// memcpy bandwidth measured in the same binary, and prefill attention in
// GFLOP/s (4 * q_len * k_len/2 * q_heads * head_dim causal FLOPs). Single
// threaded: compare GB/s with BM_MemcpyBandwidth, not with the device.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/attention.hpp"

namespace {

using namespace kvsim;
using namespace kvsim::kernels;

constexpr int64_t kQHeads = 32, kKvHeads = 8, kHeadDim = 128;

// A pool holding one sequence of `context` tokens in shuffled blocks.
struct PagedCase {
  KvPool pool;
  std::vector<int32_t> table;
  PagedCase(int64_t context, int64_t block_tokens, KvDtype dtype)
      : pool((context + block_tokens - 1) / block_tokens, 1, block_tokens, kKvHeads, kHeadDim,
             dtype) {
    std::mt19937 rng(1);
    for (int64_t i = 0; i < pool.bytes(); i += 2) {
      // Finite fp16 values in [-1, 1): random mantissa, exponent below 15.
      const uint16_t h = static_cast<uint16_t>((rng() & 0x83FF) | ((rng() % 15) << 10));
      std::memcpy(pool.data() + i, &h, 2);
    }
    table.resize(static_cast<size_t>(pool.num_blocks()));
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), rng);
  }
};

void BM_MemcpyBandwidth(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(bytes, 1), dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  // Bytes read, as for attention (a copy also writes as many).
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_MemcpyBandwidth)->Arg(128 << 20)->Unit(benchmark::kMillisecond);

void BM_PagedDecodeFp16(benchmark::State& state) {
  const int64_t context = state.range(0), block = state.range(1);
  PagedCase c(context, block, KvDtype::fp16);
  std::vector<float> q(kQHeads * kHeadDim, 0.01f), out(q.size());
  const int32_t lens[1] = {static_cast<int32_t>(context)};
  const std::span<const int32_t> tables[1] = {c.table};
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  for (auto _ : state) {
    paged_decode_attention(c.pool, 0, q.data(), lens, tables, kQHeads, scale, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * context * kKvHeads *
                          kHeadDim * 2);
  state.SetLabel(fast_fp16_decode_available() ? "avx2+f16c" : "portable");
}
BENCHMARK(BM_PagedDecodeFp16)
    ->ArgNames({"context", "block"})
    ->Args({4096, 16})
    ->Args({4096, 128})
    ->Args({32768, 16})
    ->Args({32768, 128})
    ->Unit(benchmark::kMillisecond);

void BM_PagedPrefillFp16(benchmark::State& state) {
  const int64_t q_len = state.range(0), block = state.range(1);
  PagedCase c(q_len, block, KvDtype::fp16);
  std::vector<float> q(static_cast<size_t>(q_len * kQHeads * kHeadDim), 0.01f), out(q.size());
  const int32_t cu[2] = {0, static_cast<int32_t>(q_len)};
  const int32_t lens[1] = {static_cast<int32_t>(q_len)};
  const std::span<const int32_t> tables[1] = {c.table};
  for (auto _ : state) {
    paged_varlen_attention(c.pool, 0, q.data(), cu, lens, tables, kQHeads, 0.088f, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  const double flops =
      4.0 * static_cast<double>(q_len) * static_cast<double>(q_len) / 2.0 * kQHeads * kHeadDim;
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops * 1e-9 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PagedPrefillFp16)
    ->ArgNames({"q_len", "block"})
    ->Args({1024, 128})
    ->Args({2048, 128})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
