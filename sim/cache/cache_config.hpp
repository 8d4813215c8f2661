#pragma once
// The `kv_cache:` section of a scenario: which policy and how it is sized.
#include <optional>
#include <string>

#include "sim/config/units.hpp"

namespace kvsim {

struct CacheConfig {
  std::string policy = "paged";
  std::string dtype = "fp16";
  int64_t block_size = 128;
  double memory_fraction = 0.9;
  bool prefix_caching = true;
  std::string layout = "ksana";
  std::string preemption = "recompute";
  Bytes swap_space = 4LL << 30;  // vLLM's default swap_space, 4 GiB per rank
  std::optional<Bytes> activation_reserve;
};

}  // namespace kvsim
