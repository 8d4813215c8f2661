// kvsim capacity: rows equal the SPEC 6 formulas, a model that does not fit
// says by how much, and the SLO search converges to a rate that meets the SLO
// while the top of its bracket does not.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/diagnostics.hpp"
#include "cli/studies/capacity_plan.hpp"
#include "cli/studies/slo_search.hpp"
#include "report_test_helpers.hpp"
#include "reports/metrics_check.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/policies/policy_registry.hpp"
#include "tests/support/hf_folders.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
using testing::TempFolderTest;

const std::string kConfigs = testing::configs_dir();

TEST(Capacity, Llama2_7bFp16At1024TokensHolds512MiBOfKv) {
  CapacityQuery q;
  q.devices = {"ascend-910b2"};
  q.models = {"llama-2-7b"};
  q.contexts = {1024, 4096, 8192};
  q.kv_dtypes = {"fp16", "int8"};
  const auto rows = capacity_rows(q, kConfigs);
  ASSERT_EQ(rows.size(), 6u);
  const CapacityRow& r = rows[0];
  EXPECT_EQ(r.kv_dtype, "fp16");
  EXPECT_EQ(r.context, 1024);
  // 2 (K and V) x 32 layers x 32 KV heads x 128 head_dim x 2 bytes = 512 KiB per token.
  EXPECT_EQ(r.kv_bytes_per_token, 2 * 32 * 32 * 128 * 2);
  EXPECT_EQ(r.kv_bytes_at_context, int64_t{512} * 1024 * 1024);
  EXPECT_EQ(r.block_bytes, r.kv_bytes_per_token * 128);
  // int8 halves the KV bytes.
  EXPECT_EQ(rows[3].kv_bytes_per_token * 2, r.kv_bytes_per_token);

  // Every row equals size_paged_pool and the two derived columns' formulas.
  const ModelSpec model = resolve_model("llama-2-7b", kConfigs);
  const DeviceSpec device = resolve_device("ascend-910b2", kConfigs);
  for (const auto& row : rows) {
    PoolSizingInput in;
    in.device_memory = device.memory_bytes;
    // The declared defaults.
    in.memory_fraction =
        kv_cache_section_info(cache_policy_names()).default_of<double>("memory_fraction");
    in.block_size = find_policy("paged")->info.default_of<int64_t>("block_size");
    in.kv_dtype_bytes = kv_dtype_bytes(row.kv_dtype);
    const PoolSizing s = size_paged_pool(model, in);
    EXPECT_TRUE(row.fits);
    EXPECT_EQ(row.weights_bytes, s.weights_bytes);
    EXPECT_EQ(row.num_blocks, s.num_blocks);
    EXPECT_EQ(row.num_blocks,
              (s.budget - s.weights_bytes - s.activation_reserve) / row.block_bytes);
    EXPECT_EQ(row.capacity_tokens, row.num_blocks * 128);
    EXPECT_EQ(row.max_concurrent_seqs, row.num_blocks / ((row.context + 127) / 128));
    EXPECT_EQ(row.max_context_tokens, std::min<int64_t>(row.capacity_tokens, 4096));
  }
  EXPECT_NE(rows[2].note.find("max_position_embeddings 4096"), std::string::npos);
}

TEST(Capacity, AModelThatDoesNotFitSaysByHowMuch) {
  CapacityQuery q;
  q.devices = {"ascend-910b4"};  // 32 GiB
  q.models = {"qwen3-32b"};      // about 61 GiB of fp16/bf16 weights
  q.contexts = {4096};
  const auto rows = capacity_rows(q, kConfigs);
  ASSERT_EQ(rows.size(), 1u);
  const CapacityRow& r = rows[0];
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.num_blocks, 0);
  EXPECT_EQ(r.max_concurrent_seqs, 0);
  EXPECT_EQ(r.shortfall_bytes,
            r.weights_bytes + r.activation_reserve_bytes + r.block_bytes - r.budget_bytes);
  EXPECT_GT(r.shortfall_bytes, int64_t{30} << 30);
  EXPECT_EQ(r.note.rfind("does not fit: ", 0), 0u) << r.note;
  // Tensor parallel 4 splits the weights: it fits.
  q.devices = {"ascend-910b2"};
  q.tps = {4};
  EXPECT_TRUE(capacity_rows(q, kConfigs)[0].fits);
}

