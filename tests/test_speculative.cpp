// Speculative decoding in the serving engine (speculative:, vLLM's
// speculative_config): the acceptance model against its closed form, the
// rollback of rejected drafts in the paged pool, the MTP module's size from
// DeepSeek-V3's config, the runs it changes and the ones it must not, and
// the bad inputs it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>

#include "cli/studies/capacity_plan.hpp"
#include "models/drafter_shape.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/paged_policy.hpp"
#include "sim/core/acceptance_model.hpp"
#include "sim/core/metrics.hpp"
#include "sim/serve/engine.hpp"
#include "sim/serve/serving_metrics.hpp"
#include "sim/serve/speculative_metrics.hpp"
#include "workloads/rng.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// (1 - a^(K+1)) / (1 - a): tokens a verify pass emits under a constant rate.
double closed_form(double a, int64_t k) {
  return a == 1.0 ? static_cast<double>(k + 1) : (1 - std::pow(a, k + 1)) / (1 - a);
}

TEST(SpeculativeAcceptance, ConstantRateMatchesTheClosedFormInExpectationAndOverALongRun) {
  for (const double a : {0.0, 0.3, 0.6, 0.85, 0.95}) {
    for (const int64_t k : {1, 2, 3, 5}) {
      const AcceptanceModel m = AcceptanceModel::constant(a);
      EXPECT_NEAR(1 + m.expected_accepted(k), closed_form(a, k), 1e-12) << a << " " << k;
      Rng rng(stream_key(7, RandomStream::speculative_acceptance, static_cast<uint64_t>(k)));
      constexpr int kPasses = 400000;
      int64_t tokens = 0;
      for (int i = 0; i < kPasses; ++i)
        tokens += 1 + m.accepted(k, [&rng] { return rng.uniform01(); });
      const double mean = static_cast<double>(tokens) / kPasses;
      EXPECT_NEAR(mean, closed_form(a, k), 0.01 * closed_form(a, k)) << a << " " << k;
    }
  }
}

TEST(SpeculativeAcceptance, PerPositionAndLengthsReproduceTheirRates) {
  const AcceptanceModel p = AcceptanceModel::per_position({0.8, 0.6, 0.3});
  const AcceptanceModel l = AcceptanceModel::lengths({1, 1, 2});  // 0, 1, 2 accepted
  Rng rng(11);
  constexpr int kPasses = 200000;
  std::vector<int64_t> at(3, 0);
  int64_t lengths = 0;
  for (int i = 0; i < kPasses; ++i) {
    const int64_t a = p.accepted(3, [&rng] { return rng.uniform01(); });
    for (int64_t j = 0; j < a; ++j) ++at[static_cast<size_t>(j)];
    lengths += l.accepted(3, [&rng] { return rng.uniform01(); });
  }
  EXPECT_NEAR(static_cast<double>(at[0]) / kPasses, 0.8, 0.005);
  EXPECT_NEAR(static_cast<double>(at[1]) / kPasses, 0.6, 0.005);
  EXPECT_NEAR(static_cast<double>(at[2]) / kPasses, 0.3, 0.005);
  EXPECT_NEAR(static_cast<double>(lengths) / kPasses, l.expected_accepted(3), 0.01);
  EXPECT_DOUBLE_EQ(l.expected_accepted(3), 0.25 * 0 + 0.25 * 1 + 0.5 * 2);
  // Fewer drafts than the distribution's longest run: cut there.
  EXPECT_DOUBLE_EQ(l.expected_accepted(1), 0.75);
}

// A paged pool of 4-token blocks with prefix caching.
std::unique_ptr<PagedPolicy> small_pool(int64_t blocks) {
  PagedParams p;
  p.num_blocks = blocks;
  p.block_size = 4;
  p.block_bytes = 1;
  return std::make_unique<PagedPolicy>(p);
}

