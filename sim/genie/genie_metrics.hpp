#pragma once
// The genie engine's counters (seed 002): what the Genie buffers' updates
// did, the VTCM the LLM asked for and got, and every HTP session; and the
// section that writes them.
#include <cstdint>
#include <string>
#include <vector>

#include "base/units.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {

struct GenieRunMetrics {
  Bytes buffer_bytes = 0;               // KV buffers allocated (all layers, K and V)
  uint64_t compactions = 0;             // pointer_shift re-packs when headroom ran out
  uint64_t tensor_registrations = 0;    // pointer_shift: KV tensors re-registered at new offsets
  Bytes mask_bytes = 0;                 // attention masks the host wrote before the passes
  uint64_t variant_switches = 0;        // AR-m -> AR-n realignments
  uint64_t rewinds = 0;                 // rejected speculative tokens rolled back
  int64_t attention_read_tokens = 0;    // KV columns attention read, summed over passes
  int64_t attention_useful_tokens = 0;  // ... of which held valid tokens
  int64_t context_resets = 0;  // dialog turns that found ctx_size full (no window): cache cleared
  Bytes session_io_bytes = 0;  // dialog session cache saved + restored (seed 002 dump/loadCache)
  Bytes vtcm_bytes = 0;        // memory.vtcm_bytes: the LLM's VTCM grant
  // VTCM (seed 002, data README "VTCM window feature").
  struct {
    Bytes requested_bytes = 0;  // the LLM session (the first)
    Bytes granted_bytes = 0;    // smallest grant it ran with
    double wait_ms = 0;         // summed over all sessions
    int64_t sessions_waited = 0;
    // KV resident in the LLM's window (sim/cache/kv_vtcm/): the fewest
    // layers (and their bytes) a turn held, and the bytes filled into VTCM
    // at grants, read from it by passes and synced into it after updates.
    int64_t kv_layers = 0;
    Bytes kv_bytes = 0;
    Bytes kv_fill_bytes = 0, kv_read_bytes = 0, kv_sync_bytes = 0;
  } vtcm;
  // One HTP session (an LLM dialog or another model sharing the NPU).
  struct Session {
    std::string name;
    Bytes vtcm_requested_bytes = 0, vtcm_granted_bytes = 0;
    double vtcm_wait_ms = 0;  // time spent waiting for VTCM
    int64_t runs = 0;         // VTCM acquisitions (turns or duty-cycle bursts)
  };
  std::vector<Session> sessions;
};

MetricsSection genie_metrics_section();

}  // namespace kvsim
