#pragma once
// The SLO search of `kvsim capacity --slo ... --workload FILE` (SPEC 3): the
// highest arrival rate (workload.arrival.rate_per_s of the scenario FILE) at
// which the simulated p99 TTFT and p99 TPOT meet the targets. The same
// workload shape (seed, lengths, process) is replayed at every rate; only the
// rate changes. Bracketing from the scenario's own rate (doubling or
// halving), then bisection until the bracket [lo, hi] is within rel_tol.
#include <optional>
#include <string>
#include <vector>

#include "sim/core/metrics.hpp"

namespace kvsim {

struct SloTarget {
  std::optional<double> ttft_p99_ms, tpot_p99_ms;
};

// Parses "ttft_p99_ms=X,tpot_p99_ms=Y" (either or both). Throws
// config::ConfigError pointing at --slo.
SloTarget parse_slo(const std::string& text);

struct SloProbe {
  double rate_per_s = 0;
  double ttft_p99_ms = 0, tpot_p99_ms = 0;
  bool meets = false;
};

struct SloSearchResult {
  bool found = false;     // some probed rate met the SLO
  double best_rate = 0;   // = lo: the highest probed rate that met it
  double lo = 0, hi = 0;  // lo meets, hi does not (hi = 0 when no failing rate was found)
  std::vector<SloProbe> probes;
};

struct SloSearchOptions {
  double rel_tol = 0.02;  // stop when (hi - lo) <= rel_tol * hi
  int max_probes = 40;
};

bool meets_slo(const RunMetrics& m, const SloTarget& slo);

// Runs the scenario `workload_path` with `sets` (plus the rate override) at
// each probed rate. Throws config::ConfigError on bad input.
SloSearchResult search_max_rate(const std::string& workload_path,
                                const std::vector<std::string>& sets, const SloTarget& slo,
                                const SloSearchOptions& options = {});

// One probe: the metrics of the scenario at `rate_per_s`.
RunMetrics run_at_rate(const std::string& workload_path, const std::vector<std::string>& sets,
                       double rate_per_s);

}  // namespace kvsim
