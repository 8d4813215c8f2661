// Model families beyond the dense decoder: mixture of experts, multi-head
// latent attention, quantised checkpoints and sliding-window layers, each
// pinned against a published figure; and the dense models shipped before
// them, whose numbers must not move.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "models/model_resolve.hpp"
#include "models/model_spec.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

namespace fs = std::filesystem;

std::string messages_of(const config::LoadContext& ctx) {
  std::string all;
  for (const auto& d : ctx.diagnostics.all()) all += d.format() + "\n";
  return all;
}

ModelSpec shipped(const std::string& name) {
  // By name as users write it: a shape file, plus the weights format a
  // name like llama-3.2-3b-instruct-w4a16 ends in (models/model_resolve.hpp).
  return load_model_by_name(name, "", KVSIM_CONFIG_DIR);
}

ModelSpec parse_json_text(const std::string& text, config::LoadContext& ctx) {
  return parse_model(config::Node(YAML::Load(text), "", "config.json", &ctx), true);
}

// --- dense models keep their numbers -----------------------------------------

struct DenseBaseline {
  const char* model;
  int64_t parameters;
  Bytes weight_bytes;
  Bytes weight_bytes_tp2;
  Bytes kv_fp16_tp1;
  Bytes kv_int8_tp4;
};

// Recorded from the code before MoE, MLA, quantization_config and family
// defaults were added; reading those must leave every shipped dense file alone.
class ShippedDenseModel : public ::testing::TestWithParam<DenseBaseline> {};

TEST_P(ShippedDenseModel, KeepsWeightAndKvBytes) {
  const DenseBaseline& b = GetParam();
  const ModelSpec m = shipped(b.model);
  EXPECT_EQ(m.parameter_count(), b.parameters);
  EXPECT_EQ(m.active_parameter_count(), b.parameters);
  EXPECT_EQ(m.weight_bytes(), b.weight_bytes);
  EXPECT_EQ(m.weight_bytes_per_rank(2), b.weight_bytes_tp2);
  EXPECT_EQ(m.kv_bytes_per_token(2, 1), b.kv_fp16_tp1);
  EXPECT_EQ(m.kv_bytes_per_token(1, 4), b.kv_int8_tp4);
  EXPECT_EQ(m.kv_bytes_per_token_per_layer(2, 1) * m.num_hidden_layers, b.kv_fp16_tp1);
  EXPECT_EQ(m.tensor_parallel_problem(1), "");
}

INSTANTIATE_TEST_SUITE_P(
    Baseline, ShippedDenseModel,
    ::testing::Values(
        DenseBaseline{"llama-2-7b-chat-w4a16", 6738415616, 3864010752, 1932271616, 524288, 65536},
        DenseBaseline{"llama-2-7b", 6738415616, 13476831232, 6738681856, 524288, 65536},
        DenseBaseline{"llama-3-8b-instruct-w4a16", 8030261248, 5700591616, 2850562048, 131072,
                      16384},
        DenseBaseline{"llama-3-8b", 8030261248, 16060522496, 8030527488, 131072, 16384},
        DenseBaseline{"llama-3.2-1b", 1235814400, 2471628800, 1235881984, 32768, 4096},
        DenseBaseline{"llama-3.2-3b-instruct-w4a16", 3212749824, 2241681408, 1121015808, 114688,
                      14336},
        DenseBaseline{"llama-3.2-3b", 3212749824, 6425499648, 3212924928, 114688, 14336},
        DenseBaseline{"qwen2.5-7b", 7615616512, 15231233024, 7615820800, 57344, 7168},
        DenseBaseline{"qwen3-32b-w8a8", 32762123264, 34318624768, 17159989248, 262144, 32768},
        DenseBaseline{"qwen3-32b", 32762123264, 65524246528, 32762800128, 262144, 32768},
        DenseBaseline{"qwen3-8b-w8a8", 8190735360, 9435703296, 4718159872, 147456, 18432},
        DenseBaseline{"qwen3-8b", 8190735360, 16381470720, 8191043584, 147456, 18432},
        DenseBaseline{"stories260k", 260032, 1040128, 521472, 640, 80}),
    [](const auto& param_info) {
      std::string n = param_info.param.model;
      for (char& c : n)
        if (c == '-' || c == '.') c = '_';
      return n;
    });

// --- latent attention and experts ---------------------------------------------

