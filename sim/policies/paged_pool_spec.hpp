#pragma once
// The keys of a pool of fixed-size blocks (seeds 000, 001), declared once
// and taken by every policy that keeps one: paged, chunk_lru's main pool,
// sliding_window over paged.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/params.hpp"
#include "base/units.hpp"
#include "sim/cache/pool_sizing.hpp"

namespace kvsim {

std::vector<config::ParamSpec> paged_pool_params();

struct PagedPoolSettings {
  int64_t block_size = 0;
  std::string layout;                       // ksana | atb (seed 000)
  bool swap = false;                        // preemption: swap (vLLM V0) rather than recompute
  Bytes swap_space = 0;                     // host bytes per rank for swapped blocks
  std::optional<Bytes> activation_reserve;  // none: derived (pool_sizing)
  std::string eviction;  // which free cached block goes first (sim/cache/eviction/)

  static PagedPoolSettings from(const config::ParamValues& v);
  // What the pool owns of the sizing: its block size, swap space and
  // activation reserve.
  void fill(PoolSizingInput& in) const;
  // Host blocks a preempted sequence can swap to (0 under recompute).
  int64_t host_blocks(const PoolSizing& sizing) const { return swap ? sizing.host_blocks : 0; }
};

}  // namespace kvsim
