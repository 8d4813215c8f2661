// Calibration of the GPU device files on configs/calibration/gpu_published.csv
// (TensorRT-LLM's published throughput tables, each row with its file and
// commit): every row is predicted with the values the files carry within 15%;
// a static batch summed at sampled steps is the sum of every step; a run of
// requests queued at once re-prices as a full run does; the engine's per-step
// cost is its own, not the device file's; and the held-out-by-device check
// fits on none of the held-out part's rows. The full leave-one-out over every
// GPU row (minutes) is the README's figure; here, the A100's rows alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "cli/studies/calibration.hpp"
#include "cli/studies/calibration_fit.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim {
namespace {

const std::string kCsv = std::string(KVSIM_CONFIG_DIR) + "/calibration/gpu_published.csv";

std::vector<MeasurementRow> rows_starting(const std::string& prefix) {
  std::vector<MeasurementRow> out;
  for (const MeasurementRow& r : read_measurements(kCsv))
    if (r.id.rfind(prefix, 0) == 0) out.push_back(r);
  return out;
}

DeviceSpec device(const std::string& name) {
  config::LoadContext ctx;
  DeviceSpec d =
      load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/" + name + ".yaml", ctx);
  ctx.diagnostics.throw_if_any();
  return d;
}

TEST(GpuCalibration, EveryRowIsWithin15PercentWithTheFilesValues) {
  const std::vector<MeasurementRow> rows = read_measurements(kCsv);
  ASSERT_EQ(rows.size(), 48u);
  for (const MeasurementRow& row : rows) {
    SCOPED_TRACE(row.id);
    EXPECT_FALSE(row.source.empty());
    EXPECT_FALSE(row.software.empty());
    const std::optional<Prediction> p = predict_row(row, KVSIM_CONFIG_DIR);
    ASSERT_TRUE(p.has_value()) << row.id << " was not predicted";
    const double error = (p->value - row.value) / row.value;
    std::printf("[ gpu-cal  ] %-22s predicted %9.1f published %9.1f %-12s error %+6.1f%%\n",
                row.id.c_str(), p->value, row.value, row.unit.c_str(), 100.0 * error);
    EXPECT_LE(std::fabs(error), 0.15) << p->scenario;
  }
}

TEST(GpuCalibration, AStaticBatchSummedAtSampledStepsIsTheSumOfEveryStep) {
  for (const MeasurementRow& row : rows_starting("T9A1")) {
    SCOPED_TRACE(row.id);
    const double sampled = predict_row(row, KVSIM_CONFIG_DIR).value().value;
    const double exact = static_batch_exact_value(row, KVSIM_CONFIG_DIR);
    EXPECT_NEAR(sampled, exact, 1e-3 * exact);
  }
}

TEST(GpuCalibration, RequestsQueuedAtOnceRepriceAsAFullRunDoes) {
  const std::vector<MeasurementRow> rows = rows_starting("TOH1-8B");
  ASSERT_FALSE(rows.empty());
  const MeasurementRow& row = rows.front();
  const DeviceSpec h100 = device("h100-sxm5");
  const std::optional<RowPricer> pricer = prepare_ascend_row(row, KVSIM_CONFIG_DIR, h100);
  ASSERT_TRUE(pricer.has_value());
  DeviceSpec moved = h100;
  for (const FitParameter& p : fit_parameters(h100))
    set_fit_parameter(moved, p.key, std::clamp(get_fit_parameter(h100, p.key) * 0.8, p.lo, p.hi));
  const double fast = pricer->price(moved);
  const double full = predict_row(row, KVSIM_CONFIG_DIR, &moved).value().value;
  EXPECT_NEAR(fast, full, 1e-9 * full);
  EXPECT_LT(fast, pricer->recorded) << "slower efficiencies, less throughput";
}

TEST(GpuCalibration, TheRowsEngineStepCostReplacesTheDeviceFiles) {
  MeasurementRow row = rows_starting("T9A1").front();
  const std::optional<EngineStepOverhead> engine =
      find_engine_step_overhead(row.software, KVSIM_CONFIG_DIR);
  ASSERT_TRUE(engine.has_value()) << row.software;
  EXPECT_FALSE(engine->source.empty());
  const double with_engine = predict_row(row, KVSIM_CONFIG_DIR).value().value;
  row.software = "an engine the table does not list";
  const double with_device = predict_row(row, KVSIM_CONFIG_DIR).value().value;
  // The device file's 1 ms per step is ten times TensorRT-LLM 0.9's 0.1 ms.
  EXPECT_LT(device("a100-sxm4").step_overhead, 10 * kNsPerMs);
  EXPECT_GT(with_engine, with_device);
  // Rows of an engine the table does not list (the Ascend rows' vllm-ascend)
  // keep the device file's figure.
  EXPECT_FALSE(find_engine_step_overhead("vllm-ascend nightly CI baseline", KVSIM_CONFIG_DIR));
}

TEST(GpuCalibration, AHeldOutDeviceIsFittedOnNoneOfItsRows) {
  std::vector<MeasurementRow> rows = rows_starting("T9A1");
  for (const auto& prefix : {"TOH1-8B", "TOH2-8B"})
    for (const MeasurementRow& r : rows_starting(prefix)) rows.push_back(r);
  const CvReport report = cross_validate(rows, KVSIM_CONFIG_DIR, false, {"h200-sxm"});
  int64_t held = 0;
  for (const CvEntry& e : report.entries) {
    if (e.device == "h200-sxm") {
      EXPECT_TRUE(e.by_device.has_value()) << e.row.id << ": " << e.not_predicted;
      EXPECT_FALSE(e.in_sample.has_value()) << e.row.id;
      ++held;
    } else {
      EXPECT_FALSE(e.by_device.has_value()) << e.row.id;
    }
  }
  EXPECT_EQ(held, 5);
  EXPECT_EQ(report.by_device_rows, 5);
  for (const DeviceFit& f : report.fits) {
    if (f.device != "h200-sxm") continue;
    EXPECT_TRUE(f.row_ids.empty());
    // The H200 takes the Hopper design's values, fitted on the H100's rows.
    for (const FittedParameter& p : f.params)
      if (p.constrained) {
        EXPECT_TRUE(p.param.shared) << p.param.key;
      }
  }
  std::printf("[ gpu-cal  ] H200 from the H100's 8B rows: median %.1f%%, max %.1f%%\n",
              report.median_abs_by_device_pct, report.max_abs_by_device_pct);
  EXPECT_LE(report.max_abs_by_device_pct, 25.0);
}

TEST(GpuCalibration, LeaveOneOutOnTheA100RowsHoldsTheBound) {
  const CvReport report = cross_validate(rows_starting("T9A1"), KVSIM_CONFIG_DIR, true);
  ASSERT_EQ(report.counted_rows, 8);
  std::printf("[ gpu-cal  ] A100 leave-one-out: median %.1f%%, max %.1f%%\n",
              report.median_abs_held_out_pct, report.max_abs_held_out_pct);
  // Alone, the A100's rows take no prior from the vendor's other designs
  // (they do in the README's run over every GPU row: median 4.1%, max 26.3%):
  // median 11.3%, max 26.1% (T9A1-14, the only tensor-parallel-8 row). The
  // bounds are the ones these rows reach.
  EXPECT_LE(report.median_abs_held_out_pct, 12.5);
  EXPECT_LE(report.max_abs_held_out_pct, 30.0);
}

}  // namespace
}  // namespace kvsim
