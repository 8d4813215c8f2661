// Calibration of the Snapdragon device files: the six Snapdragon rows of
// shared/data/calibration/published_measurements.csv the device files were
// fitted on (Q1, Q1t, Q6, Q6t, Q13, Q13t) run as one-turn dialog scenarios
// (cli/studies/calibration_htp.cpp) and must land within 15% of the
// published figure. Rows added to the file later are held out: how well they
// are predicted is the cross-validation's figure, not an in-sample bound.
// The fitted efficiencies and each row's error are in the device files'
// notes; this test prints the errors it measures.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/studies/calibration.hpp"
#include "devices/htp_timing.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

const std::string kCsv =
    std::string(KVSIM_SHARED_DATA_DIR) + "/calibration/published_measurements.csv";

std::vector<MeasurementRow> snapdragon_rows() {
  const std::array<std::string, 6> fitted = {"Q1", "Q1t", "Q6", "Q6t", "Q13", "Q13t"};
  std::vector<MeasurementRow> rows;
  for (const MeasurementRow& row : read_measurements(kCsv)) {
    if (row.device.rfind("snapdragon-", 0) == 0 &&
        std::find(fitted.begin(), fitted.end(), row.id) != fitted.end())
      rows.push_back(row);
  }
  return rows;
}

TEST(HtpCalibration, EverySnapdragonRowIsWithin15Percent) {
  if (!fs::exists(kCsv)) GTEST_SKIP() << kCsv << " is absent (shared data not available)";
  const std::vector<MeasurementRow> rows = snapdragon_rows();
  ASSERT_EQ(rows.size(), 6u) << "Q1, Q1t, Q6, Q6t, Q13, Q13t";
  for (const MeasurementRow& row : rows) {
    SCOPED_TRACE(row.id);
    const std::optional<Prediction> p = predict_htp_row(row, KVSIM_CONFIG_DIR);
    ASSERT_TRUE(p.has_value()) << row.id << " " << row.metric << " was not predicted";
    const double error = (p->value - row.value) / row.value;
    std::printf(
        "[ htp-cal  ] %-5s %-20s predicted %9.2f published %9.2f %-9s error %+6.1f%%  (%s)\n",
        row.id.c_str(), row.metric.c_str(), p->value, row.value, row.unit.c_str(), 100.0 * error,
        p->scenario.c_str());
    EXPECT_LE(std::fabs(error), 0.15) << p->scenario;
  }
}

// The fit the device files' notes describe, redone from the rows with
// HtpTimingModel: decode rows give the memory efficiency (memory time scales
// as 1 / efficiency), the 8 Elite's two AR-128 rows give gemm and attention
// compute efficiencies (compute = a / gemm + b / attention + hvx, solved as a
// 2x2 system). The files must carry these values to their rounding.
DeviceSpec load_device(const std::string& name) {
  config::LoadContext ctx;
  return load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/" + name + ".yaml", ctx);
}
ModelSpec load_model(const std::string& name) {
  config::LoadContext ctx;
  return load_model_file(std::string(KVSIM_CONFIG_DIR) + "/models/" + name + ".yaml", ctx);
}
double row_value(const std::vector<MeasurementRow>& rows, const std::string& id) {
  for (const auto& r : rows)
    if (r.id == id) return r.value;
  ADD_FAILURE() << id << " not in the CSV";
  return 1.0;
}

// Memory efficiency that makes a decode row exact: the pass's memory time at
// the file's efficiency, rescaled to the published time per token minus the
// fixed per-pass overhead.
double exact_memory_efficiency(const DeviceSpec& d, const ModelSpec& m, int64_t cols,
                               double tokens_per_s) {
  const HtpTimingModel timing(d, m, 1);
  const HtpPassTiming t = timing.price_pass({1, 1, cols, 0, 0});
  const double target_ns = 1e9 / tokens_per_s - static_cast<double>(d.step_overhead);
  return d.memory_efficiency[static_cast<size_t>(OpClass::gemm)] * static_cast<double>(t.memory) /
         target_ns;
}

// Compute time of an AR-n pass as a function of the two efficiencies.
double compute_ns(DeviceSpec d, const ModelSpec& m, int64_t n, int64_t cols, double gemm,
                  double attention) {
  d.compute_efficiency[static_cast<size_t>(OpClass::gemm)] = gemm;
  d.compute_efficiency[static_cast<size_t>(OpClass::attention)] = attention;
  return static_cast<double>(HtpTimingModel(d, m, 1).price_pass({n, n, cols, 0, 0}).compute);
}

