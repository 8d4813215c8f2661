// stories260K end to end (shared/data/models/stories260K): greedy text
// through the paged policy's real blocks equals llama2.c's expected output
// for block sizes 1, 16 and 64; low-precision KV is measured by forcing the
// fp32 tokens and bounding the logit error and top-1 agreement. Skipped,
// with a message, when the shared data folder is absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/generate/llama2_generate.hpp"
#include "scenario_helpers.hpp"
#include "tests/support/stories260k.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE {
namespace {

using stories260k::expected_text;
using stories260k::model;

// The text llama2.c's expected_greedy_200.txt was made with: an empty
// prompt, 200 steps, fp32 KV; `o` picks where the KV lives.
std::string empty_prompt_200_steps_fp32(GenerateOptions o) {
  o.steps = 200;
  o.kv_dtype = KvDtype::fp32;
  return generate_greedy(model().weights, model().tokenizer, o).text;
}

// How far a low-precision run strays from fp32 paged on the same context:
// the reference's tokens are forced into `low` (its policy and dtype set by
// the caller) and the logits compared position by position.
struct LogitAgreement {
  double max_err = 0;  // max |logit - fp32 logit|
  double top1 = 0;     // share of positions whose argmax equals fp32's
  size_t positions = 0;
};

LogitAgreement against_fp32_reference(GenerateOptions low) {
  GenerateOptions o;
  o.steps = low.steps;
  o.keep_logits = true;
  const GenerateResult ref = generate_greedy(model().weights, model().tokenizer, o);
  low.keep_logits = true;
  low.forced = std::vector<int32_t>(ref.tokens.begin() + 1, ref.tokens.end());
  const GenerateResult run = generate_greedy(model().weights, model().tokenizer, low);
  EXPECT_EQ(run.logits.size(), ref.logits.size());
  LogitAgreement r;
  r.positions = std::min(run.logits.size(), ref.logits.size());
  int agree = 0;
  for (size_t p = 0; p < r.positions; ++p) {
    const auto& a = ref.logits[p];
    const auto& b = run.logits[p];
    for (size_t i = 0; i < a.size(); ++i)
      r.max_err = std::max(r.max_err, double(std::fabs(a[i] - b[i])));
    agree += std::max_element(a.begin(), a.end()) - a.begin() ==
             std::max_element(b.begin(), b.end()) - b.begin();
  }
  r.top1 = double(agree) / double(ref.logits.size());
  return r;
}

class GreedyPaged : public ::testing::TestWithParam<int64_t> {};

TEST_P(GreedyPaged, EmptyPrompt200StepsFp32MatchesLlama2cByteForByte) {
  REQUIRE_SHARED_DATA();
  GenerateOptions o;
  o.block_size = GetParam();
  EXPECT_EQ(empty_prompt_200_steps_fp32(o), expected_text());
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, GreedyPaged, ::testing::Values(1, 16, 64));

// The same text with the KV in Genie's on-device buffers (seed 002): AR-32
// prefill passes, AR-1 decode, every update planned by the policy.
class GreedyGenie : public ::testing::TestWithParam<std::string> {};

TEST_P(GreedyGenie, EmptyPrompt200StepsFp32MatchesLlama2cByteForByte) {
  REQUIRE_SHARED_DATA();
  GenerateOptions o;
  o.policy = GetParam();
  EXPECT_EQ(empty_prompt_200_steps_fp32(o), expected_text());
}

TEST_P(GreedyGenie, APromptPrefilledInSeveralPassesMatchesPaged) {
  REQUIRE_SHARED_DATA();
  // 40+ prompt tokens: two AR-32 passes, the last one padded.
  GenerateOptions o;
  o.steps = 120;
  o.prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play outside "
      "with her friends in the big green park near her house.";
  const GenerateResult paged = generate_greedy(model().weights, model().tokenizer, o);
  ASSERT_GT(paged.tokens.size(), 40u);
  o.policy = GetParam();
  o.ctx_size = 130;  // a buffer just larger than the run
  EXPECT_EQ(generate_greedy(model().weights, model().tokenizer, o).text, paged.text);
}

INSTANTIATE_TEST_SUITE_P(Modes, GreedyGenie,
                         ::testing::Values("shift_concat", "pointer_shift", "smart_mask"));

TEST(GenieInt8Kv, ForcedReferenceTokensBoundLogitErrorAndTop1Agreement) {
  REQUIRE_SHARED_DATA();
  GenerateOptions o;
  o.steps = 200;
  o.policy = "pointer_shift";
  o.kv_dtype = KvDtype::int8;
  const LogitAgreement r = against_fp32_reference(o);
  std::cout << "[ figures ] Genie pointer_shift int8 KV (one scale/offset per layer): max |logit "
               "err| "
            << r.max_err << ", top-1 agreement " << r.top1 << " over " << r.positions
            << " positions\n";
  EXPECT_LE(r.max_err, 3.0);
  EXPECT_GE(r.top1, 0.9);
  EXPECT_GT(r.max_err, 0.0);  // the storage type was really used
}

TEST(Llama2Checkpoint, HeaderOfStories260K) {
  REQUIRE_SHARED_DATA();
  const Llama2Config& c = model().weights.config;
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_TRUE(c.shared_classifier);
}

TEST(Llama2Tokenizer, EncodeAddsBosAndDecodesBack) {
  REQUIRE_SHARED_DATA();
  const auto& tok = model().tokenizer;
  const std::string text = "Once upon a time, Lily saw a ball.";
  const auto ids = tok.encode(text, true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids[0], kLlama2Bos);
  EXPECT_LT(ids.size(), text.size());  // merges happened
  std::string back;
  for (size_t i = 1; i < ids.size(); ++i) back += tok.piece(ids[i - 1], ids[i]);
  EXPECT_EQ(back, text);
}

struct LowPrecision {
  KvDtype dtype;
  double max_logit_err;  // bound on |logit - fp32 logit| over 200 positions
  double min_top1;       // share of positions whose argmax equals fp32's
};

void PrintTo(const LowPrecision& c, std::ostream* os) {
  *os << kv_dtype_name(c.dtype);
}

class LowPrecisionKv : public ::testing::TestWithParam<LowPrecision> {};

TEST_P(LowPrecisionKv, ForcedReferenceTokensBoundLogitErrorAndTop1Agreement) {
  REQUIRE_SHARED_DATA();
  GenerateOptions o;
  o.steps = 200;
  o.kv_dtype = GetParam().dtype;
  const LogitAgreement r = against_fp32_reference(o);
  std::cout << "[ figures ] " << kv_dtype_name(GetParam().dtype) << " KV: max |logit err| "
            << r.max_err << ", top-1 agreement " << r.top1 << " over " << r.positions
            << " positions\n";
  EXPECT_LE(r.max_err, GetParam().max_logit_err);
  EXPECT_GE(r.top1, GetParam().min_top1);
  EXPECT_GT(r.max_err, 0.0);  // the storage type was really used
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LowPrecisionKv,
                         ::testing::Values(LowPrecision{KvDtype::fp16, 0.05, 0.98},
                                           LowPrecision{KvDtype::bf16, 0.5, 0.9},
                                           LowPrecision{KvDtype::int8, 1.5, 0.95}),
                         [](const auto& param_info) {
                           return std::string(kv_dtype_name(param_info.param.dtype));
                         });

TEST(GenerateCli, PrintsTheExpectedTextThroughTheBinary) {
  REQUIRE_SHARED_DATA();
  const auto r = testing::run_command(std::string(KVSIM_BINARY) +
                                      " generate --model stories260k --steps 200 --policy paged "
                                      "--kv-dtype fp32 --block-size 16");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, expected_text() + "\n");
}