TEST(SpeculativeRollback, ARejectedDraftLeavesNoRegisteredHashAndNoLeakedSlot) {
  std::unique_ptr<PagedPolicy> owner = small_pool(8);
  PagedPolicy& policy = *owner;
  std::vector<int32_t> prompt(6), output(10);
  std::iota(prompt.begin(), prompt.end(), 1);
  std::iota(output.begin(), output.end(), 100);
  std::vector<BlockHash> memo;
  const TokenView view0 = TokenView{prompt.data(), 6, output.data(), 0};
  AdmitPlan plan = policy.plan_admit(policy.lookup_prefix(view0, memo), 6);
  const SeqSlot s = policy.apply_admit(plan);
  policy.commit(s, view0, 6);  // the prompt's first block registered
  const int64_t registered_before = policy.registered_blocks(s);
  const int64_t free_before = policy.free_blocks();
  // One output token known; the verify pass computes it and 3 drafts:
  // tokens 6..9, so the sequence reaches into a third block (index 2).
  const int64_t verify_tokens = 1 + 3;
  GrowPlan g = policy.plan_grow(s, verify_tokens);
  ASSERT_TRUE(g.fits);
  policy.apply_grow(s, g, verify_tokens);
  EXPECT_EQ(policy.block_table(s).size(), 3u);
  EXPECT_EQ(policy.free_blocks(), free_before - 1);
  // The target accepts 1 draft of 3: 2 slots back, the third block (only
  // drafts) released, the second (partly filled) kept.
  policy.rollback(s, 2);
  // The block of drafts went back without a hash (a hashed free block
  // would count as cached).
  EXPECT_EQ(policy.pool().num_cached_free(), 0);
  EXPECT_EQ(policy.block_table(s).size(), 2u);
  EXPECT_EQ(policy.free_blocks(), free_before);
  const CacheAccounting acc = policy.accounting();
  EXPECT_EQ(acc.tokens_held, 6 + 2);
  EXPECT_EQ(acc.slots_reserved, 2 * 4);
  // The commit of the kept tokens (8: the prompt, the token and the draft)
  // registers the second block, whose content is all known; nothing else.
  const TokenView view2 = TokenView{prompt.data(), 6, output.data(), 2};
  policy.commit(s, view2, 8);
  EXPECT_EQ(policy.registered_blocks(s), registered_before + 1);
  // A lookup of the known content finds both blocks, and no more.
  std::vector<BlockHash> probe;
  std::vector<int32_t> longer = prompt;
  longer.insert(longer.end(), output.begin(), output.begin() + 8);
  const PrefixHit hit = policy.lookup_prefix(TokenView{longer.data(), 14, nullptr, 0}, probe);
  EXPECT_EQ(hit.cached_tokens, 8);
  policy.release(s);
  policy.check_drained();
  // Released, the sequence's two blocks stay cached: only known content.
  EXPECT_EQ(policy.pool().num_cached_free(), 2);
}

TEST(SpeculativeDrafter, DeepSeekV3MtpModuleMatchesItsConfig) {
  config::LoadContext ctx;
  const ModelSpec v3 = load_model_file(testing::configs_dir() + "/models/deepseek-v3.yaml", ctx);
  ASSERT_TRUE(ctx.diagnostics.empty());
  ASSERT_EQ(v3.num_nextn_predict_layers, 1);
  const DrafterShape mtp = mtp_drafter(v3);
  // One MLA layer's latent cache: (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 B.
  EXPECT_EQ(mtp.kv_bytes_per_token(2, 1), (512 + 64) * 2);
  EXPECT_EQ(mtp.kv_bytes_per_token(2, 16), (512 + 64) * 2);  // the latent is on every rank
  // Its parameters, from the config: MLA projections, 256 routed experts and
  // one shared expert of 3 x 7168 x 2048, the router, eh_proj 2h x h, the
  // norms (input, post-attention, enorm, hnorm, final; q_a and kv_a norms).
  const int64_t h = 7168;
  const int64_t attention =
      h * 1536 + 1536 * 128 * (128 + 64) + h * (512 + 64) + 512 * 128 * (128 + 128) + 128 * 128 * h;
  const int64_t experts = 3 * h * 2048 * (256 + 1);
  const int64_t small = 256 * h + 1536 + 512 + 2 * h + h + 2 * h;
  EXPECT_EQ(mtp.parameter_count(), attention + experts + 2 * h * h + small);
  // DeepSeek publishes 14B for the MTP module with its embedding and head
  // (DeepSeek-V3 README: "671B of the Main Model weights and 14B of the
  // Multi-Token Prediction (MTP) Module weights"); the module shares both.
  const double with_vocabulary =
      static_cast<double>(mtp.parameter_count() + 2 * v3.vocab_size * h) / 1e9;
  EXPECT_NEAR(with_vocabulary, 14.0, 0.6);
  // In fp8 (the checkpoint's format), one rank of EP16 holds 16 experts.
  const Bytes per_rank = mtp.weight_bytes_per_rank(16, 16);
  EXPECT_GT(per_rank, 16LL * 3 * h * 2048);  // at least its experts at 1 B each
  EXPECT_LT(per_rank, 1LL << 30);
}

