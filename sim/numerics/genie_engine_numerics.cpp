#include "sim/numerics/genie_engine_numerics.hpp"

#include "sim/numerics/genie_numerics.hpp"

namespace kvsim {
namespace {

// Replays every update plan on real Genie buffers at the shadow width
// (sim/numerics/genie_numerics.hpp). `sampled` still applies every plan (the
// buffers must follow the cache) and checks one update in sample_every.
class GenieNumericsObserver final : public GenieObserver {
 public:
  explicit GenieNumericsObserver(const InstanceSpec& s)
      : checker_(numerics::genie_numerics_params(s)),
        sample_every_(s.numerics.mode == "full" ? 1 : s.numerics.sample_every) {}

  void on_update(const KvUpdatePlan& plan, const GenieKvPolicy& policy,
                 const std::string& where) override {
    (void)policy;
    checker_.apply(plan, where, updates_++ % sample_every_ == 0);
  }

  void report(RunMetrics& metrics) const override { checker_.report(metrics); }

 private:
  numerics::GenieNumericsChecker checker_;
  int64_t sample_every_;
  int64_t updates_ = 0;
};

}  // namespace

std::unique_ptr<GenieObserver> make_genie_numerics_observer(const InstanceSpec& scenario) {
  if (!scenario.numerics.on()) return nullptr;
  return std::make_unique<GenieNumericsObserver>(scenario);
}

}  // namespace kvsim
