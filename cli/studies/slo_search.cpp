#include "cli/studies/slo_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "base/reader.hpp"
#include "reports/input_error.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serve/engine.hpp"
#include "workloads/arrival.hpp"

namespace kvsim {

SloTarget parse_slo(const std::string& text) {
  SloTarget t;
  std::stringstream parts(text);
  std::string part;
  auto fail = [](const std::string& problem) {
    throw_input_error("--slo", "slo", problem, "ttft_p99_ms=X,tpot_p99_ms=Y with positive numbers");
  };
  while (std::getline(parts, part, ',')) {
    const size_t eq = part.find('=');
    if (eq == std::string::npos) fail(fmt::format("'{}' is not KEY=VALUE", part));
    const std::string key = part.substr(0, eq);
    const std::string value = part.substr(eq + 1);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(v > 0))
      fail(fmt::format("'{}' is not a positive number", value));
    if (key == "ttft_p99_ms")
      t.ttft_p99_ms = v;
    else if (key == "tpot_p99_ms")
      t.tpot_p99_ms = v;
    else
      fail(fmt::format("unknown SLO key '{}'", key));
  }
  if (!t.ttft_p99_ms && !t.tpot_p99_ms) fail("no target given");
  return t;
}

bool meets_slo(const RunMetrics& m, const SloTarget& slo) {
  if (m.requests.completed == 0) return false;
  if (slo.ttft_p99_ms && m.latency_ms.ttft.p99 > *slo.ttft_p99_ms) return false;
  if (slo.tpot_p99_ms && m.latency_ms.tpot.p99 > *slo.tpot_p99_ms) return false;
  return true;
}

RunMetrics run_at_rate(const std::string& workload_path, const std::vector<std::string>& sets,
                       double rate_per_s) {
  std::vector<std::string> all = sets;
  all.push_back(fmt::format("workload.arrival.rate_per_s={:.9g}", rate_per_s));
  const ScenarioSpec spec = load_scenario(workload_path, all);
  NullRunSink sink;
  ServingEngine engine(spec, &sink);
  return engine.run();
}

SloSearchResult search_max_rate(const std::string& workload_path,
                                const std::vector<std::string>& sets, const SloTarget& slo,
                                const SloSearchOptions& options) {
  SloSearchResult r;
  // The scenario's own rate (after --set) is where the bracket search starts.
  double start = 1.0;
  {
    config::LoadContext ctx;
    YAML::Node doc = config::load_file(workload_path, ctx);
    for (const auto& o : sets) config::apply_override(doc, o, ctx);
    ctx.diagnostics.throw_if_any();
    (void)load_scenario(workload_path, sets);  // every other error before the first probe
    try {
      const YAML::Node& cdoc = doc;
      const YAML::Node rate = cdoc["workload"]["arrival"]["rate_per_s"];
      if (rate && rate.IsScalar()) start = std::max(1e-3, rate.as<double>());
    } catch (const YAML::Exception&) {
      start = 1.0;  // no numeric rate in the file: start the bracket at 1 request/s
    }
  }
  auto probe = [&](double rate) {
    const RunMetrics m = run_at_rate(workload_path, sets, rate);
    SloProbe p{rate, m.latency_ms.ttft.p99, m.latency_ms.tpot.p99, meets_slo(m, slo)};
    r.probes.push_back(p);
    return p.meets;
  };
  double lo = 0, hi = 0;
  if (probe(start)) {
    lo = start;
    // Doubling stops at the highest rate a scenario may state: met there,
    // the SLO holds at every rate (hi stays 0), and no probe is made at a
    // rate the user's scenario could not have written.
    for (double rate = std::min(start * 2, kMaxRatePerS);
         rate > lo && static_cast<int>(r.probes.size()) < options.max_probes;
         rate = std::min(rate * 2, kMaxRatePerS)) {
      if (!probe(rate)) {
        hi = rate;
        break;
      }
      lo = rate;
    }
  } else {
    hi = start;
    for (double rate = start / 2; static_cast<int>(r.probes.size()) < options.max_probes;
         rate /= 2) {
      if (probe(rate)) {
        lo = rate;
        break;
      }
      hi = rate;
    }
  }
  // Bisection keeps lo meeting and hi failing.
  while (lo > 0 && hi > 0 && hi - lo > options.rel_tol * hi &&
         static_cast<int>(r.probes.size()) < options.max_probes) {
    const double mid = 0.5 * (lo + hi);
    if (probe(mid))
      lo = mid;
    else
      hi = mid;
  }
  r.found = lo > 0;
  r.best_rate = lo;
  r.lo = lo;
  r.hi = hi;
  return r;
}

}  // namespace kvsim
