// numerics.mode selects the checker: `full` checks every sequence every
// step, `sampled` follows one request in sample_every for its whole life
// (chunk_lru: checks every sequence one step in sample_every, since its
// chunk placement writes every sequence's shadow), `off` runs none (SPEC 8).
// Which checker follows a policy's blocks, the policy says
// (BlockPoolContract::numerics).
#include "sim/numerics/numerics_observer.hpp"

#include "sim/numerics/chunk_numerics_checker.hpp"
#include "sim/numerics/numerics_checker.hpp"
#include "sim/numerics/sampled_numerics_checker.hpp"

namespace kvsim {

std::unique_ptr<StepObserver> make_numerics_observer(const InstanceSpec& s,
                                                     const PoolSizing& sizing) {
  if (!s.numerics.on()) return nullptr;
  const BlockPoolContract* pool = s.policy().block_pool();
  if (pool == nullptr || pool->numerics() == ServingNumerics::none) return nullptr;
  numerics::CheckerParams params = numerics::checker_params(s, sizing);
  if (pool->numerics() == ServingNumerics::chunks) {
    params.sample_sequences = false;
    return std::make_unique<numerics::ChunkLruNumericsChecker>(params, sizing.chunk_pool_blocks,
                                                               pool->virtual_pos_start());
  }
  if (params.sample_sequences) {
    // Two values per 32-bit hash, vectorised (synthetic_kv.hpp): sampled's budget.
    params.shape.values_per_hash = 2;
    return std::make_unique<numerics::SampledNumericsChecker>(params);
  }
  return std::make_unique<numerics::NumericsChecker>(params);
}

}  // namespace kvsim