// DeepSeek-V3 config.json: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64;
// the cache holds (512 + 64) bf16 values per token and layer.
TEST(DeepSeekV3, LatentKvBytesPerToken) {
  const ModelSpec m = shipped("deepseek-v3");
  EXPECT_EQ(m.kv_bytes_per_token_per_layer(2, 1), (512 + 64) * 2);
  EXPECT_EQ(m.kv_bytes_per_token(2, 1), 70'272);
  // The latent is not split by heads: every rank holds all of it.
  EXPECT_EQ(m.kv_bytes_per_token(2, 8), 70'272);
  EXPECT_EQ(m.kv_bytes_for_context(1000, 2, 1), 70'272'000);
}

// DeepSeek-V3 technical report (arXiv 2412.19437): 671B total parameters,
// 37B activated per token (the MTP module excluded, as here).
TEST(DeepSeekV3, ParametersMatchThePublishedTotalAndActive) {
  const ModelSpec m = shipped("deepseek-v3");
  EXPECT_NEAR(static_cast<double>(m.parameter_count()), 671e9, 0.01 * 671e9);
  EXPECT_NEAR(static_cast<double>(m.active_parameter_count()), 37e9, 0.03 * 37e9);
  EXPECT_FALSE(m.is_moe_layer(2));  // first_k_dense_replace: 3
  EXPECT_TRUE(m.is_moe_layer(3));
  // fp8 e4m3 weights, one fp32 scale per 128 x 128 block: ~1 B per linear weight.
  EXPECT_EQ(m.weights_dtype, "fp8");
  EXPECT_NEAR(m.linear_weight_bytes_per_parameter(), 1.0 + 4.0 / 16384.0, 1e-12);
}

// Qwen3-30B-A3B model card: 30.5B parameters in total, 3.3B activated.
TEST(Qwen3Moe, ThirtyBillionTotalThreeActive) {
  const ModelSpec m = shipped("qwen3-30b-a3b");
  EXPECT_NEAR(static_cast<double>(m.parameter_count()), 30.5e9, 0.05e9);
  EXPECT_NEAR(static_cast<double>(m.active_parameter_count()), 3.3e9, 0.06e9);
  EXPECT_TRUE(m.qk_norm) << "qwen3_moe family default";
  // Weights count every expert: bf16 bytes are twice the parameters.
  EXPECT_EQ(m.weight_bytes(), 2 * m.parameter_count());
  EXPECT_EQ(m.kv_bytes_per_token(2, 1), 2 * 48 * 4 * 128 * 2);
}

// Qwen3-235B-A22B model card: 235B total, 22B activated.
TEST(Qwen3Moe, TwoHundredThirtyFiveBillionTotal) {
  const ModelSpec m = shipped("qwen3-235b-a22b");
  EXPECT_NEAR(static_cast<double>(m.parameter_count()), 235e9, 0.01 * 235e9);
  EXPECT_NEAR(static_cast<double>(m.active_parameter_count()), 22e9, 0.02 * 22e9);
}

// Mistral AI's Mixtral announcement: 46.7B total, 12.9B used per token.
TEST(Mixtral, FortySevenBillionTotalThirteenActive) {
  const ModelSpec m = shipped("mixtral-8x7b");
  EXPECT_NEAR(static_cast<double>(m.parameter_count()), 46.7e9, 0.05e9);
  EXPECT_NEAR(static_cast<double>(m.active_parameter_count()), 12.9e9, 0.05e9);
  for (const LayerAttention& a : m.layer_attention)
    EXPECT_FALSE(a.sliding) << "sliding_window is null";
}

TEST(MixtureOfExperts, ExpectedExpertsTouchedFollowsUniformRouting) {
  const ModelSpec m = shipped("qwen3-30b-a3b");  // E = 128, k = 8
  EXPECT_DOUBLE_EQ(m.expected_experts_touched(0), 0.0);
  EXPECT_DOUBLE_EQ(m.expected_experts_touched(1), 8.0);
  EXPECT_NEAR(m.expected_experts_touched(2), 128.0 * (1.0 - std::pow(120.0 / 128.0, 2)), 1e-9);
  EXPECT_NEAR(m.expected_experts_touched(256), 128.0, 0.01);  // every expert, nearly surely
  const ModelSpec dense = shipped("llama-3-8b");
  EXPECT_DOUBLE_EQ(dense.expected_experts_touched(64), 0.0);
}

TEST(MixtureOfExperts, QwenSparseStepAndMlpOnlyLayersPlaceDenseLayers) {
  config::LoadContext ctx;
  const ModelSpec m = parse_json_text(R"({"model_type": "qwen2_moe", "hidden_size": 64,
      "num_hidden_layers": 6, "num_attention_heads": 4, "intermediate_size": 256,
      "vocab_size": 100, "max_position_embeddings": 128, "num_experts": 4,
      "num_experts_per_tok": 2, "moe_intermediate_size": 32, "decoder_sparse_step": 2,
      "mlp_only_layers": [3], "shared_expert_intermediate_size": 64})",
                                      ctx);
  ASSERT_TRUE(ctx.diagnostics.empty()) << messages_of(ctx);
  // MoE iff (i + 1) % 2 == 0 and i not in mlp_only_layers: layers 1 and 5.
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(m.is_moe_layer(i), i == 1 || i == 5) << i;
  EXPECT_TRUE(m.attention_bias) << "qwen2_moe family default";
  // 4 dense MLPs (3*64*256) + 2 MoE layers of 4 experts (3*64*32) + a shared
  // expert (3*64*64); attention 4*64*64 per layer.
  EXPECT_EQ(m.linear_parameter_count(),
            6 * 4 * 64 * 64 + 4 * 3 * 64 * 256 + 2 * (4 * 3 * 64 * 32 + 3 * 64 * 64));
}

