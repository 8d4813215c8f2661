#include "cli/studies/search.hpp"
#include "reports/output_dir.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {
namespace fs = std::filesystem;

// Each candidate climbs its rate ladder one probe at a time; candidates
// climb side by side. Which probes run depends only on each candidate's own
// results, never on timing, so the report is the same for any --jobs.
class SearchSource : public TaskSource {
 public:
  SearchSource(const SweepSpec& spec, SearchResult& r, std::string dir)
      : spec_(spec),
        r_(r),
        dir_(std::move(dir)),
        next_rate_(r.candidates.size(), 0),
        busy_(r.candidates.size(), false),
        stopped_(r.candidates.size(), false) {
    for (size_t c = 0; c < r.candidates.size(); ++c)
      stopped_[c] = !r.candidates[c].load_error.empty();
  }

  std::optional<VariantTask> next() override {
    const auto& rates = spec_.search->rates;
    for (size_t c = 0; c < r_.candidates.size(); ++c) {
      if (busy_[c] || stopped_[c] || next_rate_[c] >= rates.size()) continue;
      busy_[c] = true;
      const double rate = rates[next_rate_[c]];
      const auto& v = r_.candidates[c].variant;
      VariantTask t;
      t.index = c * rates.size() + next_rate_[c];
      t.label = v.label + " @ " + format_set_value(rate, false) + "/s";
      t.sets = v.sets;
      t.sets.push_back(spec_.search->rate_key + "=" + format_set_value(rate, false));
      t.folder = fmt::format("{}/{:04}-rate-{}", dir_, c, format_set_value(rate, false));
      t.devices = r_.candidates[c].devices;
      return t;
    }
    return std::nullopt;
  }

  void done(const VariantOutcome& o) override {
    const size_t n = spec_.search->rates.size();
    const size_t c = o.index / n;
    SearchProbe p{c, spec_.search->rates[o.index % n], o, false, {}};
    if (o.metrics.is_null()) {
      p.why = o.reason.empty() ? fmt::format("{}: {}", o.status, o.message)
                               : fmt::format("{} ({}): {}", o.status, o.reason, o.message);
    } else {
      p.meets = probe_meets_slo(o.metrics, spec_.search->slo, &p.why);
    }
    busy_[c] = false;
    ++next_rate_[c];
    if (!p.meets) stopped_[c] = true;  // prune: higher rates only make it worse
    probes.push_back(std::move(p));
  }

  std::vector<SearchProbe> probes;

 private:
  const SweepSpec& spec_;
  SearchResult& r_;
  std::string dir_;
  std::vector<size_t> next_rate_;
  std::vector<bool> busy_, stopped_;
};

std::string fmt_ms(double v) {
  return fmt::format("{:.1f} ms", v);
}

void judge_candidates(const SweepSpec& spec, SearchResult& r) {
  const SearchSection& s = *spec.search;
  for (size_t c = 0; c < r.candidates.size(); ++c) {
    auto& cand = r.candidates[c];
    if (!cand.load_error.empty()) {
      cand.reason = "pruned at load (exit 2, nothing run): " + cand.load_error;
      continue;
    }
    const SearchProbe* last_met = nullptr;
    const SearchProbe* first_miss = nullptr;
    for (const auto& p : r.probes) {
      if (p.candidate != c) continue;
      if (p.meets)
        last_met = &p;
      else if (!first_miss)
        first_miss = &p;
    }
    std::string missed;
    if (first_miss && first_miss->outcome.status == "failed") {
      cand.reason = fmt::format("undetermined: the probe at {}/s {}",
                                format_set_value(first_miss->rate, false), first_miss->why);
      continue;
    }
    if (first_miss) {
      missed = fmt::format("missed at {}/s ({})", format_set_value(first_miss->rate, false),
                           first_miss->why);
      if (first_miss->rate < s.rates.back()) missed += "; higher rates not run";
    }
    if (!last_met) {
      cand.reason = "pruned: " + (missed.empty() ? std::string("no probe met the SLO") : missed);
      continue;
    }
    cand.best_rate = last_met->rate;
    cand.best_throughput_per_device = throughput_per_device(last_met->outcome);
    cand.instances = static_cast<int64_t>(std::ceil(r.target_rate / *cand.best_rate - 1e-9));
    cand.total_devices = cand.instances * cand.devices;
    cand.eligible = cand.instances <= s.max_instances;
    cand.reason = fmt::format(
        "meets the SLO up to {}/s per instance{}: {} instance(s) x {} device(s) = {} devices "
        "for {}/s, {:.1f} output tokens/s per device",
        format_set_value(*cand.best_rate, false), missed.empty() ? "" : " (" + missed + ")",
        cand.instances, cand.devices, cand.total_devices, format_set_value(r.target_rate, false),
        cand.best_throughput_per_device);
    if (!cand.eligible) cand.reason += fmt::format(" (beyond max_instances {})", s.max_instances);
  }
  // The choice: fewest devices (then throughput per device), or throughput
  // per device (then fewest devices); the lower index breaks a full tie.
  const bool by_devices = s.objective == "least_devices";
  for (const auto& p : r.probes) {
    if (p.outcome.status != "failed") continue;
    if (p.outcome.reason == "internal")
      ++r.failed_internal;
    else
      ++r.failed_environment;
  }
  const auto better = [by_devices](const SearchCandidate& x, const SearchCandidate& b) {
    const bool better_tpd = x.best_throughput_per_device > b.best_throughput_per_device;
    const bool same_tpd = x.best_throughput_per_device == b.best_throughput_per_device;
    return by_devices ? (x.total_devices < b.total_devices ||
                         (x.total_devices == b.total_devices && better_tpd))
                      : (better_tpd || (same_tpd && x.total_devices < b.total_devices));
  };
  // A failed probe leaves the search undetermined: nothing is chosen, overall
  // or per device.
  for (size_t c = 0; c < r.candidates.size() && !r.undetermined(); ++c) {
    const auto& x = r.candidates[c];
    if (x.eligible && (!r.chosen || better(x, r.candidates[*r.chosen]))) r.chosen = c;
  }
  // The same choice among each device's candidates (a `device` axis).
  for (size_t c = 0; c < r.candidates.size(); ++c) {
    std::string device;
    for (const std::string& set : r.candidates[c].variant.sets)
      if (set.rfind("device=", 0) == 0) device = set.substr(7);
    if (device.empty()) continue;
    auto it = std::find_if(r.per_device.begin(), r.per_device.end(),
                           [&](const SearchResult::PerDevice& p) { return p.device == device; });
    if (it == r.per_device.end()) {
      r.per_device.push_back({device, std::nullopt});
      it = r.per_device.end() - 1;
    }
    const auto& x = r.candidates[c];
    if (r.undetermined() || !x.eligible) continue;
    if (!it->chosen || better(x, r.candidates[*it->chosen])) it->chosen = c;
  }
  for (size_t c = 0; c < r.candidates.size(); ++c) {
    auto& cand = r.candidates[c];
    if (r.chosen && c == *r.chosen) {
      cand.reason = fmt::format("CHOSEN ({}): ",
                                by_devices ? "fewest devices" : "most throughput per device") +
                    cand.reason;
    } else if (cand.eligible && r.chosen) {
      const auto& b = r.candidates[*r.chosen];
      cand.reason +=
          by_devices && cand.total_devices != b.total_devices
              ? fmt::format("; passed over: {} devices vs {}", cand.total_devices, b.total_devices)
              : fmt::format("; passed over: {:.1f} vs {:.1f} tokens/s per device",
                            cand.best_throughput_per_device, b.best_throughput_per_device);
    }
  }
  std::vector<ParetoPoint> points;
  for (size_t i = 0; i < r.probes.size(); ++i) {
    const auto& p = r.probes[i];
    const auto ttft = metric_value(p.outcome.metrics, "latency_ms.ttft.p99");
    if (p.meets && ttft) points.push_back({i, throughput_per_device(p.outcome), *ttft});
  }
  r.front = pareto_front(std::move(points));
}

}  // namespace

