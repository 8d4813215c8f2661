// A calibration row whose prompt and output lengths come from a dataset's
// histograms (the `lengths` column, cli/studies/calibration_lengths.cpp):
// one length a side prices exactly as the fixed-length row it stands for; a
// spread of lengths is another workload, run the same way twice; a
// malformed or unsourced file is exit 2 at its own line and column, and a
// row giving both a file and a length cell is refused at the cell.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "base/diagnostics.hpp"
#include "cli/studies/calibration.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

const std::string kDir = std::string(KVSIM_SOURCE_DIR) + "/tests/data/calibration_lengths";

MeasurementRow row(const std::string& id) {
  for (const MeasurementRow& r : read_measurements(kDir + "/rows.csv"))
    if (r.id == id) return r;
  ADD_FAILURE() << "no row " << id;
  return {};
}

TEST(CalibrationLengths, OneLengthASideIsTheFixedLengthRow) {
  const MeasurementRow one = row("ONE");
  ASSERT_TRUE(one.length_distribution);
  EXPECT_FALSE(one.input_tokens.has_value());
  EXPECT_DOUBLE_EQ(one.length_distribution->mean_input, 1000.0);
  // 7 and 3 of one length are one value each: the counts' common divisor.
  ASSERT_EQ(one.length_distribution->input.size(), 1u);
  EXPECT_EQ(one.length_distribution->input[0].second, 1);
  const Prediction fixed = predict_row(row("FIXED"), KVSIM_CONFIG_DIR).value();
  const Prediction drawn = predict_row(one, KVSIM_CONFIG_DIR).value();
  EXPECT_DOUBLE_EQ(drawn.value, fixed.value);
  EXPECT_NE(drawn.scenario.find("lengths of one_bin.csv (mean 1000.0 in / 1000.0 out)"),
            std::string::npos)
      << drawn.scenario;
}

TEST(CalibrationLengths, ASpreadOfLengthsIsAnotherWorkloadRunAlikeTwice) {
  const MeasurementRow two = row("TWO");
  ASSERT_TRUE(two.length_distribution);
  EXPECT_DOUBLE_EQ(two.length_distribution->mean_input, 1000.0);
  EXPECT_DOUBLE_EQ(two.length_distribution->mean_output, 1000.0);
  const double fixed = predict_row(row("FIXED"), KVSIM_CONFIG_DIR).value().value;
  const Prediction a = predict_row(two, KVSIM_CONFIG_DIR).value();
  const Prediction b = predict_row(two, KVSIM_CONFIG_DIR).value();
  EXPECT_EQ(a.value, b.value);
  EXPECT_EQ(a.scenario, b.scenario);
  // The same mean lengths, another workload: requests of 500 and 1500
  // tokens each side, drawn independently, price apart from 1000/1000
  // (about 5% fewer output tokens/s with the shipped H100 file).
  std::printf("[ lengths  ] fixed 1000/1000: %.0f tok/s; 500|1500 each side: %.0f tok/s\n", fixed,
              a.value);
  EXPECT_GT(std::abs(a.value - fixed), 0.01 * fixed);
}

TEST(CalibrationLengths, ABadFileIsAnErrorAtItsLineAndTheRowsCell) {
  try {
    (void)read_measurements(kDir + "/bad_rows.csv");
    FAIL() << "bad_rows.csv was read";
  } catch (const config::ConfigError& e) {
    std::string all;
    for (const config::Diagnostic& d : e.diagnostics()) all += d.format() + "\n";
    for (const char* want : {"bad_rows.csv:2:53: input_tokens: is given beside a lengths file",
                             "bad_rows.csv:2:144: lengths: 'malformed.csv' cannot be used",
                             "malformed.csv:2:7: tokens: '0' is not a whole number",
                             "malformed.csv:3:1: side: 'middle' is not a side",
                             "malformed.csv:4:1: row: 2 fields, the header has 3",
                             "no_source.csv:1:1: source: the file states no source"})
      EXPECT_NE(all.find(want), std::string::npos) << want << "\nin:\n" << all;
  }
}

TEST(CalibrationLengths, APhoneRowDoesNotRunADistribution) {
  MeasurementRow phone = row("ONE");
  phone.device = "snapdragon-8-elite";
  phone.metric = "decode_rate";
  EXPECT_THROW((void)predict_row(phone, KVSIM_CONFIG_DIR), std::runtime_error);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
