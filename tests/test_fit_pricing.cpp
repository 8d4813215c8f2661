// What makes `kvsim calibrate --fit` / `--cv` quick must not move a figure:
// a timing model rebuilt for another device from one built before prices
// every step as one built from scratch; the price memo's key tells apart
// every device state a fit can reach; and a fit whose rows are priced on
// several threads is the one priced on one, number for number.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "cli/studies/calibration_fit.hpp"
#include "devices/timing_model.hpp"
#include "tests/round_specs.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

DeviceSpec device(const std::string& name) {
  config::LoadContext ctx;
  DeviceSpec d =
      load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/" + name + ".yaml", ctx);
  ctx.diagnostics.throw_if_any();
  return d;
}

// A serving engine's mix: a prefill, then decodes of a growing batch, some
// summed by the engine (totals_given), some as sequences.
std::vector<StepWork> serving_steps() {
  std::vector<StepWork> steps;
  StepWork prefill;
  prefill.seqs = {{512, 0, true}, {300, 0, true}};
  steps.push_back(prefill);
  for (int64_t t = 0; t < 40; ++t) {
    StepWork w;
    const int64_t batch = 2 + t / 10;
    for (int64_t b = 0; b < batch; ++b) w.seqs.push_back({1, 300 + 10 * b + t, true});
    if (t % 2 == 0) {
      w.totals_given = true;
      for (const SeqWork& s : w.seqs) w.totals.add(s, false);
      w.seqs.clear();
    }
    steps.push_back(w);
  }
  return steps;
}

TEST(FitPricing, ATimingModelRebuiltForAnotherDevicePricesAsANewOne) {
  const DeviceSpec start = testing::round_device();
  const ModelSpec model = testing::round_model(6);
  const TimingModel::Params params{.tp = 1, .kv_dtype_bytes = 2};
  const std::vector<StepWork> steps = serving_steps();
  // The structure has priced the steps on its own device: nothing of that
  // may carry over.
  const TimingModel structure(start, model, params);
  for (const StepWork& w : steps) (void)structure.step_latency(w);
  DeviceSpec moved = start;
  for (double& e : moved.compute_efficiency) e *= 0.7;
  for (double& e : moved.memory_efficiency) e *= 0.9;
  moved.step_overhead += 1234;
  const TimingModel fresh(moved, model, params);
  const TimingModel rebuilt(structure, moved);
  for (const StepWork& w : steps) {
    EXPECT_EQ(rebuilt.step_latency(w), fresh.step_latency(w));
    const StepTiming a = rebuilt.price(w), b = fresh.price(w);
    EXPECT_EQ(a.latency, b.latency);
    EXPECT_EQ(a.critical_path, b.critical_path);
    EXPECT_EQ(a.op_time, b.op_time);
  }
  EXPECT_NE(fresh.step_latency(steps[5]), structure.step_latency(steps[5]))
      << "the moved device prices differently, or the check above shows nothing";
  // Another family's engines give another graph: refused.
  EXPECT_THROW(TimingModel(structure, device("snapdragon-8-elite")), std::invalid_argument);
}

TEST(FitPricing, TheMemoKeyTellsApartEveryParameterAFitMoves) {
  for (const std::string name : {"a100-sxm4", "ascend-910b2", "snapdragon-8-elite"}) {
    SCOPED_TRACE(name);
    const DeviceSpec d = device(name);
    EXPECT_EQ(fit_state_key(d), fit_state_key(device(name)));
    std::set<std::string> keys = {fit_state_key(d)};
    for (const FitParameter& p : fit_parameters(d)) {
      DeviceSpec moved = d;
      const double v = get_fit_parameter(d, p.key);
      set_fit_parameter(moved, p.key, v == 0 ? 0.01 : v * 1.001);
      EXPECT_TRUE(keys.insert(fit_state_key(moved)).second) << p.key;
    }
    DeviceSpec renamed = d;
    renamed.name += "-other";
    EXPECT_NE(fit_state_key(renamed), fit_state_key(d));
  }
}