// DeepSeek-V3 W8A8 on 910C dies: the latent KV (70,272 B per token in bf16)
// is whole on every die; without expert parallelism tp 8 keeps 1/8 of every
// expert per die and does not fit, expert parallelism 16 (whole experts, 16
// per die) fits at tp 8 (two attention replicas) and tp 16. A model without
// experts only gets its ep 1 row.
TEST(Capacity, DeepSeekV3On910cDiesAtSeveralTensorAndExpertSplits) {
  CapacityQuery q;
  q.devices = {"ascend-910c"};
  q.models = {"deepseek-v3-w8a8", "llama-3-8b"};
  q.contexts = {8192};
  q.kv_dtypes = {"bf16"};
  q.tps = {8, 16};
  q.eps = {1, 16};
  const auto rows = capacity_rows(q, kConfigs);
  ASSERT_EQ(rows.size(), 6u);  // deepseek: 2 tp x 2 ep; llama: 2 tp x ep 1
  for (const auto& r : rows) {
    if (r.model != "deepseek-v3-w8a8") {
      EXPECT_EQ(r.ep, 1);
      continue;
    }
    EXPECT_EQ(r.kv_bytes_per_token, 70'272) << "latent + rope, replicated";
    const bool fits = !(r.tp == 8 && r.ep == 1);
    EXPECT_EQ(r.fits, fits) << r.tp << " / " << r.ep << ": " << r.note;
    if (!fits) {
      EXPECT_EQ(r.note.rfind("does not fit: ", 0), 0u) << r.note;
    } else {
      EXPECT_GT(r.max_concurrent_seqs, 0);
    }
  }
  q.eps = {3};
  q.models = {"deepseek-v3-w8a8"};
  EXPECT_THROW(capacity_rows(q, kConfigs), config::ConfigError);
}

// gemma-2-9b at 8K: one pool holding every layer's tokens needs 42 x 8,192
// tokens of KV, a group per attention type 21 x 4,096 + 21 x 8,192. The
// paged rows count sequences by the groups (pages of 21 layers: 64 in the
// full group, 32 in the sliding one per sequence), so they hold about 4/3
// as many as a single pool would (16 -> 21 on a 910B2 at 0.9).
TEST(Capacity, WindowedColumnsFollowTheLayerMix) {
  CapacityQuery q;
  q.devices = {"ascend-910b2"};
  q.models = {"gemma-2-9b"};
  q.contexts = {8192};
  const auto rows = capacity_rows(q, kConfigs);
  ASSERT_EQ(rows.size(), 1u);
  const Bytes per_layer_token = 2 * 8 * 256 * 2;
  EXPECT_EQ(rows[0].kv_bytes_at_context, 42 * 8192 * per_layer_token);
  EXPECT_EQ(rows[0].windowed_kv_bytes_at_context, (21 * 4096 + 21 * 8192) * per_layer_token);
  EXPECT_EQ(rows[0].block_bytes, 21 * 128 * per_layer_token);
  EXPECT_EQ(rows[0].max_concurrent_seqs, rows[0].num_blocks / (64 + 32));
  EXPECT_EQ(rows[0].max_concurrent_seqs, rows[0].windowed_max_concurrent_seqs);
  const int64_t single_pool_seqs = rows[0].num_blocks / 2 / 64;
  EXPECT_GE(rows[0].max_concurrent_seqs * 3, single_pool_seqs * 4 - 3);
  EXPECT_GT(rows[0].max_concurrent_seqs, single_pool_seqs);
  // A context within the window: both groups hold every token.
  q.contexts = {2048};
  const auto short_rows = capacity_rows(q, kConfigs);
  EXPECT_EQ(short_rows[0].max_concurrent_seqs, short_rows[0].num_blocks / (16 + 16));
}

TEST(Capacity, NamesResolveThroughAliasesAndBadInputIsAConfigError) {
  EXPECT_EQ(resolve_device("ascend-910b", kConfigs).name,
            resolve_device("ascend-910b2", kConfigs).name);
  try {
    resolve_device("ascend-910b9", kConfigs);
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--device:1:1: device: no device named 'ascend-910b9', "
                                         "did you mean"),
              std::string::npos)
        << e.what();
  }
  CapacityQuery q;
  q.devices = {"ascend-910b2"};
  q.models = {"llama-3-8b"};
  q.kv_dtypes = {"fp4"};
  EXPECT_THROW(capacity_rows(q, kConfigs), config::ConfigError);
  q.kv_dtypes = {"fp16"};
  q.tps = {3};  // 32 heads do not split over 3 ranks
  EXPECT_THROW(capacity_rows(q, kConfigs), config::ConfigError);
}

class SloSearch : public TempFolderTest {};

