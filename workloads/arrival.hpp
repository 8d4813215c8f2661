#pragma once
// Arrival processes: when requests (or chat sessions) reach the server.
// `arrival: {process: NAME, ...}` picks an implementation by name from the
// explicit table in arrival.cpp.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/reader.hpp"
#include "base/units.hpp"
#include "workloads/distribution.hpp"
#include "workloads/rng.hpp"

namespace kvsim {

// Highest accepted `rate_per_s`: one arrival per nanosecond is the clock's
// resolution.
constexpr double kMaxRatePerS = 1e9;

// `process: closed` (benchmark clients, as `vllm bench serve
// --max-concurrency` with no request rate): `concurrency` clients each send
// their next request `think_time` after their previous one completes.
// client_loop.cpp turns this into arrivals; the process itself only says so.
struct ClosedLoopParams {
  int64_t concurrency = 1;
  std::shared_ptr<const ClampedDistribution> think_time;  // ns
};

class ArrivalProcess {
 public:
  virtual ~ArrivalProcess() = default;
  virtual std::string_view name() const = 0;
  // Time of arrival `index` (>= 1) given arrival index - 1 at `previous`;
  // arrival 0 is at time 0 (the run starts with its first request, as a
  // benchmark client does). `rng` is this arrival's own generator, keyed by
  // (seed, RandomStream::arrival, index), so the result is a pure function of
  // the seed and the index: other quantities never move arrivals.
  virtual TimeNs next_arrival(TimeNs previous, uint64_t index, Rng& rng) const = 0;
  // Long-run arrivals per second (0 for a closed loop: it follows service).
  virtual double rate_per_s() const = 0;
  // Non-null for `process: closed`: the arrivals depend on completions.
  virtual const ClosedLoopParams* closed_loop() const { return nullptr; }
};

// Parses an `arrival:` map. Errors go to node.context().diagnostics; returns
// nullptr when there was any.
std::shared_ptr<const ArrivalProcess> parse_arrival(const config::Node& node);

// Names accepted by `process:`, sorted.
std::vector<std::string> arrival_processes();

}  // namespace kvsim