TEST(GenerateCli, GenieModeThroughTheBinary) {
  REQUIRE_SHARED_DATA();
  const auto r = testing::run_command(std::string(KVSIM_BINARY) +
                                      " generate --steps 200 --policy smart_mask --ctx-size 256");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, expected_text() + "\n");
  // bf16 is no QNN KV type, and a buffer smaller than the run is bad input.
  EXPECT_EQ(testing::run_command(std::string(KVSIM_BINARY) +
                                 " generate --policy shift_concat --kv-dtype bf16 --steps 5")
                .exit_code,
            2);
  const auto small = testing::run_command(
      std::string(KVSIM_BINARY) + " generate --policy pointer_shift --ctx-size 64 --steps 100");
  EXPECT_EQ(small.exit_code, 2);
  EXPECT_NE(small.output.find("--steps 100 exceeds the Genie ctx_size 64"), std::string::npos)
      << small.output;
}

TEST(GenerateCli, MissingCheckpointIsBadInputWithAClearMessage) {
  const auto r = testing::run_command(std::string(KVSIM_BINARY) +
                                      " generate --checkpoint /nonexistent/stories.bin --steps 5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("/nonexistent/stories.bin: not found"), std::string::npos) << r.output;
}

TEST(GenerateCli, UnknownPolicyOrDtypeIsBadInput) {
  EXPECT_EQ(testing::run_command(std::string(KVSIM_BINARY) + " generate --policy nope").exit_code,
            2);
  EXPECT_EQ(testing::run_command(std::string(KVSIM_BINARY) + " generate --kv-dtype fp8").exit_code,
            2);
}

}  // namespace
}  // namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE
