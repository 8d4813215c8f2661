#pragma once
// The stories260K fixture the generate tests share (shared/data/models/
// stories260K, shared/data/README.md): whether the data is there, the skip
// that says so when it is not, the model loaded once per test binary, and
// llama2.c's expected greedy text.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/source_paths.hpp"
#include "cli/generate/llama2_generate.hpp"

namespace kvsim::kernels::stories260k {

inline const std::filesystem::path& dir() {
  static const std::filesystem::path d =
      std::filesystem::path(KVSIM_SHARED_DATA_DIR) / "models" / "stories260K";
  return d;
}

inline bool have_data() {
  namespace fs = std::filesystem;
  return fs::exists(dir() / "stories260K.bin") && fs::exists(dir() / "tok512.bin") &&
         fs::exists(dir() / "expected_greedy_200.txt");
}

struct Model {
  Llama2Weights weights;
  Llama2Tokenizer tokenizer;
};

// Loaded on first use, once per test binary.
inline const Model& model() {
  static const Model m{load_llama2_checkpoint((dir() / "stories260K.bin").string()),
                       Llama2Tokenizer((dir() / "tok512.bin").string(), 512)};
  return m;
}

// What llama2.c's own test expects: empty prompt, temperature 0, 200 steps.
inline std::string expected_text() {
  std::ifstream in(dir() / "expected_greedy_200.txt", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace kvsim::kernels::stories260k

// Skips the test, naming the folder and its files, when the data is absent.
#define REQUIRE_SHARED_DATA()                                                             \
  if (!::kvsim::kernels::stories260k::have_data())                                        \
  GTEST_SKIP() << "shared data absent: " << ::kvsim::kernels::stories260k::dir().string() \
               << " (stories260K.bin, tok512.bin, expected_greedy_200.txt) is not there"
