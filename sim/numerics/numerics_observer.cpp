// numerics.mode selects the checker: `full` checks every step, `sampled`
// one step in sample_every, `off` runs none (SPEC 8).
#include "sim/numerics/chunk_numerics_checker.hpp"
#include "sim/numerics/numerics_checker.hpp"
#include "sim/scenario.hpp"

namespace kvsim {

std::unique_ptr<StepObserver> make_numerics_observer(const ScenarioSpec& scenario,
                                                     const PoolSizing& sizing) {
  if (scenario.numerics.mode == "off") return nullptr;
  if (scenario.cache.policy == "chunk_lru") {
    return std::make_unique<numerics::ChunkLruNumericsChecker>(
        numerics::checker_params(scenario, sizing), sizing.chunk_pool_blocks,
        scenario.cache.virtual_pos_start);
  }
  return std::make_unique<numerics::NumericsChecker>(numerics::checker_params(scenario, sizing));
}

}  // namespace kvsim
