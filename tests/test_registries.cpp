// Every pluggable concept is registered by name in one table; these tests pin
// the tables so an implementation cannot silently drop out of the build
// (DESIGN practice 1), and check that "unknown name" errors list what exists.
#include <gtest/gtest.h>

#include "kernels/kv_layout.hpp"
#include "scenario_helpers.hpp"
#include "sim/cluster/routing_registry.hpp"
#include "sim/core/event_queue.hpp"
#include "sim/core/metrics.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "workloads/workload.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using Names = std::vector<std::string>;

TEST(Registries, ListTheExpectedNames) {
  EXPECT_EQ(cache_policy_names(),
            (Names{"chunk_lru", "llama_cells", "native_kv", "paged", "pointer_shift",
                   "shift_concat", "sliding_window", "smart_mask"}));
  EXPECT_EQ(kv_layout_names(), (Names{"atb", "ksana"}));
  EXPECT_EQ(workload_kinds(), (Names{"agentic", "chat", "dialog", "fixed", "llama_bench", "rag",
                                     "synthetic", "trace"}));
  EXPECT_EQ(arrival_processes(), (Names{"closed", "constant", "gamma", "poisson"}));
  EXPECT_EQ(length_distributions(), (Names{"constant", "empirical", "exponential", "lognormal",
                                           "normal", "uniform", "zipf"}));
  EXPECT_EQ(routing_policy_names(), (Names{"kv_cost", "least_loaded", "prefix_aware", "round_robin",
                                           "session_affinity", "weighted"}));
  EXPECT_EQ(prefix_index_names(), (Names{"approximate", "events", "exact"}));
  EXPECT_EQ(event_queue_names(),
            (Names{"binary_heap", "quaternary_heap", "aligned_quaternary_heap", "radix_heap"}));
}

TEST(Registries, ShippedConfigsAreAllListed) {
  EXPECT_EQ(list_config_names(testing::configs_dir(), "devices"),
            (Names{"a100-sxm4", "ascend-310p", "ascend-910b", "ascend-910b2", "ascend-910b3",
                   "ascend-910b4", "ascend-910c", "b200", "h100-sxm5", "h200-sxm",
                   "kunpeng-920-6426", "mi300x", "snapdragon-8-elite", "snapdragon-8-elite-cpu",
                   "snapdragon-8-elite-gen5", "snapdragon-8-gen2", "snapdragon-8-gen3",
                   "snapdragon-x-elite", "xeon-platinum-8480"}));
  EXPECT_EQ(list_config_names(testing::configs_dir(), "models"),
            (Names{"deepseek-v3",
                   "gemma-2-9b",
                   "gemma-3-27b",
                   "gemma-3-4b",
                   "llama-2-70b",
                   "llama-2-7b",
                   "llama-2-7b-awq",
                   "llama-3-8b",
                   "llama-3.1-405b",
                   "llama-3.1-70b",
                   "llama-3.1-8b",
                   "llama-3.2-1b",
                   "llama-3.2-3b",
                   "llama-3.3-70b",
                   "mistral-7b",
                   "mixtral-8x7b",
                   "phi-3.5-mini",
                   "qwen2.5-7b",
                   "qwen2.5-7b-instruct-gptq-int4",
                   "qwen3-14b",
                   "qwen3-235b-a22b",
                   "qwen3-30b-a3b",
                   "qwen3-32b",
                   "qwen3-8b",
                   "stories260k"}));
}

TEST(Registries, UnknownPolicyErrorListsTheAvailableOnes) {
  const std::string base = R"(
device: ascend-910b2
model: llama-3-8b
workload: {kind: synthetic, requests: 1, arrival: {process: poisson, rate_per_s: 1}, input_tokens: 8, output_tokens: 2}
)";
  try {
    testing::scenario_from_text(base + "kv_cache: {policy: pagd}\n");
    FAIL() << "expected a config error";
  } catch (const config::ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("kv_cache.policy: unknown value 'pagd', did you mean 'paged'? ("),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("paged, pointer_shift, shift_concat, sliding_window, smart_mask)"),
              std::string::npos)
        << msg;
  }
  EXPECT_EQ(testing::scenario_from_text(base + "kv_cache: {policy: chunk_lru}\n").policy().name(),
            "chunk_lru");
}

TEST(Registries, AliasDeviceResolvesToTheNamedFile) {
  const ScenarioSpec s = testing::scenario_from_text(R"(
device: ascend-910b
model: llama-3-8b
workload: {kind: synthetic, requests: 1, arrival: {process: poisson, rate_per_s: 1}, input_tokens: 8, output_tokens: 2}
)");
  EXPECT_EQ(s.device.name, "ascend-910b2");
}

TEST(Registries, MetricKeysIncludeEverySpecKey) {
  const Names keys = metric_key_names();
  for (const char* k : {"requests.arrived",
                        "requests.completed",
                        "requests.rejected",
                        "requests.preempted",
                        "latency_ms.ttft.p99",
                        "latency_ms.tpot.mean",
                        "latency_ms.e2e.max",
                        "throughput.output_tokens_per_s",
                        "throughput.total_tokens_per_s",
                        "throughput.requests_per_s",
                        "kv_cache.block_bytes",
                        "kv_cache.num_blocks",
                        "kv_cache.capacity_tokens",
                        "kv_cache.peak_used_bytes",
                        "kv_cache.mean_used_bytes",
                        "kv_cache.fragmentation",
                        "kv_cache.prefix_hit_rate",
                        "kv_cache.chunk_hit_rate",
                        "kv_cache.bytes_moved",
                        "kv_cache.pointer_updates",
                        "kv_cache.evictions",
                        "kv_cache.swapped_bytes",
                        "memory.device_bytes",
                        "memory.weights_bytes",
                        "memory.kv_bytes",
                        "memory.vtcm_bytes",
                        "numerics.checks",
                        "numerics.max_abs_err",
                        "sim.events",
                        "sim.simulated_s",
                        "sim.wall_s"}) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