// --- quantised checkpoints -----------------------------------------------------

// TheBloke/Llama-2-7B-AWQ, main branch: model.safetensors is 3.89 GB (the
// "Provided files" table of its README; GEMM, 4-bit, group 128). kvsim:
// 6,476,005,376 linear weights at 0.5 B + (2 B scale + 0.5 B zero) / 128,
// embeddings, lm_head and norms at 2 B.
TEST(QuantizedCheckpoints, AwqWeightsMatchThePublishedSafetensors) {
  const ModelSpec m = shipped("llama-2-7b-awq");
  EXPECT_EQ(m.quant.method, "awq");
  EXPECT_EQ(m.weights_dtype, "w4a16");
  EXPECT_DOUBLE_EQ(m.linear_weight_bytes_per_parameter(), 0.5 + 2.5 / 128.0);
  EXPECT_NEAR(static_cast<double>(m.weight_bytes()), 3.89e9, 0.01 * 3.89e9);
  EXPECT_EQ(m.kv_bytes_per_token(2, 1), shipped("llama-2-7b").kv_bytes_per_token(2, 1));
}

TEST(QuantizedCheckpoints, GptqCountsScalesAndStoredZeros) {
  const ModelSpec m = shipped("qwen2.5-7b-instruct-gptq-int4");
  EXPECT_EQ(m.quant.method, "gptq");
  EXPECT_EQ(m.quant.group_size, 128);
  EXPECT_TRUE(m.quant.zero_point);
  EXPECT_EQ(m.parameter_count(), shipped("qwen2.5-7b").parameter_count());
  EXPECT_LT(m.weight_bytes(), shipped("qwen2.5-7b").weight_bytes() / 2);
}

TEST(QuantizedCheckpoints, CompressedTensorsAndBitsandbytes) {
  const std::string shape = R"("hidden_size": 128, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 256, "vocab_size": 100,
      "max_position_embeddings": 64, )";
  {
    config::LoadContext ctx;
    const ModelSpec m = parse_json_text("{" + shape + R"("quantization_config": {
        "quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group",
        "group_size": 128}, "input_activations": null}}}})",
                                        ctx);
    ASSERT_TRUE(ctx.diagnostics.empty()) << messages_of(ctx);
    EXPECT_EQ(m.weights_dtype, "w4a16");
    EXPECT_DOUBLE_EQ(m.linear_weight_bytes_per_parameter(), 0.5 + 2.0 / 128.0);
  }
  {
    config::LoadContext ctx;
    const ModelSpec m = parse_json_text("{" + shape + R"("quantization_config": {
        "quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 8, "type": "int", "symmetric": true, "strategy": "channel"},
        "input_activations": {"num_bits": 8, "type": "int", "dynamic": true}}}}})",
                                        ctx);
    ASSERT_TRUE(ctx.diagnostics.empty()) << messages_of(ctx);
    EXPECT_EQ(m.weights_dtype, "w8a8");
    EXPECT_DOUBLE_EQ(m.linear_weight_bytes_per_parameter(), 1.0);
  }
  {
    config::LoadContext ctx;
    const ModelSpec m = parse_json_text("{" + shape + R"("quantization_config": {
        "quant_method": "bitsandbytes", "load_in_4bit": true,
        "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": false}})",
                                        ctx);
    ASSERT_TRUE(ctx.diagnostics.empty()) << messages_of(ctx);
    EXPECT_DOUBLE_EQ(m.linear_weight_bytes_per_parameter(), 0.5 + 4.0 / 64.0);
  }
}