bool probe_meets_slo(const nlohmann::ordered_json& metrics, const SearchSlo& slo,
                     std::string* why) {
  std::vector<std::string> misses;
  const auto check = [&](const std::optional<double>& bound, const char* key, const char* name) {
    if (!bound) return;
    const double v = metric_value(metrics, key).value_or(INFINITY);
    if (v > *bound) misses.push_back(fmt::format("{} {} > {}", name, fmt_ms(v), fmt_ms(*bound)));
  };
  check(slo.ttft_p99_ms, "latency_ms.ttft.p99", "TTFT p99");
  check(slo.tpot_p99_ms, "latency_ms.tpot.p99", "TPOT p99");
  check(slo.ttft_p90_ms, "latency_ms.ttft.p90", "TTFT p90");
  check(slo.tpot_p90_ms, "latency_ms.tpot.p90", "TPOT p90");
  // A request turned away is a request not served within any SLO.
  const double rejected = metric_value(metrics, "requests.rejected").value_or(0);
  if (rejected > 0) misses.push_back(fmt::format("{} requests rejected", rejected));
  *why = "meets";
  if (!misses.empty()) {
    *why = misses[0];
    for (size_t i = 1; i < misses.size(); ++i) *why += ", " + misses[i];
  }
  return misses.empty();
}

SearchResult run_search(const SweepSpec& spec, const SweepOptions& options) {
  const SearchSection& s = *spec.search;
  for (const auto& key : sweep_axis_keys(spec)) {
    if (key == s.rate_key) {
      config::Diagnostic d;
      d.where = spec.key_locations.at(key);
      d.key_path = "grid." + key;
      d.problem = "the search's rate is not a grid axis";
      d.allowed = "list the rates under search.rates";
      throw config::ConfigError({d});
    }
  }
  announce_large_grid(spec, "search", options.quiet);
  sweep_variant_count(spec);
  check_sweep_loads(spec);
  SearchResult r;
  r.folder = options.out.empty() ? "out/search-" + safe_path_component(spec.name) : options.out;
  r.target_rate = s.target_rate_per_s > 0 ? s.target_rate_per_s : s.rates.back();
  for (auto& v : expand_sweep(spec)) {
    SearchCandidate c;
    c.variant = v;
    if (auto rejected = preload_variant(spec.base, v.index, v.label, v.sets, &c.devices))
      c.load_error = rejected->message;
    r.candidates.push_back(std::move(c));
  }
  const std::string probes_dir = r.folder + "/probes";
  claim_output_folder(r.folder, options.force);
  fs::remove_all(probes_dir);
  fs::create_directories(probes_dir);
  SearchSource source(spec, r, probes_dir);
  SweepProgress progress(r.candidates.size() * s.rates.size(), 0, options.progress);
  PoolOptions pool;
  pool.kvsim_binary = options.kvsim_binary;
  pool.base = spec.base;
  pool.jobs = options.jobs > 0 ? options.jobs : default_jobs();
  pool.on_outcome = [&](const VariantOutcome& o) { progress.tick(o); };
  run_variant_pool(source, pool, r.candidates.size());
  r.probes = std::move(source.probes);
  std::sort(r.probes.begin(), r.probes.end(), [](const SearchProbe& a, const SearchProbe& b) {
    return a.candidate != b.candidate ? a.candidate < b.candidate : a.rate < b.rate;
  });
  judge_candidates(spec, r);
  write_search_files(spec, r);
  return r;
}

}  // namespace kvsim
