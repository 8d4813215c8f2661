#include "sim/spec/instance_spec.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace kvsim {

PoolSizingInput InstanceSpec::pool_input() const {
  PoolSizingInput in;
  in.device_memory = device.memory_bytes;
  in.memory_fraction = kv.memory_fraction;
  in.tp = tp;
  in.ep = ep;
  in.pp = pp;
  in.pipeline_layers = pipeline_layers;
  in.kv_dtype_bytes = kv.dtype_bytes();
  in.max_batched_tokens = scheduler.max_batched_tokens;
  in.max_num_seqs = scheduler.max_num_seqs;
  if (speculative.holds_device_memory()) {
    in.drafter_weight_bytes = speculative.drafter->weight_bytes_per_rank(tp, ep);
    in.drafter_kv_bytes_per_token = speculative.drafter->kv_bytes_per_token(kv.dtype_bytes(), tp);
  }
  return in;
}

PoolSizing InstanceSpec::pool_sizing() const {
  const BlockPoolContract* pool = policy().block_pool();
  if (pool == nullptr)
    throw std::logic_error(fmt::format("policy '{}' keeps no block pool", policy().display_name()));
  return pool->size(model, pool_input());
}

}  // namespace kvsim
