#pragma once
// llama_cells' counters (seed 004): its sizing by ggml type, the context
// shifts with their K-shift passes, the defragmentations and how find_slot
// placed the micro-batches; and the section that writes them (only for a run
// of this policy, so every other run's file is unchanged).
#include <cstdint>
#include <string>
#include <vector>

#include "base/units.hpp"
#include "sim/cache/llama_kv_sizing.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {

// What the slots did (metrics.json llama_cells.server).
struct LlamaServerCounters {
  int64_t slots_by_similarity = 0, slots_by_lru = 0;
  int64_t slots_by_id = 0;           // requests that named their slot (llama-server's id_slot)
  int64_t prompt_reused_tokens = 0;  // kept in a slot (cache_prompt)
  int64_t cache_saves = 0, cache_restores = 0, cache_restored_tokens = 0;
  Bytes cache_saved_bytes = 0, cache_restored_bytes = 0;
  int64_t idle_slots_purged = 0;
  // copy_state_to: a parent slot's cells given to a child (n_cmpl > 1).
  // Unified, the cells gain the child's sequence id (shared, nothing
  // copied); with streams, the child's stream buffer is copied whole.
  int64_t state_copies = 0, cells_shared = 0;
  Bytes stream_copy_bytes = 0;
};

struct LlamaCellsMetrics {
  std::string behaviour = "seed_2024";  // LlamaBehaviour's name
  bool context_shift = true;
  std::string type_k, type_v;
  bool v_trans = true;
  int64_t kv_size = 0;
  Bytes k_l_bytes = 0, v_l_bytes = 0, device_bytes = 0, host_bytes = 0, cell_bytes = 0;
  int64_t context_shifts = 0, discarded_tokens = 0, kshift_passes = 0, kshift_cells = 0;
  Bytes kshift_bytes = 0;
  int64_t defrags = 0, defrag_moves = 0;
  Bytes defrag_bytes = 0;
  int64_t slots_contiguous = 0, slots_scattered = 0, max_n = 0;
  Bytes host_read_bytes = 0;
  // The backend and what it leaves on the host CPU (sim/cache/llama_backend_cost.hpp);
  // written only when something runs there.
  std::string backend, host_device;
  std::vector<std::string> ops_on_host;
  int64_t host_layers = 0;
  TimeNs host_ns = 0, host_link_ns = 0;
  Bytes host_link_bytes = 0;
  int64_t requests_refused = 0, replies_truncated = 0;  // context shift off
  // Under the serving engine (llama-server's slots): written only then.
  bool served = false;
  int64_t n_parallel = 0, slot_context = 0, prompt_cache_entries = 0;
  bool kv_unified = true;
  Bytes cache_ram = 0;
  LlamaServerCounters server;

  // The sizing figures, as llama_kv_cache_unified sizes its tensors.
  void set_sizing(const LlamaKvSizing& z) {
    kv_size = z.kv_size;
    k_l_bytes = z.k_l_bytes();
    v_l_bytes = z.v_l_bytes();
    device_bytes = z.device_bytes();
    host_bytes = z.host_bytes();
    cell_bytes = z.cell_bytes();
  }
};

MetricsSection llama_cells_metrics_section();

}  // namespace kvsim
