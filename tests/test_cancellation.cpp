// A stop request (base/cancellation.hpp) ends a run and a cache replay
// early with Cancelled, and a run without one is untouched by the checks.
#include <gtest/gtest.h>

#include <string>

#include "base/cancellation.hpp"
#include "base/source_paths.hpp"
#include "sim/cache/cache_replay.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/workload.hpp"

namespace kvsim {
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

TEST(Cancellation, ThrowIfCancelledThrowsOnlyWhenAsked) {
  clear_cancel();
  EXPECT_NO_THROW(throw_if_cancelled());
  request_cancel();
  EXPECT_THROW(throw_if_cancelled(), Cancelled);
  clear_cancel();
  EXPECT_NO_THROW(throw_if_cancelled());
}

}  // namespace
}  // namespace kvsim
