// numerics.reuse_quality in a serving run: stories260K (shared data, skipped
// when absent) runs each probed request's prompt through the policy's reuse
// path and a full prefill. Recomputing every row is a full prefill exactly;
// paged's prefix reuse differs only by rounding; the seed's mask and
// isolated chunks drift, and a compare shows it beside TTFT.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/source_paths.hpp"
#include "scenario_helpers.hpp"
#include "sim/core/metrics.hpp"
#include "sim/numerics/numerics_observer.hpp"
#include "sim/numerics/reuse_quality_probe.hpp"
#include "sim/serve/engine.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

const std::filesystem::path kCheckpoint =
    std::filesystem::path(KVSIM_SHARED_DATA_DIR) / "models" / "stories260K" / "stories260K.bin";

bool have_checkpoint() {
  std::error_code ec;
  return std::filesystem::is_regular_file(kCheckpoint, ec);
}

std::string rag(const std::string& cache) {
  return R"(
seed: 4
device: ascend-910b2
model: llama-3-8b
scheduler: {max_num_seqs: 16, max_batched_tokens: 8192}
kv_cache: )" +
         cache +
         R"(
workload:
  kind: rag
  requests: 12
  arrival: {process: poisson, rate_per_s: 2}
  sys_prompt_tokens: 200
  docs: {corpus: 6, zipf: 1.0, per_request: 3, chunk_tokens: {dist: uniform, min: 100, max: 400}}
  question_tokens: 20
  output_tokens: 4
numerics:
  reuse_quality: {checkpoint_path: )" +
         kCheckpoint.string() + R"(, requests: 4, generated_tokens: 6}
)";
}

ReuseQualityMetrics probe(const std::string& cache) {
  const ScenarioSpec s = testing::scenario_from_text(rag(cache));
  ServingEngine engine(s, nullptr, make_numerics_observer);
  const RunMetrics m = engine.run();
  const ReuseQualityMetrics* q = m.find<ReuseQualityMetrics>();
  EXPECT_NE(q, nullptr);
  return q ? *q : ReuseQualityMetrics{};
}

TEST(ReuseQualityProbe, RecomputingEveryRowIsAFullPrefillAndPrefixReuseOnlyRounds) {
  if (!have_checkpoint()) GTEST_SKIP() << "shared data absent: " << kCheckpoint.string();
  const auto full = probe("{policy: chunk_lru, block_size: 128, recompute_ratio: 1.0}");
  EXPECT_EQ(full.requests, 4);
  EXPECT_EQ(full.kv_max_abs_diff, 0.0);
  EXPECT_EQ(full.logits_max_abs_diff, 0.0);
  EXPECT_EQ(full.top1_agreement, 1.0);
  EXPECT_EQ(full.generated, 4 * 6);
  EXPECT_GT(full.recomputed_tokens, 0);
  EXPECT_GT(full.prompt_scale, 0.0);
  EXPECT_LE(full.prompt_scale, 1.0);
  EXPECT_EQ(full.checkpoint, "stories260K.bin");

  const auto paged = probe("{policy: paged, block_size: 128, prefix_caching: true}");
  EXPECT_EQ(paged.requests, 4);
  EXPECT_LT(paged.kv_max_abs_diff, 1e-4);
  EXPECT_LT(paged.logits_max_abs_diff, 1e-3);

  // The chunks drift; the seed's mask (each chunk sees the system prompt)
  // keeps the reused KV closer to a full prefill than chunks computed alone.
  const auto seed = probe("{policy: chunk_lru, block_size: 128}");
  const auto alone = probe("{policy: chunk_lru, block_size: 128, chunk_attention: isolated}");
  EXPECT_GT(seed.kv_mean_abs_diff, 1e-3);
  EXPECT_GT(alone.kv_mean_abs_diff, seed.kv_mean_abs_diff);
  const auto blend = probe("{policy: chunk_lru, block_size: 128, recompute_ratio: 0.3}");
  EXPECT_LT(blend.kv_mean_abs_diff, seed.kv_mean_abs_diff);
}

TEST(ReuseQualityProbe, ACompareTablesDriftBesideTtft) {
  if (!have_checkpoint()) GTEST_SKIP() << "shared data absent: " << kCheckpoint.string();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kvsim-probe-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "s.yaml") << "name: probe\n"
                                  << rag("{policy: chunk_lru, block_size: 128, paged: "
                                         "{prefix_caching: true}}");
  }
  const auto r = testing::run_command(
      std::string(KVSIM_BINARY) + " compare " + (dir / "s.yaml").string() + " --out " +
      (dir / "out").string() +
      " --variant 'paged: kv_cache.policy=paged' --variant 'seed mask: kv_cache.recompute_ratio=0'"
      " --variant 'recompute 0.3: kv_cache.recompute_ratio=0.3'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* text : {"logit mean |d|", "top-1 agreement", "recompute 0.3", "seed mask"})
    EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;
  std::ifstream html(dir / "out" / "compare.html");
  const std::string page((std::istreambuf_iterator<char>(html)), {});
  EXPECT_NE(page.find("One point per variant: down is closer"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_directory(dir / "out" / "03-recompute_0.3"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