TEST(QuantizedCheckpoints, UnknownQuantMethodIsAnErrorAtItsKey) {
  config::LoadContext ctx;
  parse_json_text(R"({"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 256, "vocab_size": 100, "max_position_embeddings": 64,
      "quantization_config": {"quant_method": "hqq", "nbits": 4}})",
                  ctx);
  ASSERT_EQ(ctx.diagnostics.size(), 1u) << messages_of(ctx);
  const std::string msg = messages_of(ctx);
  EXPECT_NE(msg.find("config.json:3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("quantization_config.quant_method"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'hqq'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("awq"), std::string::npos) << "lists what exists: " << msg;
}

// --- sliding windows and family defaults ---------------------------------------

// Gemma 2 9B: 42 layers, even ones sliding over 4,096 tokens. At 8,192 tokens
// of context, 21 full layers hold 8,192 tokens and 21 sliding ones 4,096, each
// at 2 * 8 KV heads * 256 * 2 B = 8,192 B per token.
TEST(SlidingWindow, Gemma2KvForAnEightKContext) {
  const ModelSpec m = shipped("gemma-2-9b");
  ASSERT_EQ(m.layer_attention.size(), 42u);
  EXPECT_TRUE(m.layer_attention[0].sliding);
  EXPECT_FALSE(m.layer_attention[1].sliding);
  EXPECT_EQ(m.layer_attention[0].window, 4096);
  const Bytes per_layer = 2 * 8 * 256 * 2;
  EXPECT_EQ(m.kv_bytes_per_token_per_layer(2, 1), per_layer);
  EXPECT_EQ(m.kv_bytes_for_context(8192, 2, 1), (21 * 8192 + 21 * 4096) * per_layer);
  EXPECT_EQ(m.kv_bytes_for_context(4096, 2, 1), 42 * 4096 * per_layer);
  EXPECT_TRUE(m.tie_word_embeddings) << "gemma2 default";
  EXPECT_EQ(m.norms_per_layer, 4);
  // Google's model card: 9B; 9,241,705,984 by the formula.
  EXPECT_EQ(m.parameter_count(), 9'241'705'984);
}

TEST(SlidingWindow, Gemma3FiveSlidingLayersThenOneFull) {
  const ModelSpec m = shipped("gemma-3-27b");
  int64_t full = 0;
  for (size_t i = 0; i < m.layer_attention.size(); ++i) {
    EXPECT_EQ(m.layer_attention[i].sliding, (i + 1) % 6 != 0) << i;
    full += m.layer_attention[i].sliding ? 0 : 1;
  }
  EXPECT_EQ(full, 10);  // layers 5, 11, ..., 59 of 62
  EXPECT_NEAR(static_cast<double>(m.parameter_count()), 27.0e9, 0.1e9);
  EXPECT_NEAR(static_cast<double>(shipped("gemma-3-4b").parameter_count()), 3.88e9, 0.01e9);
}

TEST(SlidingWindow, LayerTypesListWinsAndQwenNeedsUseSlidingWindow) {
  const std::string shape = R"("hidden_size": 128, "num_hidden_layers": 4,
      "num_attention_heads": 4, "intermediate_size": 256, "vocab_size": 100,
      "max_position_embeddings": 4096, )";
  {
    config::LoadContext ctx;
    const ModelSpec m = parse_json_text("{" + shape + R"("model_type": "qwen2",
        "sliding_window": 1024, "max_window_layers": 2})",
                                        ctx);
    ASSERT_TRUE(ctx.diagnostics.empty()) << messages_of(ctx);
    for (const auto& a : m.layer_attention) EXPECT_FALSE(a.sliding) << "use_sliding_window false";
  }
  {
    config::LoadContext ctx;
    const ModelSpec m = parse_json_text("{" + shape + R"("model_type": "qwen2",
        "use_sliding_window": true, "sliding_window": 1024, "max_window_layers": 2})",
                                        ctx);
    ASSERT_TRUE(ctx.diagnostics.empty()) << messages_of(ctx);
    EXPECT_FALSE(m.layer_attention[1].sliding);
    EXPECT_TRUE(m.layer_attention[2].sliding);
  }
  {
    config::LoadContext ctx;
    const ModelSpec m = parse_json_text("{" + shape + R"("sliding_window": 512, "layer_types":
        ["full_attention", "sliding_attention", "sliding_attention", "full_attention"]})",
                                        ctx);
    ASSERT_TRUE(ctx.diagnostics.empty()) << messages_of(ctx);
    EXPECT_FALSE(m.layer_attention[0].sliding);
    EXPECT_TRUE(m.layer_attention[1].sliding);
    EXPECT_EQ(m.layer_attention[2].window, 512);
  }
}

