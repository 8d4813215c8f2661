// The agentic trace reader and the source that replays its session graph.
// The input's first 8 bytes set the replay (time_scale, on_error) and the
// order in which calls in flight complete; the rest is the trace file. The
// whole file is read and checked (cycles, parents, branch calls) before the
// replay, then calls are taken and completed as an engine would: whatever
// the graph and the completion order, time never goes back, and once every
// call taken has completed and no arrival is known, the source must say it
// is exhausted (a join that waits forever would leave it open).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/diagnostics.hpp"
#include "fuzz/fuzz_input.hpp"
#include "workloads/trace_agentic.hpp"

namespace {

struct InFlight {
  kvsim::Request request;
  kvsim::TimeNs done = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvsim;
  if (size < 8) return 0;
  TraceWorkloadSpec spec;
  spec.format = "agentic";
  spec.key_path = "workload.trace";
  spec.time_scale = data[0] % 3 == 0 ? 1.0 : (data[0] % 3 == 1 ? 1e3 : 1e-3);
  spec.skip_malformed = (data[1] & 1) != 0;
  const uint64_t order = uint64_t{data[2]} | uint64_t{data[3]} << 8;
  const TimeNs service = 1 + int64_t{data[4]} * 1'000'000;  // ns a call spends in the "engine"
  const fuzz::MemoryFile file(data + 8, size - 8);
  spec.path = file.path();
  try {
    const auto source = detail::make_agentic_trace_source(spec, 7, 32000);
    std::vector<InFlight> running;
    TimeNs now = 0;
    uint64_t pick = order;
    // Bounded: a graph may be long, the reader and the joins are what is tested.
    for (int step = 0; step < 4096; ++step) {
      const std::optional<TimeNs> next = source->next_arrival();
      auto earliest =
          std::min_element(running.begin(), running.end(),
                           [](const InFlight& a, const InFlight& b) { return a.done < b.done; });
      if (next && (running.empty() || *next <= earliest->done)) {
        if (*next < now) __builtin_trap();  // an arrival before the time that released it
        now = *next;
        Request r = source->take();
        if (r.arrival != *next) __builtin_trap();
        // Calls in flight finish after `service`, stretched by the order bytes.
        pick = pick * 6364136223846793005ULL + 1442695040888963407ULL;
        const TimeNs done = now + service * static_cast<TimeNs>(1 + (pick >> 61));
        running.push_back({std::move(r), done});
        continue;
      }
      if (running.empty()) {
        if (!source->exhausted()) __builtin_trap();  // nothing in flight, nothing known, not done
        break;
      }
      now = earliest->done;
      const Request done = std::move(earliest->request);
      running.erase(earliest);
      source->on_complete(done, now);
    }
  } catch (const config::ConfigError&) {
  }
  return 0;
}
