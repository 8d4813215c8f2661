// Genie's update modes as the compiled graph runs them (seed 002): a QNN
// graph has static input shapes, so every AR-n pass reads its whole cache
// dim (ctx_size - n) in every mode; the modes differ in the host's work
// between passes: POINTER_SHIFT re-registers every KV input tensor at the
// new offset, and every mode rewrites the attention mask before a pass.
// The expected figures are computed here from the shapes, never read back
// from the policies' code.
#include <gtest/gtest.h>

#include <map>

#include "scenario_helpers.hpp"
#include "sim/cache/genie_mode_policy.hpp"
#include "sim/genie/genie_metrics.hpp"
#include "sim/genie/genie_passes.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "tests/support/genie_modes.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr int64_t L = 3, H = 2, D = 8, B = 2;  // layers, kv heads, head_dim, dtype bytes
constexpr int64_t kCtx = 256;
const char* const kModes[] = {"shift_concat", "pointer_shift", "smart_mask"};

GenieCacheShape shape(TimeNs register_cost = 7 * kNsPerUs) {
  GenieCacheShape s;
  s.layers = L;
  s.kv_heads = H;
  s.head_dim = D;
  s.dtype_bytes = B;
  s.ctx_size = kCtx;
  s.ar_variants = {1, 32};
  s.register_cost = register_cost;
  return s;
}

KvUpdatePlan update(GenieKvPolicy& p, int64_t n_past, int64_t variant) {
  const KvUpdatePlan plan = p.plan_update({n_past, variant});
  p.apply_update(plan);
  return plan;
}

// The same sequence of requests for every mode: AR-32 prefill of 70 tokens
// (three passes, the last padded), AR-1 decoding to 150, a speculative
// rewind of 4, a switch back to AR-32 and on to 200.
std::vector<KvUpdateRequest> dialog() {
  std::vector<KvUpdateRequest> r{{0, 32}, {32, 32}, {64, 32}, {70, 1}};
  for (int64_t n = 71; n <= 150; ++n) r.push_back({n, 1});
  r.push_back({146, 1});
  r.push_back({146, 32});
  r.push_back({178, 32});
  r.push_back({200, 1});
  return r;
}

TEST(GenieStaticShapes, EveryModeReadsTheVariantsWholeCacheDim) {
  std::map<std::string, std::vector<AttentionSpan>> spans;
  for (const char* mode : kModes) {
    auto p = testing::make_mode_policy(mode, shape());
    for (const KvUpdateRequest& r : dialog()) {
      update(*p, r.n_past, r.variant);
      const AttentionSpan a = p->attention_span();
      // The static shape: ctx_size - n columns, whatever n_past and the mode.
      ASSERT_EQ(a.read, kCtx - r.variant) << mode << " n_past " << r.n_past;
      ASSERT_EQ(a.useful, r.n_past) << mode;
      spans[mode].push_back(a);
    }
  }
  for (const char* mode : kModes) {
    ASSERT_EQ(spans[mode].size(), spans["smart_mask"].size());
    for (size_t i = 0; i < spans[mode].size(); ++i)
      EXPECT_EQ(spans[mode][i].read, spans["smart_mask"][i].read) << mode << " step " << i;
  }
}

TEST(GenieStaticShapes, PointerShiftReRegistersEveryKvTensorPerUpdate) {
  constexpr TimeNs cost = 7 * kNsPerUs;
  auto p = testing::make_mode_policy("pointer_shift", shape(cost));
  uint64_t updates = 0;
  for (const KvUpdateRequest& r : dialog()) {
    const KvUpdatePlan plan = update(*p, r.n_past, r.variant);
    ++updates;
    // One registerPointerOffset, re-pointing past_key_{l}_in and
    // past_value_{l}_in of every layer: 2 L tensors.
    ASSERT_EQ(plan.pointer_updates, 1u);
    ASSERT_EQ(plan.tensor_registrations, static_cast<uint64_t>(2 * L)) << "n_past " << r.n_past;
    ASSERT_EQ(plan.registration_time, 2 * L * cost);
  }
  EXPECT_EQ(p->accounting().tensor_registrations, updates * 2 * L);
  for (const char* mode : {"shift_concat", "smart_mask"}) {
    auto q = testing::make_mode_policy(mode, shape(cost));
    for (const KvUpdateRequest& r : dialog()) {
      const KvUpdatePlan plan = update(*q, r.n_past, r.variant);
      ASSERT_EQ(plan.tensor_registrations, 0u) << mode;
      ASSERT_EQ(plan.registration_time, 0) << mode;
    }
  }
}

