// dispatchUpdate's `selected` keep-mask (seed 002, nsp-kvmanager updateKey /
// updateValue): of a pass's just-computed entries only the chosen ones are
// kept, as tree speculative decoding accepts a path that is not a prefix.
// The kernel's buffers against buffers given only the chosen entries, the
// policy's plan, a dialog with tree drafts (numerics on), and bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <numeric>

#include "kernels/genie_kv_buffer.hpp"
#include "scenario_helpers.hpp"
#include "sim/genie/genie_metrics.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "tests/support/genie_modes.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using kernels::GenieKvBuffer;
using kernels::GenieUpdateMode;
using kernels::KvDtype;

constexpr int64_t kHeads = 2, kDim = 4, kRow = kHeads * kDim;

std::vector<float> entries(int64_t n, float base) {
  std::vector<float> e(static_cast<size_t>(n * kRow));
  std::iota(e.begin(), e.end(), base);
  return e;
}

// The dense reference: the entries the cache should hold, oldest first,
// read straight from the arrays handed to it (fp32 stores them exactly).
void expect_holds(const GenieKvBuffer& b, const std::vector<const float*>& k_rows,
                  const std::vector<const float*>& v_rows, const char* mode) {
  ASSERT_EQ(b.n_valid(), static_cast<int64_t>(k_rows.size())) << mode;
  size_t next = 0;  // without a window the valid columns are in age order in every mode
  for (int64_t col = 0; col < b.cache_dim(); ++col) {
    if (!b.column_valid(col)) continue;
    ASSERT_LT(next, k_rows.size()) << mode;
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t d = 0; d < kDim; ++d) {
        ASSERT_EQ(b.key(h, d, col), k_rows[next][h * kDim + d]) << mode << " col " << col;
        ASSERT_EQ(b.value(h, col, d), v_rows[next][h * kDim + d]) << mode << " col " << col;
      }
    ++next;
  }
  EXPECT_EQ(next, k_rows.size()) << mode;
}

TEST(KeepMask, TheBufferKeepsExactlyTheChosenEntries) {
  const std::vector<bool> mask{true, false, true, true, false, false, true, false};
  for (GenieUpdateMode mode : {GenieUpdateMode::shift_concat, GenieUpdateMode::pointer_shift,
                               GenieUpdateMode::smart_mask}) {
    const char* name = mode == GenieUpdateMode::shift_concat    ? "shift_concat"
                       : mode == GenieUpdateMode::pointer_shift ? "pointer_shift"
                                                                : "smart_mask";
    GenieKvBuffer b(32, kHeads, kDim, KvDtype::fp32, mode, 8);
    GenieKvBuffer packed(32, kHeads, kDim, KvDtype::fp32, mode, 8);
    const std::vector<float> past_k = entries(3, 1000), past_v = entries(3, 2000);
    b.append(past_k.data(), past_v.data(), 3);
    packed.append(past_k.data(), past_v.data(), 3);
    const std::vector<float> k = entries(8, 0), v = entries(8, 500);
    b.append_selected(k.data(), v.data(), mask);
    std::vector<const float*> want_k, want_v;
    for (int64_t i = 0; i < 3; ++i) {
      want_k.push_back(&past_k[static_cast<size_t>(i * kRow)]);
      want_v.push_back(&past_v[static_cast<size_t>(i * kRow)]);
    }
    // Entries 0, 2, 3, 6 of the pass, in that order; not 1, 4, 5, 7.
    std::vector<float> kk, vv;
    for (int64_t i : {0, 2, 3, 6}) {
      want_k.push_back(&k[static_cast<size_t>(i * kRow)]);
      want_v.push_back(&v[static_cast<size_t>(i * kRow)]);
      kk.insert(kk.end(), k.begin() + i * kRow, k.begin() + (i + 1) * kRow);
      vv.insert(vv.end(), v.begin() + i * kRow, v.begin() + (i + 1) * kRow);
    }
    expect_holds(b, want_k, want_v, name);
    // It moves the bytes of appending the kept entries packed: the seed
    // copies each chosen entry once.
    packed.append(kk.data(), vv.data(), 4);
    EXPECT_EQ(b.bytes_moved(), packed.bytes_moved()) << name;
    // A later plain append lands after the kept path.
    const std::vector<float> k2 = entries(1, 3000), v2 = entries(1, 4000);
    b.append(k2.data(), v2.data(), 1);
    want_k.push_back(k2.data());
    want_v.push_back(v2.data());
    expect_holds(b, want_k, want_v, name);
  }
}

GenieCacheShape shape() {
  GenieCacheShape s;
  s.layers = 2;
  s.kv_heads = kHeads;
  s.head_dim = kDim;
  s.dtype_bytes = 2;
  s.ctx_size = 64;
  s.ar_variants = {1, 8};
  return s;
}

