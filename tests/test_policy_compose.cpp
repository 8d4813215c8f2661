// Policy, engine and device compose (SPEC 12): a scenario carries several
// policies' settings, each validated by its owner, so `--vary
// kv_cache.policy=...` works on any scenario; the engine is the first of the
// device family's engines that takes the policy and the workload (or the
// one `engine:` names); an impossible combination is a load error saying why.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

std::string shipped(const std::string& name) {
  return testing::configs_dir() + "/scenarios/" + name + ".yaml";
}

std::string load_error(const std::string& yaml) {
  try {
    (void)testing::scenario_from_text(yaml);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

const std::string kPhone =
    "device: snapdragon-8-elite\nmodel: llama-3.2-3b-instruct-w4a16\n"
    "workload: {kind: dialog, turns: 2, prompt_tokens: 64, reply_tokens: 16}\n";
const std::string kServer =
    "device: ascend-910b2\nmodel: llama-3.2-1b\n"
    "workload: {kind: synthetic, requests: 4, arrival: {process: poisson, rate_per_s: 1}, "
    "input_tokens: 64, output_tokens: 8}\n";

TEST(EveryPolicy, OnePhoneDialogRunsUnderEachPolicyThatCanServeIt) {
  const std::string file = shipped("htp-llama3.2-3b-elite-every-policy");
  struct Variant {
    const char* policy;
    const char* engine;
  };
  const Variant variants[] = {{"shift_concat", "genie"}, {"pointer_shift", "genie"},
                              {"smart_mask", "genie"},   {"sliding_window", "genie"},
                              {"llama_cells", "genie"},  {"paged", "serving"}};
  std::map<std::string, RunMetrics> runs;
  for (const Variant& v : variants) {
    const ScenarioSpec s = load_scenario(file, {std::string("kv_cache.policy=") + v.policy});
    EXPECT_EQ(s.policy().name(), v.policy);
    EXPECT_EQ(s.engine, v.engine) << v.policy;
    const ScenarioRunResult r = run_scenario(s, nullptr);
    EXPECT_EQ(r.metrics.requests.completed, 8) << v.policy;
    EXPECT_EQ(r.metrics.requests.rejected, 0) << v.policy;
    runs.emplace(v.policy, r.metrics);
  }
  // The sub-maps reached their policies: the window, llama.cpp's types.
  EXPECT_EQ(
      load_scenario(file, {"kv_cache.policy=sliding_window"}).policy().values().integer("window"),
      2048);
  EXPECT_EQ(testing::cells_of(runs.at("llama_cells")).type_k, "q8_0");
  // What the modes move, as seed 002 has it: SHIFT_CONCAT shifts the cache
  // on every update, POINTER_SHIFT only copies the new entries and moves a
  // pointer, SMART_MASK registers none.
  EXPECT_GT(runs.at("shift_concat").kv_cache.bytes_moved,
            runs.at("pointer_shift").kv_cache.bytes_moved);
  EXPECT_GT(runs.at("pointer_shift").kv_cache.pointer_updates, 0u);
  EXPECT_EQ(runs.at("smart_mask").kv_cache.pointer_updates, 0u);
  // Each turn under the serving engine carries the conversation so far, so
  // the blocks of earlier turns are found again.
  EXPECT_GT(testing::pool_of(runs.at("paged")).prefix_hit_rate, 0.3);
  EXPECT_EQ(runs.at("paged").engine, "serving");
}

TEST(EveryPolicy, OneAscendChatRunsUnderEveryServingPolicy) {
  const std::string file = shipped("policies-910b2-chat");
  std::map<std::string, RunMetrics> runs;
  for (const char* policy : {"paged", "chunk_lru", "sliding_window", "llama_cells"}) {
    const ScenarioSpec s = load_scenario(file, {std::string("kv_cache.policy=") + policy});
    EXPECT_EQ(s.engine, "serving") << policy;
    const ScenarioRunResult r = run_scenario(s, nullptr);
    EXPECT_GT(r.metrics.requests.completed, 0) << policy;
    EXPECT_EQ(r.metrics.requests.completed, r.metrics.requests.arrived) << policy;
    runs.emplace(policy, r.metrics);
  }
  // The same request stream (a chat's turns follow each run's own replies,
  // whose lengths are the workload's: the same counts).
  EXPECT_EQ(runs.at("paged").requests.arrived, runs.at("llama_cells").requests.arrived);
  EXPECT_GT(testing::pool_of(runs.at("paged")).prefix_hit_rate, 0.3);
  // llama-server's slots keep their conversation's tokens (cache_prompt)
  // and the host prompt cache gives a slot back an earlier one's: a turn's
  // history is found again there too.
  EXPECT_GT(testing::pool_of(runs.at("llama_cells")).prefix_hit_rate, 0.3);
  EXPECT_EQ(testing::cells_of(runs.at("llama_cells")).kv_size, 262144);
  EXPECT_EQ(testing::chunks_of(runs.at("chunk_lru")).chunk_fallbacks,
            runs.at("chunk_lru").requests.arrived)  // chat prompts have no `##`
      << "chunk_lru fell back for every prompt without a separator";
}

// llama-server's parallel slots on one unified cell cache, on an Ascend and
// on a host CPU: every request served, every cell back at the end.
class LlamaCellsServed : public ::testing::TestWithParam<const char*> {};

TEST_P(LlamaCellsServed, FourSlotsShareOneCellCache) {
  const ScenarioSpec s = testing::scenario_from_text(
      std::string("device: ") + GetParam() +
      "\nmodel: llama-3.2-1b\n"
      "kv_cache: {policy: llama_cells, ctx_size: 8192, defrag_thold: 0.1}\n"
      "scheduler: {max_num_seqs: 4, max_batched_tokens: 2048}\n"
      "workload: {kind: synthetic, requests: 24, arrival: {process: poisson, rate_per_s: 50}, "
      "input_tokens: {dist: uniform, min: 100, max: 900}, "
      "output_tokens: {dist: uniform, min: 20, max: 200}}\n");
  EXPECT_EQ(s.engine, "serving");
  const ScenarioRunResult r = run_scenario(s, nullptr);  // check_drained: every cell freed
  EXPECT_EQ(r.metrics.requests.completed, 24);
  const LlamaCellsMetrics& cells = testing::cells_of(r.metrics);
  EXPECT_EQ(cells.kv_size, 8192);
  EXPECT_EQ(r.metrics.kv_cache.capacity_tokens, 8192);
  // At most four sequences at once, each below 1,100 tokens.
  EXPECT_LE(r.metrics.kv_cache.peak_used_bytes, 4 * 1100 * cells.cell_bytes);
  EXPECT_GT(cells.slots_contiguous + cells.slots_scattered, 24);
  // Every sequence attends over the unified view of the cells in use.
  EXPECT_GE(cells.max_n, 32);
}

INSTANTIATE_TEST_SUITE_P(Devices, LlamaCellsServed,
                         ::testing::Values("ascend-910b2", "xeon-platinum-8480"));

TEST(EngineChoice, ThePolicyPicksAmongTheDeviceFamilysEngines) {
  EXPECT_EQ(testing::scenario_from_text(kPhone + "kv_cache: {policy: smart_mask}\n").engine,
            "genie");
  EXPECT_EQ(testing::scenario_from_text(kPhone + "kv_cache: {policy: paged}\n").engine, "serving");
  EXPECT_EQ(testing::scenario_from_text(kServer + "scheduler: {max_num_seqs: 4}\n" +
                                        "kv_cache: {policy: llama_cells}\n")
                .engine,
            "serving");
  // A dialog on a server device is one user's turns under the serving engine.
  EXPECT_EQ(testing::scenario_from_text(
                "device: ascend-910b2\nmodel: llama-3.2-1b\nworkload: {kind: dialog, turns: 2, "
                "prompt_tokens: 64, reply_tokens: 16}\n")
                .engine,
            "serving");
}

TEST(EngineChoice, AnImpossibleCombinationSaysWhy) {
  // A Genie mode on a server: its only engine needs a block pool.
  std::string e = load_error(kServer + "kv_cache: {policy: shift_concat}\n");
  EXPECT_NE(e.find("test.yaml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("kv_cache.policy: no engine of ascend-910b2 (kind accelerator) runs this "
                   "scenario; the serving engine: it needs a block pool"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("sliding_window with update_mode: paged"), std::string::npos) << e;
  // The genie engine named on a server: no NPU graph executor.
  e = load_error(kServer + "engine: genie\nkv_cache: {policy: smart_mask}\n");
  EXPECT_NE(e.find("engine: the genie engine cannot run this scenario"), std::string::npos) << e;
  EXPECT_NE(e.find("NPU graph executor"), std::string::npos) << e;
  // The genie engine named for paged: it runs on-device buffers.
  e = load_error(kPhone + "engine: genie\nkv_cache: {policy: paged}\n");
  EXPECT_NE(e.find("it needs on-device graph buffers"), std::string::npos) << e;
  EXPECT_NE(e.find("'paged' does not keep"), std::string::npos) << e;
  // The serving engine named for a Genie mode.
  e = load_error(kPhone + "engine: serving\nkv_cache: {policy: pointer_shift}\n");
  EXPECT_NE(e.find("the serving engine cannot run this scenario: it needs a block pool"),
            std::string::npos)
      << e;
  // A synthetic workload on a phone under a Genie mode: no engine takes both.
  e = load_error(
      "device: snapdragon-8-elite\nmodel: llama-3.2-3b-instruct-w4a16\n"
      "kv_cache: {policy: smart_mask}\nworkload: {kind: synthetic, requests: 2, arrival: "
      "{process: constant, rate_per_s: 1}, input_tokens: 10, output_tokens: 2}\n");
  EXPECT_NE(e.find("workload.kind: no engine of snapdragon-8-elite"), std::string::npos) << e;
  EXPECT_NE(e.find("`kind: dialog`"), std::string::npos) << e;
  // llama.cpp's cells served: one device, its sequence ids.
  e = load_error(
      kServer +
      "parallel: {tensor: 2}\nscheduler: {max_num_seqs: 4}\nkv_cache: {policy: llama_cells}\n");
  EXPECT_NE(e.find("llama.cpp splits a model by layers"), std::string::npos) << e;
  // llama-server's slots: a sequence id and a cell each, at most.
  e = load_error(kServer + "kv_cache: {policy: llama_cells, ctx_size: 32, n_parallel: 48}\n");
  EXPECT_NE(e.find("kv_cache.n_parallel: 48 slots, but the cache has 32 cells"), std::string::npos)
      << e;
  // The serving engine's default max_num_seqs is no limit of the cells: the
  // slots are (n_parallel, 4 by default).
  EXPECT_NO_THROW(testing::scenario_from_text(kServer + "kv_cache: {policy: llama_cells}\n"));
  // An unknown engine name is a choice error with the list.
  e = load_error(kServer + "engine: vllm\n");
  EXPECT_NE(e.find("engine: unknown value 'vllm'"), std::string::npos) << e;
}

TEST(SeveralPolicies, EveryPolicysMapIsReadByItsOwnerWhetherItRunsOrNot) {
  // A value out of range in a policy that does not run.
  std::string e =
      load_error(kServer + "kv_cache: {policy: paged, chunk_lru: {chunk_pool_fraction: 2}}\n");
  EXPECT_NE(e.find("kv_cache.chunk_lru.chunk_pool_fraction"), std::string::npos) << e;
  // A misspelling, and another policy's key, inside a map.
  e = load_error(kServer + "kv_cache: {policy: paged, chunk_lru: {chunk_pool_fracton: 0.1}}\n");
  EXPECT_NE(e.find("did you mean 'chunk_pool_fraction'"), std::string::npos) << e;
  e = load_error(kServer + "kv_cache: {policy: paged, chunk_lru: {window: 64}}\n");
  EXPECT_NE(e.find("kv_cache.chunk_lru.window: not a parameter of policy 'chunk_lru' (it belongs "
                   "to sliding_window)"),
            std::string::npos)
      << e;
  // The running policy's map applies; the same key beside it too is an error.
  const ScenarioSpec s = testing::scenario_from_text(
      kServer + "kv_cache: {policy: paged, paged: {prefix_caching: false}}\n");
  EXPECT_FALSE(s.policy().values().boolean("prefix_caching"));
  EXPECT_FALSE(s.policy().block_pool()->keeps_prefix_blocks());
  e = load_error(
      kServer +
      "kv_cache: {policy: paged, prefix_caching: true, paged: {prefix_caching: false}}\n");
  EXPECT_NE(e.find("kv_cache.prefix_caching: given twice"), std::string::npos) << e;
  // A check of the running policy points at the key where it was written.
  e = load_error(kPhone + "kv_cache: {policy: sliding_window, sliding_window: {window: 0}}\n");
  EXPECT_NE(e.find("kv_cache.sliding_window.window: sliding_window needs the number of tokens"),
            std::string::npos)
      << e;
  // The carried policies are made, whole, beside the one that runs.
  const ScenarioSpec carrying = testing::scenario_from_text(
      kServer +
      "kv_cache: {policy: paged, chunk_lru: {chunk_pool_fraction: 0.05}, "
      "sliding_window: {update_mode: paged, window: 512}}\n");
  ASSERT_EQ(carrying.kv.carried.size(), 2u);
  for (const auto& c : carrying.kv.carried) EXPECT_NE(c->block_pool(), nullptr) << c->name();
}

TEST(SeveralPolicies, ChangingThePolicyKeepsTheOldOnesKeysAsItsSettings) {
  // rag-910b2-prefix.yaml writes paged's prefix_caching beside the shared
  // keys; as chunk_lru the key stays paged's (its map), not chunk_lru's.
  const ScenarioSpec s = load_scenario(shipped("rag-910b2-prefix"), {"kv_cache.policy=chunk_lru"});
  EXPECT_EQ(s.policy().name(), "chunk_lru");
  EXPECT_EQ(s.policy().block_pool()->block_size(), 128);  // a key both take stays
  ASSERT_EQ(s.kv.carried.size(), 1u);
  EXPECT_EQ(s.kv.carried[0]->name(), "paged");
  EXPECT_TRUE(s.kv.carried[0]->values().given("prefix_caching"));
  // The Genie modes share ctx_size and the variants: a compare of the modes
  // keeps the file's.
  const ScenarioSpec mode = load_scenario(shipped("htp-llama3.2-3b-elite-pointer-shift"),
                                          {"kv_cache.policy=shift_concat"});
  EXPECT_EQ(mode.policy().device_buffers()->ar_variants(), (std::vector<int64_t>{1, 128}));
  // A key the file gives both beside and in the old policy's map cannot move.
  const std::string dir = ::testing::TempDir();
  const std::string file = dir + "/twice.yaml";
  std::ofstream(file) << kServer
                      << "kv_cache: {policy: paged, prefix_caching: true, paged: "
                         "{eviction: lfu, prefix_caching: false}}\n";
  try {
    (void)load_scenario(file, {"kv_cache.policy=chunk_lru"});
    ADD_FAILURE() << "loaded";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("given twice"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
