// Pipeline parallelism (parallel.pipeline): vLLM's layer split, the weights
// and KV each stage's devices hold, the pool set by the binding stage, a
// step priced stage by stage against the pipeline formula
// (devices/pipeline_timing.hpp), the activations between stages, and bad
// layouts refused with their location.
#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "base/diagnostics.hpp"
#include "cli/studies/capacity_plan.hpp"
#include "devices/pipeline_timing.hpp"
#include "models/pipeline_stages.hpp"
#include "report_test_helpers.hpp"
#include "round_specs.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/core/metrics.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

const std::string kConfigs = testing::configs_dir();

std::vector<int64_t> layer_split(int64_t layers, int64_t stages) {
  std::vector<int64_t> out;
  for (const PipelineStage& s : pipeline_stages(layers, stages)) out.push_back(s.layers);
  return out;
}

// vLLM's tests/distributed/test_pipeline_partition.py cases, and the
// shipped models' splits.
TEST(PipelineStages, SplitAsVllmDoes) {
  EXPECT_EQ(layer_split(2, 2), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(layer_split(3, 2), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(layer_split(3, 3), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(layer_split(4, 3), (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(layer_split(5, 3), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(layer_split(94, 4), (std::vector<int64_t>{23, 24, 24, 23}));  // Qwen3-235B-A22B
  EXPECT_EQ(layer_split(61, 4), (std::vector<int64_t>{15, 15, 16, 15}));  // DeepSeek-V3
  EXPECT_EQ(layer_split(61, 2), (std::vector<int64_t>{31, 30}));
  EXPECT_EQ(layer_split(64, 1), (std::vector<int64_t>{64}));
  const auto stages = pipeline_stages(61, 4);
  EXPECT_EQ(stages[2].first_layer, 30);
  EXPECT_TRUE(stages[0].first && !stages[0].last);
  EXPECT_TRUE(!stages[3].first && stages[3].last);
  EXPECT_THROW(pipeline_stages(4, 5), std::invalid_argument);
  // VLLM_PP_LAYER_PARTITION's form, and its rules (vllm-ascend's guide:
  // one positive entry per stage, adding up to the layers).
  const auto given = pipeline_stages(61, 2, {32, 29});
  EXPECT_EQ(given[1].first_layer, 32);
  EXPECT_EQ(given[1].layers, 29);
  EXPECT_THROW(pipeline_stages(61, 2, {32, 30}), std::invalid_argument);
  EXPECT_THROW(pipeline_stages(61, 2, {61}), std::invalid_argument);
  EXPECT_THROW(pipeline_stages(61, 2, {62, -1}), std::invalid_argument);
}

// A stage's model keeps exactly its layers' experts and attention kinds.
TEST(PipelineStages, StageModelKeepsEachLayersKind) {
  const ModelSpec ds = resolve_model("deepseek-v3", kConfigs);  // first 3 layers dense
  for (const PipelineStage& st : pipeline_stages(ds.num_hidden_layers, 4)) {
    const ModelSpec m = stage_model(ds, st);
    ASSERT_EQ(m.num_hidden_layers, st.layers);
    for (int64_t i = 0; i < st.layers; ++i)
      EXPECT_EQ(m.is_moe_layer(i), ds.is_moe_layer(st.first_layer + i)) << st.index << ":" << i;
  }
  const ModelSpec gemma = resolve_model("gemma-2-9b", kConfigs);  // sliding and full, alternating
  const PipelineStage st = pipeline_stages(gemma.num_hidden_layers, 3)[1];
  const ModelSpec m = stage_model(gemma, st);
  for (int64_t i = 0; i < st.layers; ++i)
    EXPECT_EQ(m.layer_attention[static_cast<size_t>(i)].sliding,
              gemma.layer_attention[static_cast<size_t>(st.first_layer + i)].sliding);
}

// Each stage holds its layers; the embedding sits on the first, the final
// norm and LM head on the last. Untied: the stages add up to the whole
// model; tied: the last stage keeps its own copy of the table for the head.
TEST(PipelineStages, WeightsPerDieFollowTheStagesLayers) {
  for (const int64_t tp : {1, 4}) {
    const ModelSpec q = resolve_model("qwen3-32b", kConfigs);  // untied
    Bytes sum = 0;
    for (const PipelineStage& st : pipeline_stages(q.num_hidden_layers, 4))
      sum += stage_weight_bytes_per_rank(q, st, tp, 1);
    EXPECT_EQ(sum, q.weight_bytes_per_rank(tp, 1)) << tp;
    const PipelineStage whole{0, 0, q.num_hidden_layers, true, true};
    EXPECT_EQ(stage_weight_bytes_per_rank(q, whole, tp, 1), q.weight_bytes_per_rank(tp, 1));
  }
  const ModelSpec l = resolve_model("llama-3.2-1b", kConfigs);  // tied, 16 layers
  const auto st = pipeline_stages(l.num_hidden_layers, 2);
  const Bytes table = l.vocab_size * l.hidden_size * 2;
  EXPECT_EQ(
      stage_weight_bytes_per_rank(l, st[0], 1, 1) + stage_weight_bytes_per_rank(l, st[1], 1, 1),
      l.weight_bytes() + table);
  // Equal layers: the stages differ by the final norm only.
  EXPECT_EQ(
      stage_weight_bytes_per_rank(l, st[1], 1, 1) - stage_weight_bytes_per_rank(l, st[0], 1, 1),
      l.hidden_size * 2);
}

// KV per die: the stage's layers. Blocks: the stage with the fewest binds
// every stage (vLLM takes the minimum over its workers).
TEST(PipelineStages, PoolFollowsTheMostLoadedStage) {
  const ModelSpec q = resolve_model("qwen3-32b", kConfigs);
  PoolSizingInput in;
  in.device_memory = int64_t{64} << 30;
  in.memory_fraction = 0.9;
  in.tp = 4;
  in.block_size = 128;
  const PoolSizing one = size_paged_pool(q, in);
  EXPECT_EQ(one.kv_bytes_per_token, q.kv_bytes_per_token(2, 4));
  EXPECT_EQ(one.weights_bytes, q.weight_bytes_per_rank(4, 1));
  EXPECT_EQ(one.stage_layers, 64);
  EXPECT_EQ(one.instance_block_bytes, one.block_bytes * 4);
  for (const int64_t pp : {2, 4}) {
    in.pp = pp;
    const PoolSizing s = size_paged_pool(q, in);
    EXPECT_EQ(s.stage_layers, 64 / pp);
    EXPECT_EQ(s.kv_bytes_per_token, q.kv_bytes_per_token(2, 4) / pp);
    EXPECT_EQ(s.block_bytes, s.kv_bytes_per_token * 128);
    EXPECT_EQ(s.instance_block_bytes, one.instance_block_bytes);
    int64_t fewest = INT64_MAX;
    for (const PipelineStage& st : pipeline_stages(64, pp)) {
      const Bytes w = stage_weight_bytes_per_rank(q, st, 4, 1);
      const Bytes act =
          derived_activation_reserve(q, 4, in.max_batched_tokens, in.max_num_seqs, st.last);
      fewest = std::min(fewest, (s.budget - w - act) / s.block_bytes);
    }
    EXPECT_EQ(s.num_blocks, fewest);
    EXPECT_GT(s.num_blocks, one.num_blocks * pp) << "less weight per die leaves more for KV";
  }
}

using testing::round_device;
using testing::round_model;

StepWork decode_batch(int64_t seqs, int64_t context) {
  StepWork w;
  w.totals_given = true;
  for (int64_t i = 0; i < seqs; ++i) w.totals.add({1, context, true}, false);
  return w;
}

TEST(PipelineTiming, OneStageIsTheTimingModelExactly) {
  const DeviceSpec d = round_device();
  const ModelSpec m = round_model(8);
  const TimingModel::Params p{2, 2, 1, 0};
  const TimingModel direct(d, m, p);
  const PipelineTiming piped(d, m, p, PipelineParams{1, 1, false, 0, {}});
  for (const StepWork& w : {decode_batch(32, 1000), decode_batch(1, 50)}) {
    const StepTiming a = direct.price(w), b = piped.price(w, 32);
    EXPECT_EQ(a.latency, b.latency);
    EXPECT_EQ(a.critical_path, b.critical_path);
    EXPECT_EQ(a.op_time, b.op_time);
    EXPECT_EQ(piped.step_latency(w, 32), a.latency);
  }
}

// The formula of devices/pipeline_timing.hpp, from the stage times and the
// transfer priced by hand from the device's link figures.
TEST(PipelineTiming, StepIsTheLargerOfTheFillAndMIntervals) {
  const DeviceSpec d = round_device();
  const ModelSpec m = round_model(10);  // vLLM: 10 layers over 4 stages = 2, 3, 3, 2
  for (const int64_t tp : {1, 2}) {
    for (const int64_t micro : {1, 2, 4, 8}) {
      const int64_t p = 4;
      const PipelineTiming t(d, m, TimingModel::Params{tp, 2, 1, 0},
                             PipelineParams{p, micro, false, 0, {}});
      const int64_t seqs = 64;
      const PipelineStepTiming r = t.price_stages(decode_batch(seqs, 2000), seqs);
      ASSERT_EQ(r.micro_batches, micro);
      ASSERT_EQ(r.stage_time.size(), 4u);
      // x = 2 T h a / tp over the link + latency, and with tp > 1 the gather
      // of the other slices over the device link.
      const double tokens = static_cast<double>(seqs) / static_cast<double>(micro);
      const double bytes = 2.0 * tokens * 1024 * 2;
      double x = bytes / static_cast<double>(tp) / 100.0 + 10'000;
      if (tp > 1) x += (tp - 1.0) / tp * bytes / 100.0 + 10'000;
      EXPECT_EQ(r.transfer, static_cast<TimeNs>(std::ceil(x - 1e-6))) << tp << "/" << micro;
      TimeNs fill = 3 * r.transfer, interval = 0;
      for (int64_t s = 0; s < p; ++s) {
        fill += r.stage_time[static_cast<size_t>(s)];
        interval =
            std::max(interval, r.stage_time[static_cast<size_t>(s)] + (s + 1 < p ? r.transfer : 0));
      }
      EXPECT_EQ(r.fill, fill);
      EXPECT_EQ(r.interval, interval);
      EXPECT_EQ(r.step.latency, std::max(fill, micro * interval));
      // Bytes between stages: tokens x hidden x activation bytes x 2
      // (hidden state and residual) x (p - 1) boundaries.
      EXPECT_DOUBLE_EQ(r.stage_link_bytes, 64.0 * 1024 * 2 * 2 * 3);
      EXPECT_DOUBLE_EQ(t.boundary_bytes(64) * 3, r.stage_link_bytes);
      // A 3-layer stage costs more than the first, of 2 layers and the
      // embedding.
      EXPECT_GT(r.stage_time[1], r.stage_time[0]);
    }
  }
}

// One micro-batch: the stages one after another; the per-layer ops summed
// over the stages are the whole model's, as are the embedding and the head.
TEST(PipelineTiming, OneMicroBatchCrossesTheStagesInTurn) {
  const DeviceSpec d = round_device();
  const ModelSpec m = round_model(12);
  const TimingModel whole(d, m, TimingModel::Params{1, 2, 1, 0});
  const PipelineTiming t(d, m, TimingModel::Params{1, 2, 1, 0}, PipelineParams{3, 3, false, 0, {}});
  StepWork w;
  w.seqs = {{512, 0, true}};  // one prefill: one micro-batch
  const PipelineStepTiming r = t.price_stages(w, 1);
  EXPECT_EQ(r.micro_batches, 1);
  EXPECT_EQ(r.step.latency, r.fill);
  EXPECT_EQ(t.step_latency(w, 1), r.step.latency);
  EXPECT_EQ(r.fill, r.stage_time[0] + r.stage_time[1] + r.stage_time[2] + 2 * r.transfer);
  const StepTiming one = whole.price(w);
  for (size_t k = 0; k < kOpKindCount; ++k)
    EXPECT_EQ(r.step.op_time[k], one.op_time[k]) << op_kind_name(static_cast<OpKind>(k));
  EXPECT_DOUBLE_EQ(r.step.flops, one.flops);
  // Slower than one device by the stages' own step overheads and launches
  // and the two transfers; never faster.
  EXPECT_GT(r.step.latency, one.latency);
}

// Many micro-batches of a steady decode: stage 0 (the busiest) sets the
// period, m x its interval, and the period never beats the fill.
TEST(PipelineTiming, ManyMicroBatchesAreBoundByTheBusiestStage) {
  const DeviceSpec d = round_device();
  const ModelSpec m = round_model(8);
  const PipelineTiming t(d, m, TimingModel::Params{1, 2, 1, 0}, PipelineParams{2, 16, true, 0, {}});
  const PipelineStepTiming r = t.price_stages(decode_batch(256, 4000), 256);
  EXPECT_EQ(r.micro_batches, 16);
  EXPECT_EQ(r.step.latency, 16 * r.interval);
  EXPECT_GT(r.step.latency, r.fill);
  // The network link (RoCE, 25 GB/s) carries the activations.
  const double bytes = 2.0 * 16 * 1024 * 2;
  EXPECT_EQ(r.transfer, static_cast<TimeNs>(std::ceil(bytes / 25.0 + 20'000 - 1e-6)));
}

// Per-sequence work (sliding-window layers) deals the sequences out.
TEST(PipelineTiming, PerSequenceWorkIsDealtIntoMicroBatches) {
  const DeviceSpec d = round_device();
  ModelSpec m = round_model(4);
  m.layer_attention = {{true, 128}, {false, 0}, {true, 128}, {false, 0}};
  const PipelineTiming t(d, m, TimingModel::Params{1, 2, 1, 0}, PipelineParams{2, 2, false, 0, {}});
  StepWork w;
  w.seqs = {{1, 1000, true}, {1, 300, true}, {1, 2000, true}};
  const PipelineStepTiming r = t.price_stages(w, 3);
  EXPECT_EQ(r.micro_batches, 2);
  EXPECT_DOUBLE_EQ(r.stage_link_bytes, 3.0 * 1024 * 2 * 2);
  EXPECT_GE(r.step.latency, r.fill);
}

std::string pipeline_scenario(const std::string& parallel, const std::string& extra = "") {
  return "device: ascend-910b2\nmodel: qwen3-32b\nparallel: " + parallel +
         "\nkv_cache: {policy: paged, block_size: 128, prefix_caching: false}\n"
         "scheduler: {max_num_seqs: 32, max_batched_tokens: 4096}\n"
         "workload:\n  kind: synthetic\n  requests: 40\n"
         "  arrival: {process: poisson, rate_per_s: 4}\n"
         "  input_tokens: {dist: constant, value: 512}\n"
         "  output_tokens: {dist: constant, value: 64}\n" +
         extra;
}

RunMetrics run_text(const std::string& yaml) {
  const ScenarioSpec s = testing::scenario_from_text(yaml);
  ServingEngine engine(s, nullptr);
  return engine.run();
}

TEST(PipelineScenario, PipelineOneIsTheScenarioWithoutIt) {
  const RunMetrics a = run_text(pipeline_scenario("{tensor: 4}"));
  const RunMetrics b = run_text(pipeline_scenario("{tensor: 4, pipeline: 1}"));
  auto ja = metrics_to_json(a), jb = metrics_to_json(b);
  ja["sim"].erase("wall_s");
  jb["sim"].erase("wall_s");
  EXPECT_EQ(ja.dump(), jb.dump());
  EXPECT_FALSE(ja.contains("pipeline"));
}

TEST(PipelineScenario, TwoStagesHoldMoreKvAndReportTheirLayout) {
  const RunMetrics one = run_text(pipeline_scenario("{tensor: 4}"));
  const RunMetrics two = run_text(pipeline_scenario("{tensor: 4, pipeline: 2}"));
  EXPECT_EQ(two.requests.completed, 40);
  ASSERT_TRUE(two.find<PipelineMetrics>() != nullptr);
  EXPECT_EQ(two.find<PipelineMetrics>()->stages, 2);
  EXPECT_EQ(two.find<PipelineMetrics>()->micro_batches, 2);
  EXPECT_EQ(two.find<PipelineMetrics>()->devices, 8);
  EXPECT_EQ(two.find<PipelineMetrics>()->layers, "32,32");
  EXPECT_EQ(two.find<PipelineMetrics>()->link, "device");  // 8 devices: one HCCS node
  EXPECT_EQ(two.kv_cache.kv_bytes_per_token * 2, one.kv_cache.kv_bytes_per_token);
  EXPECT_GT(testing::pool_of(two).num_blocks, 2 * testing::pool_of(one).num_blocks);
  // Every computed token crossed the one boundary: the prompts and the
  // tokens fed back in decode (a recompute preemption would add more).
  EXPECT_EQ(two.requests.preemptions, 0);
  EXPECT_DOUBLE_EQ(two.find<PipelineMetrics>()->stage_link_bytes, 40.0 * (512 + 63) * 5120 * 2 * 2);
  const auto j = metrics_to_json(two);
  EXPECT_EQ(j["pipeline"]["layers"], "32,32");
}

TEST(PipelineScenario, AGivenPartitionSetsTheBindingStage) {
  const ScenarioSpec s = testing::scenario_from_text(
      pipeline_scenario("{tensor: 4, pipeline: 2, pipeline_layers: [40, 24]}"));
  ServingEngine engine(s, nullptr);
  EXPECT_EQ(engine.sizing().stage_layers, 40);
  EXPECT_EQ(engine.sizing().binding_stage, 0);
}

TEST(PipelineScenario, VllmNameAndLinkChoice) {
  ScenarioSpec s =
      testing::scenario_from_text(pipeline_scenario("{tensor: 4}", "pipeline_parallel_size: 4\n"));
  EXPECT_EQ(s.pp, 4);
  EXPECT_EQ(s.micro_batches, 4);
  EXPECT_TRUE(s.pipeline_network_link) << "16 devices span two 8-device nodes";
  s = testing::scenario_from_text(
      pipeline_scenario("{tensor: 4, pipeline: 4, micro_batches: 2, pipeline_link: device}"));
  EXPECT_FALSE(s.pipeline_network_link);
  EXPECT_EQ(s.micro_batches, 2);
}

void expect_error(const std::string& yaml, const std::string& key, const std::string& what) {
  try {
    testing::scenario_from_text(yaml);
    FAIL() << "no error for " << key;
  } catch (const config::ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("test.yaml:"), std::string::npos) << msg;
    EXPECT_NE(msg.find(key), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

TEST(PipelineScenario, BadLayoutsAreErrorsAtTheirKey) {
  expect_error(pipeline_scenario("{tensor: 4, pipeline: 65}"), "parallel.pipeline",
               "each stage needs at least one");
  expect_error(pipeline_scenario("{tensor: 4, pipeline: 0}"), "parallel.pipeline", "");
  expect_error(pipeline_scenario("{tensor: 4, micro_batches: 2}"), "parallel.micro_batches",
               "without a pipeline");
  expect_error(pipeline_scenario("{tensor: 4, pipeline: 2, pipeline_link: rdma}"),
               "parallel.pipeline_link", "");
  expect_error(pipeline_scenario("{tensor: 4, pipeline: 2, pipeline_layers: [40, 20]}"),
               "parallel.pipeline_layers", "adds up to 60");
  expect_error(pipeline_scenario("{tensor: 4, pipeline: 3, pipeline_layers: [32, 32]}"),
               "parallel.pipeline_layers", "2 entries for 3 stages");
  std::string phone = pipeline_scenario("{pipeline: 2}");
  phone.replace(phone.find("ascend-910b2"), 12, "snapdragon-8-elite");
  expect_error(phone, "parallel.pipeline", "one NPU session");
}

using PipelineCli = testing::TempFolderTest;

TEST_F(PipelineCli, BadPipelineExitsTwoWithTheLocation) {
  const std::string file = kConfigs + "/scenarios/qwen3-32b-tp4.yaml";
  auto r = kvsim("run " + file + " --quiet --set parallel.pipeline=100 --out " + path("run"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("parallel.pipeline"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("each stage needs at least one"), std::string::npos) << r.output;
  r = kvsim("capacity --device ascend-910b2 --model qwen3-32b --tp 4 --pp 100 --out " +
            path("cap"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--pp"), std::string::npos) << r.output;
  r = kvsim(
      "capacity --device ascend-910b2 --model qwen3-32b --tp 4 --pp 1,2 --context 8192 "
      "--out " +
      path("cap2"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("4 x pp 2"), std::string::npos) << r.output;
}

// kvsim capacity --pp 1,2,4: per-die weights and KV follow the stage.
TEST(PipelineCapacity, RowsAtOneTwoAndFourStages) {
  CapacityQuery q;
  q.devices = {"ascend-910b2"};
  q.models = {"qwen3-32b"};
  q.contexts = {8192};
  q.tps = {4};
  q.pps = {1, 2, 4};
  const auto rows = capacity_rows(q, kConfigs);
  ASSERT_EQ(rows.size(), 3u);
  const ModelSpec model = resolve_model("qwen3-32b", kConfigs);
  for (const CapacityRow& r : rows) {
    EXPECT_EQ(r.stage_layers, 64 / r.pp);
    EXPECT_EQ(r.kv_bytes_per_token, model.kv_bytes_per_token(2, 4) / r.pp);
    EXPECT_EQ(r.block_bytes, r.kv_bytes_per_token * 128);
    EXPECT_EQ(r.windowed_kv_bytes_at_context, r.kv_bytes_at_context);
    EXPECT_TRUE(r.fits);
  }
  EXPECT_EQ(rows[0].weights_bytes, model.weight_bytes_per_rank(4, 1));
  EXPECT_LT(rows[1].weights_bytes, rows[0].weights_bytes);
  EXPECT_LT(rows[2].weights_bytes, rows[1].weights_bytes);
  EXPECT_GT(rows[1].num_blocks, rows[0].num_blocks);
  EXPECT_GT(rows[2].max_concurrent_seqs, rows[1].max_concurrent_seqs);
  EXPECT_EQ(capacity_row_json(rows[2])["pp"], 4);
  EXPECT_NE(capacity_markdown(rows).find("4 x pp 4"), std::string::npos);
  q.pps = {65};
  EXPECT_THROW(capacity_rows(q, kConfigs), config::ConfigError);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
