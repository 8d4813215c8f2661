// Ascend calibration on published baselines and `kvsim calibrate`.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "cli/studies/calibration.hpp"
#include "scenario_helpers.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::configs_dir;
using testing::run_command;

std::string published_csv() {
  return std::string(KVSIM_SHARED_DATA_DIR) + "/calibration/published_measurements.csv";
}

#define SKIP_WITHOUT_CSV()                       \
  if (!std::filesystem::exists(published_csv())) \
  GTEST_SKIP() << published_csv() << " is absent (shared data is referenced in place, never copied)"

const MeasurementRow& row_with_id(const std::vector<MeasurementRow>& rows, const std::string& id) {
  for (const auto& r : rows)
    if (r.id == id) return r;
  throw std::runtime_error("no row " + id);
}

TEST(AscendCalibration, EachPublishedRowWithin15Percent) {
  SKIP_WITHOUT_CSV();
  const auto rows = read_measurements(published_csv());
  for (const char* id : {"A1", "A4"}) {
    const MeasurementRow& row = row_with_id(rows, id);
    const auto p = predict_ascend_row(row, configs_dir());
    ASSERT_TRUE(p.has_value()) << id;
    const double error = (p->value - row.value) / row.value;
    EXPECT_LT(std::abs(error), 0.15) << id << ": predicted " << p->value << " vs published "
                                     << row.value << " (" << p->scenario << ")";
    ::testing::Test::RecordProperty(std::string(id) + "_error_pct", std::to_string(error * 100));
  }
}

TEST(AscendCalibration, OtherDeviceKindsAreNotAscendRows) {
  MeasurementRow row;
  row.id = "X";
  row.device = "snapdragon-8-elite";
  row.model = "Llama-3-8B";
  row.metric = "decode_rate";
  EXPECT_FALSE(predict_ascend_row(row, configs_dir()).has_value());
  row.device = "ascend-910b2";
  row.metric = "energy_per_token";
  EXPECT_FALSE(predict_ascend_row(row, configs_dir()).has_value());
}

TEST(AscendCalibration, MissingModelFileIsAReason) {
  MeasurementRow row;
  row.id = "X";
  row.device = "ascend-910b2";
  row.model = "Llama-3-8B";
  row.weights = "w4a4";
  row.metric = "output_throughput";
  row.input_tokens = 128;
  row.output_tokens = 128;
  EXPECT_THROW(predict_ascend_row(row, configs_dir()), std::runtime_error);
  // In a report that becomes a "not predicted" row with the reason.
  const auto report = calibrate_rows({row}, configs_dir(), "test");
  ASSERT_EQ(report.entries.size(), 1u);
  EXPECT_FALSE(report.entries[0].prediction.has_value());
  EXPECT_NE(report.entries[0].not_predicted.find("llama-3-8b-w4a4"), std::string::npos);
  EXPECT_EQ(report.predicted, 0);
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

const char* kHeader =
    "id,device,model,weights,kv_dtype,context,batch,input_tokens,output_tokens,metric,value,unit,"
    "software,source\n";

TEST(Measurements, ReadsQuotedFieldsAndOptionalCounts) {
  const std::string path = write_temp(
      "kvsim_meas_ok.csv", std::string(kHeader) +
                               "R1,ascend-910b2,Llama-3-8B,,,,4,256,64,output_throughput,100.5,"
                               "tokens/s,\"vllm, 0.9\",\"a \"\"quoted\"\" source\"\n");
  const auto rows = read_measurements(path);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].software, "vllm, 0.9");
  EXPECT_EQ(rows[0].source, "a \"quoted\" source");
  EXPECT_EQ(rows[0].batch, 4);
  EXPECT_FALSE(rows[0].context.has_value());
  EXPECT_DOUBLE_EQ(rows[0].value, 100.5);
  EXPECT_EQ(rows[0].line, 2);
}

TEST(Measurements, ErrorsNameFileLineAndColumn) {
  const std::string path =
      write_temp("kvsim_meas_bad.csv",
                 std::string(kHeader) +
                     "R1,ascend-910b2,Llama-3-8B,,,,4,256,64,output_throughput,fast,tokens/s,,\n"
                     "R2,ascend-910b2,Llama-3-8B,,,,-3,256,64,output_throughput,1,tokens/s,,\n"
                     "R2,ascend-910b2,Llama-3-8B,,,,1,256,64,output_throughput,1,tokens/s,,\n");
  try {
    read_measurements(path);
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    const std::string all = e.what();
    // value "fast" starts at column 58 of line 2, batch "-3" at column 31 of line 3.
    EXPECT_NE(all.find(path + ":2:58: value: 'fast' is not a number > 0"), std::string::npos)
        << all;
    EXPECT_NE(all.find(path + ":3:31: batch:"), std::string::npos) << all;
    EXPECT_NE(all.find(path + ":4:1: id: 'R2' appears twice"), std::string::npos) << all;
  }
  const std::string no_value = write_temp("kvsim_meas_nocol.csv", "id,device,model,metric,unit\n");
  EXPECT_THROW(read_measurements(no_value), config::ConfigError);
}

TEST(CalibrateCli, PrintsEveryShippedRowWithItsError) {
  SKIP_WITHOUT_CSV();
  const std::string out = (std::filesystem::temp_directory_path() / "kvsim_calibrate").string();
  std::filesystem::remove_all(out);
  const auto r =
      run_command(std::string(KVSIM_BINARY) + " calibrate " + published_csv() + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = read_measurements(published_csv());
  for (const auto& row : rows) EXPECT_NE(r.output.find("\n" + row.id + " "), std::string::npos);
  EXPECT_NE(r.output.find("absolute error median"), std::string::npos) << r.output;
  for (const char* f : {"calibration.csv", "calibration.json", "calibration.md"})
    EXPECT_TRUE(std::filesystem::exists(out + "/" + f)) << f;
  std::filesystem::remove_all(out);
}

TEST(CalibrateCli, BadCsvExitsTwo) {
  const std::string path = write_temp("kvsim_meas_cli_bad.csv", "id,device\nA,b\n");
  const auto r = run_command(std::string(KVSIM_BINARY) + " calibrate " + path + " --out " +
                             (std::filesystem::temp_directory_path() / "kvsim_cal_bad").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(path + ":1:1: model: the header has no such column"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
