// Genie's session save/restore with real buffer contents (seed 002
// dumpCache / loadCache, cli/generate/genie_session_file.hpp): stories260K
// generating through Genie's buffers, dumped to a file part way and loaded
// by another run, continues byte-identically (tokens, text and every logit's
// bits) to the run that never stopped, whichever update modes save and load.
// The kernel's dump/load against its own buffers, the output rule for the
// file, and bad files. The model tests skip, with a message, when the
// shared data folder is absent.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "cli/generate/genie_session_file.hpp"
#include "cli/generate/llama2_generate.hpp"
#include "reports/output_rule.hpp"
#include "scenario_helpers.hpp"
#include "tests/support/stories260k.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE {
namespace {

using stories260k::model;
namespace fs = std::filesystem;

std::string temp(const std::string& name) {
  const fs::path p = fs::path(::testing::TempDir()) / name;
  fs::remove(p);
  return p.string();
}

GenerateResult run(GenerateOptions o) {
  o.keep_logits = true;
  return generate_greedy(model().weights, model().tokenizer, o);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(GenieSessionFile, ASessionDumpedAndLoadedContinuesByteIdentically) {
  REQUIRE_SHARED_DATA();
  constexpr int64_t kSteps = 160, kSavedAt = 70;
  for (const KvDtype dtype : {KvDtype::fp32, KvDtype::fp16}) {
    for (const auto& [saver, loader] :
         std::vector<std::pair<std::string, std::string>>{{"smart_mask", "smart_mask"},
                                                          {"shift_concat", "shift_concat"},
                                                          {"pointer_shift", "pointer_shift"},
                                                          {"pointer_shift", "smart_mask"},
                                                          {"smart_mask", "shift_concat"}}) {
      const std::string what = saver + " -> " + loader + " " + std::string(kv_dtype_name(dtype));
      GenerateOptions o;
      o.prompt = "Once upon a time";
      o.kv_dtype = dtype;
      o.policy = loader;
      o.steps = kSteps;
      const GenerateResult whole = run(o);

      const std::string path =
          temp("session-" + saver + "-" + loader + "-" + std::string(kv_dtype_name(dtype)) + ".kv");
      GenerateOptions first = o;
      first.policy = saver;
      first.steps = kSavedAt;
      first.save_session = path;
      const GenerateResult head = run(first);
      ASSERT_EQ(head.session_saved_positions, kSavedAt) << what;
      // K and V of every layer: 5 x 2 x 4 heads x 8 dims x 70 positions.
      EXPECT_EQ(head.session_saved_kv_bytes, 5 * 2 * 4 * 8 * kSavedAt * kv_dtype_bytes(dtype))
          << what;
      EXPECT_EQ(static_cast<int64_t>(fs::file_size(path)), head.session_file_bytes) << what;
      EXPECT_GT(head.session_file_bytes, head.session_saved_kv_bytes) << what;

      GenerateOptions second = o;
      second.prompt.clear();
      second.load_session = path;
      const GenerateResult tail = run(second);
      EXPECT_EQ(tail.session_loaded_positions, kSavedAt) << what;
      EXPECT_EQ(tail.tokens, whole.tokens) << what;
      EXPECT_EQ(tail.text, whole.text) << what;
      // Logits from the first position the loaded run computes (the saved
      // session's last token, at position kSavedAt) to the end.
      ASSERT_EQ(whole.tokens.size(), static_cast<size_t>(kSteps + 1)) << what;  // no early BOS
      ASSERT_EQ(tail.logits.size(), static_cast<size_t>(kSteps - kSavedAt)) << what;
      const size_t offset = whole.logits.size() - tail.logits.size();
      for (size_t i = 0; i < tail.logits.size(); ++i)
        ASSERT_TRUE(same_bits(tail.logits[i], whole.logits[offset + i]))
            << what << ": logits of position " << kSavedAt + static_cast<int64_t>(i);
    }
  }
}

// The kernel alone: the dumped bytes do not depend on the mode's layout (a
// smart_mask ring that wrapped, a pointer_shift view part way along its
// row), and loading them into any mode gives back each entry exactly.
TEST(GenieSessionFile, DumpedBytesAreLayoutFreeAndLoadBackExactly) {
  constexpr int64_t kHeads = 2, kDim = 4, kRow = kHeads * kDim, kCtx = 24;
  std::vector<float> k(40 * kRow), v(k.size());
  std::iota(k.begin(), k.end(), 0.0f);
  std::iota(v.begin(), v.end(), 1000.0f);
  std::vector<std::vector<uint8_t>> dumps;
  for (const GenieUpdateMode mode : {GenieUpdateMode::shift_concat, GenieUpdateMode::pointer_shift,
                                     GenieUpdateMode::smart_mask}) {
    GenieKvBuffer b(kCtx, kHeads, kDim, KvDtype::fp16, mode, 1, {}, 6);
    // 30 entries through a window of 12: the ring wraps, the view moves.
    for (int64_t i = 0; i < 30; ++i) {
      if (b.n_valid() == 12) b.evict_oldest(1);
      b.append(&k[static_cast<size_t>(i * kRow)], &v[static_cast<size_t>(i * kRow)], 1);
    }
    std::vector<uint8_t> d;
    b.dump_valid(true, d);
    b.dump_valid(false, d);
    EXPECT_EQ(static_cast<int64_t>(d.size()), 2 * b.dump_bytes());
    dumps.push_back(d);
  }
  EXPECT_EQ(dumps[0], dumps[1]);
  EXPECT_EQ(dumps[0], dumps[2]);
  const size_t half = dumps[0].size() / 2;
  for (const GenieUpdateMode mode : {GenieUpdateMode::shift_concat, GenieUpdateMode::pointer_shift,
                                     GenieUpdateMode::smart_mask}) {
    GenieKvBuffer b(kCtx, kHeads, kDim, KvDtype::fp16, mode, 1, {}, 6);
    b.append(k.data(), v.data(), 3);  // whatever was there is cleared
    b.load_valid(dumps[0].data(), dumps[0].data() + half, 12);
    ASSERT_EQ(b.n_valid(), 12);
    int64_t entry = 18;  // the window kept entries 18..29, oldest first
    for (int64_t col = 0; col < b.cache_dim(); ++col) {
      if (!b.column_valid(col)) continue;
      for (int64_t h = 0; h < kHeads; ++h)
        for (int64_t d = 0; d < kDim; ++d) {
          // fp16 holds these small integers exactly.
          ASSERT_EQ(b.key(h, d, col), k[static_cast<size_t>(entry * kRow + h * kDim + d)]);
          ASSERT_EQ(b.value(h, col, d), v[static_cast<size_t>(entry * kRow + h * kDim + d)]);
        }
      ++entry;
    }
    EXPECT_EQ(entry, 30);
    std::vector<uint8_t> again;
    b.dump_valid(true, again);
    b.dump_valid(false, again);
    EXPECT_EQ(again, dumps[0]);
    EXPECT_THROW(b.load_valid(dumps[0].data(), dumps[0].data(), kCtx), std::length_error);
  }
}

std::string kvsim(const std::string& args) {
  return std::string(KVSIM_BINARY) + " generate " + args;
}

// storage_bandwidth prices the session: 5 layers x 2 x 4 heads x 8 dims x
// 70 positions x 4 B = 89,600 B at the 8 Elite's 2.8 GB/s (its device file,
// UFS 4.0) = 32.00 us, each way.
TEST(GenieSessionFile, TheDevicesStorageBandwidthPricesIt) {
  REQUIRE_SHARED_DATA();
  const std::string path = temp("session-priced.kv");
  const testing::CommandResult save = testing::run_command(kvsim(
      "--policy smart_mask --steps 70 --save-session " + path + " --device snapdragon-8-elite"));
  ASSERT_EQ(save.exit_code, 0) << save.output;
  EXPECT_NE(save.output.find("saved 70 positions (89600 KV bytes"), std::string::npos)
      << save.output;
  EXPECT_NE(save.output.find("32.00 us at snapdragon-8-elite's storage_bandwidth 2.8 GB/s"),
            std::string::npos)
      << save.output;
  const testing::CommandResult load = testing::run_command(kvsim(
      "--policy shift_concat --steps 90 --load-session " + path + " --device snapdragon-8-gen3"));
  ASSERT_EQ(load.exit_code, 0) << load.output;
  EXPECT_NE(load.output.find("loaded 70 positions (89600 KV bytes) from " + path +
                             "; 32.00 us at snapdragon-8-gen3's"),
            std::string::npos)
      << load.output;
  // A device without a storage bandwidth, before any text is generated.
  const testing::CommandResult gpu = testing::run_command(
      kvsim("--policy smart_mask --steps 90 --load-session " + path + " --device a100-sxm4"));
  EXPECT_EQ(gpu.exit_code, 2) << gpu.output;
  EXPECT_NE(gpu.output.find("has no storage_bandwidth"), std::string::npos) << gpu.output;
  EXPECT_EQ(gpu.output.find("Once upon"), std::string::npos) << gpu.output;
}

// The file kvsim writes is new or its own: a user's file is left as it was
// (exit 2), a session file kvsim wrote is replaced, and the session a run
// loads is never the one it saves.
TEST(GenieSessionFile, NeverWritesOverAUsersFile) {
  REQUIRE_SHARED_DATA();
  const std::string path = temp("users-notes.kv");
  {
    std::ofstream f(path);
    f << "my notes\n";
  }
  const testing::CommandResult r =
      testing::run_command(kvsim("--policy smart_mask --steps 20 --save-session " + path));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--save-session " + path + ": exists and is not a file kvsim wrote"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("--force"), std::string::npos) << r.output;  // generate has none
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "my notes");

  const std::string own = temp("own.kv");
  ASSERT_EQ(
      testing::run_command(kvsim("--policy smart_mask --steps 20 --save-session " + own)).exit_code,
      0);
  ASSERT_TRUE(is_genie_session_file(own));
  const testing::CommandResult again =
      testing::run_command(kvsim("--policy smart_mask --steps 30 --save-session " + own));
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(read_genie_session(own).header.n_valid, 30);
  const testing::CommandResult same = testing::run_command(
      kvsim("--policy smart_mask --steps 40 --load-session " + own + " --save-session " + own));
  EXPECT_EQ(same.exit_code, 2) << same.output;
  EXPECT_NE(same.output.find("is an input of this run"), std::string::npos) << same.output;
  EXPECT_EQ(read_genie_session(own).header.n_valid, 30);
}

TEST(GenieSessionFile, BadSessionsAreExit2SayingWhatIsWrong) {
  REQUIRE_SHARED_DATA();
  const std::string good = temp("good.kv");
  ASSERT_EQ(testing::run_command(kvsim("--policy smart_mask --steps 40 --save-session " + good))
                .exit_code,
            0);
  std::string text;
  {
    std::ifstream in(good, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto write = [&](const std::string& name, const std::string& contents) {
    const std::string p = temp(name);
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  };
  struct Case {
    std::string file, flags, message;
  };
  const std::vector<Case> cases = {
      {write("not-a-session.kv", "hello\n"), "", "not a kvsim session file"},
      {write("short.kv", text.substr(0, text.size() - 7)), "", "bytes of KV, its header says"},
      {good, "--kv-dtype fp16", "the session's KV dtype (--kv-dtype) is fp32, this run's fp16"},
      {good, "--steps 30", "already holds 40 positions; --steps 30 leaves none to run"},
      {good, "--prompt Hi", "--prompt with --load-session"},
      {good, "--ctx-size 32", "exceeds the Genie ctx_size 32"},
  };
  for (const Case& c : cases) {
    const std::string steps = c.flags.find("--steps") == std::string::npos ? " --steps 60" : "";
    const testing::CommandResult r = testing::run_command(
        kvsim("--policy smart_mask --load-session " + c.file + steps + " " + c.flags));
    EXPECT_EQ(r.exit_code, 2) << c.flags << ": " << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.flags << ": " << r.output;
  }
  const testing::CommandResult paged =
      testing::run_command(kvsim("--policy paged --steps 60 --load-session " + good));
  EXPECT_EQ(paged.exit_code, 2) << paged.output;
  EXPECT_NE(paged.output.find("take a Genie update mode"), std::string::npos) << paged.output;
}

}  // namespace
}  // namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE
