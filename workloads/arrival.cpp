// The arrival processes and their table.
#include "workloads/arrival.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/checked_math.hpp"
#include "workloads/distribution_impl.hpp"
#include "workloads/nearest_integer.hpp"
#include "workloads/workload_params.hpp"

namespace kvsim {
namespace {

double mean_gap_ns(double rate_per_s) {
  return static_cast<double>(kNsPerS) / rate_per_s;
}

// Where `rate_per_s` was written: an arrival beyond the representable span
// (a tiny rate over many requests) is reported there, never wrapped.
struct RateKey {
  config::Location where;
  std::string path;

  // previous + round(gap_ns), exactly as integers when representable.
  TimeNs arrival_at(TimeNs previous, double gap_ns) const {
    // A gap in [0, 2^62) rounds into the span, to round_in_range's value:
    // inline, where that took calls to std::round and checked_add.
    if (gap_ns >= 0 && gap_ns < static_cast<double>(kMaxSimulatedTimeNs)) {
      TimeNs t = 0;
      if (!__builtin_add_overflow(previous, round_half_away(gap_ns), &t) &&
          t <= kMaxSimulatedTimeNs)
        return t;
    }
    const auto gap = round_in_range(gap_ns, 0, kMaxSimulatedTimeNs);
    const auto t = gap ? checked_add(previous, *gap) : std::nullopt;
    if (!t || *t > kMaxSimulatedTimeNs)
      throw_unrepresentable(
          where, path,
          fmt::format("the arrivals this rate gives reach {:.3g} ns, beyond {}",
                      static_cast<double>(previous) + gap_ns, simulated_span_text()),
          "a higher rate, or fewer requests");
    return *t;
  }
};

// Open-loop Poisson arrivals: exponential gaps (the default of vLLM's and
// SGLang's serving benchmarks with `--request-rate`).
class PoissonArrivals final : public ArrivalProcess {
 public:
  PoissonArrivals(double rate, RateKey key) : rate_(rate), key_(std::move(key)) {}
  std::string_view name() const override { return "poisson"; }
  TimeNs next_arrival(TimeNs previous, uint64_t, Rng& rng) const override {
    const double gap = rng.exponential(mean_gap_ns(rate_));
    return key_.arrival_at(previous, gap);
  }
  double rate_per_s() const override { return rate_; }

 private:
  double rate_;
  RateKey key_;
};

// Gamma-distributed gaps with coefficient of variation `cv`: cv = 1 is
// Poisson, cv > 1 bursty, cv < 1 smoother (vLLM's `--burstiness` is 1/cv^2,
// the gamma shape). Shape k = 1/cv^2, scale = mean gap / k.
class GammaArrivals final : public ArrivalProcess {
 public:
  GammaArrivals(double rate, double cv, RateKey key)
      : rate_(rate), shape_(1.0 / (cv * cv)), key_(std::move(key)) {}
  std::string_view name() const override { return "gamma"; }
  TimeNs next_arrival(TimeNs previous, uint64_t, Rng& rng) const override {
    const double gap = rng.gamma(shape_, mean_gap_ns(rate_) / shape_);
    return key_.arrival_at(previous, gap);
  }
  double rate_per_s() const override { return rate_; }

 private:
  double rate_;
  double shape_;
  RateKey key_;
};

// Evenly spaced arrivals. Arrival i is at round(i / rate): computed from the
// index, not by summing rounded gaps, so a rate like 3/s does not drift.
class ConstantArrivals final : public ArrivalProcess {
 public:
  ConstantArrivals(double rate, RateKey key) : rate_(rate), key_(std::move(key)) {}
  std::string_view name() const override { return "constant"; }
  TimeNs next_arrival(TimeNs, uint64_t index, Rng&) const override {
    return key_.arrival_at(0, static_cast<double>(index) * mean_gap_ns(rate_));
  }
  double rate_per_s() const override { return rate_; }

