// llama_cells' part of metrics.json (seed 004): its sizing by ggml type, the
// context shifts with their K-shift passes, the defragmentations (do_defrag)
// and how find_slot placed the micro-batches. Written after kv_cache, only
// for a run of this policy, so every other run's file is unchanged.
#include "sim/cache/llama_cells_metrics.hpp"

#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {

void write_llama_cells_metrics(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const LlamaCellsMetrics* found = m.find<LlamaCellsMetrics>();
  if (found == nullptr || !doc.contains("kv_cache")) return;
  const LlamaCellsMetrics& c = *found;
  nlohmann::ordered_json o;
  o["behaviour"] = c.behaviour;
  o["context_shift"] = c.context_shift;
  o["type_k"] = c.type_k;
  o["type_v"] = c.type_v;
  o["v_trans"] = c.v_trans;
  o["kv_size"] = c.kv_size;
  o["k_l_bytes"] = c.k_l_bytes;
  o["v_l_bytes"] = c.v_l_bytes;
  o["cell_bytes"] = c.cell_bytes;
  o["device_bytes"] = c.device_bytes;
  o["host_bytes"] = c.host_bytes;
  o["context_shifts"] = c.context_shifts;
  o["discarded_tokens"] = c.discarded_tokens;
  o["kshift_passes"] = c.kshift_passes;
  o["kshift_cells"] = c.kshift_cells;
  o["kshift_bytes"] = c.kshift_bytes;
  o["defrags"] = c.defrags;
  o["defrag_moves"] = c.defrag_moves;
  o["defrag_bytes"] = c.defrag_bytes;
  o["slots_contiguous"] = c.slots_contiguous;
  o["slots_scattered"] = c.slots_scattered;
  o["max_n"] = c.max_n;
  o["host_read_bytes"] = c.host_read_bytes;
  o["requests_refused"] = c.requests_refused;
  o["replies_truncated"] = c.replies_truncated;
  if (!c.backend.empty())
    o["backend"] = {{"name", c.backend},
                    {"host_device", c.host_device},
                    {"ops_on_host", c.ops_on_host},
                    {"host_layers", c.host_layers},
                    {"host_ns", c.host_ns},
                    {"host_link_ns", c.host_link_ns},
                    {"host_link_bytes", c.host_link_bytes}};
  if (c.served) {
    const LlamaServerCounters& s = c.server;
    o["server"] = {{"n_parallel", c.n_parallel},
                   {"kv_unified", c.kv_unified},
                   {"slot_context", c.slot_context},
                   {"slots_by_similarity", s.slots_by_similarity},
                   {"slots_by_lru", s.slots_by_lru},
                   {"slots_by_id", s.slots_by_id},
                   {"prompt_reused_tokens", s.prompt_reused_tokens},
                   {"idle_slots_purged", s.idle_slots_purged},
                   {"state_copies", s.state_copies},
                   {"cells_shared", s.cells_shared},
                   {"stream_copy_bytes", s.stream_copy_bytes},
                   {"cache_ram", c.cache_ram},
                   {"cache_saves", s.cache_saves},
                   {"cache_saved_bytes", s.cache_saved_bytes},
                   {"cache_restores", s.cache_restores},
                   {"cache_restored_tokens", s.cache_restored_tokens},
                   {"cache_restored_bytes", s.cache_restored_bytes},
                   {"cache_entries", c.prompt_cache_entries}};
  }
  MetricsObject(doc).after("kv_cache").put("llama_cells", std::move(o));
}

}  // namespace

MetricsSection llama_cells_metrics_section() {
  return {"llama_cells", write_llama_cells_metrics};
}

}  // namespace kvsim