TEST(SpeculativeDrafter, CapacityHoldsTheDraftersWeightsAndKv) {
  CapacityQuery q;
  q.devices = {"ascend-910c"};
  q.models = {"deepseek-v3"};
  q.contexts = {8192};
  q.kv_dtypes = {"bf16"};
  q.tps = {16};
  q.eps = {16};
  q.memory_fraction = 0.9;
  const std::vector<CapacityRow> plain = capacity_rows(q, testing::configs_dir());
  q.speculative = "mtp";
  const std::vector<CapacityRow> mtp = capacity_rows(q, testing::configs_dir());
  ASSERT_EQ(plain.size(), 1u);
  ASSERT_EQ(mtp.size(), 1u);
  config::LoadContext ctx;
  const ModelSpec v3 = load_model_file(testing::configs_dir() + "/models/deepseek-v3.yaml", ctx);
  const DrafterShape d = mtp_drafter(v3);
  EXPECT_EQ(mtp[0].drafter_weights_bytes, d.weight_bytes_per_rank(16, 16));
  EXPECT_EQ(mtp[0].weights_bytes, plain[0].weights_bytes + d.weight_bytes_per_rank(16, 16));
  EXPECT_EQ(mtp[0].kv_bytes_per_token, 61 * 1152 + 1152);
  EXPECT_LT(mtp[0].num_blocks, plain[0].num_blocks);
  EXPECT_EQ(plain[0].drafter_weights_bytes, 0);
  // A model without MTP layers is refused.
  q.models = {"qwen3-30b-a3b"};
  q.tps = {4};
  q.eps = {4};
  EXPECT_THROW(capacity_rows(q, testing::configs_dir()), config::ConfigError);
}

// A serving scenario on one 910B with a small dense model.
std::string scenario_text(const std::string& speculative) {
  return R"(
name: spec
seed: 3
device: ascend-910b2
model: qwen3-8b
kv_cache: {policy: paged, block_size: 16, prefix_caching: true}
scheduler: {max_num_seqs: 32, max_batched_tokens: 4096}
workload:
  kind: synthetic
  requests: 60
  arrival: {process: poisson, rate_per_s: 4}
  input_tokens: {dist: constant, value: 300}
  output_tokens: {dist: constant, value: 120}
  shared_prefix: {groups: 2, tokens: 128}
)" + speculative;
}

RunMetrics run_text(const std::string& yaml) {
  const ScenarioSpec s = testing::scenario_from_text(yaml);
  ServingEngine engine(s, nullptr);
  return engine.run();
}

TEST(SpeculativeServing, OffIsTheRunWithoutTheSection) {
  const RunMetrics plain = run_text(scenario_text(""));
  const RunMetrics off = run_text(scenario_text(
      "speculative: {method: eagle, num_speculative_tokens: 0, acceptance: {rate: 0.5}}\n"));
  EXPECT_EQ(plain.latency_ms.tpot.p50, off.latency_ms.tpot.p50);
  EXPECT_EQ(plain.sim.steps, off.sim.steps);
  EXPECT_EQ(plain.memory.weights_bytes, off.memory.weights_bytes);
  EXPECT_FALSE(off.parts.has<SpeculativeMetrics>());
}

TEST(SpeculativeServing, VerifyPassesEmitTheAcceptedDraftsAndTheDrafterHoldsMemory) {
  const RunMetrics plain = run_text(scenario_text(""));
  const RunMetrics spec =
      run_text(scenario_text("speculative_config: {method: eagle3, num_speculative_tokens: 3, "
                             "acceptance: {rate: 0.7}}\n"));
  ASSERT_TRUE(spec.parts.has<SpeculativeMetrics>());
  const SpeculativeMetrics& m = spec.parts.get_or_zero<SpeculativeMetrics>();
  EXPECT_EQ(spec.requests.completed, 60);
  EXPECT_GT(m.verifies, 0);
  // Near the end of a reply fewer drafts are proposed, so the mean sits a
  // little under the closed form for K = 3.
  EXPECT_LT(m.mean_accepted_length, closed_form(0.7, 3) + 0.02);
  EXPECT_GT(m.mean_accepted_length, closed_form(0.7, 3) - 0.15);
  EXPECT_NEAR(m.acceptance_rate_per_position[0], 0.7, 0.03);
  EXPECT_GT(m.draft_ms_per_step, 0);
  EXPECT_GT(m.verify_ms_per_step, 0);
  // Every output token is emitted once: same output, fewer steps, faster TPOT.
  EXPECT_EQ(spec.throughput.output_tokens_per_s > 0, true);
  EXPECT_LT(spec.sim.steps, plain.sim.steps);
  EXPECT_LT(spec.latency_ms.tpot.p50, plain.latency_ms.tpot.p50);
  // The head's weights and KV are the pool's loss.
  EXPECT_EQ(spec.memory.weights_bytes, plain.memory.weights_bytes + m.drafter_weights_bytes);
  EXPECT_EQ(spec.kv_cache.kv_bytes_per_token,
            plain.kv_cache.kv_bytes_per_token + m.drafter_kv_bytes_per_token);
  EXPECT_LT(spec.kv_cache.capacity_tokens, plain.kv_cache.capacity_tokens);
  // Same scenario and seed, same bytes.
  const RunMetrics again =
      run_text(scenario_text("speculative_config: {method: eagle3, num_speculative_tokens: 3, "
                             "acceptance: {rate: 0.7}}\n"));
  EXPECT_EQ(again.latency_ms.tpot.p99, spec.latency_ms.tpot.p99);
  EXPECT_EQ(again.parts.get_or_zero<SpeculativeMetrics>().accepted_tokens, m.accepted_tokens);
}