TEST(KeepMask, ThePlanKeepsThePopcountAndRefusesBadMasks) {
  for (const char* mode : {"shift_concat", "pointer_shift", "smart_mask"}) {
    for (const bool windowed : {false, true}) {
      GenieCacheShape sh = shape();
      sh.window = windowed ? 20 : 0;
      std::unique_ptr<GenieKvPolicy> p =
          windowed ? testing::make_window_policy(mode, sh) : testing::make_mode_policy(mode, sh);
      p->apply_update(p->plan_update({0, 8}));
      p->apply_update(p->plan_update({10, 8}));  // 10 held, the AR-8 pass ran
      const std::vector<bool> mask{true, false, true, true, false};
      const KvUpdatePlan plan = p->plan_update({13, 1, mask});
      EXPECT_EQ(plan.selected, mask) << mode;
      EXPECT_EQ(plan.appended_tokens, 3) << mode;
      EXPECT_EQ(plan.rewound_tokens, 0) << mode;
      // Only the kept entries are copied (the plain update of 3 prices the same).
      EXPECT_EQ(plan.bytes_copied, p->plan_update({13, 1}).bytes_copied) << mode;
      EXPECT_EQ(plan.bytes_copied, 3 * sh.column_bytes()) << mode;
      // A mask longer than the pass's output, keeping another count, or on a rewind.
      EXPECT_THROW(p->plan_update({13, 1, std::vector<bool>{1, 1, 1, 0, 0, 0, 0, 0, 0}}),
                   std::invalid_argument)
          << mode;
      EXPECT_THROW(p->plan_update({12, 1, mask}), std::invalid_argument) << mode;
      EXPECT_THROW(p->plan_update({9, 1, std::vector<bool>{true}}), std::invalid_argument) << mode;
      p->apply_update(plan);
      EXPECT_EQ(p->n_past(), 13);
    }
  }
}

std::string tree_dialog(const std::string& kv_cache, const std::string& selected,
                        const std::string& numerics) {
  return "name: tree\nseed: 3\ndevice: snapdragon-8-elite\nmodel: llama-3.2-1b-instruct-w4a16\n"
         "kv_cache: {" +
         kv_cache +
         ", dtype: fp16, ctx_size: 1024, ar_variants: [1, 8, 64]}\n"
         "workload: {kind: dialog, turns: 2, prompt_tokens: 100, reply_tokens: 60,\n"
         "  speculative: {draft_tokens: 5, acceptance_rate: 0.8, drafter: prompt_lookup" +
         selected + "}}\n" + numerics;
}

// Every Genie mode, and a window shorter than the dialog over one: the
// numerics checker gives the pass's off-path entries content no position
// has, so a kernel keeping a prefix instead of the path fails the dense
// reference at the next check.
TEST(KeepMask, TreeDraftsKeepThePathWithoutRewinds) {
  const std::string numerics = "numerics: {mode: full}\n";
  for (const std::string kv :
       {"policy: shift_concat", "policy: pointer_shift", "policy: smart_mask",
        "policy: sliding_window, update_mode: smart_mask, window: 150",
        "policy: sliding_window, update_mode: shift_concat, window: 150"}) {
    const RunMetrics tree = run_scenario(testing::scenario_from_text(tree_dialog(
                                             kv, ", selected: [1, 0, 1, 1, 0, 1]", numerics)),
                                         nullptr)
                                .metrics;
    const RunMetrics chain =
        run_scenario(testing::scenario_from_text(tree_dialog(kv, "", numerics)), nullptr).metrics;
    EXPECT_EQ(tree.requests.completed, 2) << kv;
    EXPECT_EQ(tree.parts.get_or_zero<GenieRunMetrics>().rewinds, 0u) << kv;
    EXPECT_GT(chain.parts.get_or_zero<GenieRunMetrics>().rewinds, 0u) << kv;
    // Numerics checked every update against the dense reference.
    EXPECT_GT(tree.numerics.checks, 0) << kv;
  }
}

TEST(KeepMask, AMaskLongerThanTheUpdateIsExit2NamingTheKey) {
  const std::string path = ::testing::TempDir() + "/keep-mask-too-long.yaml";
  {
    std::ofstream f(path);
    f << tree_dialog("policy: smart_mask", ", selected: [1, 0, 1, 1, 0, 1, 1]", "");
  }
  const testing::CommandResult r =
      testing::run_command(std::string(KVSIM_BINARY) + " validate " + path + " 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  // file:line:col of the list, the key, what is wrong, what is allowed.
  EXPECT_NE(r.output.find("keep-mask-too-long.yaml:7:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("workload.speculative.selected"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("7 entries are longer than the update of a verify pass"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1..6 entries"), std::string::npos) << r.output;
}

TEST(KeepMask, APolicyWithoutAKeepMaskIsExit2NamingTheKey) {
  const std::string path = ::testing::TempDir() + "/keep-mask-llama-cells.yaml";
  {
    std::ofstream f(path);
    f << tree_dialog("policy: llama_cells", ", selected: [1, 0, 1]", "");
  }
  const testing::CommandResult r =
      testing::run_command(std::string(KVSIM_BINARY) + " validate " + path + " 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("workload.speculative.selected"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'llama_cells' does not have"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
