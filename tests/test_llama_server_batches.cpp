// llama-server's batches under the serving engine: a step holds at most
// n_batch tokens (the logical batch), computed by llama_decode in ubatches
// of n_ubatch tokens, each a graph of its own (sim/serve/micro_batches.hpp),
// so a prompt of n tokens takes ceil(n / n_ubatch) passes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/serve/engine.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

struct Pass {
  int64_t tokens = 0;    // query tokens of the pass
  bool samples = false;  // a piece in it samples
  int64_t pieces = 0;
};

struct Recorded {
  std::vector<Pass> passes;
  RunMetrics metrics;
};

Recorded one_prompt(int64_t prompt, const std::string& batches) {
  const std::string text =
      "name: ub\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
      "kv_cache: {policy: llama_cells, ctx_size: 8192, behaviour: current" +
      batches +
      "}\n"
      "workload:\n  kind: synthetic\n  requests: 1\n  arrival: {process: poisson, rate_per_s: 1}\n"
      "  input_tokens: {dist: constant, value: " +
      std::to_string(prompt) + "}\n  output_tokens: {dist: constant, value: 3}\n";
  const ScenarioSpec s = testing::scenario_from_text(text);
  ServingEngine engine(s, nullptr);
  Recorded r;
  engine.set_step_recorder([&r](const StepWork& w) {
    Pass p;
    if (w.totals_given) {  // a step in one pass: the engine's sums
      p.tokens = static_cast<int64_t>(w.totals.tokens);
      p.samples = w.totals.samplers > 0;
    }
    for (const SeqWork& q : w.seqs) {
      p.tokens += q.query_tokens;
      p.samples = p.samples || q.samples;
      ++p.pieces;
    }
    r.passes.push_back(p);
  });
  r.metrics = engine.run();
  return r;
}

// The prompt's passes: up to the first that samples (its last token gives
// the first output token); the decodes follow, one token each.
std::vector<Pass> prompt_passes(const Recorded& r) {
  std::vector<Pass> out;
  for (const Pass& p : r.passes) {
    out.push_back(p);
    if (p.samples) break;
  }
  return out;
}
int64_t prefill_passes(const Recorded& r) {
  return static_cast<int64_t>(prompt_passes(r).size());
}

TEST(LlamaServerBatches, APromptOfNTokensTakesCeilNOverNUbatchPasses) {
  for (const int64_t n : {2, 511, 512, 513, 1300, 2048}) {
    SCOPED_TRACE(n);
    const Recorded r = one_prompt(n, "");  // llama.cpp's defaults: n_batch 2048, n_ubatch 512
    EXPECT_EQ(r.metrics.requests.completed, 1);
    EXPECT_EQ(prefill_passes(r), (n + 511) / 512);
    // The pieces in order: full ubatches, then the rest; only the last
    // samples (the prompt's last token gives the first output token).
    int64_t seen = 0;
    for (const Pass& p : prompt_passes(r)) {
      EXPECT_EQ(p.tokens, std::min<int64_t>(512, n - seen));
      seen += p.tokens;
      EXPECT_EQ(p.samples, seen == n);
    }
    EXPECT_EQ(seen, n);
    // Then three decodes of one token each, one pass a step.
    EXPECT_EQ(r.passes.size(), prompt_passes(r).size() + 2);
  }
}

TEST(LlamaServerBatches, NBatchCapsTheStepAndNUbatchSplitsIt) {
  // 3000 tokens in steps of at most n_batch 1024: 1024, 1024, 952, each in
  // ubatches of 512: 2 + 2 + 2 passes.
  const Recorded r = one_prompt(3000, ", n_batch: 1024, n_ubatch: 512");
  EXPECT_EQ(prefill_passes(r), 6);
  std::vector<int64_t> sizes;
  for (const Pass& p : prompt_passes(r)) sizes.push_back(p.tokens);
  EXPECT_EQ(sizes, (std::vector<int64_t>{512, 512, 512, 512, 512, 440}));
  // n_ubatch above n_batch is n_batch (llama_context: min(n_batch, n_ubatch)).
  EXPECT_EQ(prefill_passes(one_prompt(3000, ", n_batch: 1024, n_ubatch: 4096")), 3);
}

TEST(LlamaServerBatches, EveryUbatchReadsTheWeightsAgain) {
  // The same 2048-token prompt in one pass or in four: four read the
  // weights four times, so its first token comes later.
  const Recorded one = one_prompt(2048, ", n_ubatch: 2048");
  const Recorded four = one_prompt(2048, ", n_ubatch: 512");
  EXPECT_EQ(prefill_passes(one), 1);
  EXPECT_EQ(prefill_passes(four), 4);
  EXPECT_GT(four.metrics.latency_ms.ttft.mean, one.metrics.latency_ms.ttft.mean);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
