// How a scenario finds its device and model: a name under configs/, a path
// (a Hugging Face config.json works as is), or an inline map.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "scenario_helpers.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;

constexpr const char* kWorkload =
    "workload: {kind: synthetic, requests: 1, arrival: {process: poisson, rate_per_s: 1}, "
    "input_tokens: 8, output_tokens: 2}\n";

TEST(ScenarioLoading, ModelAsAnInlineMap) {
  const ScenarioSpec s = testing::scenario_from_text(std::string(R"(
device: ascend-910b2
model:
  name: tiny
  hidden_size: 256
  num_hidden_layers: 2
  num_attention_heads: 4
  num_key_value_heads: 2
  intermediate_size: 512
  vocab_size: 1000
  max_position_embeddings: 2048
)") + kWorkload);
  EXPECT_EQ(s.model.name, "tiny");
  EXPECT_EQ(s.model.head_dim, 64);
  EXPECT_EQ(s.model.kv_bytes_per_token(2, 1), 2 * 2 * 2 * 64 * 2);
}

TEST(ScenarioLoading, InlineModelErrorsPointIntoTheScenarioFile) {
  try {
    testing::scenario_from_text(std::string("device: ascend-910b2\nmodel:\n  hidden_sise: 256\n") +
                                kWorkload);
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "test.yaml:3:3: model.hidden_sise: unknown key 'hidden_sise', did you "
                  "mean 'hidden_size'?"),
              std::string::npos)
        << e.what();
  }
}

TEST(ScenarioLoading, HuggingFaceConfigJsonByPathBesideTheScenario) {
  const fs::path dir = fs::temp_directory_path() / "kvsim-hf-config";
  fs::remove_all(dir);
  fs::create_directories(dir / "my-model");
  std::ofstream(dir / "my-model" / "config.json") << R"({
  "architectures": ["LlamaForCausalLM"], "bos_token_id": 128000, "eos_token_id": 128001,
  "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
  "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 32,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
  "rope_scaling": null, "rope_theta": 500000.0, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.40.0", "use_cache": true, "vocab_size": 128256
})";
  std::ofstream(dir / "s.yaml") << "device: ascend-910b2\nmodel: my-model/config.json\n"
                                << kWorkload;
  const ScenarioSpec s = load_scenario((dir / "s.yaml").string());
  EXPECT_EQ(s.model.parameter_count(), 8'030'261'248LL);
  EXPECT_EQ(s.model.weights_dtype, "bf16");
  fs::remove_all(dir);
}

TEST(ScenarioLoading, ShippedScenariosFindTheirConfigsFolder) {
  EXPECT_EQ(fs::path(find_configs_dir(testing::configs_dir() + "/scenarios/default.yaml")),
            fs::path(testing::configs_dir()));
}

TEST(ScenarioLoading, CrossFieldChecksNameTheKeyToChange) {
  auto error_of = [](const std::string& yaml) -> std::string {
    try {
      testing::scenario_from_text(yaml + kWorkload);
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of("device: ascend-910b2\nmodel: llama-3-8b\nparallel: {tensor: 3}\n")
                .find("parallel.tensor"),
            std::string::npos);
  EXPECT_NE(error_of("device: ascend-910b2\nmodel: llama-3-8b\nparallel: {tensor: 16}\n")
                .find("parallel.tensor: 16 ranks but ascend-910b2 groups at most 8 devices"),
            std::string::npos);
  EXPECT_NE(
      error_of(
          "device: ascend-910b2\nmodel: llama-3-8b\nkv_cache: {layout: atb, block_size: 100}\n")
          .find("kv_cache.block_size: ATB paged attention needs block_size % 16 == 0"),
      std::string::npos);
  EXPECT_NE(
      error_of("device: ascend-910b2\nmodel: llama-3-8b\nscheduler: {max_model_len: 100000}\n")
          .find(
              "scheduler.max_model_len: 100000 is beyond the model's max_position_embeddings 8192"),
      std::string::npos);
  EXPECT_NE(error_of("device: ascend-910b2\nmodel: llama-3-8b\n"
                     "numerics: {mode: full, shadow: {head_dim: 7}}\n")
                .find("numerics.shadow.head_dim"),
            std::string::npos);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
