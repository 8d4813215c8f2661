#pragma once
// llama_cells: llama.cpp's unified KV cache (seed 004) as an on-device
// policy of the dialog engine. See llama_cells_policy.cpp.
#include <memory>

#include "sim/cache/genie_policy.hpp"
#include "sim/cache/llama_kv_cells.hpp"
#include "sim/cache/llama_kv_sizing.hpp"

namespace kvsim {

// Counters the policy adds to metrics.json (its section "llama_cells").
struct LlamaCellsCounters {
  int64_t context_shifts = 0, discarded_tokens = 0;
  int64_t kshift_passes = 0, kshift_cells = 0;
  Bytes kshift_bytes = 0;
  int64_t defrags = 0, defrag_moves = 0;
  Bytes defrag_bytes = 0;
  int64_t slots_contiguous = 0, slots_scattered = 0;
  int64_t max_n = 0;  // largest padded attention span
  Bytes host_read_bytes = 0;
  // Context shift off (llama-server): turns refused because the
  // conversation reached n_ctx, and replies stopped at it.
  int64_t requests_refused = 0, replies_truncated = 0;
};

// The cache behind the policy, for tests: its cells and its sizing.
class LlamaCellsView {
 public:
  virtual ~LlamaCellsView() = default;
  virtual const LlamaKvCells& cells() const = 0;
  virtual const LlamaKvSizing& sizing() const = 0;
  virtual const LlamaCellsCounters& counters() const = 0;
  virtual bool do_defrag() const = 0;
  virtual LlamaBehaviour behaviour() const = 0;
  virtual bool context_shift() const = 0;
  virtual uint32_t attention_n() const = 0;  // the padded n of the next graph
};

// Throws std::invalid_argument for an unknown behaviour or type, a row that is not whole
// blocks, or a quantized V stored transposed (llama.cpp requires flash
// attention, v_trans off, for a quantized V cache).
std::unique_ptr<GenieKvPolicy> make_llama_cells_policy(const GenieCacheShape& shape);
// The policy's sizing for `shape` (same checks).
LlamaKvSizing llama_cells_sizing(const GenieCacheShape& shape);

}  // namespace kvsim