 private:
  double rate_;
  RateKey key_;
};

// Closed-loop clients (`process: closed`): the request stream underneath
// sees every request "arrive" at 0; client_loop.cpp gives each one its real
// send time (a client's previous completion + think time).
class ClosedArrivals final : public ArrivalProcess {
 public:
  explicit ClosedArrivals(ClosedLoopParams params) : params_(std::move(params)) {}
  std::string_view name() const override { return "closed"; }
  TimeNs next_arrival(TimeNs, uint64_t, Rng&) const override { return 0; }
  double rate_per_s() const override { return 0.0; }
  const ClosedLoopParams* closed_loop() const override { return &params_; }

 private:
  ClosedLoopParams params_;
};

// Largest number of closed-loop clients: far above any benchmark's
// --max-concurrency; bounds the clients a source tracks.
constexpr int64_t kMaxClients = 1'000'000;

// Reads declared key `key` of `info` as a rate-like number that must be > 0
// (the generic reader takes an inclusive range; this one excludes 0).
std::optional<double> positive(config::MapReader& reader, const config::ComponentInfo& info,
                               std::string_view key, const char* allowed) {
  const double max = info.at(key).max;
  const config::Node c = reader.child(key);
  if (!c.defined()) {
    reader.node().context().diagnostics.error(reader.node().location(), c.path(),
                                              "is required but missing", allowed);
    return std::nullopt;
  }
  const auto v = c.as_double(-max, max);
  if (v && *v <= 0) {
    c.error(fmt::format("must be greater than 0, got {}", c.raw().Scalar()), allowed);
    return std::nullopt;
  }
  return v;
}

RateKey rate_key(config::MapReader& reader) {
  const config::Node c = reader.child("rate_per_s");
  return {c.location(), c.path()};
}

config::ParamSpec rate_param(const char* doc) {
  return config::own_reader(
      config::number_param("rate_per_s", std::nullopt, 0.0, kMaxRatePerS, "arrivals/s", doc));
}

config::ComponentInfo poisson_info() {
  return {"arrival",
          "poisson",
          "open loop, exponential gaps (vLLM's and SGLang's --request-rate)",
          {rate_param("mean arrivals per second, > 0")}};
}

config::ComponentInfo gamma_info() {
  using namespace config;
  // cv capped at 100: shape 1e-4 is already one burst per run.
  return {"arrival",
          "gamma",
          "open loop, gamma gaps: cv = 1 is Poisson, > 1 bursty (vLLM's --burstiness = 1/cv^2)",
          {rate_param("mean arrivals per second, > 0"),
           own_reader(number_param("cv", std::nullopt, 0.0, 100.0, "",
                                   "coefficient of variation of the gaps, > 0"))}};
}

config::ComponentInfo constant_info() {
  return {"arrival",
          "constant",
          "evenly spaced arrivals",
          {rate_param("arrivals per second, > 0, exactly 1/rate apart")}};
}

config::ComponentInfo closed_info() {
  using namespace config;
  ParamSpec think =
      section_param("think_time", false, "{dist: ..., ...} or a duration",
                    "from a completion to that client's next request (absent: 0s, as benchmark "
                    "tools send at once)");
  think.unit = "time";
  return {"arrival",
          "closed",
          "closed-loop benchmark clients (vllm bench serve --max-concurrency, no rate)",
          {int_param("concurrency", std::nullopt, 1, kMaxClients, "clients",
                     "clients, each with one request in flight at a time"),
           think}};
}

std::unique_ptr<ArrivalProcess> parse_poisson_arrivals(config::MapReader& reader) {
  const auto rate = positive(reader, poisson_info(), "rate_per_s", "arrivals per second, > 0");
  if (!rate) return nullptr;
  return std::make_unique<PoissonArrivals>(*rate, rate_key(reader));
}

std::unique_ptr<ArrivalProcess> parse_gamma_arrivals(config::MapReader& reader) {
  const config::ComponentInfo info = gamma_info();
  const auto rate = positive(reader, info, "rate_per_s", "arrivals per second, > 0");
  const auto cv = positive(reader, info, "cv", "a number in (0, 100]; 1 is Poisson, > 1 bursty");
  if (!rate || !cv) return nullptr;
  return std::make_unique<GammaArrivals>(*rate, *cv, rate_key(reader));
}

std::unique_ptr<ArrivalProcess> parse_constant_arrivals(config::MapReader& reader) {
  const auto rate = positive(reader, constant_info(), "rate_per_s", "arrivals per second, > 0");
  if (!rate) return nullptr;
  return std::make_unique<ConstantArrivals>(*rate, rate_key(reader));
}

std::unique_ptr<ArrivalProcess> parse_closed_arrivals(config::MapReader& reader) {
  auto& diagnostics = reader.node().context().diagnostics;
  const size_t errors_before = diagnostics.size();
  const config::ParamValues values = config::read_params(reader, closed_info());
  ClosedLoopParams params;
  params.concurrency = values.integer("concurrency");
  // think_time: DIST of durations (default 0s: send at once)
  const config::Node think = reader.child("think_time");
  if (think.defined()) {
    if (auto d = parse_distribution(think, {QuantityKind::duration, 0, ""}))
      params.think_time = std::make_shared<const ClampedDistribution>(std::move(*d));
  } else {
    params.think_time = std::make_shared<const ClampedDistribution>(
        std::shared_ptr<const Distribution>(detail::make_constant(0.0)), 0, 0);
  }
  if (diagnostics.size() != errors_before || !params.think_time) return nullptr;
  return std::make_unique<ClosedArrivals>(std::move(params));
}

struct ArrivalEntry {
  const char* name;
  config::ComponentInfo (*info)();  // its keys
  std::unique_ptr<ArrivalProcess> (*parse)(config::MapReader&);
};

// Every process `process:` accepts; a test compares this table with the docs.
constexpr ArrivalEntry kArrivalProcesses[] = {
    {"closed", closed_info, parse_closed_arrivals},
    {"constant", constant_info, parse_constant_arrivals},
    {"gamma", gamma_info, parse_gamma_arrivals},
    {"poisson", poisson_info, parse_poisson_arrivals},
};

// The key every process shares.
config::ComponentInfo arrival_section_info() {
  return {"section",
          "arrival",
          "the key every arrival process shares",
          {config::choice_param("process", std::nullopt, arrival_processes(),
                                "the process; its own keys follow in its table")}};
}

std::vector<config::ComponentInfo> process_infos() {
  std::vector<config::ComponentInfo> infos;
  for (const auto& e : kArrivalProcesses) infos.push_back(e.info());
  return infos;
}

}  // namespace

std::vector<config::ComponentInfo> arrival_infos() {
  std::vector<config::ComponentInfo> infos = process_infos();
  infos.insert(infos.begin(), arrival_section_info());
  return infos;
}

std::vector<std::string> arrival_processes() {
  std::vector<std::string> names;
  for (const auto& e : kArrivalProcesses) names.emplace_back(e.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::shared_ptr<const ArrivalProcess> parse_arrival(const config::Node& node) {
  auto& diagnostics = node.context().diagnostics;
  const size_t errors_before = diagnostics.size();
  config::MapReader reader(node);
  if (!reader.valid()) return nullptr;
  // process: closed | constant | gamma | poisson
  const std::string name = reader.choice("process", std::nullopt, arrival_processes());
  if (diagnostics.size() != errors_before) return nullptr;
  std::unique_ptr<ArrivalProcess> process;
  for (const auto& e : kArrivalProcesses) {
    if (name != e.name) continue;
    // A key of another process is named as such (`cv` under poisson).
    config::report_foreign_keys(reader, e.info(), process_infos(), {"process"});
    process = e.parse(reader);
  }
  reader.finish();
  if (!process || diagnostics.size() != errors_before) return nullptr;
  return process;
}

}  // namespace kvsim
