#pragma once
// `kvsim capacity --policy chunk_lru`: seed 003's dual-pool split per device
// x model x KV dtype x tensor parallelism. The main pool holds the weights,
// the activation reserve and the running requests' KV (main_pool_fraction of
// device memory, vLLM's gpu_memory_utilization); the chunk pool holds cached
// chunks only (chunk_pool_fraction); the rest is left in reserve.
#include <string>
#include <vector>

#include "cli/studies/capacity_plan.hpp"

namespace kvsim {

// Empty unless q.policy is chunk_lru.
std::string capacity_chunk_pool_markdown(const CapacityQuery& q,
                                         const std::vector<CapacityRow>& rows);

}  // namespace kvsim
