#pragma once
// One harness per trace format: the input's first 8 bytes set the replay
// (loop, time_scale, start, duration, max_requests, on_error), the rest is
// the trace file. The whole replay is streamed as a run would, so the time
// arithmetic (origin, passes, scaling) is exercised with the line parser.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/diagnostics.hpp"
#include "fuzz/fuzz_input.hpp"
#include "workloads/trace_file_reader.hpp"

namespace kvsim::fuzz {

inline int replay_trace(const char* format, const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  TraceWorkloadSpec spec;
  spec.format = format;
  spec.key_path = "workload.trace";
  spec.loop = 1 + (data[0] % 4 == 0 ? int64_t{data[1]} << 24 : data[1] % 4);
  spec.time_scale = data[2] % 3 == 0 ? 1.0 : (data[2] % 3 == 1 ? 1e6 : 1e-6);
  spec.start = (data[3] % 4 == 0) ? 0 : int64_t{data[3]} * 1'000'000'000;
  if (data[4] & 1) spec.duration = int64_t{data[4]} * 1'000'000;
  if (data[5] & 1) spec.max_requests = 1 + data[5];
  spec.skip_malformed = (data[6] & 1) != 0;
  const MemoryFile file(data + 8, size - 8);
  spec.path = file.path();
  try {
    TraceFileReader reader(spec);
    ReplayedRecord r;
    TimeNs previous = 0;
    // Bounded: a looped replay may be long, the reader is what is tested.
    for (int i = 0; i < 4096 && reader.next(r); ++i) {
      if (r.arrival < previous) __builtin_trap();  // arrivals never go back
      previous = r.arrival;
    }
  } catch (const config::ConfigError&) {
  }
  return 0;
}

}  // namespace kvsim::fuzz
