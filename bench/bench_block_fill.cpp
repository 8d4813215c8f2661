// The cache side of a saturated decode batch, alone: what one block fill
// costs in the paged pool with prefix caching on. A fill is one block
// allocated (the free queue's head, whose cached hash is evicted), the
// block that filled hashed from its run (described content) and
// registered, and, when its sequence finishes, the block released to the
// free queue. The sequences of a step are prepared first and committed
// after, as the serving engine does (sim/serve/engine.cpp).
//
// Model: `batch` sequences of 64 prompt + 512 output tokens, block_size
// 16, a pool of 100,000 blocks (the ~10^5 of bench_step_cost's Llama-3.2-1B
// on 910B2), every prompt unique (no hits: every allocation evicts). Each
// iteration is one decode step's fills: batch / 16 sequences each cross a
// block boundary, in turn over the batch so consecutive fills touch
// unrelated sequences, as in a real batch. A finished sequence is released
// and a new one admitted (prefix lookup included) in its place.
//
// Run: build-dir/bench_block_fill
// Counters: ns_per_fill (CPU per block fill, admissions and releases
// included); items_per_second is fills per second.
//
// Measured on the 2-core development VM (Release, load 1.4-2.2, medians of
// 5): 95 ns per fill at batch 256 and 121 ns at 1,024 (from 147 and 162 ns
// with a slot-by-slot probed map and 24-byte block records). Load ~1.0,
// medians of 5: 92 and 109 ns (from 101 and 129 ns at load 0.5) once block
// tables stopped reallocating per fill, a filled block's parent hash sat
// beside its sequence's count and its run in the content object.
// Deferred hashing (sim/cache/pending_hashes.hpp; BM_BlockFillEager is the
// same without it), load 1.2-1.6, medians of 3-5, noisy: 84-92 vs 94-98 ns
// at 256, 97-107 vs 114-126 ns at 1,024. What is left is mostly misses on
// the victim's and the sequence's records, and the chain bookkeeping of
// each admitted sequence (the bench admits one every 32 fills).
// Load 1.1-1.4, medians of 6 runs alternating with the previous build:
// 90 and 103 ns (from 97 and 124 ns) once the lru order became a ring
// whose victims leave without a look at their ids' positions, a decode's
// single block skipped the prefill's windows, and a sequence's token count
// and capacity moved to a 16-byte record apart from its table.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <ctime>
#include <vector>

#include "sim/cache/paged_policy.hpp"
#include "workloads/token_content.hpp"

namespace kvsim {
namespace {

constexpr int64_t kBlockSize = 16;
constexpr int64_t kPromptTokens = 64;
constexpr int64_t kOutputTokens = 512;
constexpr int64_t kVocab = 128256;

struct BenchSeq {
  TokenContent prompt;
  TokenContent output;
  SeqSlot slot = kNoSeq;
  int64_t tokens = 0;  // held and computed
};

uint64_t mix(uint64_t x) {  // splitmix64: distinct keys, unrelated streams
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void admit(PagedPolicy& policy, BenchSeq& seq, uint64_t id, std::vector<BlockHash>& memo) {
  seq.prompt = TokenContent{};
  seq.output = TokenContent{};
  seq.prompt.append_stream(mix(2 * id), kVocab, kPromptTokens);
  seq.output.append_stream(mix(2 * id + 1), kVocab, kOutputTokens);
  const TokenView view = TokenView::of(seq.prompt, seq.output, 0);
  memo.clear();
  AdmitPlan plan = policy.plan_admit(policy.lookup_prefix(view, memo), kPromptTokens);
  seq.slot = policy.apply_admit(plan);
  seq.tokens = kPromptTokens;
  policy.prepare_commit(seq.slot, view, seq.tokens);
  policy.commit(seq.slot, view, seq.tokens);
}

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void run_block_fill(benchmark::State& state, bool defer) {
  const int64_t batch = state.range(0);
  PagedParams params;
  params.defer_output_hashes = defer;
  params.num_blocks = 100000;
  params.block_size = kBlockSize;
  params.block_bytes = 1;
  params.prefix_caching = true;
  PagedPolicy policy(params);
  std::vector<BenchSeq> seqs(static_cast<size_t>(batch));
  std::vector<BlockHash> memo;
  uint64_t next_id = 0;
  // Staggered starts, so that every step some sequences finish.
  for (size_t i = 0; i < seqs.size(); ++i) {
    admit(policy, seqs[i], next_id++, memo);
    const int64_t extra = static_cast<int64_t>(i % 32) * kBlockSize;
    if (extra > 0) {
      policy.apply_grow(seqs[i].slot, policy.plan_grow(seqs[i].slot, extra), extra);
      seqs[i].tokens += extra;
      const TokenView v =
          TokenView::of(seqs[i].prompt, seqs[i].output, seqs[i].tokens - kPromptTokens);
      policy.commit(seqs[i].slot, v, seqs[i].tokens);
    }
  }
  // Warm the pool up until it is full of cached free blocks.
  const int64_t per_step = std::max<int64_t>(1, batch / kBlockSize);
  std::vector<size_t> step;
  size_t cursor = 0;
  auto run_step = [&] {
    step.clear();
    for (int64_t k = 0; k < per_step; ++k) {
      BenchSeq& seq = seqs[cursor];
      step.push_back(cursor);
      cursor = (cursor + 17) % seqs.size();  // a stride: neighbours are unrelated
      if (seq.tokens >= kPromptTokens + kOutputTokens) {
        policy.release(seq.slot);
        admit(policy, seq, next_id++, memo);
      }
      const GrowPlan plan = policy.plan_grow(seq.slot, kBlockSize);
      policy.apply_grow(seq.slot, plan, kBlockSize);
      seq.tokens += kBlockSize;
    }
    for (size_t i : step) {
      BenchSeq& seq = seqs[i];
      policy.prepare_commit(
          seq.slot, TokenView::of(seq.prompt, seq.output, seq.tokens - kPromptTokens), seq.tokens);
    }
    for (size_t i : step) {
      BenchSeq& seq = seqs[i];
      policy.commit(seq.slot, TokenView::of(seq.prompt, seq.output, seq.tokens - kPromptTokens),
                    seq.tokens);
    }
  };
  for (int64_t i = 0; i < 4 * params.num_blocks / per_step; ++i) run_step();
  double cpu_s = 0;
  int64_t fills = 0;
  for (auto _ : state) {
    const double start = thread_cpu_s();
    for (int i = 0; i < 100; ++i) run_step();
    cpu_s += thread_cpu_s() - start;
    fills += 100 * per_step;
  }
  state.counters["ns_per_fill"] = cpu_s * 1e9 / static_cast<double>(fills);
  state.SetItemsProcessed(fills);
}
// Blocks filled inside the described outputs are registered pending and
// never hashed (no one looks them up): sim/cache/pending_hashes.hpp.
void BM_BlockFill(benchmark::State& state) {
  run_block_fill(state, true);
}
BENCHMARK(BM_BlockFill)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

// The same with every filled block hashed and registered at once.
void BM_BlockFillEager(benchmark::State& state) {
  run_block_fill(state, false);
}
BENCHMARK(BM_BlockFillEager)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kvsim

BENCHMARK_MAIN();
