// Step costs of the model variants beyond a dense full-attention decoder:
// latent attention (DeepSeek-V3), mixture-of-experts MLPs with dense-first
// layers, shared experts and expert parallelism, skewed routing, and
// sliding-window layers (gemma-2), each against its closed form; and the
// expert-parallel weights per rank.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "models/model_resolve.hpp"
#include "models/model_spec.hpp"
#include "models/moe_routing.hpp"
#include "models/step_ops.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

ModelSpec shipped(const std::string& name) {
  // By name as users write it: a shape file, plus the weights format a
  // name like llama-3.2-3b-instruct-w4a16 ends in (models/model_resolve.hpp).
  return load_model_by_name(name, "", KVSIM_CONFIG_DIR);
}

const OpCost& cost(const StepOpCosts& ops, OpKind k) {
  return ops[static_cast<size_t>(k)];
}

StepWork decode_of(int64_t seqs, int64_t context) {
  StepWork w;
  for (int64_t i = 0; i < seqs; ++i) w.seqs.push_back({1, context, true});
  return w;
}

// DeepSeek-V3 decode, 8 sequences at 1,000 tokens, bf16 cache, tp 16: each
// layer reads the latent + rope key of every cached token (576 values,
// whole on every rank), writes one row per new token, and attends in the
// absorbed form: 2 * heads/rank * (2 * 512 + 64) flops per (query, key).
TEST(StepOpsMla, DecodeReadsTheLatentCacheAndAttendsAbsorbed) {
  const ModelSpec m = shipped("deepseek-v3");
  const StepOpCosts ops = step_op_costs(m, decode_of(8, 1000), {16, 2});
  const double row = 576.0 * 2;
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::attention).kv_read_bytes, 8 * 1000 * row);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::kv_store).kv_write_bytes, 8 * row);
  const double pairs = 8 * 1001.0;
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::attention).flops, 2.0 * 8 * (2 * 512 + 64) * pairs);
  // Per token per step, layers x 1,152 B = 70,272 B of KV written.
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::kv_store).kv_write_bytes * 61 / 8,
                   static_cast<double>(m.kv_bytes_per_token(2, 16)));
  EXPECT_EQ(m.kv_bytes_per_token(2, 16), 70'272);
}

// A prefill chunk decompresses the cached latents (kv_b: 2 * 512 * heads *
// (128 + 128) per key) and attends over 192-wide keys and 128-wide values.
TEST(StepOpsMla, PrefillDecompressesTheLatents) {
  const ModelSpec m = shipped("deepseek-v3");
  StepWork w;
  w.seqs = {{100, 0, true}};
  const StepOpCosts ops = step_op_costs(m, w, {16, 2});
  const double heads = 8, pairs = 100.0 * 101 / 2;
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::attention).flops,
                   2.0 * 100 * 512 * heads * 256 + 2.0 * heads * (128 + 64 + 128) * pairs);
}

// Qwen3-30B-A3B decode of 32 tokens at tp 1: every layer is MoE (128 experts,
// top 8, 768 wide). Routed FLOPs follow the 32 x 8 assignments; the weights
// read are those of the E * (1 - (1 - k/E)^B) experts the batch touches.
TEST(StepOpsMoe, RoutedExpertsByAssignmentsAndTouchedWeights) {
  const ModelSpec m = shipped("qwen3-30b-a3b");
  const StepOpCosts ops = step_op_costs(m, decode_of(32, 500), {1, 2});
  const double h = 2048, ie = 768, E = 128, k = 8, T = 32;
  const double touched = E * (1 - std::pow(1 - k / E, T));
  EXPECT_NEAR(touched, m.expected_experts_touched(32), 1e-9);
  const OpCost& gate_up = cost(ops, OpKind::mlp_gate_up);
  EXPECT_DOUBLE_EQ(gate_up.flops, 2 * T * k * h * 2 * ie + 2 * T * h * E);
  EXPECT_DOUBLE_EQ(gate_up.weight_bytes, touched * h * 2 * ie * 2 + h * E * 2);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::mlp_down).flops, 2 * T * k * ie * h);
  EXPECT_FALSE(cost(ops, OpKind::moe_dispatch).present) << "one device: no all-to-all";
  // A single token reads k experts only: the active-parameter view.
  const StepOpCosts one = step_op_costs(m, decode_of(1, 500), {1, 2});
  EXPECT_NEAR(cost(one, OpKind::mlp_down).weight_bytes, k * ie * h * 2, 1e-6);
}

// DeepSeek-V3: 3 dense-first layers and 58 MoE layers with one shared expert
// (2,048 wide); a per-layer op is the mean over the 61 layers, so layers x
// figure is the exact step total.
TEST(StepOpsMoe, DenseFirstLayersAndSharedExpertAveragedOverLayers) {
  const ModelSpec m = shipped("deepseek-v3");
  const StepOpCosts ops = step_op_costs(m, decode_of(4, 100), {1, 2});
  const double h = 7168, T = 4, k = 8, ie = 2048, is = 2048, I = 18432, E = 256;
  const double dense = 2 * T * I * h;
  const double moe = 2 * T * k * ie * h + 2 * T * is * h;
  EXPECT_NEAR(cost(ops, OpKind::mlp_down).flops * 61, 3 * dense + 58 * moe, 1e-3);
  const double dense_gu = 2 * T * h * 2 * I;
  const double moe_gu = 2 * T * k * h * 2 * ie + 2 * T * h * E + 2 * T * h * 2 * is;
  EXPECT_NEAR(cost(ops, OpKind::mlp_gate_up).flops * 61, 3 * dense_gu + 58 * moe_gu, 1e-3);
}

