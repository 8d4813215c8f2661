// Every Hugging Face config.json of the models kvsim ships (DeepSeek-V3,
// Qwen3-30B-A3B, Qwen3-235B-A22B, Mixtral-8x7B, gemma-2-9b, gemma-3-4b/27b,
// the AWQ and GPTQ 4-bit checkpoints) loads from a path as a user points
// `model:` at it: the shipped YAML files keep the config.json's own keys,
// so each is written back out as a config.json (with the keys HF adds and
// kvsim does not read, and gemma-3's decoder nested under text_config as
// the multimodal file has it) and read through load_model_file.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/diagnostics.hpp"
#include "models/model_spec.hpp"
#include "report_test_helpers.hpp"
#include "sim/cache/kv_cache_groups.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

nlohmann::ordered_json to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& kv : n) j[kv.first.as<std::string>()] = to_json(kv.second);
    return j;
  }
  if (n.IsSequence()) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const auto& item : n) j.push_back(to_json(item));
    return j;
  }
  if (n.IsNull()) return nullptr;
  const std::string s = n.Scalar();
  if (s == "true" || s == "false") return s == "true";
  try {
    size_t used = 0;
    const long long i = std::stoll(s, &used);
    if (used == s.size()) return i;
    const double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {
  }
  return s;
}

using ConfigJsonPaths = testing::TempFolderTest;

TEST_F(ConfigJsonPaths, EveryShippedModelsConfigJsonLoadsFromAPath) {
  const std::string models = std::string(KVSIM_CONFIG_DIR) + "/models/";
  for (const char* name :
       {"deepseek-v3", "qwen3-30b-a3b", "qwen3-235b-a22b", "mixtral-8x7b", "gemma-2-9b",
        "gemma-3-4b", "gemma-3-27b", "llama-2-7b-awq", "qwen2.5-7b-instruct-gptq-int4"}) {
    config::LoadContext yaml_ctx;
    const ModelSpec shipped = load_model_file(models + name + ".yaml", yaml_ctx);
    ASSERT_TRUE(yaml_ctx.diagnostics.empty()) << name;

    nlohmann::ordered_json decoder = to_json(YAML::LoadFile(models + name + ".yaml"));
    decoder.erase("name");
    decoder.erase("source");
    nlohmann::ordered_json file;
    file["_name_or_path"] = std::string("hf/") + name;
    file["architectures"] = {"ForCausalLM"};
    file["transformers_version"] = "4.51.0";
    file["use_cache"] = true;
    file["bos_token_id"] = 1;
    if (decoder.value("model_type", "") == "gemma3") {
      // google/gemma-3-*-it: the decoder under text_config, a vision tower beside it.
      decoder["model_type"] = "gemma3_text";
      file["model_type"] = "gemma3";
      file["torch_dtype"] = decoder["torch_dtype"];
      decoder.erase("torch_dtype");
      file["text_config"] = decoder;
      file["vision_config"] = {{"model_type", "siglip_vision_model"}, {"hidden_size", 1152}};
    } else {
      for (auto it = decoder.begin(); it != decoder.end(); ++it) file[it.key()] = it.value();
    }
    const std::filesystem::path dir = path(name);
    std::filesystem::create_directories(dir);
    const std::string json_path = (dir / "config.json").string();
    std::ofstream(json_path) << file.dump(2);

    config::LoadContext ctx;
    const ModelSpec m = load_model_file(json_path, ctx);
    std::string problems;
    for (const auto& d : ctx.diagnostics.all()) problems += d.format() + "\n";
    EXPECT_TRUE(ctx.diagnostics.empty()) << name << ":\n" << problems;
    EXPECT_EQ(m.parameter_count(), shipped.parameter_count()) << name;
    EXPECT_EQ(m.active_parameter_count(), shipped.active_parameter_count()) << name;
    EXPECT_EQ(m.weight_bytes(), shipped.weight_bytes()) << name;
    EXPECT_EQ(m.kv_bytes_per_token(2, 1), shipped.kv_bytes_per_token(2, 1)) << name;
    EXPECT_EQ(m.kv_bytes_for_context(32768, 2, 1), shipped.kv_bytes_for_context(32768, 2, 1))
        << name;
    EXPECT_EQ(kv_cache_groups(m).sliding_groups, kv_cache_groups(shipped).sliding_groups) << name;
    EXPECT_EQ(m.quant.method, shipped.quant.method) << name;
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
