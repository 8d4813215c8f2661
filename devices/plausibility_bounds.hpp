#pragma once
// Plausibility bounds on the numbers of a device file, shared by the reader
// and the families that check their own keys. They catch a missing or wrong
// unit ("64" read as 64 bytes of HBM, "1.6GB/s" for "1.6TB/s" still passes,
// but "1.6B/s" does not), not unusual hardware: every bound is orders of
// magnitude away from any device the simulator targets.
#include <cstdint>

#include "base/units.hpp"

namespace kvsim::device_bounds {

constexpr Bytes kMinMemory = Bytes{1} << 20;                // 1 MiB
constexpr Bytes kMaxMemory = Bytes{1} << 50;                // 1 PiB
constexpr int64_t kMinBandwidth = 1'000'000;                // 1 MB/s
constexpr int64_t kMaxBandwidth = 1'000'000'000'000'000;    // 1 PB/s
constexpr int64_t kMinOpsRate = 1'000'000'000;              // 1 GOPS
constexpr int64_t kMaxOpsRate = 1'000'000'000'000'000'000;  // 1 EOPS

}  // namespace kvsim::device_bounds