// Expert parallelism 16 at tp 16 (one 910C A3 server): 16 whole experts per
// rank, T*k/16 assignments on a rank, and the all-to-all moves
// (ep - 1)/ep of them each way; dense layers have none, so the mean over
// layers carries 58/61 of it.
TEST(StepOpsMoe, ExpertParallelAllToAllOnTheDeviceLink) {
  const ModelSpec m = shipped("deepseek-v3-w8a8");
  StepShapeParams p{16, 2, 16, 0};
  const StepOpCosts ops = step_op_costs(m, decode_of(64, 100), p);
  const double T = 64, k = 8, h = 7168, a = 2;
  const double assignments = T * k / 16;
  const double bytes = assignments * h * a * 15 / 16;
  ASSERT_TRUE(cost(ops, OpKind::moe_dispatch).present);
  EXPECT_NEAR(cost(ops, OpKind::moe_dispatch).link_bytes, bytes * 58 / 61, 1e-6);
  EXPECT_NEAR(cost(ops, OpKind::moe_combine).link_bytes, bytes * 58 / 61, 1e-6);
  // The 3 dense-first layers exchange nothing: the latency is paid on 58 of 61.
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::moe_dispatch).layer_share, 58.0 / 61.0);
  const double touched = 16 * (1 - std::pow(1 - k / 256, T));
  EXPECT_NEAR(cost(ops, OpKind::mlp_down).weight_bytes * 61,
              3 * (18432.0 / 16) * h * 1 + 58 * (touched * 2048 * h * 1 + (2048.0 / 16) * h), 1);
  EXPECT_TRUE(op_is_per_layer(OpKind::moe_dispatch));
}

// Weights per rank: DeepSeek-V3 W8A8 over 16 dies fits (about 671B / 16
// bytes plus the replicated latent projections and 16-bit embeddings), tp 8
// without expert parallelism keeps 1/8 of every expert on each die and does
// not fit a 64 GiB die.
TEST(StepOpsMoe, ExpertParallelWeightsPerRank) {
  const ModelSpec m = shipped("deepseek-v3-w8a8");
  const double ep16 = static_cast<double>(m.weight_bytes_per_rank(16, 16));
  EXPECT_GT(ep16, 671e9 / 16);
  EXPECT_LT(ep16, 64.0 * (1LL << 30));
  EXPECT_GT(static_cast<double>(m.weight_bytes_per_rank(8, 1)), 64.0 * (1LL << 30));
  EXPECT_EQ(m.weight_bytes_per_rank(1, 1), m.weight_bytes());
  EXPECT_EQ(m.tensor_parallel_problem(16, 16), "");
  EXPECT_NE(m.tensor_parallel_problem(16, 8).find("not a multiple"), std::string::npos);
}

// Skewed routing (Zipf popularity) loads the rank holding the most popular
// expert beyond its uniform share; skew 0 is the uniform closed form.
TEST(StepOpsMoe, SkewedRoutingLoadsTheBusiestRank) {
  const ModelSpec m = shipped("qwen3-30b-a3b");
  const ExpertRankLoad uniform = busiest_expert_rank(m.moe, 256, 8, 0);
  EXPECT_DOUBLE_EQ(uniform.assignments, 256.0 * 8 / 8);
  EXPECT_NEAR(uniform.experts_touched, m.expected_experts_touched(256) / 8, 1e-9);
  const ExpertRankLoad tiny_skew = busiest_expert_rank(m.moe, 256, 8, 1e-9);
  EXPECT_NEAR(tiny_skew.assignments, uniform.assignments, 1e-3);
  const ExpertRankLoad skewed = busiest_expert_rank(m.moe, 256, 8, 1.0);
  EXPECT_GT(skewed.assignments, 1.2 * uniform.assignments);
  EXPECT_LT(skewed.experts_touched, uniform.experts_touched) << "cold experts stay idle";
  StepShapeParams p{1, 2, 8, 1.0};
  EXPECT_GT(cost(step_op_costs(m, decode_of(256, 10), p), OpKind::mlp_down).flops,
            cost(step_op_costs(m, decode_of(256, 10), {1, 2, 8, 0}), OpKind::mlp_down).flops);
}

// gemma-2-9b decode at 8,000 tokens of context: the 21 sliding layers read
// their last 4,095 cached keys, the 21 global layers all 8,000; the op is
// the mean. Below the window both read everything (as a dense model).
TEST(StepOpsSliding, SlidingLayersReadAtMostTheirWindow) {
  const ModelSpec m = shipped("gemma-2-9b");
  const double row = 2.0 * 8 * 256 * 2;
  const StepOpCosts long_ctx = step_op_costs(m, decode_of(2, 8000), {1, 2});
  EXPECT_DOUBLE_EQ(cost(long_ctx, OpKind::attention).kv_read_bytes,
                   2 * (8000.0 + 4095.0) / 2 * row);
  EXPECT_DOUBLE_EQ(cost(long_ctx, OpKind::attention).flops,
                   4.0 * 16 * 256 * 2 * (8001.0 + 4096.0) / 2);
  const StepOpCosts short_ctx = step_op_costs(m, decode_of(2, 3000), {1, 2});
  EXPECT_DOUBLE_EQ(cost(short_ctx, OpKind::attention).kv_read_bytes, 2 * 3000.0 * row);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
