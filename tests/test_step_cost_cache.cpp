// StepCostCache against step_op_costs over many random steps: shapes drawn
// from a small pool so that most steps reuse a remembered shape, with every
// input of StepWork varied on its own (a key that forgot one would hand a
// step the costs of another with the same token counts), on a dense model,
// latent attention, mixture-of-experts with expert parallelism and
// sliding-window layers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "devices/device_spec.hpp"
#include "devices/timing_model.hpp"
#include "models/model_resolve.hpp"
#include "models/step_cost_cache.hpp"
#include "models/step_ops.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

bool identical(const OpCost& a, const OpCost& b) {
  // Bit for bit, field by field (padding aside): the cache must give the
  // same doubles, not close ones.
  return std::memcmp(&a.flops, &b.flops, sizeof(double)) == 0 && a.present == b.present &&
         std::memcmp(&a.mem_bytes, &b.mem_bytes, sizeof(double)) == 0 &&
         std::memcmp(&a.link_bytes, &b.link_bytes, sizeof(double)) == 0 &&
         std::memcmp(&a.host_bytes, &b.host_bytes, sizeof(double)) == 0 &&
         std::memcmp(&a.weight_bytes, &b.weight_bytes, sizeof(double)) == 0 &&
         std::memcmp(&a.kv_read_bytes, &b.kv_read_bytes, sizeof(double)) == 0 &&
         std::memcmp(&a.kv_write_bytes, &b.kv_write_bytes, sizeof(double)) == 0 &&
         std::memcmp(&a.residual_bytes, &b.residual_bytes, sizeof(double)) == 0 &&
         std::memcmp(&a.vector_flops, &b.vector_flops, sizeof(double)) == 0 &&
         std::memcmp(&a.layer_share, &b.layer_share, sizeof(double)) == 0;
}

// One random step: most often a recent step's batch again with new
// contexts (as consecutive decode steps are), else a new batch.
StepWork random_step(std::mt19937_64& rng, std::vector<StepWork>& recent, bool allow_totals) {
  auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  StepWork w;
  if (!recent.empty() && pick(0, 9) < 6) {
    w = recent[static_cast<size_t>(pick(0, static_cast<int64_t>(recent.size()) - 1))];
  } else if (!recent.empty() && pick(0, 1) == 0) {
    // A recent batch with one input changed, token counts kept where the
    // input allows: a key that forgot that input would reuse the other's
    // costs.
    w = recent[static_cast<size_t>(pick(0, static_cast<int64_t>(recent.size()) - 1))];
    switch (pick(0, 8)) {
      case 0:
        w.fixed_shape = !w.fixed_shape;
        break;
      case 1:
        w.sampled_logits_only = !w.sampled_logits_only;
        break;
      case 2:
        w.swap_in_bytes = w.swap_in_bytes == 0 ? 4096 : 0;
        break;
      case 3:
        w.swap_out_bytes = w.swap_out_bytes == 0 ? 8192 : 0;
        break;
      case 4:
        w.kv_copy_bytes = w.kv_copy_bytes == 0 ? 2048 : 0;
        break;
      case 5:
        w.rerope_tokens = w.rerope_tokens == 0 ? 7 : 0;
        break;
      case 6: {  // the same tokens, some samplers more or fewer
        const int64_t n = static_cast<int64_t>(w.seqs.size());
        for (int64_t flips = n > 0 ? pick(1, n) : 0; flips > 0; --flips) {
          SeqWork& seq = w.seqs[static_cast<size_t>(pick(0, n - 1))];
          seq.samples = !seq.samples;
        }
        break;
      }
      case 7:
        w.totals_given = allow_totals && !w.totals_given;
        break;
      default:  // one decode more: tokens and samplers move together
        w.seqs.push_back({1, 0, true});
        break;
    }
    recent.push_back(w);
    if (recent.size() > 6) recent.erase(recent.begin());
  } else {
    const int64_t seqs = pick(0, 1) == 0 ? pick(0, 4) : pick(5, 40);
    for (int64_t i = 0; i < seqs; ++i) {
      // Mostly decodes; a prefill chunk of a few sizes now and then.
      const int64_t q = pick(0, 5) == 0 ? pick(2, 3) * 16 : 1;
      w.seqs.push_back({q, 0, pick(0, 3) != 0});
    }
    w.fixed_shape = pick(0, 1) == 0;
    w.sampled_logits_only = pick(0, 1) == 0;
    w.swap_in_bytes = pick(0, 5) == 0 ? 4096 : 0;
    w.swap_out_bytes = pick(0, 5) == 0 ? 8192 : 0;
    w.kv_copy_bytes = pick(0, 5) == 0 ? 2048 : 0;
    w.rerope_tokens = pick(0, 5) == 0 ? 7 : 0;
    w.totals_given = allow_totals && pick(0, 1) == 0;
    recent.push_back(w);
    if (recent.size() > 6) recent.erase(recent.begin());
  }
  for (SeqWork& s : w.seqs) s.context_before = pick(0, 5000);
  if (w.totals_given) {
    w.totals = {};
    for (const SeqWork& s : w.seqs) w.totals.add(s, w.fixed_shape);
    // The sequences are not read then: leave something else there.
    w.seqs.assign(1, SeqWork{3, 1, false});
  }
  return w;
}