TEST(FamilyDefaults, ApplyOnlyWhenModelTypeIsGiven) {
  const std::string shape = R"("hidden_size": 2048, "num_hidden_layers": 2,
      "num_attention_heads": 16, "intermediate_size": 4096, "vocab_size": 1000,
      "max_position_embeddings": 8192)";
  config::LoadContext ctx;
  const ModelSpec plain = parse_json_text("{" + shape + "}", ctx);
  const ModelSpec gemma = parse_json_text("{" + shape + R"(, "model_type": "gemma2"})", ctx);
  const ModelSpec mistral = parse_json_text("{" + shape + R"(, "model_type": "mistral"})", ctx);
  ASSERT_TRUE(ctx.diagnostics.empty()) << messages_of(ctx);
  EXPECT_EQ(plain.head_dim, 128);  // hidden / heads (HF rule)
  EXPECT_EQ(gemma.head_dim, 256);  // Gemma2Config default
  EXPECT_FALSE(plain.tie_word_embeddings);
  EXPECT_TRUE(gemma.tie_word_embeddings);
  for (const auto& a : plain.layer_attention) EXPECT_FALSE(a.sliding);
  EXPECT_TRUE(gemma.layer_attention[0].sliding);
  EXPECT_EQ(gemma.layer_attention[0].window, 4096);
  EXPECT_TRUE(mistral.layer_attention[1].sliding) << "MistralConfig sliding_window 4096";
}

// google/gemma-3-27b-it's config.json nests the decoder under text_config
// (model_type gemma3_text) with torch_dtype at the top; read as a file it
// gives the same decoder as the flattened shipped gemma-3-27b.
TEST(MultimodalConfig, TextConfigIsTheDecoder) {
  config::LoadContext ctx;
  const ModelSpec m = parse_json_text(R"({"_name_or_path": "google/gemma-3-27b-it",
      "model_type": "gemma3", "torch_dtype": "bfloat16",
      "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27},
      "text_config": {"model_type": "gemma3_text", "hidden_size": 5376,
        "intermediate_size": 21504, "num_attention_heads": 32, "num_key_value_heads": 16,
        "head_dim": 128, "num_hidden_layers": 62, "vocab_size": 262208,
        "max_position_embeddings": 131072, "sliding_window": 1024,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}})",
                                      ctx);
  ASSERT_TRUE(ctx.diagnostics.empty()) << messages_of(ctx);
  const ModelSpec flat = shipped("gemma-3-27b");
  EXPECT_EQ(m.name, "gemma-3-27b-it");
  EXPECT_EQ(m.weights_dtype, "bf16");
  EXPECT_EQ(m.parameter_count(), flat.parameter_count());
  EXPECT_EQ(m.kv_bytes_for_context(32768, 2, 1), flat.kv_bytes_for_context(32768, 2, 1));
}

TEST(ShippedModels, EveryNewFileLoadsAndNamesItsConfigJson) {
  for (const char* name : {"deepseek-v3", "deepseek-v3-w8a8", "qwen3-30b-a3b", "qwen3-235b-a22b",
                           "mixtral-8x7b", "gemma-2-9b", "gemma-3-4b", "gemma-3-27b",
                           "llama-2-7b-awq", "qwen2.5-7b-instruct-gptq-int4"}) {
    const ModelSpec m = shipped(name);
    EXPECT_NE(m.source.find("config.json"), std::string::npos) << name;
    EXPECT_GT(m.weight_bytes(), 0) << name;
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
