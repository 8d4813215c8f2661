// chunk_lru (seed 003) inside a scenario: its config errors, the main pool
// sized by main_pool_fraction, the chunk pass priced by the timing model, the
// shipped prefix-vs-chunk pair, and the dual pool in `kvsim capacity`.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/diagnostics.hpp"
#include "cli/studies/capacity_plan.hpp"
#include "devices/timing_model.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/chunk_lru_policy.hpp"
#include "sim/cache/chunk_prompt.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/core/metrics.hpp"
#include "sim/numerics/chunk_numerics_checker.hpp"
#include "sim/numerics/numerics_observer.hpp"
#include "sim/policies/chunk_lru_spec.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/metric_parts.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

std::string scenario_text(const std::string& cache) {
  return R"(
name: chunk-test
seed: 3
device: ascend-910b2
model: llama-3-8b
scheduler: {max_num_seqs: 16, max_batched_tokens: 4096}
kv_cache: )" +
         cache + R"(
workload:
  kind: rag
  requests: 4
  arrival: {process: poisson, rate_per_s: 1}
  sys_prompt_tokens: 64
  docs: {corpus: 5, zipf: 1.0, per_request: 2, chunk_tokens: 100}
  question_tokens: 10
  output_tokens: 4
)";
}

std::string config_error(const std::string& cache) {
  try {
    testing::scenario_from_text(scenario_text(cache));
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ChunkLruConfig, PoolFractionsOverOneAreAnError) {
  const std::string e =
      config_error("{policy: chunk_lru, main_pool_fraction: 0.8, chunk_pool_fraction: 0.3}");
  EXPECT_NE(e.find("test.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("kv_cache.chunk_pool_fraction"), std::string::npos) << e;
  EXPECT_NE(e.find("more than the device's memory"), std::string::npos) << e;
  EXPECT_EQ(config_error("{policy: chunk_lru, main_pool_fraction: 0.8, chunk_pool_fraction: 0.2}"),
            "");
}

TEST(ChunkLruConfig, MemoryFractionDoesNotApply) {
  const std::string e = config_error("{policy: chunk_lru, memory_fraction: 0.9}");
  EXPECT_NE(e.find("kv_cache.memory_fraction"), std::string::npos) << e;
  EXPECT_NE(e.find("main_pool_fraction"), std::string::npos) << e;
}

TEST(ChunkLruConfig, AnEmptyChunkPoolIsAnError) {
  const std::string e = config_error("{policy: chunk_lru, chunk_pool_fraction: 0.0}");
  EXPECT_NE(e.find("holds no block"), std::string::npos) << e;
}

TEST(ChunkLruConfig, TheMainPoolTakesMainPoolFraction) {
  const ScenarioSpec s = testing::scenario_from_text(scenario_text("{policy: chunk_lru}"));
  const PoolSizing sz = s.pool_sizing();
  ScenarioSpec paged = s;
  paged.kv.active = make_policy_spec("paged");
  paged.kv.memory_fraction = 0.70;
  EXPECT_EQ(sz.num_blocks, paged.pool_sizing().num_blocks);
  EXPECT_EQ(sz.chunk_pool_bytes / sz.block_bytes, sz.chunk_pool_blocks);
  EXPECT_GT(sz.chunk_pool_blocks, 0);
  EXPECT_LE(sz.chunk_pool_bytes,
            static_cast<Bytes>(0.15 * static_cast<double>(s.device.memory_bytes)));
}

// The chunk path's device work reaches the timing model: one request on an
// idle engine has TTFT = the chunk pass (isolated prefills of its missed
// segments, copies, RoPE) + the question's step, both priced by the model.
TEST(ChunkLruEngine, TheChunkPassIsPricedAheadOfTheStep) {
  const ScenarioSpec s = testing::scenario_from_text(
      R"(
seed: 3
device: ascend-910b2
model: llama-3-8b
scheduler: {max_num_seqs: 16, max_batched_tokens: 8192}
kv_cache: {policy: chunk_lru, block_size: 128}
workload:
  kind: rag
  requests: 1
  arrival: {process: poisson, rate_per_s: 1}
  sys_prompt_tokens: 300
  docs: {corpus: 5, zipf: 1.0, per_request: 3, chunk_tokens: {dist: uniform, min: 200, max: 900}}
  question_tokens: 40
  output_tokens: 1
)");
  const Request r = make_request_source(*s.workload, s.seed, s.model.vocab_size)->take();
  const auto segs = split_chunked_prompt(r.prompt.data(), static_cast<int64_t>(r.prompt.size()));
  ASSERT_EQ(segs.size(), 5u);
  const int64_t cached = segs.back().begin;
  const int64_t question = static_cast<int64_t>(r.prompt.size()) - cached;
  StepWork pass;
  // A chunk after the system prompt attends its keys (seed 003's mask).
  for (size_t i = 0; i + 1 < segs.size(); ++i)
    pass.seqs.push_back({segs[i].length + kChunkSeparatorLength,
                         i == 0 ? 0 : segs[0].length + kChunkSeparatorLength, false});
  pass.kv_copy_bytes = cached * s.model.kv_bytes_per_token(2, 1);
  pass.rerope_tokens = cached;
  StepWork step;
  step.seqs.push_back({question, cached, true});
  const TimingModel timing(s.device, s.model, {1, 2});
  const TimeNs expected = timing.price(step).latency + timing.price(pass).latency;

  ServingEngine engine(s, nullptr, make_numerics_observer);
  const RunMetrics m = engine.run();
  EXPECT_NEAR(m.latency_ms.ttft.max, static_cast<double>(expected) / 1e6, 1e-9);
  EXPECT_EQ(testing::chunks_of(m).chunk_misses, 4);
  EXPECT_EQ(testing::chunks_of(m).chunk_rope_tokens, cached);
  EXPECT_EQ(testing::chunks_of(m).chunk_bytes_copied, pass.kv_copy_bytes);
  EXPECT_EQ(testing::chunks_of(m).main_pool_bytes,
            engine.sizing().num_blocks * engine.sizing().block_bytes);
  EXPECT_EQ(testing::chunks_of(m).chunk_pool_bytes, engine.sizing().chunk_pool_bytes);
  EXPECT_EQ(m.policy, "chunk_lru");
}

// The shipped pair: same request stream, the chunk cache hits more and
// answers sooner than prefix caching when documents come shuffled.
TEST(ChunkLruEngine, BeatsPrefixCachingOnShuffledDocuments) {
  const std::string dir = testing::configs_dir() + "/scenarios/";
  const ScenarioSpec prefix = load_scenario(dir + "rag-910b2-prefix.yaml");
  const ScenarioSpec chunk = load_scenario(dir + "rag-910b2-chunk-lru.yaml");
  const RunMetrics a = ServingEngine(prefix, nullptr, make_numerics_observer).run();
  const RunMetrics b = ServingEngine(chunk, nullptr, make_numerics_observer).run();
  EXPECT_EQ(a.requests.completed, b.requests.completed);
  EXPECT_GT(testing::chunks_of(b).chunk_hit_rate, testing::pool_of(a).prefix_hit_rate);
  EXPECT_LT(b.latency_ms.ttft.p50, a.latency_ms.ttft.p50);
  EXPECT_LT(b.latency_ms.ttft.mean, a.latency_ms.ttft.mean);
  EXPECT_GT(testing::chunks_of(b).chunk_evictions, 0);
  EXPECT_DOUBLE_EQ(testing::pool_of(b).prefix_hit_rate, testing::chunks_of(b).chunk_hit_rate);
  // Byte-identical determinism for the same seed (wall time aside).
  RunMetrics again = ServingEngine(chunk, nullptr, make_numerics_observer).run();
  again.sim.wall_s = b.sim.wall_s;
  EXPECT_EQ(metrics_to_json(again).dump(), metrics_to_json(b).dump());
}

// `kvsim capacity --policy chunk_lru` shows the dual pool in its table and
// its JSON; fractions over the device are refused.
TEST(ChunkLruCapacity, TheSplitAppearsInTheCapacityPlan) {
  const std::string out = ::testing::TempDir() + "chunk_lru_capacity";
  const std::string base = std::string(KVSIM_BINARY) +
                           " capacity --device ascend-910b2 --model llama-3-8b --context 8192 ";
  auto r = testing::run_command(base + "--policy chunk_lru --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("chunk_lru dual pool (seed 003)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("9.59 GiB (0.15)"), std::string::npos) << r.output;
  std::ifstream in(out + "/capacity.json");
  const auto doc = nlohmann::json::parse(in);
  ASSERT_EQ(doc.size(), 1u);
  const ModelSpec m = resolve_model("llama-3-8b", testing::configs_dir());
  const Bytes block = m.kv_bytes_per_token(2, 1) * 128;
  const auto chunk_bytes = doc[0]["chunk_pool_bytes"].get<int64_t>();
  EXPECT_EQ(chunk_bytes, static_cast<int64_t>(0.15 * 64.0 * (1LL << 30)) / block * block);
  EXPECT_EQ(doc[0]["chunk_pool_tokens"].get<int64_t>(), chunk_bytes / block * 128);
  EXPECT_EQ(doc[0]["main_pool_bytes"].get<int64_t>(), doc[0]["num_blocks"].get<int64_t>() * block);
  // The paged plan leaves the chunk columns at zero.
  r = testing::run_command(base + "--out " + out + "-paged");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("chunk_lru dual pool"), std::string::npos);
  r = testing::run_command(base +
                           "--policy chunk_lru --main-pool-fraction 0.9 --chunk-pool-fraction 0.2 "
                           "--out " +
                           out + "-bad");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("more than the device's memory"), std::string::npos) << r.output;
}

// The numerics checker under chunk_lru: a request's segments are placed
// through the real remap and the question's attention checked; a remap by a
// wrong position delta fails the check.
class WrongDeltaChecker final : public numerics::ChunkLruNumericsChecker {
 public:
  using ChunkLruNumericsChecker::ChunkLruNumericsChecker;

 protected:
  int64_t virtual_position() const override { return 4096 + 1; }
};

template <typename Checker>
uint64_t check_one_request(Checker& checker) {
  ChunkLruParams p = declared_chunk_lru_params();
  p.main = {64, 4, 4 * 100, false, 0};
  p.chunk_blocks = 32;
  p.virtual_pos_start = 4096;
  ChunkLruPolicy policy(p);
  Sequence seq;
  seq.request.id = 7;
  auto add = [&](int32_t start, int n) {
    for (int i = 0; i < n; ++i) seq.request.prompt.push_back(start + i);
  };
  add(1, 5);
  seq.request.prompt.insert(seq.request.prompt.end(), kChunkSeparator.begin(),
                            kChunkSeparator.end());
  add(100, 6);
  seq.request.prompt.insert(seq.request.prompt.end(), kChunkSeparator.begin(),
                            kChunkSeparator.end());
  add(900, 3);
  seq.request.output = std::vector<int32_t>{50, 51};
  PrefixHit hit = policy.lookup_prefix(seq.tokens(), seq.block_hashes);
  const int64_t cached = hit.cached_tokens;
  const AdmitPlan plan = policy.plan_admit(std::move(hit), seq.num_tokens() - cached);
  seq.slot = policy.apply_admit(plan);
  seq.state = SeqState::running;
  const int64_t tokens = seq.num_tokens() - cached;
  seq.computed = cached + tokens;
  policy.commit(seq.slot, seq.tokens(), seq.computed);
  ScheduledBatch batch;
  batch.items.push_back({&seq, tokens});
  checker.on_step_done(batch, policy, 0);
  return checker.checks();
}

numerics::CheckerParams checker_params_for_test() {
  numerics::CheckerParams c;
  c.num_blocks = 64;
  c.block_size = 4;
  c.dtype = kernels::KvDtype::fp32;
  return c;
}

TEST(ChunkLruNumerics, TheRemappedPrefixPassesAndAWrongDeltaFails) {
  numerics::ChunkLruNumericsChecker good(checker_params_for_test(), 32, 4096);
  EXPECT_EQ(check_one_request(good), 1u);
  EXPECT_LT(good.max_abs_err(), 1e-5);
  WrongDeltaChecker wrong(checker_params_for_test(), 32, 4096);
  EXPECT_THROW(check_one_request(wrong), CheckFailed);
}

TEST(ChunkLruNumerics, TheShippedScenarioChecksEveryStep) {
  const ScenarioSpec s =
      load_scenario(testing::configs_dir() + "/scenarios/rag-910b2-chunk-lru-numerics.yaml");
  const RunMetrics m = ServingEngine(s, nullptr, make_numerics_observer).run();
  EXPECT_EQ(m.numerics.mode, "full");
  EXPECT_GT(m.numerics.checks, 100);
  EXPECT_GT(m.numerics.max_abs_err, 0.0);  // fp16 storage rounds
  EXPECT_LE(m.numerics.max_abs_err, 1e-4);
  EXPECT_GT(testing::chunks_of(m).chunk_evictions, 0);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