void expect_cache_matches(const std::string& model_name, StepShapeParams params, int steps) {
  const ModelSpec model = load_model_by_name(model_name, "", KVSIM_CONFIG_DIR);
  const bool sliding = std::any_of(model.layer_attention.begin(), model.layer_attention.end(),
                                   [](const LayerAttention& a) { return a.sliding; });
  StepCostCache cache(model, params);
  std::mt19937_64 rng(12345);
  std::vector<StepWork> recent;
  for (int i = 0; i < steps; ++i) {
    const StepWork w = random_step(rng, recent, /*allow_totals=*/!sliding);
    const StepOpCosts want = step_op_costs(model, w, params);
    const StepOpCosts& got = cache.costs(w);
    for (size_t k = 0; k < kOpKindCount; ++k) {
      ASSERT_TRUE(identical(got[k], want[k]))
          << model_name << " step " << i << " op " << op_kind_name(static_cast<OpKind>(k))
          << ": cached flops " << got[k].flops << " mem " << got[k].mem_bytes << ", uncached "
          << want[k].flops << " mem " << want[k].mem_bytes;
    }
  }
  // Most steps reused a shape: the cached path, not only the first fill, was
  // compared.
  EXPECT_GT(cache.reuses(), steps / 4) << model_name;
}

TEST(StepCostCache, DenseModelMatchesUncachedOverRandomSteps) {
  expect_cache_matches("llama-3-8b", {1, 2}, 3000);
  expect_cache_matches("qwen2.5-7b", {4, 1}, 3000);
}

TEST(StepCostCache, LatentAttentionAndExpertsMatchUncached) {
  expect_cache_matches("deepseek-v3", {16, 2}, 1500);
  StepShapeParams ep{2, 2};
  ep.ep = 8;
  ep.expert_skew = 0.8;
  expect_cache_matches("qwen3-30b-a3b", ep, 1500);
}

TEST(StepCostCache, SlidingWindowLayersMatchUncached) {
  expect_cache_matches("gemma-2-9b", {1, 2}, 1500);
}

TEST(StepCostCache, BadInputsThrowAsUncached) {
  const ModelSpec model = load_model_by_name("llama-3-8b", "", KVSIM_CONFIG_DIR);
  StepWork w;
  w.swap_in_bytes = -1;
  StepCostCache cache(model, {1, 2});
  EXPECT_THROW(cache.costs(w), std::invalid_argument);
  StepCostCache bad_ep(model, {1, 2, 0});
  EXPECT_THROW(bad_ep.costs(StepWork{}), std::invalid_argument);
}

// TimingModel::price keeps the durations of every op but attention with
// each remembered shape: its timings must be those of pricing every step's
// costs afresh, field by field, on a device whose matrix unit's efficiency
// follows the tokens per pass. step_latency() must give price()'s latency,
// alone on a model of its own and interleaved with price() on one.
void expect_price_matches(const std::string& model_name, TimingModel::Params params, int steps) {
  config::LoadContext ctx;
  const DeviceSpec device =
      load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/ascend-910c.yaml", ctx);
  ctx.diagnostics.throw_if_any();
  ASSERT_NE(device.matrix_tokens_exponent, 0.0);
  const ModelSpec model = load_model_by_name(model_name, "", KVSIM_CONFIG_DIR);
  const TimingModel cached(device, model, params);
  const TimingModel afresh(device, model, params);
  const TimingModel latency_only(device, model, params);
  const StepShapeParams shape{params.tp, params.kv_dtype_bytes, params.ep, params.expert_skew};
  std::mt19937_64 rng(777);
  std::vector<StepWork> recent;
  for (int i = 0; i < steps; ++i) {
    const StepWork w = random_step(rng, recent, /*allow_totals=*/true);
    int64_t tokens = 0;
    if (w.totals_given)
      tokens = static_cast<int64_t>(w.totals.tokens);
    else
      for (const SeqWork& s : w.seqs) tokens += s.query_tokens;
    const StepTiming want = afresh.price_costs(step_op_costs(model, w, shape), tokens);
    const StepTiming got = cached.price(w);
    ASSERT_EQ(got.latency, want.latency) << model_name << " step " << i;
    ASSERT_EQ(got.critical_path, want.critical_path) << model_name << " step " << i;
    ASSERT_EQ(got.memory_floor, want.memory_floor) << model_name << " step " << i;
    ASSERT_EQ(std::memcmp(&got.mem_bytes, &want.mem_bytes, sizeof(double)), 0) << i;
    ASSERT_EQ(std::memcmp(&got.flops, &want.flops, sizeof(double)), 0) << i;
    ASSERT_EQ(got.op_time, want.op_time) << model_name << " step " << i;
    ASSERT_EQ(latency_only.step_latency(w), want.latency) << model_name << " step " << i;
    ASSERT_EQ(cached.step_latency(w), want.latency) << model_name << " step " << i;
  }
  // The second call of each step repeats the first's shape: the shortcut
  // for a repeated shape was compared (dense attention only).
  if (model_name == "llama-3-8b") {
    EXPECT_GT(cached.repeated_shapes(), steps / 4);
  }
}

TEST(StepCostCache, TimingModelPricesRecentShapesAsAfresh) {
  expect_price_matches("llama-3-8b", {.tp = 2}, 3000);
  expect_price_matches("deepseek-v3", {.tp = 16}, 1000);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