TEST(GenieStaticShapes, EveryModeWritesTheSameAttentionMask) {
  for (const char* mode : kModes) {
    auto p = testing::make_mode_policy(mode, shape());
    for (const KvUpdateRequest& r : dialog()) {
      update(*p, r.n_past, r.variant);
      // qualla's setupAttentionMask: n rows of ctx_size filled, then each
      // row's n_past valid columns and its causal new ones set.
      const int64_t n = r.variant, held = r.n_past;
      Bytes expected = 0;
      for (int64_t row = 0; row < n; ++row) expected += (kCtx + held + row + 1) * B;
      ASSERT_EQ(p->attention_mask_bytes(), expected) << mode << " n_past " << held;
    }
  }
}

TEST(GenieStaticShapes, TheBertVariantTakesNoPastAndFitsOnlyAnEmptyCache) {
  GenieCacheShape s = shape();
  s.ar_variants = {1, kCtx};  // seed 002's BERT variant: n == ctx_size
  for (const char* mode : kModes) {
    auto p = testing::make_mode_policy(mode, s);
    update(*p, 0, kCtx);
    EXPECT_EQ(p->attention_span().read, 0) << mode;  // no past input
    update(*p, 200, kCtx);
    EXPECT_EQ(p->n_past(), 200) << mode;  // its output cache dim is ctx_size
  }
  const auto capacity = [](int64_t v) { return v == kCtx ? kCtx : kCtx - v; };
  EXPECT_TRUE(turn_fits(0, kCtx, 1, {1, kCtx}, capacity, kCtx));
  // A later turn cannot run it: the graph would not see the held tokens.
  EXPECT_FALSE(turn_fits(10, kCtx - 20, 1, {1, kCtx}, capacity, kCtx));
  EXPECT_TRUE(turn_fits(10, 100, 1, {1, 128, kCtx}, capacity, kCtx));  // AR-128 instead
}

// One dialog on the 8 Gen 3 under each mode: the graph reads the same
// columns, so what separates the modes is the host's work.
std::string scenario(const std::string& policy) {
  return "name: static-shapes\nseed: 5\ndevice: snapdragon-8-gen3\n"
         "model: llama-3.2-1b-instruct-w4a16\n"
         "kv_cache: {policy: " +
         policy +
         ", dtype: int8, ctx_size: 2048, ar_variants: [1, 128], update_threads: 4}\n"
         "workload: {kind: dialog, turns: 4, prompt_tokens: 300, reply_tokens: 200}\n";
}

TEST(GenieStaticShapes, DialogRunsReadTheSameColumnsInEveryMode) {
  std::map<std::string, RunMetrics> runs;
  for (const char* mode : kModes)
    runs[mode] = run_scenario(testing::scenario_from_text(scenario(mode)), nullptr).metrics;
  const auto& g = [&](const char* m) -> const GenieRunMetrics& {
    return runs.at(m).parts.get_or_zero<GenieRunMetrics>();
  };
  for (const char* mode : kModes) {
    EXPECT_EQ(g(mode).attention_read_tokens, g("smart_mask").attention_read_tokens) << mode;
    EXPECT_EQ(g(mode).attention_useful_tokens, g("smart_mask").attention_useful_tokens) << mode;
    EXPECT_EQ(g(mode).mask_bytes, g("smart_mask").mask_bytes) << mode;
    EXPECT_GT(g(mode).mask_bytes, 0);
  }
  // Llama-3.2-1B: 16 layers, one K and one V tensor each.
  EXPECT_EQ(g("pointer_shift").tensor_registrations,
            32 * runs.at("pointer_shift").kv_cache.pointer_updates);
  EXPECT_EQ(g("smart_mask").tensor_registrations, 0u);
  // Same reads: the copy-once modes beat the one that memmoves the cache,
  // and SMART_MASK's copy costs no more than POINTER_SHIFT's copy plus its
  // registrations.
  const double sc = runs.at("shift_concat").latency_ms.tpot.p50;
  const double ps = runs.at("pointer_shift").latency_ms.tpot.p50;
  const double sm = runs.at("smart_mask").latency_ms.tpot.p50;
  EXPECT_LT(sm, sc);
  EXPECT_LT(ps, sc);
  EXPECT_LE(sm, ps);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
