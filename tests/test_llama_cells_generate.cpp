// stories260K through llama_cells (seed 004): llama2.c's text byte for byte
// with f16 K/V, V transposed or not; a context shift when ctx_size is
// smaller than the story, with its drift against a recompute of the kept
// tokens; q8_0 and q4_0 K/V against fp32; defragmentation that leaves the
// outputs unchanged. Skipped when the shared data is absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/source_paths.hpp"
#include "cli/generate/llama2_cells.hpp"
#include "scenario_helpers.hpp"
#include "tests/support/stories260k.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE {
namespace {

using stories260k::expected_text;
using stories260k::model;

GenerateOptions cells(KvDtype dtype, bool v_trans) {
  GenerateOptions o;
  o.policy = "llama_cells";
  o.steps = 200;
  o.kv_dtype = dtype;
  o.v_trans = v_trans;
  return o;
}

TEST(LlamaCellsGenerate, F16MatchesLlama2cByteForByteWithAndWithoutVTrans) {
  REQUIRE_SHARED_DATA();
  for (bool v_trans : {true, false}) {
    const GenerateResult r =
        generate_greedy(model().weights, model().tokenizer, cells(KvDtype::fp16, v_trans));
    EXPECT_EQ(r.text, expected_text()) << "v_trans " << v_trans;
    EXPECT_EQ(r.drift.shifts, 0);
  }
}

// Current llama.cpp (scattered slots, no defragmentation, n padded to 256)
// stores and reads the same values: the text is llama2.c's byte for byte.
TEST(LlamaCellsGenerate, CurrentBehaviourMatchesLlama2cByteForByteWithAndWithoutVTrans) {
  REQUIRE_SHARED_DATA();
  for (bool v_trans : {true, false}) {
    GenerateOptions o = cells(KvDtype::fp16, v_trans);
    o.llama_behaviour = "current";
    const GenerateResult r = generate_greedy(model().weights, model().tokenizer, o);
    EXPECT_EQ(r.text, expected_text()) << "v_trans " << v_trans;
    EXPECT_EQ(r.drift.shifts, 0);
    EXPECT_EQ(r.drift.defrags, 0);
  }
}

// Context shift off (current): the text stops once the cells are full, as
// llama-server's reply does, and is the start of the unshifted text; a
// prompt that fills them is refused.
TEST(LlamaCellsGenerate, CurrentBehaviourStopsAtCtxSizeInsteadOfShifting) {
  REQUIRE_SHARED_DATA();
  GenerateOptions o = cells(KvDtype::fp16, true);
  o.llama_behaviour = "current";
  o.steps = 300;
  o.ctx_size = 128;
  const GenerateResult r = generate_greedy(model().weights, model().tokenizer, o);
  EXPECT_EQ(r.drift.shifts, 0);
  EXPECT_LE(r.tokens.size(), 129u);
  EXPECT_GT(r.tokens.size(), 64u);
  EXPECT_EQ(expected_text().rfind(r.text, 0), 0u) << r.text;
  o.prompt = std::string(600, 'a');
  EXPECT_THROW((void)generate_greedy(model().weights, model().tokenizer, o), std::invalid_argument);
}

TEST(LlamaCellsGenerate, AContextShiftPastCtxSizeReportsItsDriftAgainstARecompute) {
  REQUIRE_SHARED_DATA();
  GenerateOptions o = cells(KvDtype::fp16, true);
  o.steps = 300;
  o.ctx_size = 128;
  const GenerateResult a = generate_greedy(model().weights, model().tokenizer, o);
  o.v_trans = false;
  const GenerateResult b = generate_greedy(model().weights, model().tokenizer, o);
  EXPECT_EQ(a.text, b.text);  // the layout of V does not change a value
  EXPECT_GE(a.drift.shifts, 2);
  EXPECT_EQ(a.drift.compared, a.drift.shifts);
  EXPECT_GT(a.drift.defrags, 0);
  // Keys computed with the dropped tokens in view are not what a recompute
  // gives: the drift is real, and bounded.
  EXPECT_GT(a.drift.max_abs_diff, 1e-3);
  EXPECT_LT(a.drift.max_abs_diff, 10.0);
  std::cout << "[ figures ] context shift at ctx 128: " << a.drift.shifts << " shifts, "
            << a.drift.discarded_tokens << " tokens dropped, logits max |diff| "
            << a.drift.max_abs_diff << ", mean " << a.drift.mean_abs_diff << "\n";
}

TEST(LlamaCellsGenerate, DefragmentationLeavesTheOutputsUnchanged) {
  REQUIRE_SHARED_DATA();
  GenerateOptions o = cells(KvDtype::fp32, true);
  o.steps = 260;
  o.ctx_size = 128;
  o.keep_logits = true;
  o.defrag_thold = -1;
  const GenerateResult never = generate_greedy(model().weights, model().tokenizer, o);
  o.defrag_thold = 0.0;
  const GenerateResult always = generate_greedy(model().weights, model().tokenizer, o);
  EXPECT_EQ(never.drift.defrags, 0);
  EXPECT_GT(always.drift.defrags, 0);
  EXPECT_EQ(never.text, always.text);
  ASSERT_EQ(never.logits.size(), always.logits.size());
  double err = 0;
  for (size_t p = 0; p < never.logits.size(); ++p)
    for (size_t i = 0; i < never.logits[p].size(); ++i)
      err = std::max(err, double(std::fabs(never.logits[p][i] - always.logits[p][i])));
  EXPECT_LT(err, 1e-4);  // only the order of the attention sums changes
}

struct QuantCase {
  const char* type;
  double max_logit_err, min_top1;
};

// As the int8 Genie KV: the fp32 reference's tokens are forced, the logits
// compared position by position. stories260K's KV rows are 32 values (4
// heads of 8), one block each: q8_0 stays close to fp32 (as QNN's int8 does),
// q4_0's 16 levels per block move the logits by many units (the figures).
TEST(LlamaCellsGenerate, Q8_0AndQ4_0KvReportTheirErrorAgainstFp32) {
  REQUIRE_SHARED_DATA();
  GenerateOptions ref_o = cells(KvDtype::fp32, true);
  ref_o.keep_logits = true;
  const GenerateResult ref = generate_greedy(model().weights, model().tokenizer, ref_o);
  for (const QuantCase& q : {QuantCase{"q8_0", 1.5, 0.95}, QuantCase{"q4_0", 25.0, 0.5}}) {
    GenerateOptions o = cells(KvDtype::fp32, false);  // a quantized V needs v_trans off
    o.type_k = o.type_v = q.type;
    o.keep_logits = true;
    o.forced = std::vector<int32_t>(ref.tokens.begin() + 1, ref.tokens.end());
    const GenerateResult run = generate_greedy(model().weights, model().tokenizer, o);
    ASSERT_EQ(run.logits.size(), ref.logits.size());
    double err = 0;
    int agree = 0;
    for (size_t p = 0; p < ref.logits.size(); ++p) {
      const auto& a = ref.logits[p];
      const auto& b = run.logits[p];
      for (size_t i = 0; i < a.size(); ++i) err = std::max(err, double(std::fabs(a[i] - b[i])));
      agree += std::max_element(a.begin(), a.end()) - a.begin() ==
               std::max_element(b.begin(), b.end()) - b.begin();
    }
    const double top1 = double(agree) / double(ref.logits.size());
    std::cout << "[ figures ] " << q.type << " K/V: max |logit err| " << err << ", top-1 agreement "
              << top1 << " over " << ref.logits.size() << " positions\n";
    EXPECT_GT(err, 0.0);
    EXPECT_LE(err, q.max_logit_err);
    EXPECT_GE(top1, q.min_top1);
  }
}

TEST(LlamaCellsGenerate, ThroughTheBinaryWithAndWithoutVTransAndWithAShift) {
  REQUIRE_SHARED_DATA();
  const std::string base =
      std::string(KVSIM_BINARY) + " generate --steps 200 --policy llama_cells --kv-dtype fp16";
  const auto trans = testing::run_command(base);
  EXPECT_EQ(trans.exit_code, 0);
  EXPECT_EQ(trans.output, expected_text() + "\n");
  const auto flat = testing::run_command(base + " --no-v-trans");
  EXPECT_EQ(flat.output, expected_text() + "\n");
  const auto shift = testing::run_command(base + " --ctx-size 128");
  EXPECT_EQ(shift.exit_code, 0);
  EXPECT_NE(shift.output.find("context shift: "), std::string::npos) << shift.output;
  EXPECT_NE(shift.output.find("vs a recompute of the kept tokens: max |diff|"), std::string::npos);
  // Both behaviours, with and without v_trans, through the binary.
  for (const char* extra : {"", " --no-v-trans"}) {
    const auto cur = testing::run_command(base + " --llama-behaviour current" + extra);
    EXPECT_EQ(cur.exit_code, 0);
    EXPECT_EQ(cur.output, expected_text() + "\n") << extra;
  }
  const auto unknown = testing::run_command(base + " --llama-behaviour b9999");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("seed_2024"), std::string::npos) << unknown.output;
  // A quantized V stored transposed is bad input.
  const auto bad = testing::run_command(base + " --type-v q4_0");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("cannot be stored transposed"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE
