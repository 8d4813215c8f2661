// seed 002's per-head KV tensors (past_key_{l}_h{h}_in): a K and a V buffer
// per layer and KV head instead of per layer. The copy of new entries is the
// same (its memcpy count and bytes), while POINTER_SHIFT re-registers every
// tensor per update, kv_heads times more of them, and pays for it per step.
#include <gtest/gtest.h>

#include "sim/cache/genie_mode_policy.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/support/genie_modes.hpp"
#include "tests/support/metric_parts.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// Llama-3.2-1B: 16 layers, 8 KV heads of 64, int8.
GenieCacheShape llama_1b(bool per_head) {
  GenieCacheShape s;
  s.layers = 16;
  s.kv_heads = 8;
  s.head_dim = 64;
  s.dtype_bytes = 1;
  s.ctx_size = 4096;
  s.ar_variants = {1, 128};
  s.register_cost = 10000;  // 10 us, the key's default
  s.per_head_tensors = per_head;
  return s;
}

KvUpdatePlan step(GenieModePolicy& p, int64_t n_past, int64_t variant) {
  const KvUpdatePlan plan = p.plan_update({n_past, variant});
  p.apply_update(plan);
  return plan;
}

TEST(GeniePerHeadTensors, CopiesAreTheSameAndPointerShiftRegistersEveryHead) {
  for (const char* mode : {"pointer_shift", "smart_mask", "shift_concat", "native_kv"}) {
    auto layer = testing::make_mode_policy(mode, llama_1b(false));
    auto head = testing::make_mode_policy(mode, llama_1b(true));
    EXPECT_EQ(layer->kv_tensors(), 32) << mode;
    EXPECT_EQ(head->kv_tensors(), 256) << mode;  // 16 layers x 8 heads x K, V
    step(*layer, 0, 128);
    step(*head, 0, 128);
    step(*layer, 200, 1);
    step(*head, 200, 1);
    for (int64_t n = 201; n < 210; ++n) {
      const KvUpdatePlan a = step(*layer, n, 1), b = step(*head, n, 1);
      // updateKey: one memcpy per K row (8 heads x 64 rows), updateValue one
      // per head, in each of 16 layers: 16 x 8 x 65 = 8320, split per head or not.
      EXPECT_EQ(a.copy_calls, 8320u) << mode;
      EXPECT_EQ(b.copy_calls, a.copy_calls) << mode;
      EXPECT_EQ(b.bytes_moved(), a.bytes_moved()) << mode;
      EXPECT_EQ(b.bytes_copied, 2 * 16 * 8 * 64) << mode;
      const bool ps = std::string(mode) == "pointer_shift";
      EXPECT_EQ(a.tensor_registrations, ps ? 32u : 0u) << mode;
      EXPECT_EQ(b.tensor_registrations, ps ? 256u : 0u) << mode;
      EXPECT_EQ(b.registration_time, ps ? 256 * 10000 : 0) << mode;
    }
    // A set-variant update copies nothing.
    EXPECT_EQ(step(*head, 209, 128).copy_calls, 0u) << mode;
  }
}

TEST(GeniePerHeadTensors, OnTheLongDialogPointerShiftRegistersEightTimesMoreAndSlowsDown) {
  const std::string path =
      std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/htp-genie-modes-long-dialog-8gen3.yaml";
  const auto run = [&](const char* per_head) {
    return run_scenario(load_scenario(path, {"kv_cache.policy=pointer_shift",
                                             std::string("kv_cache.per_head_tensors=") + per_head}),
                        nullptr)
        .metrics;
  };
  const RunMetrics layer = run("false"), head = run("true");
  EXPECT_EQ(testing::genie_of(head).tensor_registrations,
            8 * testing::genie_of(layer).tensor_registrations);
  EXPECT_EQ(head.kv_cache.pointer_updates, layer.kv_cache.pointer_updates);
  EXPECT_EQ(head.kv_cache.bytes_moved, layer.kv_cache.bytes_moved);
  // Each decode step re-registers 224 tensors more at 10 us: ~2.24 ms of TPOT.
  const double extra = head.latency_ms.tpot.p50 - layer.latency_ms.tpot.p50;
  EXPECT_GT(extra, 2.0);
  EXPECT_LT(extra, 2.5);
}

TEST(GeniePerHeadTensors, OnlyPointerShiftTakesTheKey) {
  const std::string path =
      std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/htp-genie-modes-long-dialog-8gen3.yaml";
  EXPECT_THROW(load_scenario(path, {"kv_cache.per_head_tensors=true"}), config::ConfigError);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
