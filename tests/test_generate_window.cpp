// stories260K past its context (cli/generate/llama2_window.hpp): through
// sliding_window over paged and over each Genie mode, and through a Genie
// context reset. Inside the window the text is llama2.c's byte for byte;
// past it the cached run matches a recompute from the kept tokens (at their
// own positions, cli/generate/llama2_recompute.hpp) at every position, and
// the drift from the full context is reported. Bad input is exit 2 naming
// the flag. Skipped, with a message, when the shared data is absent.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli/generate/llama2_generate.hpp"
#include "cli/generate/llama2_recompute.hpp"
#include "scenario_helpers.hpp"
#include "tests/support/stories260k.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE {
namespace {

using stories260k::expected_text;
using stories260k::model;

const std::vector<std::string> kGenieModes = {"shift_concat", "pointer_shift", "smart_mask",
                                              "native_kv"};

GenerateResult run(GenerateOptions o) {
  return generate_greedy(model().weights, model().tokenizer, o);
}

// sliding_window over `inner`, fp32, an empty prompt; ctx_size for the
// Genie buffers (a multiple of native_kv's 32-column blocks).
GenerateOptions windowed(const std::string& inner, int64_t window, int64_t ctx, int64_t steps) {
  GenerateOptions o;
  o.policy = "sliding_window";
  o.update_mode = inner;
  o.window = window;
  o.ctx_size = inner == "paged" ? 0 : ctx;
  o.steps = steps;
  o.kv_dtype = KvDtype::fp32;
  return o;
}

// A run that never leaves its window: llama2.c's 200 steps byte for byte,
// and both references agree.
TEST(GenerateWindow, InsideTheWindowTheTextIsLlama2csForEveryInnerPolicy) {
  REQUIRE_SHARED_DATA();
  std::vector<std::string> inner = kGenieModes;
  inner.push_back("paged");
  for (const std::string& m : inner) {
    const GenerateResult r = run(windowed(m, 224, 256, 200));
    EXPECT_EQ(r.text, expected_text()) << m;
    EXPECT_TRUE(r.window.ran) << m;
    EXPECT_EQ(r.window.first_past, -1) << m;
    EXPECT_EQ(r.window.first_divergence, -1) << m;
    EXPECT_TRUE(r.window.top1_agree) << m;
    EXPECT_LT(r.window.max_abs_diff, 1e-3) << m;
  }
}

// Past the window: the KV holds only the window, the cached run matches
// the recompute from the kept tokens at every position, the text is
// llama2.c's until past the window, and the drift is reported.
TEST(GenerateWindow, PastTheWindowTheCachedRunMatchesTheRecomputeFromTheKeptTokens) {
  REQUIRE_SHARED_DATA();
  constexpr int64_t kWindow = 64;
  std::vector<std::string> inner = kGenieModes;
  inner.push_back("paged");
  for (const std::string& m : inner) {
    GenerateOptions o = windowed(m, kWindow, 128, 256);
    o.keep_logits = true;
    const GenerateResult r = run(o);
    const WindowDrift& d = r.window;
    // Genie keeps `window` keys besides the query; vLLM's window holds it.
    EXPECT_EQ(d.first_past, m == "paged" ? kWindow : kWindow + 1) << m;
    if (m != "paged") {
      EXPECT_EQ(d.max_held, kWindow) << m;
    } else {
      EXPECT_LT(d.max_held, kWindow + 16) << m;  // whole blocks of 16
    }
    EXPECT_EQ(d.compared, static_cast<int64_t>(r.logits.size())) << m;
    EXPECT_GT(d.compared, 200) << m;
    EXPECT_TRUE(d.top1_agree) << m;
    EXPECT_LT(d.max_abs_diff, 1e-3) << m;
    // The text is llama2.c's through the last position that saw it all,
    // and departs from the full context's after it.
    EXPECT_GT(d.first_divergence, d.first_past) << m;
    // A kept token's K/V are not those of re-encoding the kept tokens alone:
    // they were computed while the evicted tokens were in view.
    EXPECT_EQ(d.fresh_compared, static_cast<int64_t>(r.logits.size()) - d.first_past) << m;
    EXPECT_GT(d.fresh_max_abs_diff, 1e-2) << m;
    const std::string& full = expected_text();
    const std::vector<int32_t> head(r.tokens.begin(), r.tokens.begin() + d.first_past + 1);
    std::string text;
    for (size_t i = 1; i < head.size(); ++i) text += model().tokenizer.piece(head[i - 1], head[i]);
    EXPECT_EQ(full.substr(0, text.size()), text) << m;
    std::cout << "[ figures ] sliding_window(" << m << ") window " << kWindow
              << ": max |diff| vs the recompute " << d.max_abs_diff
              << ", first token unlike the full context at " << d.first_divergence << "\n";
  }
}

// The recompute is sensitive to what it keeps: a window of other sizes, or
// the full context, is far from the cached run past the window.
TEST(GenerateWindow, TheRecomputeWithAnotherWindowDoesNotMatch) {
  REQUIRE_SHARED_DATA();
  GenerateOptions o = windowed("smart_mask", 64, 128, 256);
  o.keep_logits = true;
  const GenerateResult r = run(o);
  const auto n = static_cast<int64_t>(r.tokens.size());
  for (int64_t window : {56, 72, 1 << 20}) {
    const auto ref = llama2_recompute_logits(
        model().weights, r.tokens, sliding_window_first_keys(n, 1, window, true, 32), o.kv_dtype);
    double max = 0;
    for (size_t i = 0; i < r.logits.size(); ++i)
      for (size_t j = 0; j < r.logits[i].size(); ++j)
        max = std::max(max, static_cast<double>(std::fabs(r.logits[i][j] - ref[i][j])));
    EXPECT_GT(max, 1e-2) << "window " << window;
  }
}

// A prompt longer than the window (several AR-32 passes, evicting inside
// the prefill) is compared as well.
TEST(GenerateWindow, APromptLongerThanTheWindowMatchesTheRecompute) {
  REQUIRE_SHARED_DATA();
  for (const std::string& m : {std::string("pointer_shift"), std::string("paged")}) {
    GenerateOptions o = windowed(m, 40, 128, 160);
    o.prompt =
        "Once upon a time, there was a little girl named Lily. She loved to play outside "
        "with her friends in the big green park near her house.";
    const GenerateResult r = run(o);
    ASSERT_GT(r.tokens.size(), 40u);
    EXPECT_TRUE(r.window.top1_agree) << m;
    EXPECT_LT(r.window.max_abs_diff, 1e-3) << m;
    EXPECT_GE(r.window.first_past, 0) << m;
  }
}

// The context reset: the cache is cleared when full and the kept tokens are
// prefilled again; the run matches a recompute of each new context, is
// llama2.c's until the first reset, and reports where the text departs.
TEST(GenerateWindow, AContextResetMatchesTheRecomputeOfTheKeptTokens) {
  REQUIRE_SHARED_DATA();
  for (const std::string& m : kGenieModes) {
    for (int64_t n_keep : {0, 3}) {
      GenerateOptions o;
      o.policy = m;
      o.ctx_size = 128;
      o.steps = 300;
      o.kv_dtype = KvDtype::fp32;
      o.context_reset = true;
      o.n_keep = n_keep;
      o.prompt = "Once upon a time";
      const GenerateResult r = run(o);
      const WindowDrift& d = r.window;
      ASSERT_GE(d.resets_at.size(), 2u) << m;
      // AR-1 holds ctx_size - 1 positions, so the first reset comes at
      // 128; native_kv's budget is ctx_size less the variant rounded up to
      // its 32-column blocks (96), so at 97.
      EXPECT_EQ(d.resets_at.front(), m == "native_kv" ? 97 : 128) << m;
      EXPECT_EQ(d.kept, n_keep + 1) << m;
      EXPECT_TRUE(d.top1_agree) << m << " n_keep " << n_keep;
      EXPECT_LT(d.max_abs_diff, 1e-3) << m;
      EXPECT_TRUE(d.first_divergence < 0 || d.first_divergence > d.first_past) << m;
      // Until the first reset the run is the full-context one.
      GenerateOptions full = o;
      full.context_reset = false;
      full.ctx_size = 0;
      const GenerateResult f = run(full);
      for (int64_t p = 0; p <= d.first_past; ++p)
        ASSERT_EQ(r.tokens.at(static_cast<size_t>(p)), f.tokens.at(static_cast<size_t>(p))) << m;
    }
  }
}

TEST(GenerateWindow, ThroughTheBinaryAndItsBadInput) {
  REQUIRE_SHARED_DATA();
  const std::string base = std::string(KVSIM_BINARY) + " generate --steps 256";
  const auto ok = testing::run_command(
      base + " --policy sliding_window --update-mode shift_concat --window 64 --ctx-size 128");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("sliding window: 64 tokens kept over shift_concat, the KV held at "
                           "most 64; first position past it 65"),
            std::string::npos)
      << ok.output;
  EXPECT_NE(ok.output.find("top-1 agrees at every one"), std::string::npos) << ok.output;
  const auto reset =
      testing::run_command(base + " --policy smart_mask --ctx-size 128 --context-reset");
  EXPECT_EQ(reset.exit_code, 0) << reset.output;
  EXPECT_NE(reset.output.find("context reset: 2 resets (at positions 128, 255)"), std::string::npos)
      << reset.output;
  struct Bad {
    std::string args, names;
  };
  const std::vector<Bad> bad = {
      {" --policy sliding_window --update-mode smart_mask --window 200 --ctx-size 128",
       "--window 200 does not fit"},
      {" --policy sliding_window --update-mode pointer_shift", "--window"},
      {" --policy paged --window 64", "--window takes --policy sliding_window"},
      {" --policy smart_mask --update-mode pointer_shift",
       "--update-mode takes --policy sliding_window"},
      {" --policy sliding_window --update-mode paged --window 64 --ctx-size 128", "--ctx-size"},
      {" --policy sliding_window --update-mode llama_cells --window 64", "--update-mode"},
      {" --policy paged --context-reset", "--context-reset"},
      {" --policy smart_mask --ctx-size 64 --context-reset --n-keep 200 --prompt 'Once upon a "
       "time, there was a little girl named Lily. She loved to play outside with her friends in "
       "the big green park near her house.'",
       "--n-keep"},
      {" --policy smart_mask --ctx-size 128", "--context-reset"},
      {" --policy sliding_window --window 64 --ctx-size 128 --save-session /tmp/x.kv",
       "--save-session"},
  };
  for (const Bad& b : bad) {
    const auto r = testing::run_command(base + b.args);
    EXPECT_EQ(r.exit_code, 2) << b.args << "\n" << r.output;
    EXPECT_NE(r.output.find(b.names), std::string::npos) << b.args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE
