// Model specs: reading model files (strict YAML, lenient HF config.json),
// defaults, cross-field errors with file:line:col, and derived numbers checked
// against published parameter counts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "models/model_spec.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

namespace fs = std::filesystem;

std::string model_path(const std::string& name) {
  return std::string(KVSIM_CONFIG_DIR) + "/models/" + name + ".yaml";
}

// Loads a shipped model file and fails the test on any diagnostic.
ModelSpec load_shipped(const std::string& name) {
  config::LoadContext ctx;
  ModelSpec m = load_model_file(model_path(name), ctx);
  EXPECT_TRUE(ctx.diagnostics.empty()) << name << ": " << [&] {
    std::string all;
    for (const auto& d : ctx.diagnostics.all()) all += d.format() + "\n";
    return all;
  }();
  return m;
}

// A scratch folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / (std::string("kvsim_test_models_") + info->name() + "_" +
                                         std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string write(const std::string& relative, const std::string& text) const {
    const fs::path p = path_ / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }

 private:
  fs::path path_;
};

// Parses YAML text as a strict model file named `file`.
ModelSpec parse_text(const std::string& text, config::LoadContext& ctx,
                     const std::string& file = "test-model.yaml", bool lenient = false) {
  return parse_model(config::Node(YAML::Load(text), "", file, &ctx), lenient);
}

std::string all_messages(const config::LoadContext& ctx) {
  std::string all;
  for (const auto& d : ctx.diagnostics.all()) all += d.format() + "\n";
  return all;
}

const char* kMinimalModel =
    "hidden_size: 256\n"
    "num_hidden_layers: 2\n"
    "num_attention_heads: 4\n"
    "intermediate_size: 512\n"
    "vocab_size: 1000\n"
    "max_position_embeddings: 128\n";

// --- published parameter counts --------------------------------------------

struct PublishedCount {
  const char* model;
  int64_t parameters;
};

class PublishedParameterCount : public ::testing::TestWithParam<PublishedCount> {};

TEST_P(PublishedParameterCount, MatchesTheShapeFormula) {
  const ModelSpec m = load_shipped(GetParam().model);
  EXPECT_EQ(m.parameter_count(), GetParam().parameters) << GetParam().model;
}

// Exact counts: the Hugging Face safetensors totals. Qwen3 publishes rounded
// figures (8.2B, 32.8B); the exact values come from the formula and agree
// with those roundings. stories260K: the float32 count of its .bin without
// the two legacy RoPE tables.
INSTANTIATE_TEST_SUITE_P(ShippedModels, PublishedParameterCount,
                         ::testing::Values(PublishedCount{"llama-2-7b", 6'738'415'616},
                                           PublishedCount{"llama-3-8b", 8'030'261'248},
                                           PublishedCount{"llama-3.2-1b", 1'235'814'400},
                                           PublishedCount{"llama-3.2-3b", 3'212'749'824},
                                           PublishedCount{"qwen2.5-7b", 7'615'616'512},
                                           PublishedCount{"qwen3-8b", 8'190'735'360},
                                           PublishedCount{"qwen3-32b", 32'762'123'264},
                                           PublishedCount{"stories260k", 260'032}),
                         [](const auto& param_info) {
                           std::string n = param_info.param.model;
                           for (char& c : n)
                             if (c == '-' || c == '.') c = '_';
                           return n;
                         });

TEST(ModelSpec, QwenRoundedFiguresAgree) {
  EXPECT_NEAR(static_cast<double>(load_shipped("qwen3-8b").parameter_count()), 8.19e9, 0.01e9);
  EXPECT_NEAR(static_cast<double>(load_shipped("qwen3-32b").parameter_count()), 32.8e9, 0.05e9);
}

TEST(ModelSpec, EveryShippedModelFileLoadsCleanly) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(std::string(KVSIM_CONFIG_DIR) + "/models")) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    config::LoadContext ctx;
    const ModelSpec m = load_model_file(entry.path().string(), ctx);
    EXPECT_TRUE(ctx.diagnostics.empty()) << all_messages(ctx);
    EXPECT_EQ(m.name, entry.path().stem().string()) << "name should match the file name";
    // Every shape names where it comes from: a Hugging Face config.json, or
    // for stories260K the llama2.c checkpoint header.
    const bool has_source = m.source.find("config.json") != std::string::npos ||
                            m.source.find("stories260K") != std::string::npos;
    EXPECT_TRUE(has_source) << entry.path() << ": source '" << m.source << "'";
  }
  EXPECT_GE(files, 8);
}

// --- derived numbers ---------------------------------------------------------

TEST(ModelSpec, KvBytesPerTokenFollowTheSeeds) {
  const ModelSpec llama2 = load_shipped("llama-2-7b");
  // seed 004: 2 * 32 layers * 32 heads * 128 * 2 B * 1024 tokens = 512 MiB.
  EXPECT_EQ(llama2.kv_bytes_per_token(kv_dtype_bytes("fp16"), 1) * 1024, 512 * 1024 * 1024);

  const ModelSpec llama3 = load_shipped("llama-3-8b");
  EXPECT_EQ(llama3.kv_bytes_per_token(2, 1), 131'072);
  EXPECT_EQ(llama3.kv_bytes_per_token(kv_dtype_bytes("int8"), 1), 65'536);
  EXPECT_EQ(llama3.kv_bytes_per_token(2, 2), 65'536);   // 4 KV heads per rank
  EXPECT_EQ(llama3.kv_bytes_per_token(2, 16), 16'384);  // 1 replicated head per rank
}

TEST(ModelSpec, KvHeadsPerRankReplicatesWhenTpExceedsKvHeads) {
  const ModelSpec m = load_shipped("llama-3-8b");  // 8 KV heads
  EXPECT_EQ(m.kv_heads_per_rank(1), 8);
  EXPECT_EQ(m.kv_heads_per_rank(2), 4);
  EXPECT_EQ(m.kv_heads_per_rank(8), 1);
  EXPECT_EQ(m.kv_heads_per_rank(16), 1);
  EXPECT_THROW(m.kv_heads_per_rank(0), std::invalid_argument);
}

TEST(ModelSpec, WeightBytesPerDtype) {
  ModelSpec m = load_shipped("llama-3-8b");
  ASSERT_EQ(m.weights_dtype, "bf16");  // from torch_dtype: bfloat16
  // linear = 32 * (4096*(32+16)*128 + 32*128*4096 + 3*4096*14336) = 6,979,321,856;
  // the rest (embeddings, lm_head, norms) = 1,050,939,392.
  EXPECT_EQ(m.linear_parameter_count(), 6'979'321'856);
  EXPECT_EQ(m.weight_bytes(), 2 * 8'030'261'248);
  EXPECT_EQ(m.activation_bytes(), 2);

  m.weights_dtype = "w8a8";  // 1 B per linear weight, the rest 2 B
  EXPECT_EQ(m.weight_bytes(), 6'979'321'856 + 2 * 1'050'939'392);
  EXPECT_EQ(m.activation_bytes(), 2);

  m.weights_dtype = "w4a16";  // 0.5 B + an fp16 scale per 128 weights
  EXPECT_EQ(m.weight_bytes(), 6'979'321'856 / 2 + 2 * (6'979'321'856 / 128) + 2 * 1'050'939'392);
  EXPECT_DOUBLE_EQ(m.linear_weight_bytes_per_parameter(), 0.515625);

  // w4 (AI Hub: int4 weights, fp16 activations) stores w4a16's bytes.
  const Bytes w4a16_bytes = m.weight_bytes();
  m.weights_dtype = "w4";
  EXPECT_EQ(m.weight_bytes(), w4a16_bytes);
  EXPECT_DOUBLE_EQ(m.linear_weight_bytes_per_parameter(), 0.515625);
  EXPECT_EQ(m.activation_bytes(), 2);

  m.weights_dtype = "fp32";
  EXPECT_EQ(m.weight_bytes(), 4 * 8'030'261'248);
  EXPECT_EQ(m.activation_bytes(), 4);
}

TEST(ModelSpec, WeightBytesPerRankSplitsAllButNorms) {
  const ModelSpec m = load_shipped("llama-3-8b");
  EXPECT_EQ(m.weight_bytes_per_rank(1), m.weight_bytes());
  // tp=2: linear 3,489,660,928 + embeddings 128256*4096 (half of two tables)
  // + norms 32*2*4096 + 4096 replicated, all at 2 B.
  EXPECT_EQ(m.linear_parameter_count_per_rank(2), 3'489'660'928);
  EXPECT_EQ(m.weight_bytes_per_rank(2), 2 * (3'489'660'928 + 128'256LL * 4096 + 266'240));
  EXPECT_GT(m.weight_bytes_per_rank(2) * 2, m.weight_bytes());  // replicated norms
}

TEST(ModelSpec, TensorParallelProblems) {
  const ModelSpec m = load_shipped("llama-3-8b");  // 32 heads, 8 KV heads, I 14336
  EXPECT_EQ(m.tensor_parallel_problem(1), "");
  EXPECT_EQ(m.tensor_parallel_problem(8), "");
  EXPECT_EQ(m.tensor_parallel_problem(16), "");  // KV heads replicated twice
  EXPECT_NE(m.tensor_parallel_problem(3).find("attention heads"), std::string::npos);
  EXPECT_NE(m.tensor_parallel_problem(0), "");
  EXPECT_NE(m.tensor_parallel_problem(64).find("attention heads"), std::string::npos);
  ModelSpec odd_kv = m;  // 48 heads over 12 KV heads: tp 8 neither splits nor replicates
  odd_kv.num_attention_heads = 48;
  odd_kv.num_key_value_heads = 12;
  EXPECT_NE(odd_kv.tensor_parallel_problem(8).find("KV heads"), std::string::npos);
  EXPECT_EQ(odd_kv.tensor_parallel_problem(4), "");
  const ModelSpec qwen = load_shipped("qwen2.5-7b");  // intermediate 18944 = 2^9 * 37
  EXPECT_NE(qwen.tensor_parallel_problem(7).find("intermediate_size"), std::string::npos);
}

TEST(ModelSpec, KvDtypeBytes) {
  EXPECT_EQ(kv_dtype_bytes("fp16"), 2);
  EXPECT_EQ(kv_dtype_bytes("bf16"), 2);
  EXPECT_EQ(kv_dtype_bytes("int8"), 1);
  EXPECT_EQ(kv_dtype_bytes("fp32"), 4);
  EXPECT_EQ(kv_dtype_bytes("fp8"), 1);  // vLLM's kv_cache_dtype fp8 (e4m3)
  EXPECT_EQ(kv_dtype_bytes("fp8_e5m2"), 1);
  EXPECT_THROW(kv_dtype_bytes("fp4"), std::invalid_argument);
  for (const auto& name : kKvDtypeNames) EXPECT_GT(kv_dtype_bytes(name), 0);
}

// --- defaults ----------------------------------------------------------------

TEST(ModelParse, HuggingFaceDefaults) {
  config::LoadContext ctx;
  const ModelSpec m = parse_text(kMinimalModel, ctx, "/some/dir/tiny-model.yaml");
  ASSERT_TRUE(ctx.diagnostics.empty()) << all_messages(ctx);
  EXPECT_EQ(m.name, "tiny-model");      // file stem
  EXPECT_EQ(m.num_key_value_heads, 4);  // = heads
  EXPECT_EQ(m.head_dim, 64);            // = hidden / heads
  EXPECT_EQ(m.weights_dtype, "fp16");
  EXPECT_EQ(m.rope_style, "rotate_half");
  EXPECT_EQ(m.model_type, "llama");
  EXPECT_FALSE(m.attention_bias);
  EXPECT_FALSE(m.qk_norm);
  EXPECT_FALSE(m.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(m.rope_theta, 10000.0);
}

TEST(ModelParse, FamilyDefaultsForQwen) {
  config::LoadContext ctx;
  const ModelSpec qwen2 = parse_text(std::string(kMinimalModel) + "model_type: qwen2\n", ctx);
  const ModelSpec qwen3 = parse_text(std::string(kMinimalModel) + "model_type: qwen3\n", ctx);
  const ModelSpec explicit_off =
      parse_text(std::string(kMinimalModel) + "model_type: qwen2\nattention_bias: false\n", ctx);
  ASSERT_TRUE(ctx.diagnostics.empty()) << all_messages(ctx);
  EXPECT_TRUE(qwen2.attention_bias);
  EXPECT_FALSE(qwen2.qk_norm);
  EXPECT_TRUE(qwen3.qk_norm);
  EXPECT_FALSE(qwen3.attention_bias);
  EXPECT_FALSE(explicit_off.attention_bias);
  // Bias adds (Hq + 2*Hkv) * d = 768 per layer; q/k norms 2 * d = 128 per layer.
  const ModelSpec plain = parse_text(kMinimalModel, ctx);
  EXPECT_EQ(qwen2.parameter_count() - plain.parameter_count(), 2 * 768);
  EXPECT_EQ(qwen3.parameter_count() - plain.parameter_count(), 2 * 128);
}

TEST(ModelParse, WeightsDtypeFromTorchDtypeAndExplicit) {
  config::LoadContext ctx;
  EXPECT_EQ(parse_text(std::string(kMinimalModel) + "torch_dtype: float32\n", ctx).weights_dtype,
            "fp32");
  EXPECT_EQ(parse_text(std::string(kMinimalModel) + "dtype: bfloat16\n", ctx).weights_dtype,
            "bf16");
  EXPECT_EQ(
      parse_text(std::string(kMinimalModel) + "torch_dtype: bfloat16\nweights_dtype: w4a16\n", ctx)
          .weights_dtype,
      "w4a16");
  EXPECT_EQ(parse_text(std::string(kMinimalModel) + "weights_dtype: w4\n", ctx).weights_dtype,
            "w4");
  EXPECT_TRUE(ctx.diagnostics.empty()) << all_messages(ctx);
  parse_text(std::string(kMinimalModel) + "torch_dtype: float8\n", ctx);
  ASSERT_EQ(ctx.diagnostics.size(), 1u);
  EXPECT_NE(ctx.diagnostics.all()[0].format().find("torch_dtype"), std::string::npos);
}

TEST(ModelParse, StoriesUsesAdjacentPairRopeAndFp32) {
  const ModelSpec m = load_shipped("stories260k");
  EXPECT_EQ(m.rope_style, "adjacent_pairs");
  EXPECT_EQ(m.weights_dtype, "fp32");
  EXPECT_EQ(m.head_dim, 8);
  EXPECT_TRUE(m.tie_word_embeddings);
  EXPECT_EQ(m.weight_bytes(), 4 * 260'032);
}

// --- Hugging Face config.json, as downloaded ---------------------------------

const char* kLlama3ConfigJson = R"({
  "_name_or_path": "meta-llama/Meta-Llama-3-8B",
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 8192,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
}
)";

TEST(ModelParse, HuggingFaceConfigJsonLoadsLeniently) {
  TempDir dir;
  const std::string path = dir.write("Meta-Llama-3-8B/config.json", kLlama3ConfigJson);
  config::LoadContext ctx;
  const ModelSpec m = load_model_file(path, ctx);
  ASSERT_TRUE(ctx.diagnostics.empty()) << all_messages(ctx);
  EXPECT_EQ(m.name, "Meta-Llama-3-8B");  // from _name_or_path
  EXPECT_EQ(m.parameter_count(), 8'030'261'248);
  EXPECT_EQ(m.weights_dtype, "bf16");
  EXPECT_DOUBLE_EQ(m.rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(m.rms_norm_eps, 1e-5);
  EXPECT_EQ(m.kv_bytes_per_token(2, 1), 131'072);
}

TEST(ModelParse, ConfigJsonNameFallsBackToFolder) {
  TempDir dir;
  std::string text = kLlama3ConfigJson;
  text.erase(text.find("\"_name_or_path\""),
             text.find("\"architectures\"") - text.find("\"_name_or_path\""));
  const std::string path = dir.write("my-llama/config.json", text);
  config::LoadContext ctx;
  EXPECT_EQ(load_model_file(path, ctx).name, "my-llama");
  EXPECT_TRUE(ctx.diagnostics.empty()) << all_messages(ctx);
}

TEST(ModelParse, SameKeysInStrictModeAreReported) {
  config::LoadContext ctx;
  parse_text(kLlama3ConfigJson, ctx, "config.yaml", /*lenient=*/false);
  const std::string messages = all_messages(ctx);
  EXPECT_NE(messages.find("unknown key 'architectures'"), std::string::npos) << messages;
  EXPECT_NE(messages.find("unknown key 'transformers_version'"), std::string::npos) << messages;
}

TEST(ModelParse, MixtureOfExpertsLoadsAndShardsByExpertParallelRules) {
  // The shape reads (weights, KV bytes) and is priced per expert; expert
  // parallelism splits whole experts, so it must divide them, and it spans
  // tensor-parallel groups (a multiple of tp).
  config::LoadContext ctx;
  const ModelSpec m =
      parse_text(std::string(kMinimalModel) +
                     "num_local_experts: 8\nnum_experts_per_tok: 2\nmoe_intermediate_size: 99\n",
                 ctx, "moe.json", true);
  EXPECT_TRUE(ctx.diagnostics.empty()) << all_messages(ctx);
  EXPECT_EQ(m.moe.experts, 8);
  EXPECT_EQ(m.tensor_parallel_problem(1), "");
  EXPECT_EQ(m.tensor_parallel_problem(1, 8), "");
  EXPECT_NE(m.tensor_parallel_problem(1, 3).find("experts do not divide"), std::string::npos);
  EXPECT_NE(m.tensor_parallel_problem(2, 1).find("moe_intermediate_size 99"), std::string::npos)
      << "without expert parallelism each expert's columns split over tp";
  EXPECT_EQ(m.tensor_parallel_problem(2, 8), "") << "whole experts: no column split";
  EXPECT_NE(m.tensor_parallel_problem(4, 2).find("not a multiple"), std::string::npos);
}

// An expert split the model cannot take is reported at `parallel.expert`,
// with its line, not at the model.
TEST(ModelParse, AnExpertSplitThatDoesNotDivideIsReportedAtParallelExpert) {
  const std::string text =
      "name: moe\ndevice: ascend-910c\nmodel: qwen3-30b-a3b\n"
      "parallel: {tensor: 1, expert: 3}\n"
      "workload: {kind: synthetic, requests: 2, arrival: {process: poisson, "
      "rate_per_s: 1}, input_tokens: 64, output_tokens: 4}\n";
  try {
    (void)load_scenario_text(text, "moe.yaml", std::string(KVSIM_CONFIG_DIR));
    FAIL() << "128 experts split over 3 ranks";
  } catch (const config::ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    const auto& d = e.diagnostics()[0];
    EXPECT_EQ(d.key_path, "parallel.expert");
    EXPECT_EQ(d.where.file, "moe.yaml");
    EXPECT_EQ(d.where.line, 4);
    EXPECT_NE(d.problem.find("128 experts do not divide over 3"), std::string::npos) << d.format();
  }
}

// --- errors ------------------------------------------------------------------

TEST(ModelParse, MisspelledKeyGetsDidYouMeanAtItsLine) {
  TempDir dir;
  const std::string path = dir.write("typo.yaml",
                                     "name: typo\n"
                                     "num_hidden_layers: 2\n"
                                     "  # indented comment\n"
                                     "hiden_size: 256\n"
                                     "num_attention_heads: 4\n"
                                     "intermediate_size: 512\n"
                                     "vocab_size: 1000\n"
                                     "max_position_embeddings: 128\n");
  config::LoadContext ctx;
  load_model_file(path, ctx);
  const std::string messages = all_messages(ctx);
  EXPECT_NE(messages.find(path + ":4:1: hiden_size: unknown key 'hiden_size', did you mean "
                                 "'hidden_size'?"),
            std::string::npos)
      << messages;
  EXPECT_NE(messages.find("hidden_size: is required but missing"), std::string::npos) << messages;
  EXPECT_THROW(ctx.diagnostics.throw_if_any(), config::ConfigError);
}

TEST(ModelParse, MissingRequiredKeysAreAllReported) {
  config::LoadContext ctx;
  parse_text("name: empty\n", ctx);
  const std::string messages = all_messages(ctx);
  for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads",
                          "intermediate_size", "vocab_size", "max_position_embeddings"}) {
    EXPECT_NE(messages.find(std::string(key) + ": is required but missing"), std::string::npos)
        << key << "\n"
        << messages;
  }
}

TEST(ModelParse, SizesMustBePositive) {
  config::LoadContext ctx;
  std::string text = kMinimalModel;
  text.replace(text.find("vocab_size: 1000"), 16, "vocab_size: 0");
  parse_text(text, ctx);
  ASSERT_EQ(ctx.diagnostics.size(), 1u) << all_messages(ctx);
  EXPECT_NE(all_messages(ctx).find("test-model.yaml:5:13: vocab_size: 0 is out of range"),
            std::string::npos)
      << all_messages(ctx);
}

TEST(ModelParse, HeadsMustBeAMultipleOfKvHeads) {
  config::LoadContext ctx;
  parse_text(std::string(kMinimalModel) + "num_key_value_heads: 3\n", ctx);
  ASSERT_EQ(ctx.diagnostics.size(), 1u) << all_messages(ctx);
  EXPECT_NE(all_messages(ctx).find(
                ":7:22: num_key_value_heads: 4 attention heads are not a multiple of 3 KV heads"),
            std::string::npos)
      << all_messages(ctx);
}

TEST(ModelParse, HeadDimMustBeDerivableEvenAndSane) {
  {
    config::LoadContext ctx;  // 256 / 3 is not whole and no head_dim given
    std::string text = kMinimalModel;
    text.replace(text.find("num_attention_heads: 4"), 22, "num_attention_heads: 3");
    parse_text(text + "num_key_value_heads: 1\n", ctx);
    ASSERT_EQ(ctx.diagnostics.size(), 1u) << all_messages(ctx);
    EXPECT_NE(all_messages(ctx).find("give head_dim explicitly"), std::string::npos);
  }
  {
    config::LoadContext ctx;
    parse_text(std::string(kMinimalModel) + "head_dim: 63\n", ctx);
    ASSERT_EQ(ctx.diagnostics.size(), 1u) << all_messages(ctx);
    EXPECT_NE(all_messages(ctx).find("head_dim: head_dim 63 is odd"), std::string::npos);
  }
  {
    config::LoadContext ctx;  // 4 * 1024 = 4096 > 4 * 256
    parse_text(std::string(kMinimalModel) + "head_dim: 1024\n", ctx);
    ASSERT_EQ(ctx.diagnostics.size(), 1u) << all_messages(ctx);
    EXPECT_NE(all_messages(ctx).find("is far from hidden_size 256"), std::string::npos);
  }
}

TEST(ModelParse, BadChoicesAndTypesAreReportedTogether) {
  config::LoadContext ctx;
  parse_text(std::string(kMinimalModel) +
                 "rope_style: rotate_halves\nweights_dtype: int4\ntie_word_embeddings: maybe\n",
             ctx);
  const std::string messages = all_messages(ctx);
  EXPECT_EQ(ctx.diagnostics.size(), 3u) << messages;
  EXPECT_NE(messages.find("did you mean 'rotate_half'"), std::string::npos) << messages;
  EXPECT_NE(messages.find("w8a8, w4a16"), std::string::npos) << messages;
  EXPECT_NE(messages.find("tie_word_embeddings: expected true or false"), std::string::npos)
      << messages;
}

TEST(ModelParse, NotAMapIsAnError) {
  config::LoadContext ctx;
  parse_text("- 1\n- 2\n", ctx);
  ASSERT_EQ(ctx.diagnostics.size(), 1u);
  EXPECT_NE(all_messages(ctx).find("expected a map"), std::string::npos);
}

TEST(ModelParse, MissingFileIsAnError) {
  config::LoadContext ctx;
  load_model_file("/nonexistent/kvsim/model.yaml", ctx);
  ASSERT_EQ(ctx.diagnostics.size(), 1u);
  EXPECT_NE(all_messages(ctx).find("file not found"), std::string::npos);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
