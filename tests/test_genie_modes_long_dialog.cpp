// The four Genie KV modes (seed 002's SHIFT_CONCAT, POINTER_SHIFT,
// SMART_MASK and qualla's NativeKV) on one long dialog, on the 8 Gen 3 and
// on the 8 Elite (configs/scenarios/htp-genie-modes-long-dialog-*.yaml):
// what each moves, registers and allocates, and how that ranks their
// latencies when every graph reads the same static shape.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sim/scenario/run_scenario.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/support/metric_parts.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

const char* const kModes[] = {"shift_concat", "pointer_shift", "smart_mask", "native_kv"};

std::map<std::string, RunMetrics> run_modes(const std::string& tag) {
  const std::string path = std::string(KVSIM_SOURCE_DIR) +
                           "/configs/scenarios/htp-genie-modes-long-dialog-" + tag + ".yaml";
  std::map<std::string, RunMetrics> out;
  for (const char* mode : kModes) {
    const ScenarioSpec s = load_scenario(path, {std::string("kv_cache.policy=") + mode});
    out[mode] = run_scenario(s, nullptr).metrics;
  }
  return out;
}

class GenieModesLongDialog : public ::testing::TestWithParam<std::string> {};

TEST_P(GenieModesLongDialog, WhatTheHostMovesAndRegistersRanksTheModes) {
  const auto m = run_modes(GetParam());
  const auto bytes = [&](const char* x) { return m.at(x).kv_cache.bytes_moved; };
  const auto tpot = [&](const char* x) { return m.at(x).latency_ms.tpot.p50; };
  const auto genie = [&](const char* x) { return testing::genie_of(m.at(x)); };
  const Bytes column = 16 * 2 * 8 * 64;  // Llama-3.2-1B, int8: one token of K and V
  for (const char* x : kModes) {
    EXPECT_EQ(m.at(x).requests.completed, 30) << x;
    EXPECT_EQ(genie(x).context_resets, 1) << x;
  }
  // SHIFT_CONCAT memmoves the held columns every step: tens of times more.
  EXPECT_GT(bytes("shift_concat"), 40 * bytes("smart_mask"));
  // POINTER_SHIFT copies what SMART_MASK copies (its headroom never ran out)
  // and re-registers every K and V tensor of the 16 layers per update.
  EXPECT_EQ(bytes("pointer_shift"), bytes("smart_mask"));
  EXPECT_EQ(genie("pointer_shift").compactions, 0u);
  EXPECT_EQ(genie("pointer_shift").tensor_registrations,
            32 * m.at("pointer_shift").kv_cache.pointer_updates);
  for (const char* x : {"shift_concat", "smart_mask", "native_kv"})
    EXPECT_EQ(genie(x).tensor_registrations, 0u) << x;
  // NativeKV's variant switch moves nothing: less than SMART_MASK, whose
  // AR-128 -> AR-1 realignments move every held entry.
  EXPECT_LT(bytes("native_kv"), bytes("smart_mask") / 4);
  // Buffers: ctx_size + AR-128 columns, pointer_shift's rows twice as long.
  EXPECT_EQ(genie("native_kv").buffer_bytes, (4096 + 128) * column);
  EXPECT_EQ(genie("smart_mask").buffer_bytes, genie("native_kv").buffer_bytes);
  EXPECT_EQ(genie("pointer_shift").buffer_bytes, (2 * 4096 + 128) * column);
  // The same static shape read in every mode, so the host's work ranks them.
  EXPECT_LE(tpot("native_kv"), tpot("smart_mask"));
  EXPECT_LT(tpot("smart_mask"), tpot("pointer_shift"));
  EXPECT_LT(tpot("pointer_shift"), tpot("shift_concat"));
}

INSTANTIATE_TEST_SUITE_P(Devices, GenieModesLongDialog, ::testing::Values("8gen3", "8elite"));

TEST(GenieModesLongDialog, TheEliteIsFasterInEveryMode) {
  const auto gen3 = run_modes("8gen3");
  const auto elite = run_modes("8elite");
  for (const char* x : kModes) {
    EXPECT_LT(elite.at(x).latency_ms.tpot.p50, gen3.at(x).latency_ms.tpot.p50) << x;
    EXPECT_LT(elite.at(x).latency_ms.ttft.p50, gen3.at(x).latency_ms.ttft.p50) << x;
    EXPECT_EQ(elite.at(x).kv_cache.bytes_moved, gen3.at(x).kv_cache.bytes_moved) << x;
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
