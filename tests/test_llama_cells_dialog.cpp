// llama_cells (seed 004) against Genie's update modes (seed 002) on the same
// long dialog (configs/scenarios/htp-llama-cells-long-dialog.yaml: about
// eight times ctx_size on the Snapdragon 8 Elite): bytes moved, TTFT, TPOT
// and memory. pointer_shift and smart_mask reset the context when a turn no
// longer fits; sliding_window slides; llama_cells shifts its context with a
// K-shift pass and defragments. The table is printed as figures.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "cli/studies/capacity_plan.hpp"
#include "scenario_helpers.hpp"
#include "sim/genie/genie_engine.hpp"
#include "tests/support/metric_parts.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// The scenario's dialog with another kv_cache map.
std::string dialog(const std::string& cache) {
  return "name: cells-compare\nseed: 5\ndevice: snapdragon-8-elite\n"
         "model: llama-3.2-3b-instruct-w4a16\n"
         "kv_cache: {" +
         cache +
         ", dtype: fp16, ctx_size: 2048, ar_variants: [1, 128], update_threads: 4}\n"
         "workload:\n  kind: dialog\n  turns: 40\n"
         "  prompt_tokens: {dist: uniform, min: 150, max: 350}\n"
         "  reply_tokens: {dist: uniform, min: 60, max: 240}\n"
         "  think_time: {dist: exponential, mean: 15s}\n";
}

RunMetrics run(const std::string& cache) {
  return GenieEngine(testing::scenario_from_text(dialog(cache)), nullptr).run();
}

TEST(LlamaCellsDialog, ComparedWithGenieModesOnTheSameLongDialog) {
  const RunMetrics cells = run("policy: llama_cells, n_keep: 64");
  const RunMetrics pointer = run("policy: pointer_shift");
  const RunMetrics mask = run("policy: smart_mask");
  const RunMetrics slide = run("policy: sliding_window, update_mode: smart_mask, window: 1536");
  std::cout << "[ figures ] policy           bytes_moved   ttft_p50_ms tpot_p50_ms "
               "kv_bytes  resets shifts\n";
  for (const auto* m : {&cells, &pointer, &mask, &slide})
    std::cout << fmt::format(
        "[ figures ] {:<16} {:>13} {:>11.2f} {:>11.3f} {:>9} {:>6} {:>6}\n", m->policy,
        m->kv_cache.bytes_moved, m->latency_ms.ttft.p50, m->latency_ms.tpot.p50, m->memory.kv_bytes,
        testing::genie_of(*m).context_resets, testing::cells_of(*m).context_shifts);
  for (const auto* m : {&cells, &pointer, &mask, &slide}) EXPECT_EQ(m->requests.completed, 40);
  // Without a window the Genie modes reset; llama.cpp shifts instead.
  EXPECT_GT(testing::genie_of(pointer).context_resets, 0);
  EXPECT_EQ(testing::genie_of(cells).context_resets, 0);
  EXPECT_EQ(testing::genie_of(slide).context_resets, 0);
  EXPECT_GE(testing::cells_of(cells).context_shifts, 10);
  EXPECT_GT(testing::cells_of(cells).kshift_bytes, 0);
  EXPECT_GT(testing::cells_of(cells).defrags, 0);
  // The cells copy each token once and never realign for a variant (Genie's
  // modes move every held column on each AR-128 -> AR-1 switch); what they
  // add is the K-shift and the defragmentation.
  EXPECT_LT(cells.kv_cache.bytes_moved, mask.kv_cache.bytes_moved);
  EXPECT_GT(cells.kv_cache.bytes_moved,
            testing::cells_of(cells).kshift_bytes + testing::cells_of(cells).defrag_bytes);
  // All four allocate ctx_size columns up front (llama.cpp: kv_size cells).
  EXPECT_EQ(cells.memory.kv_bytes, 2048LL * 28 * 2 * 1024 * 2);
}

TEST(LlamaCellsDialog, QuantizedCachesAndAHostSplitMovePricesTheWayTheyShould) {
  const RunMetrics f16 = run("policy: llama_cells, n_keep: 64");
  const RunMetrics q8 =
      run("policy: llama_cells, n_keep: 64, type_k: q8_0, type_v: q8_0, v_trans: false");
  const RunMetrics split = run("policy: llama_cells, n_keep: 64, n_gpu_layers: 20");
  EXPECT_LT(q8.memory.kv_bytes, f16.memory.kv_bytes);
  EXPECT_EQ(testing::cells_of(q8).k_l_bytes, 1024LL * 2048 / 32 * 34);
  EXPECT_LT(q8.latency_ms.tpot.p50, f16.latency_ms.tpot.p50);  // fewer bytes read per token
  EXPECT_GT(testing::cells_of(split).host_read_bytes, 0);
  EXPECT_EQ(testing::cells_of(split).host_bytes, 8 * 2 * 1024LL * 2048 * 2);
  // The host layers' KV is read at the CPU's copy rate instead of the NPU's
  // fitted KV-read rate: the price moves (which way depends on the device
  // file's two figures; on the refit 8 Elite the NPU's KV read is the slower).
  EXPECT_NE(split.latency_ms.tpot.p50, f16.latency_ms.tpot.p50);
}

// kvsim capacity --policy llama_cells: rows per ggml K/V type.
TEST(LlamaCellsCapacity, RowsForLlamaCppKvTypesPinTheSeedsSizes) {
  CapacityQuery q;
  q.devices = {"ascend-910b2"};
  q.models = {"llama-2-7b"};
  q.contexts = {1024};
  q.kv_dtypes = {"f16", "q8_0", "q4_0"};
  q.policy = "llama_cells";
  const auto rows = capacity_rows(q, testing::configs_dir());
  ASSERT_EQ(rows.size(), 3u);
  constexpr Bytes kMiB = 1024 * 1024;
  EXPECT_EQ(rows[0].kv_bytes_at_context, 512 * kMiB);
  EXPECT_EQ(rows[1].kv_bytes_at_context, 272 * kMiB);
  EXPECT_EQ(rows[2].kv_bytes_at_context, 144 * kMiB);
  EXPECT_EQ(rows[0].kv_bytes_per_token, 2 * 32 * 4096 * 2);
  EXPECT_EQ(rows[2].kv_bytes_per_token, 2 * 32 * 4096 / 32 * 18);
  EXPECT_EQ(rows[0].num_blocks, 0);
  EXPECT_TRUE(rows[0].fits);
  EXPECT_GT(rows[2].capacity_tokens, rows[0].capacity_tokens * 3);  // 18 B vs 64 B per 32
  q.kv_dtypes = {"int8"};
  EXPECT_ANY_THROW((void)capacity_rows(q, testing::configs_dir()));
}

TEST(LlamaCellsCapacity, TheCommandWritesTheRows) {
  const auto r = testing::run_command(
      std::string(KVSIM_BINARY) +
      " capacity --device snapdragon-8-elite --model llama-3.2-3b-instruct-w4a16 --context 4096 "
      "--policy "
      "llama_cells --kv-dtype f16,q8_0,q4_0,q5_1 --out " +
      (std::filesystem::temp_directory_path() / "kvsim-cells-capacity").string() + " --force");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("llama.cpp cells: q4_0 K and V, 126.00 MiB at n_ctx 4096"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
