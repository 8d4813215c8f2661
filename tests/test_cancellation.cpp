// A stop request (base/cancellation.hpp) ends a run, a cache replay and a
// generation early with Cancelled; without one the checks change nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "base/cancellation.hpp"
#include "base/source_paths.hpp"
#include "cli/generate/llama2_generate.hpp"
#include "cli/studies/calibration.hpp"
#include "sim/cache/cache_replay.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/workload.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

ScenarioSpec small_chat() {
  return load_scenario(std::string(KVSIM_CONFIG_DIR) + "/scenarios/default.yaml",
                       {"workload.sessions=40"});
}

struct ClearedAfter {
  ~ClearedAfter() { clear_cancel(); }
};

TEST(Cancellation, AStopRequestEndsARunWithCancelled) {
  const ScenarioSpec spec = small_chat();
  ClearedAfter cleared;
  request_cancel();
  EXPECT_TRUE(cancel_requested());
  EXPECT_THROW(run_scenario(spec, nullptr), Cancelled);
  clear_cancel();
  // The same run without the request finishes, and the flag stays clear.
  const ScenarioRunResult r = run_scenario(spec, nullptr);
  EXPECT_GT(r.metrics.requests.completed, 0);
  EXPECT_FALSE(cancel_requested());
}

TEST(Cancellation, AStopRequestEndsACacheReplay) {
  const ScenarioSpec spec = small_chat();
  const BlockPoolContract* pool = spec.policy().block_pool();
  ASSERT_NE(pool, nullptr);
  const PoolSizing sizing = pool->size(spec.model, spec.pool_input());
  ClearedAfter cleared;
  request_cancel();
  auto policy = pool->make(spec, sizing);
  auto source = make_request_source(*spec.workload, spec.seed, spec.model.vocab_size);
  EXPECT_THROW(replay_through_cache(*policy, *source), Cancelled);
}

TEST(Cancellation, AStopRequestEndsGeneration) {
  const std::filesystem::path dir =
      std::filesystem::path(KVSIM_SHARED_DATA_DIR) / "models" / "stories260K";
  if (!std::filesystem::is_regular_file(dir / "stories260K.bin"))
    GTEST_SKIP() << "shared data absent: " << (dir / "stories260K.bin");
  const kernels::Llama2Weights w =
      kernels::load_llama2_checkpoint((dir / "stories260K.bin").string());
  const kernels::Llama2Tokenizer t((dir / "tok512.bin").string(), w.config.vocab_size);
  kernels::GenerateOptions o;
  o.prompt = "Once upon a time";
  o.steps = 40;
  ClearedAfter cleared;
  request_cancel();
  EXPECT_THROW(kernels::generate_greedy(w, t, o), Cancelled);
  clear_cancel();
  EXPECT_GT(kernels::generate_greedy(w, t, o).tokens.size(), 5u);
}

// Calibration records a row whose prediction threw as "not predicted": a
// stop request is no row's error and ends the whole study instead.
TEST(Cancellation, AStopRequestEndsACalibrationInsteadOfFailingItsRows) {
  const std::string csv =
      std::string(KVSIM_SHARED_DATA_DIR) + "/calibration/published_measurements.csv";
  if (!std::filesystem::is_regular_file(csv)) GTEST_SKIP() << "shared data absent: " << csv;
  const auto rows = read_measurements(csv);
  ClearedAfter cleared;
  request_cancel();
  EXPECT_THROW(calibrate_rows(rows, KVSIM_CONFIG_DIR, csv), Cancelled);
  clear_cancel();
  EXPECT_GT(calibrate_rows(rows, KVSIM_CONFIG_DIR, csv).predicted, 0);
}

TEST(Cancellation, ThrowIfCancelledThrowsOnlyWhenAsked) {
  clear_cancel();
  EXPECT_NO_THROW(throw_if_cancelled());
  request_cancel();
  EXPECT_THROW(throw_if_cancelled(), Cancelled);
  clear_cancel();
  EXPECT_NO_THROW(throw_if_cancelled());
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
