// metrics.json is written by sections the components own (sim/core/metrics_section.hpp):
// each places its keys around keys an earlier section wrote, so the file's
// order stays SPEC 9's. The reports pick their engine parts from the engine
// the run recorded.
#include <gtest/gtest.h>

#include <algorithm>

#include "reports/run_report.hpp"
#include "reports/run_report_sections.hpp"
#include "scenario_helpers.hpp"
#include "sim/core/metrics.hpp"
#include "sim/core/metrics_section.hpp"
#include "sim/numerics/reuse_quality_probe.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using Names = std::vector<std::string>;
using Json = nlohmann::ordered_json;

Names keys_of(const Json& object) {
  Names out;
  for (auto it = object.begin(); it != object.end(); ++it) out.push_back(it.key());
  return out;
}

TEST(MetricsObject, PutsKeysBeforeAfterAndAtTheEndInOrder) {
  Json doc;
  MetricsObject o = metrics_object(doc, "kv");
  o.put("a", 1).put("d", 4);
  o.before("d").put("b", 2).put("c", 3);
  o.after("a").put("a2", 12);
  o.at_end().put("e", 5);
  EXPECT_EQ(keys_of(doc["kv"]), (Names{"a", "a2", "b", "c", "d", "e"}));
  EXPECT_EQ(doc["kv"]["c"], 3);
}

TEST(MetricsObject, AnAnchorNoEarlierSectionWroteIsAProgrammingError) {
  Json doc;
  MetricsObject o = metrics_object(doc, "kv");
  o.put("a", 1);
  EXPECT_THROW(o.before("missing"), std::logic_error);
  EXPECT_THROW(o.after("missing"), std::logic_error);
}

