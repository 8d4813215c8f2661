// stories260K through Genie's NativeKV buffers (the HMX tiled layout,
// kernels/native_kv_layout.hpp): llama2.c's expected greedy text byte for
// byte, a prompt prefilled in several AR-32 passes as paged gives it, and a
// session dumped from the tiled layout and loaded back continuing with
// every logit's bits. Skipped, with a message, when the shared data folder
// is absent.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/generate/llama2_generate.hpp"
#include "tests/support/stories260k.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE {
namespace {

using stories260k::model;
namespace fs = std::filesystem;

GenerateResult run(GenerateOptions o) {
  o.keep_logits = true;
  return generate_greedy(model().weights, model().tokenizer, o);
}

TEST(NativeKvGenerate, EmptyPrompt200StepsFp32MatchesLlama2cByteForByte) {
  REQUIRE_SHARED_DATA();
  GenerateOptions o;
  o.policy = "native_kv";
  o.steps = 200;
  o.kv_dtype = KvDtype::fp32;
  EXPECT_EQ(run(o).text, stories260k::expected_text());
}

TEST(NativeKvGenerate, APromptPrefilledInSeveralPassesMatchesPaged) {
  REQUIRE_SHARED_DATA();
  GenerateOptions o;
  o.steps = 120;
  o.prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play outside "
      "with her friends in the big green park near her house.";
  const GenerateResult paged = run(o);
  ASSERT_GT(paged.tokens.size(), 40u);
  o.policy = "native_kv";
  o.ctx_size = 160;  // the smallest multiple of the 32-column block that holds the run
  const GenerateResult native = run(o);
  EXPECT_EQ(native.text, paged.text);
  o.ctx_size = 150;  // not a whole number of blocks: the layout refuses it
  EXPECT_THROW(run(o), std::invalid_argument);
}

TEST(NativeKvGenerate, ASessionDumpedFromTheTiledLayoutContinuesByteIdentically) {
  REQUIRE_SHARED_DATA();
  constexpr int64_t kSteps = 150, kSavedAt = 64;
  for (const auto& [saver, loader] :
       std::vector<std::pair<std::string, std::string>>{{"native_kv", "native_kv"},
                                                        {"native_kv", "smart_mask"},
                                                        {"pointer_shift", "native_kv"}}) {
    const std::string what = saver + " -> " + loader;
    GenerateOptions o;
    o.prompt = "Once upon a time";
    o.kv_dtype = KvDtype::fp16;
    o.policy = loader;
    o.steps = kSteps;
    const GenerateResult whole = run(o);
    const fs::path path =
        fs::path(::testing::TempDir()) / ("native-" + saver + "-" + loader + ".kv");
    fs::remove(path);
    GenerateOptions first = o;
    first.policy = saver;
    first.steps = kSavedAt;
    first.save_session = path.string();
    const GenerateResult head = run(first);
    ASSERT_EQ(head.session_saved_positions, kSavedAt) << what;
    GenerateOptions second = o;
    second.prompt.clear();
    second.load_session = path.string();
    const GenerateResult tail = run(second);
    EXPECT_EQ(tail.tokens, whole.tokens) << what;
    ASSERT_EQ(tail.logits.size(), static_cast<size_t>(kSteps - kSavedAt)) << what;
    const size_t offset = whole.logits.size() - tail.logits.size();
    for (size_t i = 0; i < tail.logits.size(); ++i)
      ASSERT_EQ(0, std::memcmp(tail.logits[i].data(), whole.logits[offset + i].data(),
                               tail.logits[i].size() * sizeof(float)))
          << what << ": logits of position " << kSavedAt + static_cast<int64_t>(i);
    fs::remove(path);
  }
}

}  // namespace
}  // namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE
