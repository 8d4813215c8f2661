// Models named as users name them (models/model_resolve.hpp): the Hugging
// Face repository name, with or without its organisation and a weights
// format, resolves to one shape file per model; a scenario takes the same
// names, or the folder of a Hugging Face checkout.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <vector>

#include "models/model_resolve.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

namespace fs = std::filesystem;

std::string stem_of(const ModelLookup& m) {
  return fs::path(m.path).stem().string();
}

TEST(ModelResolve, HuggingFaceNamesFindTheirShapeFile) {
  const std::string dir = KVSIM_CONFIG_DIR;
  EXPECT_EQ(stem_of(find_model("Llama-3.2-1B-Instruct", dir)), "llama-3.2-1b");
  EXPECT_EQ(stem_of(find_model("meta-llama/Llama-3.2-1B-Instruct", dir)), "llama-3.2-1b");
  EXPECT_EQ(stem_of(find_model("Qwen/Qwen2.5-7B-Instruct", dir)), "qwen2.5-7b");
  EXPECT_EQ(stem_of(find_model("Phi-3.5-mini-instruct", dir)), "phi-3.5-mini");
  EXPECT_EQ(stem_of(find_model("Qwen3-14B", dir)), "qwen3-14b");
  EXPECT_EQ(stem_of(find_model("Llama-3-8B-Chat", dir)), "llama-3-8b");
  EXPECT_EQ(stem_of(find_model("Meta-Llama-3-8B-Instruct", dir)), "llama-3-8b");
  EXPECT_EQ(stem_of(find_model("Llama-2-7b-chat-hf", dir)), "llama-2-7b");
  // Existing file names keep working as written.
  EXPECT_EQ(stem_of(find_model("llama-3-8b", dir)), "llama-3-8b");
}

TEST(ModelResolve, AWeightsFormatAppliesToTheShape) {
  const std::string dir = KVSIM_CONFIG_DIR;
  const ModelLookup q = find_model("Qwen3-14B-W8A8", dir);
  EXPECT_EQ(stem_of(q), "qwen3-14b");
  EXPECT_EQ(q.weights, "w8a8");
  const ModelSpec bf16 = load_model_by_name("Qwen3-14B", "", dir);
  const ModelSpec w8a8 = load_model_by_name("Qwen3-14B", "w8a8", dir);
  const ModelSpec w4 = load_model_by_name("Qwen3-14B-w4a16", "", dir);
  EXPECT_EQ(bf16.weights_dtype, "bf16");
  EXPECT_EQ(w8a8.weights_dtype, "w8a8");
  EXPECT_EQ(w4.weights_dtype, "w4a16");
  EXPECT_EQ(w8a8.hidden_size, bf16.hidden_size);
  EXPECT_EQ(bf16.parameter_count(), 14'768'307'200);  // Qwen's model card: 14.8B
  EXPECT_LT(w8a8.weight_bytes(), bf16.weight_bytes());
  EXPECT_LT(w4.weight_bytes(), w8a8.weight_bytes());
  // Phi-3.5-mini: 3.8B parameters, no GQA.
  const ModelSpec phi = load_model_by_name("Phi-3.5-mini-instruct", "w4a16", dir);
  EXPECT_EQ(phi.num_key_value_heads, phi.num_attention_heads);
  EXPECT_EQ(phi.parameter_count(), 3'821'079'552);
}

// No file per (model, format) pair ships: the names scenarios and commands
// have always used for the Genie and vllm-ascend exports resolve to their
// architecture's shape file plus the format their name ends in.
TEST(ModelResolve, APerFormatNameIsTheShapeFilePlusItsFormat) {
  const std::string dir = KVSIM_CONFIG_DIR;
  const std::vector<std::array<std::string, 3>> names = {
      {"llama-2-7b-chat-w4a16", "llama-2-7b", "w4a16"},
      {"llama-3-8b-instruct-w4a16", "llama-3-8b", "w4a16"},
      {"llama-3.2-3b-instruct-w4a16", "llama-3.2-3b", "w4a16"},
      {"qwen3-8b-w8a8", "qwen3-8b", "w8a8"},
      {"qwen3-32b-w8a8", "qwen3-32b", "w8a8"},
      {"deepseek-v3-w8a8", "deepseek-v3", "w8a8"}};
  for (const auto& [name, shape, format] : names) {
    SCOPED_TRACE(name);
    const ModelLookup found = find_model(name, dir);
    EXPECT_EQ(stem_of(found), shape);
    EXPECT_EQ(found.weights, format);
    EXPECT_FALSE(fs::exists(fs::path(dir) / "models" / (name + ".yaml")));
    const ModelSpec m = load_model_by_name(name, "", dir);
    const ModelSpec base = load_model_by_name(shape, "", dir);
    EXPECT_EQ(m.name, name);
    EXPECT_EQ(m.weights_dtype, format);
    EXPECT_EQ(m.parameter_count(), base.parameter_count());
    EXPECT_EQ(m.weight_bytes(), with_weights_format(base, format).weight_bytes());
  }
}

TEST(ModelResolve, AnUnknownModelNamesTheFilesLookedFor) {
  try {
    (void)load_model_by_name("Llama-9-1B-Instruct", "w4a16", KVSIM_CONFIG_DIR);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Llama-9-1B-Instruct"), std::string::npos) << what;
    EXPECT_NE(what.find("llama-9-1b.yaml"), std::string::npos) << what;
    EXPECT_NE(what.find("hidden_size"), std::string::npos) << what;
  }
  EXPECT_THROW((void)with_weights_format(ModelSpec{}, "int3"), std::invalid_argument);
}

TEST(ModelResolve, AScenarioTakesAnHfNameOrACheckoutFolder) {
  const std::string body =
      "seed: 1\ndevice: ascend-910b2\n"
      "kv_cache: {policy: paged, block_size: 128}\n"
      "workload: {kind: fixed, requests: 2, arrival: {process: closed, concurrency: 1}, "
      "input_tokens: 64, output_tokens: 4}\n";
  const ScenarioSpec by_name = load_scenario_text("model: Qwen2.5-7B-Instruct-W8A8\n" + body,
                                                  "hf-name.yaml", KVSIM_CONFIG_DIR);
  EXPECT_EQ(by_name.model.weights_dtype, "w8a8");
  EXPECT_EQ(by_name.model.hidden_size, 3584);
  EXPECT_EQ(by_name.model.name, "Qwen2.5-7B-Instruct-W8A8");

  const fs::path folder = fs::temp_directory_path() / "kvsim-hf-checkout-test" / "Tiny-1B";
  fs::create_directories(folder);
  std::ofstream(folder / "config.json")
      << R"({"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4,
           "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 4096,
           "vocab_size": 32000, "max_position_embeddings": 4096, "torch_dtype": "bfloat16"})";
  const ScenarioSpec by_folder = load_scenario_text("model: " + folder.string() + "\n" + body,
                                                    "hf-folder.yaml", KVSIM_CONFIG_DIR);
  EXPECT_EQ(by_folder.model.hidden_size, 1024);
  EXPECT_EQ(by_folder.model.name, "Tiny-1B");
  fs::remove_all(folder.parent_path());
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
