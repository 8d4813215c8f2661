// A calibration row that states the engine's own limits (max_num_seqs,
// max_batched_tokens, memory_fraction: an MLPerf harness's gpu_batch_size
// and max_num_tokens, vLLM's --gpu-memory-utilization) runs with them, a bad
// cell is exit 2 at its line and column naming the column, and the MLPerf
// dataset histograms the GPU rows run state their sets as the sources do.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "base/diagnostics.hpp"
#include "cli/studies/calibration.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

const std::string kLimitsDir = std::string(KVSIM_SOURCE_DIR) + "/tests/data/calibration_limits";

MeasurementRow limits_row(const std::string& id) {
  for (const MeasurementRow& r : read_measurements(kLimitsDir + "/rows.csv"))
    if (r.id == id) return r;
  ADD_FAILURE() << "no row " << id;
  return {};
}

TEST(CalibrationEngineLimits, TheRowsLimitsReachTheRun) {
  const MeasurementRow seqs = limits_row("SEQS");
  ASSERT_EQ(seqs.max_num_seqs, 64);
  ASSERT_EQ(seqs.max_batched_tokens, 2048);
  EXPECT_FALSE(seqs.memory_fraction.has_value());
  const Prediction plain = predict_row(limits_row("PLAIN"), KVSIM_CONFIG_DIR).value();
  const Prediction capped = predict_row(seqs, KVSIM_CONFIG_DIR).value();
  const Prediction memory = predict_row(limits_row("MEMORY"), KVSIM_CONFIG_DIR).value();
  std::printf("[ limits   ] 640 queued: %.0f tok/s; 64 at a time: %.0f; 0.2 of the memory: %.0f\n",
              plain.value, capped.value, memory.value);
  EXPECT_NE(capped.scenario.find("max_num_seqs=64 max_batched_tokens=2048"), std::string::npos)
      << capped.scenario;
  EXPECT_NE(memory.scenario.find("memory_fraction=0.2"), std::string::npos) << memory.scenario;
  EXPECT_EQ(plain.scenario.find("max_num_seqs="), std::string::npos) << plain.scenario;
  // 64 sequences at a time decode fewer tokens a step than the hundreds the
  // H100's cache holds (about 0.63x the tokens/s with the shipped file); 0.2
  // of 80 GB leaves about 8 GB of KV after the 8 GB of fp8 weights, a
  // fraction of what TensorRT-LLM's 0.95 of the rest holds (about 0.48x).
  EXPECT_LT(capped.value, 0.8 * plain.value);
  EXPECT_LT(memory.value, 0.8 * plain.value);
}

TEST(CalibrationEngineLimits, ABadLimitIsAnErrorAtItsCell) {
  try {
    (void)read_measurements(kLimitsDir + "/bad_rows.csv");
    FAIL() << "bad_rows.csv was read";
  } catch (const config::ConfigError& e) {
    std::string all;
    for (const config::Diagnostic& d : e.diagnostics()) all += d.format() + "\n";
    for (const char* want : {"bad_rows.csv:2:143: max_num_seqs: '0' is not a whole number >= 1",
                             "bad_rows.csv:2:145: max_batched_tokens: 'many' is not a whole number",
                             "bad_rows.csv:2:150: memory_fraction: '0' leaves the engine no memory",
                             "bad_rows.csv:3:145: memory_fraction: '1.5' is not a fraction"})
      EXPECT_NE(all.find(want), std::string::npos) << want << "\nin:\n" << all;
  }
}

// Each histogram as its source states the set: the number of prompts
// (counts are divided by their common divisor, so the mean is what is
// checked) and the means or sums the source files publish.
TEST(CalibrationEngineLimits, TheMlperfHistogramsStateTheirSetsAsPublished) {
  const std::string dir = std::string(KVSIM_CONFIG_DIR) + "/calibration/lengths/";
  const auto orca = read_length_distribution(dir + "mlperf-llama2-70b-openorca.csv");
  // 5,463,976 prompt tokens over 24,576 prompts (HBFSim's protocol states
  // the same sum), from 48 to 1021.
  EXPECT_NEAR(orca->mean_input, 5463976.0 / 24576.0, 1e-9);
  EXPECT_EQ(orca->input.front().first, 48);
  EXPECT_EQ(orca->input.back().first, 1021);
  // Llama 2 70B's own outputs, within 3% of MLPerf's 294.45 tokens a sample
  // (the TEST06 logs' 397 prompts; not GPT-4's 218.9 of the dataset).
  EXPECT_NEAR(orca->mean_output, 294.45, 0.03 * 294.45);
  EXPECT_NE(orca->source.find("198fc46799b3328b36ee4bcbdebfa2db5a8e6183"), std::string::npos);
  const auto l405 = read_length_distribution(dir + "mlperf-llama3.1-405b.csv");
  EXPECT_NEAR(l405->mean_output, 684.68, 0.005);
  EXPECT_NEAR(l405->mean_input, 78380323.0 / 8313.0, 1e-6);
  const auto mixtral = read_length_distribution(dir + "mlperf-mixtral-8x7b.csv");
  EXPECT_NEAR(mixtral->mean_output, 144.84, 0.005);
  const auto r1 = read_length_distribution(dir + "mlperf-deepseek-r1.csv");
  EXPECT_EQ(r1->output.back().first, 32768);
  for (const auto* d : {orca.get(), l405.get(), mixtral.get(), r1.get()})
    EXPECT_NE(d->source.find("openshift-psap/performance-dashboard"), std::string::npos) << d->path;
  // Every MLPerf row runs a histogram and names its results file and commit.
  int mlperf = 0;
  for (const MeasurementRow& r :
       read_measurements(std::string(KVSIM_CONFIG_DIR) + "/calibration/gpu_published.csv")) {
    if (r.id.rfind("MLP", 0) != 0) continue;
    ++mlperf;
    EXPECT_TRUE(r.length_distribution) << r.id;
    EXPECT_NE(r.source.find("mlcommons/inference_results_v4.1 at 198fc46"), std::string::npos)
        << r.id;
    EXPECT_NE(r.source.find("mlperf_log_summary.txt"), std::string::npos) << r.id;
    EXPECT_TRUE(r.max_num_seqs.has_value()) << r.id;
  }
  EXPECT_GE(mlperf, 1);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
