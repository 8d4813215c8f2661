#pragma once
// What a Qualcomm Hexagon NPU (HTP) adds to a device file (`kind: htp`,
// SPEC 7, seed 002, shared/data README "Snapdragon"): VTCM and its
// allocation rules, the NPU process address-space limit, the CPU threads that
// run Genie's KV updates, the cost of switching AR-n graphs, and the storage
// that cache save/restore goes through. DeviceSpec's common fields keep their
// meaning: memory_bandwidth is the LPDDR bandwidth the NPU sees,
// matrix_*/vector_* are HMX/HVX rates (with efficiencies fitted on measured
// rates, since no trustworthy TOPS figure is published).
#include <cstdint>

#include "base/units.hpp"

namespace kvsim {

struct HtpSpec {
  int64_t hexagon_version = 75;  // 73 (8 Gen 2), 75 (8 Gen 3), 79 (8 Elite)
  Bytes vtcm_bytes = 8LL << 20;
  // v79+: a process can be confined to a contiguous VTCM window and others
  // use the rest; before, a request is mapped in whole pages and the rest of
  // the page is lost to other processes (HAP_compute_res).
  bool vtcm_windows = false;
  Bytes vtcm_window_granule = 256LL << 10;  // v79 window size granularity
  Bytes address_space_bytes = 0;            // NPU process VA limit (~3.5 GB, measured)
  int64_t cpu_memcpy_bandwidth = 0;         // bytes/s of one CPU update thread
  int64_t max_update_threads = 4;
  TimeNs graph_switch = 0;        // switching the executing AR-n graph (variant)
  int64_t storage_bandwidth = 0;  // bytes/s for cache save/restore (UFS)
  // DDR traffic multiplier when a pass runs with less VTCM than it asked
  // for: ddr_bytes *= 1 + vtcm_spill_factor * (1 - granted / requested).
  double vtcm_spill_factor = 0.0;
  // bytes/s at which the graph reads KV resident in VTCM
  // (sim/cache/kv_vtcm/); 0: the file gives none, and no placement may put
  // KV in VTCM on it.
  int64_t vtcm_bandwidth = 0;
};

}  // namespace kvsim