// A chat's next turn quotes the previous reply: its blocks hashed by the
// commits of verify passes (accepted drafts included) are found as the
// blocks of one-token decodes are. With a pool too large to evict, the hit
// rate is the same to the last token.
TEST(SpeculativeServing, RepliesCommittedByVerifyPassesAreFoundByTheNextTurn) {
  const std::string chat = R"(
name: spec-chat
seed: 5
device: ascend-910b2
model: qwen3-8b
kv_cache: {policy: paged, block_size: 16, prefix_caching: true}
workload:
  kind: chat
  sessions: 20
  arrival: {process: poisson, rate_per_s: 2}
  turns: {dist: constant, value: 3}
  system_prompt_tokens: 64
  user_tokens: {dist: constant, value: 100}
  output_tokens: {dist: constant, value: 90}
  think_time: {dist: exponential, mean: 2s}
)";
  const RunMetrics plain = run_text(chat);
  const RunMetrics spec = run_text(
      chat + "speculative: {method: eagle, num_speculative_tokens: 4, acceptance: {rate: 0.6}}\n");
  const double plain_hits = plain.parts.get_or_zero<ServingPoolMetrics>().prefix_hit_rate;
  EXPECT_GT(plain_hits, 0.3);
  EXPECT_EQ(spec.parts.get_or_zero<ServingPoolMetrics>().prefix_hit_rate, plain_hits);
  EXPECT_EQ(spec.parts.get_or_zero<ServingPoolMetrics>().evictions, 0u);
}

TEST(SpeculativeServing, NgramHoldsNothingAndCostsNoDevicePass) {
  const RunMetrics plain = run_text(scenario_text(""));
  const RunMetrics spec =
      run_text(scenario_text("speculative: {method: ngram, num_speculative_tokens: 2, acceptance: "
                             "{per_position: [0.6, 0.3]}}\n"));
  const SpeculativeMetrics& m = spec.parts.get_or_zero<SpeculativeMetrics>();
  EXPECT_EQ(m.draft_ms_per_step, 0);
  EXPECT_EQ(m.drafter_weights_bytes, 0);
  EXPECT_EQ(spec.kv_cache.capacity_tokens, plain.kv_cache.capacity_tokens);
  EXPECT_NEAR(m.acceptance_rate_per_position[1], 0.3, 0.03);
}

// kvsim validate on a scenario file: exit 2, FILE:LINE:COL and the key.
void expect_refused(const std::string& speculative, const std::string& key,
                    const std::string& problem, const std::string& model = "qwen3-8b") {
  const std::string path = ::testing::TempDir() + "/spec_bad.yaml";
  {
    std::string text = scenario_text(speculative);
    text.replace(text.find("qwen3-8b"), 8, model);
    std::ofstream(path) << text;
  }
  const testing::CommandResult r =
      testing::run_command(std::string(KVSIM_BINARY) + " validate " + path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(path + ":"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(key), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(problem), std::string::npos) << r.output;
}

TEST(SpeculativeInput, BadInputIsExitTwoAtTheKey) {
  expect_refused(
      "speculative:\n  method: eagle\n  num_speculative_tokens: 2\n"
      "  acceptance: {rate: 1.5}\n",
      "speculative.acceptance.rate", "1.5");
  expect_refused(
      "speculative:\n  method: eagle\n  num_speculative_tokens: 2\n"
      "  acceptance: {per_position: [0.8, 0.6, 0.4]}\n",
      "speculative.acceptance.per_position", "more than the 2 drafts");
  expect_refused(
      "speculative:\n  method: mtp\n  num_speculative_tokens: 1\n"
      "  acceptance: {rate: 0.8}\n",
      "speculative.method", "no multi-token-prediction layers");
  expect_refused(
      "speculative:\n  method: draft_model\n  model: llama-3.2-1b\n"
      "  num_speculative_tokens: 3\n  acceptance: {rate: 0.6}\n",
      "speculative.model", "vocabulary");
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
