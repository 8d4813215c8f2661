#pragma once
// `kvsim search SEARCH.yaml` (SPEC 11 "Studies"): the configurations (the
// file's grid, and samples) that meet an SLO on TTFT/TPOT percentiles, and
// the one to buy: the fewest devices (tensor ranks x instances) for the
// target rate, or the highest throughput per device.
//
// Each candidate climbs the ascending rate ladder one probe at a time and is
// pruned early: a candidate that does not load (the model does not fit: exit
// 2 at load) runs nothing, and one that misses the SLO at a rate is not run
// at higher rates (latency only grows with load on the same request stream).
// Candidates climb in parallel on the sweep's worker processes.
//
// Instances are replicas that split the target rate evenly (no router is
// modelled): a candidate meeting the SLO at rate R per instance serves the
// target T with ceil(T / R) instances. Every probe, prune and choice is
// written with its reason to search.md / search.html / search.json.
#include <optional>
#include <string>
#include <vector>

#include "cli/studies/sweep.hpp"
#include "cli/studies/sweep_report.hpp"

namespace kvsim {

struct SearchProbe {
  size_t candidate = 0;
  double rate = 0;
  VariantOutcome outcome;
  bool meets = false;
  std::string why;  // "TTFT p99 812.3 ms > 500 ms", "meets"
};

struct SearchCandidate {
  SweepVariant variant;
  int64_t devices = 0;              // tensor ranks of one instance
  std::string load_error;           // non-empty: rejected at load (does not fit, ...)
  std::optional<double> best_rate;  // highest probed rate meeting the SLO
  double best_throughput_per_device = 0;
  int64_t instances = 0, total_devices = 0;  // for the target rate, when met
  bool eligible = false;                     // met, within max_instances
  std::string reason;                        // one line: why chosen, pruned or passed over
};

struct SearchResult {
  std::string folder;
  double target_rate = 0;
  std::vector<SearchCandidate> candidates;
  std::vector<SearchProbe> probes;  // by candidate, then rate
  std::optional<size_t> chosen;     // a candidate index
  std::vector<ParetoPoint> front;   // index: a probe index
  // When `device` is a grid axis: per device, in grid order, the candidate
  // the objective chooses among that device's (none when none is eligible),
  // so a search across device kinds answers how many of each kind.
  struct PerDevice {
    std::string device;
    std::optional<size_t> chosen;
  };
  std::vector<PerDevice> per_device;
  // Probes the environment or kvsim failed (status "failed"): the search is
  // then undetermined, no candidate is chosen and no "none meets" is said.
  size_t failed_environment = 0, failed_internal = 0;
  bool undetermined() const { return failed_environment + failed_internal > 0; }
};

// The SLO verdict of one probe's metrics, with the reason.
bool probe_meets_slo(const nlohmann::ordered_json& metrics, const SearchSlo& slo, std::string* why);

SearchResult run_search(const SweepSpec& spec, const SweepOptions& options);

void write_search_files(const SweepSpec& spec, const SearchResult& result);

// One device's answer: "LABEL (N devices)", "undetermined" or "none meets
// the SLO" (the command's summary and search.md say it alike).
std::string per_device_text(const SearchResult& r, const SearchResult::PerDevice& p);

}  // namespace kvsim