TEST(HtpCalibration, TheFittedEfficienciesInTheDeviceFilesReproduce) {
  if (!fs::exists(kCsv)) GTEST_SKIP() << kCsv << " is absent (shared data not available)";
  const std::vector<MeasurementRow> rows = read_measurements(kCsv);
  const DeviceSpec elite = load_device("snapdragon-8-elite");
  const ModelSpec m3 = load_model("llama-3.2-3b-instruct-w4a16");
  const ModelSpec m8 = load_model("llama-3-8b-instruct-w4a16");
  const double e1 = exact_memory_efficiency(elite, m3, 4095, row_value(rows, "Q1"));
  const double e6 = exact_memory_efficiency(elite, m8, 4095, row_value(rows, "Q6"));
  const double fitted = std::sqrt(e1 * e6);
  std::printf("[ htp-fit  ] 8 Elite memory: Q1 %.3f, Q6 %.3f, geometric mean %.3f\n", e1, e6,
              fitted);
  EXPECT_NEAR(elite.memory_efficiency[static_cast<size_t>(OpClass::gemm)], fitted, 0.002);

  // compute(g, a) = A / g + B / a + H: three evaluations give A, B, H.
  const auto coefficients = [&](const ModelSpec& m) {
    const double base = compute_ns(elite, m, 128, 3968, 1.0, 1.0);
    const double a = compute_ns(elite, m, 128, 3968, 0.5, 1.0) - base;  // A (1/0.5 - 1) = A
    const double b = compute_ns(elite, m, 128, 3968, 1.0, 0.5) - base;
    return std::array<double, 3>{a, b, base - a - b};
  };
  const auto c3 = coefficients(m3);
  const auto c8 = coefficients(m8);
  const double fixed = static_cast<double>(elite.step_overhead + elite.htp->graph_switch);
  const double t3 = row_value(rows, "Q1t") * 1e6 - fixed - c3[2];
  const double t8 = row_value(rows, "Q6t") * 1e6 - fixed - c8[2];
  // c[0] x + c[1] y = t with x = 1 / gemm, y = 1 / attention.
  const double det = c3[0] * c8[1] - c3[1] * c8[0];
  const double x = (t3 * c8[1] - c3[1] * t8) / det;
  const double y = (c3[0] * t8 - t3 * c8[0]) / det;
  std::printf("[ htp-fit  ] 8 Elite compute: gemm %.4f, attention %.4f\n", 1 / x, 1 / y);
  EXPECT_NEAR(elite.compute_efficiency[static_cast<size_t>(OpClass::gemm)], 1 / x, 0.002);
  EXPECT_NEAR(elite.compute_efficiency[static_cast<size_t>(OpClass::attention)], 1 / y, 0.0005);

  const DeviceSpec gen3 = load_device("snapdragon-8-gen3");
  const ModelSpec m7 = load_model("llama-2-7b-chat-w4a16");
  const double e13 = exact_memory_efficiency(gen3, m7, 1023, row_value(rows, "Q13"));
  std::printf("[ htp-fit  ] 8 Gen 3 memory: Q13 %.3f\n", e13);
  EXPECT_NEAR(gen3.memory_efficiency[static_cast<size_t>(OpClass::gemm)], e13, 0.002);
}

TEST(HtpCalibration, OtherDevicesAndMetricsAreNotMine) {
  MeasurementRow ascend;
  ascend.id = "A1";
  ascend.device = "ascend-310p";
  ascend.metric = "output_throughput";
  EXPECT_FALSE(predict_htp_row(ascend, KVSIM_CONFIG_DIR).has_value());
  MeasurementRow unknown_metric;
  unknown_metric.device = "snapdragon-8-elite";
  unknown_metric.metric = "energy_per_token";
  EXPECT_FALSE(predict_htp_row(unknown_metric, KVSIM_CONFIG_DIR).has_value());
}

TEST(HtpCalibration, AMissingModelFileIsAClearError) {
  MeasurementRow row;
  row.id = "X";
  row.device = "snapdragon-8-elite";
  row.model = "Llama-9-1B";
  row.weights = "w4a16";
  row.context = 4096;
  row.input_tokens = 128;
  row.metric = "decode_rate";
  try {
    (void)predict_htp_row(row, KVSIM_CONFIG_DIR);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("llama-9-1b-w4a16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvsim
