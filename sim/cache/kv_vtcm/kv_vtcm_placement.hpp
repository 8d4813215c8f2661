#pragma once
// Which layers' KV lives in VTCM while the LLM holds its VTCM window, the
// rest staying in DDR (seed 002 "VTCM": "KV Cache placement: Often placed in
// VTCM for fast access"; shared/data README: 8 MiB of VTCM on v73..v79, the
// window feature from v79). The scenario picks a placement by name:
// `htp.kv_vtcm.placement` (kv_vtcm_registry.hpp); each declares its keys.
//
// What residency means here (assumption A: neither the seed nor a public
// Genie source gives the mechanism, and the CPU that runs Genie's KV updates
// cannot address VTCM):
//   - the DDR buffers stay authoritative: the CPU updates them as in every
//     mode, byte for byte;
//   - a resident layer also has a mirror in VTCM over the largest view a
//     pass reads (ctx_size columns: the static shape of seed 002's AR-n
//     graphs reads the whole buffer, pad columns included);
//   - the mirror is filled from DDR when the window is granted (every turn:
//     between turns another model may have used that VTCM);
//   - a pass reads a resident layer's past KV from the mirror at the VTCM
//     bandwidth (the device file's htp.vtcm_bandwidth) instead of from DDR;
//   - after each update, what the update changed in a resident layer is
//     copied into its mirror from DDR (a SHIFT_CONCAT memmove changes the
//     whole row, POINTER_SHIFT only the new columns).
// The window is shared with the compiled graph's own tiles (weights and
// activations streamed through VTCM, htp.kv_vtcm.graph_vtcm): a placement
// says who yields when both do not fit, and the graph's share of the window
// prices its DDR spill as today (devices/htp_timing.cpp).
#include <cstdint>

#include "base/units.hpp"

namespace kvsim {

// The KV a placement chooses from.
struct KvVtcmGeometry {
  int64_t layers = 0;     // layers with KV (every layer of a Genie graph)
  Bytes layer_bytes = 0;  // K and V of one layer over ctx_size columns
};

// Which part of a layer's KV a placement keeps in VTCM.
enum class KvVtcmPart : uint8_t {
  kv,    // keys and values
  keys,  // keys only (read by QK^T; half of the layer)
};

// A placement for one window: what VTCM holds this turn.
struct KvVtcmPlan {
  int64_t layers = 0;     // resident layers
  Bytes kv_bytes = 0;     // VTCM the mirrors take (<= the window)
  Bytes graph_bytes = 0;  // VTCM left to the graph's tiles (window - kv_bytes)
  // Fraction of a pass's KV reads (and of an update's bytes) that the
  // mirrors hold: resident layers / layers x the part's fraction of a layer.
  double share = 0;
};

class KvVtcmPlacement {
 public:
  virtual ~KvVtcmPlacement() = default;
  // The plan for a window of `window` bytes when the graph's tiles need
  // `graph_need` of it. Never more KV than the window (kv_bytes <= window).
  virtual KvVtcmPlan place(Bytes window, Bytes graph_need, const KvVtcmGeometry& g) const = 0;
  // The KV bytes the placement is declared to take whatever the window (the
  // scenario checks them against the LLM's window); 0 when it takes only
  // what the graph leaves.
  virtual Bytes declared_bytes(const KvVtcmGeometry& g) const = 0;
};

// The bytes one resident layer takes for `part`.
inline Bytes kv_vtcm_unit_bytes(const KvVtcmGeometry& g, KvVtcmPart part) {
  return part == KvVtcmPart::keys ? g.layer_bytes / 2 : g.layer_bytes;
}

// A plan of `layers` resident layers of `part` in a window of `window`.
KvVtcmPlan kv_vtcm_plan(int64_t layers, KvVtcmPart part, Bytes window, const KvVtcmGeometry& g);

}  // namespace kvsim
