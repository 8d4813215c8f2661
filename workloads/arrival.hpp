#pragma once
// Arrival processes: when requests (or chat sessions) reach the server.
// `arrival: {process: NAME, ...}` picks an implementation by name from the
// explicit table in arrival.cpp.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config/reader.hpp"
#include "sim/config/units.hpp"
#include "workloads/rng.hpp"

namespace kvsim {

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
  // Long-run arrivals per second.
  virtual double rate_per_s() const = 0;
};

// Parses an `arrival:` map. Errors go to node.context().diagnostics; returns
// nullptr when there was any.
std::shared_ptr<const ArrivalProcess> parse_arrival(const config::Node& node);

// Names accepted by `process:`, sorted.
std::vector<std::string> arrival_processes();

}  // namespace kvsim
