// vLLM's engine-argument names in a scenario mean what the kvsim key means,
// with vLLM's units (swap_space in GiB), and errors on them point where the
// user wrote them.
#include <gtest/gtest.h>

#include "scenario_helpers.hpp"
#include "sim/scenario/vllm_names.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr const char* kBase =
    "device: ascend-910b2\nmodel: llama-3-8b\n"
    "workload: {kind: synthetic, requests: 1, arrival: {process: poisson, rate_per_s: 1}, "
    "input_tokens: 8, output_tokens: 2}\n";

std::string error_of(const std::string& yaml) {
  try {
    testing::scenario_from_text(yaml);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(VllmNames, EveryNameLandsOnItsKvsimKey) {
  const ScenarioSpec s = testing::scenario_from_text(std::string(kBase) + R"(
gpu_memory_utilization: 0.8
tensor_parallel_size: 2
max_num_seqs: 64
max_num_batched_tokens: 4096
enable_prefix_caching: false
enable_chunked_prefill: false
block_size: 64
swap_space: 4
preemption_mode: swap
max_model_len: 4096
)");
  EXPECT_DOUBLE_EQ(s.kv.memory_fraction, 0.8);
  EXPECT_EQ(s.tp, 2);
  EXPECT_EQ(s.scheduler.max_num_seqs, 64);
  EXPECT_EQ(s.scheduler.max_batched_tokens, 4096);
  EXPECT_FALSE(s.policy().values().boolean("prefix_caching"));
  EXPECT_FALSE(s.scheduler.chunked_prefill);
  EXPECT_EQ(s.policy().values().integer("block_size"), 64);
  EXPECT_EQ(s.policy().values().integer("swap_space"), 4LL << 30);  // vLLM's swap_space is GiB
  EXPECT_EQ(s.policy().values().string("preemption"), "swap");
  EXPECT_EQ(s.scheduler.max_model_len, 4096);
}

TEST(VllmNames, SwapSpaceWithAUnitKeepsIt) {
  const ScenarioSpec s = testing::scenario_from_text(std::string(kBase) + "swap_space: 512MiB\n");
  EXPECT_EQ(s.policy().values().integer("swap_space"), 512LL << 20);
}

TEST(VllmNames, KvCacheDtypeAutoIsTheDefault) {
  const ScenarioSpec a = testing::scenario_from_text(std::string(kBase) + "kv_cache_dtype: auto\n");
  const ScenarioSpec d = testing::scenario_from_text(kBase);
  EXPECT_EQ(a.kv.dtype, d.kv.dtype);
  const ScenarioSpec b = testing::scenario_from_text(std::string(kBase) + "kv_cache_dtype: bf16\n");
  EXPECT_EQ(b.kv.dtype, "bf16");
}

TEST(VllmNames, BothNamesGivenIsAnErrorAtTheVllmName) {
  const std::string e = error_of(std::string(kBase) +
                                 "gpu_memory_utilization: 0.8\nkv_cache: {memory_fraction: 0.7}\n");
  EXPECT_NE(e.find("test.yaml:4:25: gpu_memory_utilization: is vLLM's name for "
                   "kv_cache.memory_fraction, which is also given"),
            std::string::npos)
      << e;
}

TEST(VllmNames, ABadValueIsReportedOnTheUsersLine) {
  const std::string e = error_of(std::string(kBase) + "gpu_memory_utilization: 1.5\n");
  EXPECT_NE(e.find("test.yaml:4:25: kv_cache.memory_fraction:"), std::string::npos) << e;
}

TEST(VllmNames, ABadSetPointsAtTheSetAsWritten) {
  try {
    load_scenario(testing::configs_dir() + "/scenarios/default.yaml", {"tensor_parallel_size=3"});
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--set tensor_parallel_size"), std::string::npos)
        << e.what();
  }
  const ScenarioSpec s = load_scenario(testing::configs_dir() + "/scenarios/default.yaml",
                                       {"gpu_memory_utilization=0.85", "swap_space=2"});
  EXPECT_DOUBLE_EQ(s.kv.memory_fraction, 0.85);
  EXPECT_EQ(s.policy().values().integer("swap_space"), 2LL << 30);
}

TEST(VllmNames, ABareByteCountUnderKvsimsOwnKeyAsksForAUnit) {
  const std::string e = error_of(std::string(kBase) + "kv_cache: {swap_space: 4}\n");
  EXPECT_NE(e.find("kv_cache.swap_space"), std::string::npos) << e;
  EXPECT_NE(e.find("has no unit"), std::string::npos) << e;
  // Zero needs no unit.
  const ScenarioSpec s =
      testing::scenario_from_text(std::string(kBase) + "kv_cache: {swap_space: 0}\n");
  EXPECT_EQ(s.policy().values().integer("swap_space"), 0);
}

TEST(VllmNames, TheListNamesEachKvsimKeyOnce) {
  std::set<std::string> seen;
  for (const auto& n : vllm_names()) {
    EXPECT_TRUE(seen.insert(n.kvsim).second) << n.kvsim;
    // A key path, or a whole section (speculative_config's keys are vLLM's own).
    EXPECT_TRUE(n.kvsim.find('.') != std::string::npos || n.kvsim == "speculative") << n.kvsim;
  }
  EXPECT_GE(vllm_names().size(), 10u);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
