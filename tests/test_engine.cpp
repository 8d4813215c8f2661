// The serving engine end to end: pool arithmetic, a lone request against a
// hand-computed roofline, prefix hits, preemption, drained pools, determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "scenario_helpers.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
using testing::CapturingSink;
using testing::scenario_from_text;

constexpr const char* kLlama3On910B2 = R"(
name: unit
seed: 1
device: ascend-910b2
model: llama-3-8b
kv_cache: {policy: paged, dtype: fp16, block_size: 128, memory_fraction: 0.9}
)";

std::string with_workload(const std::string& extra) {
  return std::string(kLlama3On910B2) + extra;
}

TEST(PoolArithmetic, Llama3_8bOn910B2MatchesTheFormula) {
  const ScenarioSpec s = scenario_from_text(with_workload(R"(
workload: {kind: synthetic, requests: 1, arrival: {process: constant, rate_per_s: 1},
           input_tokens: 16, output_tokens: 4}
)"));
  const PoolSizing p = s.pool_sizing();
  // KV per token: 2 (K,V) * 32 layers * 8 KV heads * 128 head_dim * 2 bytes.
  EXPECT_EQ(p.kv_bytes_per_token, 2 * 32 * 8 * 128 * 2);
  EXPECT_EQ(p.kv_bytes_per_token, 131072);
  // block_bytes = 2 * layers * block_size * kv_heads * head_dim * dtype_bytes.
  EXPECT_EQ(p.block_bytes, 2LL * 32 * 128 * 8 * 128 * 2);
  EXPECT_EQ(p.block_bytes, 16LL << 20);
  // Weights: 8,030,261,248 parameters in bf16/fp16.
  EXPECT_EQ(p.weights_bytes, 8'030'261'248LL * 2);
  // Activation reserve at max_batched_tokens 8192, max_num_seqs 256:
  // T * (2h + 3I) * 2 + S * vocab * 4.
  const int64_t act = 8192LL * (2 * 4096 + 3 * 14336) * 2 + 256LL * 128256 * 4;
  EXPECT_EQ(p.activation_reserve, act);
  // num_blocks = floor((64 GiB * 0.9 - weights - activations) / block_bytes).
  const int64_t budget = static_cast<int64_t>(std::floor((64.0 * (1LL << 30)) * 0.9));
  EXPECT_EQ(p.num_blocks, (budget - 8'030'261'248LL * 2 - act) / (16LL << 20));
  EXPECT_EQ(p.capacity_tokens, p.num_blocks * 128);
}

TEST(PoolArithmetic, Llama2_7bHolds512MiBOfKvAt1024Tokens) {
  // Seed 004: llama.cpp allocates 512 MiB for a 1024-cell fp16 cache.
  const ScenarioSpec s = scenario_from_text(R"(
device: ascend-910b2
model: llama-2-7b
workload: {kind: synthetic, requests: 1, arrival: {process: constant, rate_per_s: 1},
           input_tokens: 16, output_tokens: 4}
)");
  EXPECT_EQ(s.model.kv_bytes_per_token(2, 1) * 1024, 512LL << 20);
}

// An independent roofline for Llama-3-8B steps on one device, written out op
// by op from the model shape and the device file (not through step_op_costs).
struct HandRoofline {
  const DeviceSpec& d;
  const ModelSpec& m;
  double op(double flops, double peak, double compute_eff, double bytes, double memory_eff) const {
    const double t = std::max(flops / (peak * compute_eff),
                              bytes / (static_cast<double>(d.memory_bandwidth) * memory_eff));
    return t * 1e9 + static_cast<double>(d.kernel_launch);
  }
  double eff_c(OpClass c) const { return d.compute_efficiency[static_cast<size_t>(c)]; }
  double eff_m(OpClass c) const { return d.memory_efficiency[static_cast<size_t>(c)]; }
  double gemm(double T, double in, double out) const {
    return op(2 * T * in * out, static_cast<double>(d.matrix_fp16_ops), eff_c(OpClass::gemm),
              in * out * 2 + T * (in + out) * 2, eff_m(OpClass::gemm));
  }
  double vec(double flops, double bytes) const {
    return op(flops, static_cast<double>(d.vector_fp16_ops), eff_c(OpClass::elementwise), bytes,
              eff_m(OpClass::elementwise));
  }
  // One step of one sequence computing T new tokens after `ctx` cached ones.
  double step_ns(double T, double ctx) const {
    const double h = m.hidden_size, q = m.q_dim(), kv = m.kv_dim(), I = m.intermediate_size,
                 V = m.vocab_size;
    const double pairs = T * ctx + T * (T + 1) / 2;
    double layer = 0;
    layer += vec(4 * T * h, 2 * T * h * 2 + h * 2);                        // input norm
    layer += gemm(T, h, q + 2 * kv);                                       // q/k/v projection
    layer += vec(3 * T * (q + kv), 2 * T * (q + kv) * 2);                  // RoPE on q and k
    layer += op(0, 1, 1, T * 2 * kv * (2 + 2), eff_m(OpClass::transfer));  // KV store
    layer += op(4 * q * pairs, static_cast<double>(d.matrix_fp16_ops), eff_c(OpClass::attention),
                (ctx + T) * 2 * kv * 2 + 2 * T * q * 2, eff_m(OpClass::attention));
    layer += gemm(T, q, h);                          // o projection
    layer += vec(4 * T * h, 2 * T * h * 2 + h * 2);  // post-attention norm
    layer += gemm(T, h, 2 * I);                      // gate + up
    layer += vec(5 * T * I, 3 * T * I * 2);          // SiLU * up
    layer += gemm(T, I, h);                          // down
    double step = layer * m.num_hidden_layers;
    step += vec(0, T * h * 2 * 2);                  // embedding gather
    step += vec(4 * T * h, 2 * T * h * 2 + h * 2);  // final norm
    step += op(2 * h * V, static_cast<double>(d.matrix_fp16_ops), eff_c(OpClass::gemm),
               h * V * 2 + h * 2 + V * 2, eff_m(OpClass::gemm));  // lm_head, one row
    step += vec(V, V * 4);                                        // sampling
    return step + static_cast<double>(d.step_overhead);
  }
};

TEST(LoneRequest, TtftAndTpotEqualAHandComputedRooflineWithinOnePercent) {
  const ScenarioSpec s = scenario_from_text(with_workload(R"(
workload: {kind: synthetic, requests: 1, arrival: {process: constant, rate_per_s: 1},
           input_tokens: 1024, output_tokens: 33}
)"));
  CapturingSink sink;
  ServingEngine engine(s, &sink);
  const RunMetrics m = engine.run();
  ASSERT_EQ(m.requests.completed, 1);
  const HandRoofline hand{s.device, s.model};
  const double ttft_ms = hand.step_ns(1024, 0) / 1e6;
  double decode_ns = 0;
  for (int k = 0; k < 32; ++k) decode_ns += hand.step_ns(1, 1024 + k);
  const double tpot_ms = decode_ns / 32 / 1e6;
  EXPECT_NEAR(m.latency_ms.ttft.mean, ttft_ms, 0.01 * ttft_ms);
  EXPECT_NEAR(m.latency_ms.tpot.mean, tpot_ms, 0.01 * tpot_ms);
  EXPECT_NEAR(m.latency_ms.e2e.mean, ttft_ms + 32 * tpot_ms, 0.01 * (ttft_ms + 32 * tpot_ms));
  // A decode step is bound by streaming the weights: it cannot beat
  // weight bytes / peak bandwidth.
  EXPECT_GT(m.latency_ms.tpot.mean, static_cast<double>(s.model.weight_bytes()) /
                                        static_cast<double>(s.device.memory_bandwidth) * 1e3);
}

TEST(PrefixCaching, RequestsSharingAnNBlockPrefixHitExactlyNBlocks) {
  for (int n : {1, 3}) {
    const ScenarioSpec s = scenario_from_text(with_workload(fmt::format(R"(
workload:
  kind: synthetic
  requests: 12
  arrival: {{process: constant, rate_per_s: 0.5}}
  input_tokens: 100
  output_tokens: 8
  shared_prefix: {{groups: 2, tokens: {}, popularity: uniform}}
)",
                                                                        n * 128)));
    CapturingSink sink;
    ServingEngine engine(s, &sink);
    const RunMetrics m = engine.run();
    ASSERT_EQ(m.requests.completed, 12);
    std::map<int64_t, int> by_cached;
    for (const auto& r : sink.request_rows) ++by_cached[r.cached_tokens];
    // The first request of each group computes its prefix; every later one
    // (arriving after the first finished) reuses exactly the n prefix blocks.
    EXPECT_EQ(by_cached[0], 2) << "n=" << n;
    EXPECT_EQ(by_cached[n * 128], 10) << "n=" << n;
  }
}

TEST(Preemption, OverloadCompletesEveryRequestUnderRecomputeAndSwap) {
  for (const char* mode : {"recompute", "swap"}) {
    const ScenarioSpec s =
        load_scenario(testing::configs_dir() + "/scenarios/preempt-recompute.yaml",
                      {std::string("kv_cache.preemption=") + mode, "kv_cache.swap_space=2GiB"});
    ServingEngine engine(s, nullptr);
    const RunMetrics m = engine.run();  // throws if a block is left behind
    EXPECT_EQ(m.requests.completed, 200) << mode;
    EXPECT_GT(m.requests.preempted, 0) << mode;
    if (std::string(mode) == "swap") {
      EXPECT_GT(testing::pool_of(m).swapped_bytes, 0);
      // Swapped bytes are whole blocks.
      EXPECT_EQ(testing::pool_of(m).swapped_bytes % testing::pool_of(m).block_bytes, 0);
    } else {
      EXPECT_EQ(testing::pool_of(m).swapped_bytes, 0);
    }
  }
}

TEST(Preemption, SwapFallsBackToRecomputeWhenHostSpaceIsFull) {
  const ScenarioSpec s = load_scenario(testing::configs_dir() + "/scenarios/preempt-recompute.yaml",
                                       {"kv_cache.preemption=swap", "kv_cache.swap_space=0"});
  ServingEngine engine(s, nullptr);
  const RunMetrics m = engine.run();
  EXPECT_EQ(m.requests.completed, 200);
  EXPECT_EQ(testing::pool_of(m).swapped_bytes, 0);
  EXPECT_GT(m.requests.preempted, 0);
}

TEST(Determinism, SameScenarioTwiceGivesIdenticalMetricsApartFromWallTime) {
  const ScenarioSpec s = load_scenario(testing::configs_dir() + "/scenarios/default.yaml");
  auto run_once = [&] {
    ServingEngine engine(s, nullptr);
    RunMetrics m = engine.run();
    m.sim.wall_s = 0;
    return metrics_to_json(m).dump(2);
  };
  EXPECT_EQ(run_once(), run_once());
}

TEST(Timeline, KvMemoryNeverExceedsThePoolAndQueuesDrain) {
  const ScenarioSpec s = load_scenario(testing::configs_dir() + "/scenarios/shared-prefix.yaml");
  CapturingSink sink;
  ServingEngine engine(s, &sink);
  const RunMetrics m = engine.run();
  ASSERT_FALSE(sink.timeline_rows.empty());
  for (const auto& row : sink.timeline_rows) {
    EXPECT_LE(row.blocks_used, testing::pool_of(m).num_blocks);
    EXPECT_LE(row.running, 128);
  }
  EXPECT_EQ(sink.timeline_rows.back().running + sink.timeline_rows.back().waiting, 0);
  EXPECT_EQ(static_cast<int64_t>(sink.request_rows.size()), m.requests.arrived);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