TEST_F(SloSearch, ConvergesToARateThatMeetsTheSloWhileTheTopOfTheBracketDoesNot) {
  const std::string workload = write("slo.yaml", testing::small_scenario("slo", 120, 10));
  const SloTarget slo = parse_slo("ttft_p99_ms=300,tpot_p99_ms=40");
  const SloSearchResult r = search_max_rate(workload, {}, slo);
  ASSERT_TRUE(r.found);
  ASSERT_GT(r.hi, 0.0);
  EXPECT_DOUBLE_EQ(r.best_rate, r.lo);
  EXPECT_LT(r.lo, r.hi);
  EXPECT_LE(r.hi - r.lo, 0.02 * r.hi);
  EXPECT_TRUE(meets_slo(run_at_rate(workload, {}, r.lo), slo));
  EXPECT_FALSE(meets_slo(run_at_rate(workload, {}, r.hi), slo));
  // Every probe at or below lo met it, every probe at or above hi did not.
  for (const auto& p : r.probes) {
    if (p.rate_per_s <= r.lo) {
      EXPECT_TRUE(p.meets) << p.rate_per_s;
    }
    if (p.rate_per_s >= r.hi) {
      EXPECT_FALSE(p.meets) << p.rate_per_s;
    }
  }
}

TEST_F(SloSearch, CommandLineWritesTheTableAndTheSearch) {
  const std::string workload = write("slo.yaml", testing::small_scenario("slo", 60, 10));
  auto r = kvsim(
      "capacity --device ascend-910b2,ascend-910b4 --model llama-3.2-1b,qwen3-32b "
      "--context 1024,4096 --kv-dtype fp16,int8 --out " +
      path("cap") + " --slo ttft_p99_ms=300 --workload " + workload);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = read_json_file(path("cap") + "/capacity.json");
  ASSERT_EQ(rows.size(), 16u);  // 2 devices x 2 models x 2 dtypes x 2 contexts
  for (const char* key : {"device", "model", "kv_dtype", "context", "tp", "weights_bytes",
                          "kv_bytes_per_token", "block_bytes", "num_blocks", "capacity_tokens",
                          "max_concurrent_seqs", "max_context_tokens"})
    EXPECT_TRUE(rows[0].contains(key)) << key;
  EXPECT_NE(r.output.find("does not fit"), std::string::npos);
  const auto slo = read_json_file(path("cap") + "/slo.json");
  // Searched for every combination that fits: qwen3-32b fits neither device.
  EXPECT_EQ(slo["searches"].size(), 4u);
  EXPECT_TRUE(std::filesystem::exists(path("cap") + "/capacity.csv"));
  EXPECT_TRUE(std::filesystem::exists(path("cap") + "/capacity.md"));

  r = kvsim(
      "capacity --device ascend-910b2 --model llama-3-8b --slo ttft_p99_ms=fast "
      "--workload " +
      workload + " --out " + path("bad"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--slo:1:1: slo: 'fast' is not a positive number"), std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(path("bad")));
}

// A model as users have it: a Hugging Face checkout's folder, in the table
// and in --slo's runs (which name the model as it was given).
class CapacityOwnModel : public TempFolderTest {
 protected:
  std::string hf_folder() const { return testing::write_hf_llama_folder(dir_); }
};

TEST_F(CapacityOwnModel, AHuggingFaceFolderIsAModel) {
  CapacityQuery q;
  q.devices = {"ascend-910b2"};
  q.models = {hf_folder()};
  q.contexts = {4096};
  const auto rows = capacity_rows(q, kConfigs);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].model, "my-llama");
  EXPECT_EQ(rows[0].model_arg, hf_folder());
  EXPECT_TRUE(rows[0].fits);
  // The shape of llama-3-8b: 2 x 32 layers x 8 KV heads x 128 x 2 bytes a token.
  EXPECT_EQ(rows[0].kv_bytes_per_token, 2 * 32 * 8 * 128 * 2);
  const auto r = testing::run_command(
      std::string(KVSIM_BINARY) + " capacity --device ascend-910b2 --model " + hf_folder() +
      " --context 2048 --slo ttft_p99_ms=2000 --workload " + kConfigs +
      "/scenarios/default.yaml --set workload.sessions=40 --out " + path("cap"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::is_regular_file(path("cap") + "/slo.json")) << r.output;
}

// A layout the model cannot take is a row with its reason beside the ones
// it can; only when none can is it the command's error.
TEST(Capacity, AnInvalidLayoutIsARowWithItsReason) {
  CapacityQuery q;
  q.devices = {"ascend-910b2"};
  q.models = {"llama-3-8b"};
  q.contexts = {4096};
  q.tps = {1, 3, 2};
  const auto rows = capacity_rows(q, kConfigs);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].fits);
  EXPECT_FALSE(rows[1].fits);
  EXPECT_EQ(rows[1].tp, 3);
  EXPECT_NE(rows[1].note.find("invalid layout"), std::string::npos) << rows[1].note;
  EXPECT_NE(rows[1].note.find("32 attention heads do not divide over 3"), std::string::npos);
  EXPECT_EQ(rows[1].num_blocks, 0);
  EXPECT_TRUE(rows[2].fits);
  q.tps = {3};
  EXPECT_THROW(capacity_rows(q, kConfigs), config::ConfigError);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