TEST(MetricsSections, EachComponentWritesItsOwnFamily) {
  EXPECT_EQ(metrics_sections().size(), 18u);
  Names owners;
  for (const MetricsSection& s : metrics_sections()) owners.emplace_back(s.owner);
  EXPECT_EQ(owners, (Names{"run", "serving", "llama_bench", "genie", "chunk_lru", "llama_cells",
                           "goodput", "kv_tiers", "pipeline", "cluster", "kv_layout",
                           "reuse_quality", "session_retention", "agent_sessions", "speculative",
                           "kv_movement", "data_parallel", "provenance"}));
  // The cluster's keys appear in cluster runs only: one instance keeps its file.
  Json solo, cluster;
  cluster_metrics_section().write(RunMetrics{}, solo);
  EXPECT_FALSE(solo.contains("cluster"));
  RunMetrics clustered;
  clustered.part<ClusterMetrics>();
  cluster_metrics_section().write(clustered, cluster);
  EXPECT_TRUE(cluster.contains("cluster"));
  // Likewise the pipeline's, in pipeline-parallel runs only.
  pipeline_metrics_section().write(RunMetrics{}, solo);
  EXPECT_FALSE(solo.contains("pipeline"));
  // And speculation's, in speculative runs only.
  Json plain_run = metrics_to_json(RunMetrics{});
  EXPECT_FALSE(plain_run.contains("speculative"));
  // And the data-parallel groups', in runs of parallel.data MoE ranks only.
  EXPECT_FALSE(plain_run.contains("data_parallel"));
  // And the reuse-quality probe's, in runs that probed (after `numerics`).
  Json probed = metrics_to_json(RunMetrics{});
  EXPECT_FALSE(probed.contains("reuse_quality"));
  RunMetrics with_probe;
  with_probe.part<ReuseQualityMetrics>().requests = 3;
  probed = metrics_to_json(with_probe);
  ASSERT_TRUE(probed.contains("reuse_quality"));
  EXPECT_EQ(probed["reuse_quality"]["requests"], 3);
  // The run's section alone knows no family's keys.
  Json run_only;
  run_metrics_section().write(RunMetrics{}, run_only);
  for (const char* key : {"block_bytes", "fragmentation", "buffer_bytes", "chunk_hits"})
    EXPECT_FALSE(run_only["kv_cache"].contains(key)) << key;
  EXPECT_FALSE(run_only.contains("vtcm"));
  EXPECT_FALSE(run_only["memory"].contains("activation_reserve_bytes"));
  // Every key any component writes is listed for `expect:`.
  const Names keys = metric_key_names();
  for (const char* k :
       {"kv_cache.block_bytes", "kv_cache.chunk_fallbacks", "kv_cache.rewinds",
        "kv_cache.session_io_bytes", "memory.activation_reserve_bytes", "memory.chunk_pool_bytes",
        "vtcm.sessions_waited", "workload.skipped_records", "cluster.transfer.bytes",
        "pipeline.stage_link_bytes", "kv_cache.chunk_recompute_tokens",
        "reuse_quality.top1_agreement", "session_retention.saved_prompt_tokens",
        "speculative.mean_accepted_length", "data_parallel.wait_fraction"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
}

TEST(MetricsSections, TheDocumentKeepsSpecOrder) {
  RunMetrics m;
  m.part<GenieRunMetrics>().sessions.push_back({"llm", 1, 1, 0.5, 3});
  const Json j = metrics_to_json(m);
  EXPECT_EQ(keys_of(j),
            (Names{"scenario", "seed", "device", "model", "policy", "requests", "latency_ms",
                   "throughput", "kv_cache", "memory", "vtcm", "numerics", "workload", "sessions",
                   "sim", "goodput", "kv_tiers", "kv_movement", "provenance"}));
  EXPECT_EQ(keys_of(j["memory"]),
            (Names{"device_bytes", "weights_bytes", "kv_bytes", "vtcm_bytes",
                   "activation_reserve_bytes", "main_pool_bytes", "chunk_pool_bytes"}));
  EXPECT_EQ(keys_of(j["kv_cache"]), (Names{"block_bytes",
                                           "block_size",
                                           "num_blocks",
                                           "capacity_tokens",
                                           "kv_bytes_per_token",
                                           "peak_used_bytes",
                                           "mean_used_bytes",
                                           "fragmentation",
                                           "prefix_hit_rate",
                                           "recompute_hit_rate",
                                           "chunk_hit_rate",
                                           "bytes_moved",
                                           "pointer_updates",
                                           "evictions",
                                           "swapped_bytes",
                                           "buffer_bytes",
                                           "compactions",
                                           "tensor_registrations",
                                           "mask_bytes",
                                           "variant_switches",
                                           "rewinds",
                                           "window_evicted_tokens",
                                           "attention_read_tokens",
                                           "attention_useful_tokens",
                                           "context_resets",
                                           "session_io_bytes",
                                           "chunk_hits",
                                           "chunk_misses",
                                           "chunk_evictions",
                                           "chunk_bytes_copied",
                                           "chunk_rope_tokens",
                                           "chunk_fallbacks",
                                           "chunk_recompute_tokens",
                                           "chunk_system_prompt_context"}));
  EXPECT_EQ(keys_of(j["kv_tiers"]), (Names{"device_hit_rate", "load_time_s", "store_wait_s",
                                           "lookup_time_s", "dram", "ssd", "global"}));
  EXPECT_EQ(keys_of(j["kv_tiers"]["ssd"]),
            (Names{"hit_rate", "hit_tokens", "bytes_read", "bytes_written", "evictions",
                   "blocks_held", "pinned_peak_blocks"}));
  EXPECT_EQ(j["sessions"][0]["runs"], 3);
  // A run without sessions has no sessions key (serving runs, SPEC 9).
  EXPECT_FALSE(metrics_to_json(RunMetrics{}).contains("sessions"));
}

TEST(EngineReports, ThePartsFollowTheEngineTheRunRecorded) {
  EXPECT_EQ(engine_report_names(), (Names{"genie", "serving"}));
  const ScenarioSpec s = testing::scenario_from_text(
      "device: ascend-910b2\nmodel: llama-3.2-1b\nworkload: {kind: synthetic, requests: 2, "
      "arrival: {process: constant, rate_per_s: 1}, input_tokens: 10, output_tokens: 2}\n");
  RunMetrics m;
  m.engine = "serving";
  EXPECT_NE(summary_table(s, m).find("in 0 steps"), std::string::npos);
  // A run that recorded the genie engine gets its parts even with no
  // sessions listed: nothing is guessed from an empty list.
  m.engine = "genie";
  const std::string genie = summary_table(s, m);
  EXPECT_NE(genie.find("in 0 passes"), std::string::npos) << genie;
  EXPECT_NE(genie.find("Genie buffers"), std::string::npos) << genie;
  m.engine = "tpu";
  try {
    (void)summary_table(s, m);
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("no report parts for engine 'tpu' (there are: genie, "
                                         "serving)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