// A synthetic family of two devices (weights streamed per device, KV reads
// shared, as a GPU design shares its efficiencies), leave-one-out on one and
// on four threads.
TEST(FitPricing, RowsPricedOnSeveralThreadsFitAsOnOne) {
  DeviceSpec a = device("h100-sxm5"), b = device("h200-sxm");
  auto model_time = [](const MeasurementRow& r, const DeviceSpec& s) {
    const double w = static_cast<double>(*r.batch) * 1e9;
    const double kv = static_cast<double>(*r.input_tokens) * 1e6;
    const double bw = static_cast<double>(s.memory_bandwidth);
    return w / (bw * s.memory_efficiency[0]) + kv / (bw * s.memory_efficiency[1]) +
           static_cast<double>(s.step_overhead) / 1e9 +
           static_cast<double>(s.device_link_latency) / 1e8;
  };
  std::atomic<int64_t> calls{0};
  RowPredictor predict = [&](const MeasurementRow& r,
                             const DeviceSpec& s) -> std::optional<double> {
    ++calls;
    return model_time(r, s);
  };
  DeviceSpec truth_a = a, truth_b = b;
  set_fit_parameter(truth_a, "efficiency.gemm.memory", 0.7);
  set_fit_parameter(truth_b, "efficiency.gemm.memory", 0.6);
  std::vector<MeasurementRow> rows;
  const double noise[] = {0.01, -0.01, 0.005, -0.005, 0.0, 0.01, -0.02, 0.015};
  for (int i = 0; i < 8; ++i) {
    MeasurementRow r;
    r.id = "S" + std::to_string(i);
    r.device = i % 2 == 0 ? "h100-sxm5" : "h200-sxm";
    r.batch = 4 + 3 * i;
    r.input_tokens = 500 + 900 * i;
    r.value = model_time(r, i % 2 == 0 ? truth_a : truth_b) * (1 + noise[i]);
    rows.push_back(r);
  }
  auto load = [&](const std::string& name) { return name == "h100-sxm5" ? a : b; };
  const CvReport one = cross_validate(rows, load, predict, true, {}, 1);
  const int64_t serial_calls = calls.exchange(0);
  const CvReport four = cross_validate(rows, load, predict, true, {}, 4);
  EXPECT_EQ(calls.load(), serial_calls) << "every trial point priced once either way";
  ASSERT_EQ(one.entries.size(), four.entries.size());
  EXPECT_EQ(one.counted_rows, 8);
  for (size_t i = 0; i < one.entries.size(); ++i) {
    SCOPED_TRACE(one.entries[i].row.id);
    ASSERT_TRUE(one.entries[i].in_sample && one.entries[i].held_out);
    EXPECT_EQ(*one.entries[i].in_sample, *four.entries[i].in_sample);
    EXPECT_EQ(*one.entries[i].held_out, *four.entries[i].held_out);
  }
  ASSERT_EQ(one.fits.size(), four.fits.size());
  for (size_t f = 0; f < one.fits.size(); ++f) {
    EXPECT_EQ(one.fits[f].iterations, four.fits[f].iterations);
    ASSERT_EQ(one.fits[f].params.size(), four.fits[f].params.size());
    for (size_t j = 0; j < one.fits[f].params.size(); ++j) {
      EXPECT_EQ(one.fits[f].params[j].value, four.fits[f].params[j].value);
      EXPECT_EQ(one.fits[f].params[j].relative_std, four.fits[f].params[j].relative_std);
      EXPECT_EQ(one.fits[f].params[j].constrained, four.fits[f].params[j].constrained);
    }
    EXPECT_EQ(one.fits[f].covariance, four.fits[f].covariance);
  }
  EXPECT_EQ(one.median_abs_held_out_pct, four.median_abs_held_out_pct);
  EXPECT_EQ(one.max_abs_held_out_pct, four.max_abs_held_out_pct);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
