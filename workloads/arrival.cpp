// The arrival processes and their table.
#include "workloads/arrival.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "workloads/distribution_impl.hpp"

namespace kvsim {
namespace {

// Highest accepted rate: one arrival per nanosecond is the clock's resolution.
constexpr double kMaxRatePerS = 1e9;

double mean_gap_ns(double rate_per_s) {
  return static_cast<double>(kNsPerS) / rate_per_s;
}

// Open-loop Poisson arrivals: exponential gaps (the default of vLLM's and
// SGLang's serving benchmarks with `--request-rate`).
class PoissonArrivals final : public ArrivalProcess {
 public:
  explicit PoissonArrivals(double rate) : rate_(rate) {}
  std::string_view name() const override { return "poisson"; }
  TimeNs next_arrival(TimeNs previous, uint64_t, Rng& rng) const override {
    return previous + std::llround(rng.exponential(mean_gap_ns(rate_)));
  }
  double rate_per_s() const override { return rate_; }

 private:
  double rate_;
};

// Gamma-distributed gaps with coefficient of variation `cv`: cv = 1 is
// Poisson, cv > 1 bursty, cv < 1 smoother (vLLM's `--burstiness` is 1/cv^2,
// the gamma shape). Shape k = 1/cv^2, scale = mean gap / k.
class GammaArrivals final : public ArrivalProcess {
 public:
  GammaArrivals(double rate, double cv) : rate_(rate), shape_(1.0 / (cv * cv)) {}
  std::string_view name() const override { return "gamma"; }
  TimeNs next_arrival(TimeNs previous, uint64_t, Rng& rng) const override {
    return previous + std::llround(rng.gamma(shape_, mean_gap_ns(rate_) / shape_));
  }
  double rate_per_s() const override { return rate_; }

 private:
  double rate_;
  double shape_;
};

// Evenly spaced arrivals. Arrival i is at round(i / rate): computed from the
// index, not by summing rounded gaps, so a rate like 3/s does not drift.
class ConstantArrivals final : public ArrivalProcess {
 public:
  explicit ConstantArrivals(double rate) : rate_(rate) {}
  std::string_view name() const override { return "constant"; }
  TimeNs next_arrival(TimeNs, uint64_t index, Rng&) const override {
    return std::llround(static_cast<double>(index) * mean_gap_ns(rate_));
  }
  double rate_per_s() const override { return rate_; }

 private:
  double rate_;
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

// Reads `key` as a rate-like number that must be > 0.
std::optional<double> positive(config::MapReader& reader, std::string_view key, double max,
                               const char* allowed) {
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

std::unique_ptr<ArrivalProcess> parse_poisson_arrivals(config::MapReader& reader) {
  // rate_per_s: mean arrivals per second (> 0)
  const auto rate = positive(reader, "rate_per_s", kMaxRatePerS, "arrivals per second, > 0");
  if (!rate) return nullptr;
  return std::make_unique<PoissonArrivals>(*rate);
}

std::unique_ptr<ArrivalProcess> parse_gamma_arrivals(config::MapReader& reader) {
  // rate_per_s: mean arrivals per second (> 0)
  const auto rate = positive(reader, "rate_per_s", kMaxRatePerS, "arrivals per second, > 0");
  // cv: coefficient of variation of the gaps (> 0; 1 = Poisson, > 1 bursts).
  // Capped at 100: shape 1e-4 is already one burst per run.
  const auto cv = positive(reader, "cv", 100.0, "a number in (0, 100]; 1 is Poisson, > 1 bursty");
  if (!rate || !cv) return nullptr;
  return std::make_unique<GammaArrivals>(*rate, *cv);
}

std::unique_ptr<ArrivalProcess> parse_constant_arrivals(config::MapReader& reader) {
  // rate_per_s: arrivals per second (> 0), exactly 1/rate apart
  const auto rate = positive(reader, "rate_per_s", kMaxRatePerS, "arrivals per second, > 0");
  if (!rate) return nullptr;
  return std::make_unique<ConstantArrivals>(*rate);
}

std::unique_ptr<ArrivalProcess> parse_closed_arrivals(config::MapReader& reader) {
  auto& diagnostics = reader.node().context().diagnostics;
  const size_t errors_before = diagnostics.size();
  ClosedLoopParams params;
  // concurrency: clients, each with one request in flight at a time (>= 1)
  params.concurrency = reader.integer("concurrency", std::nullopt, 1, kMaxClients);
  // think_time: DIST of durations from a completion to that client's next
  // request (default 0s: send at once, as benchmark tools do)
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
  std::unique_ptr<ArrivalProcess> (*parse)(config::MapReader&);
};

// Every process `process:` accepts; a test compares this table with the docs.
constexpr ArrivalEntry kArrivalProcesses[] = {
    {"closed", parse_closed_arrivals},
    {"constant", parse_constant_arrivals},
    {"gamma", parse_gamma_arrivals},
    {"poisson", parse_poisson_arrivals},
};

}  // namespace

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
  for (const auto& e : kArrivalProcesses)
    if (name == e.name) process = e.parse(reader);
  reader.finish();
  if (!process || diagnostics.size() != errors_before) return nullptr;
  return process;
}

}  // namespace kvsim
