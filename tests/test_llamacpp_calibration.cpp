// llama-bench rows of configs/calibration/llamacpp_published.csv
// (llamacpp_pp_rate, llamacpp_tg_rate): each is predicted by the
// llama_bench workload's figure for its one test on the row's device
// (cli/studies/calibration_llamacpp.cpp), checked here against a scenario
// written out by hand for the same test; the prediction follows the device
// parameters a fit moves; rows a device kind cannot run, or without the
// test's size, say why.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "cli/studies/calibration.hpp"
#include "cli/studies/calibration_fit.hpp"
#include "scenario_helpers.hpp"
#include "sim/genie/genie_engine.hpp"
#include "sim/genie/genie_metrics.hpp"
#include "tests/support/metric_parts.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

const std::string kCsv = std::string(KVSIM_CONFIG_DIR) + "/calibration/llamacpp_published.csv";

MeasurementRow row_named(const std::vector<MeasurementRow>& rows, const std::string& id) {
  for (const MeasurementRow& r : rows)
    if (r.id == id) return r;
  throw std::runtime_error("no row " + id);
}

// The test as one would run it: llama-bench -p 128 -n 0 -b 128 on the 8
// Elite's NPU, through llama.cpp's cells.
// ctx_size as the predictor sizes it (depth + test + 1 + n_batch): the
// dialog engine's figures move a little with it (tg64 40.06 t/s at 193
// cells, 40.02 at 1024), so the scenario written by hand names the same.
double hand_written_rate(const std::string& test, const std::string& key, int ctx_size) {
  const std::string yaml =
      "name: by-hand\nseed: 1\ndevice: snapdragon-8-elite\n"
      "model: llama-3.2-1b-instruct-w4a16\n"
      "kv_cache: {policy: llama_cells, behaviour: current, dtype: fp16, type_k: f16, type_v: f16, "
      "v_trans: true, ctx_size: " +
      std::to_string(ctx_size) +
      ", ar_variants: [1, 128]}\n"
      "workload: {kind: llama_bench, tests: [\"" +
      test + "\"], depth: [0], repetitions: 3}\n";
  const ScenarioSpec spec = testing::scenario_from_text(yaml);  // the engine keeps a reference
  GenieEngine engine(spec, nullptr);
  const RunMetrics m = engine.run();
  for (const auto& t : testing::bench_of(m))
    if (t.name == key) return bench_rate(t).mean;
  throw std::runtime_error("no test " + key);
}

TEST(LlamacppCalibration, EveryRowHasItsSourceAndIsPredictedAsTheWorkloadRunsIt) {
  const std::vector<MeasurementRow> rows = read_measurements(kCsv);
  ASSERT_EQ(rows.size(), 2u);
  for (const MeasurementRow& r : rows) {
    EXPECT_NE(r.source.find("ggml-org/llama.cpp"), std::string::npos) << r.id;
    EXPECT_NE(r.source.find(" at "), std::string::npos) << r.id << ": no commit";
    EXPECT_TRUE(predict_row(r, KVSIM_CONFIG_DIR).has_value()) << r.id;
  }
  const Prediction pp = predict_row(row_named(rows, "LB-8E-1B-PP128"), KVSIM_CONFIG_DIR).value();
  const Prediction tg = predict_row(row_named(rows, "LB-8E-1B-TG64"), KVSIM_CONFIG_DIR).value();
  EXPECT_NEAR(pp.value, hand_written_rate("pp 128", "pp128", 128 + 1 + 128), 1e-9 * pp.value);
  EXPECT_NEAR(tg.value, hand_written_rate("tg 64", "tg64", 64 + 1 + 128), 1e-9 * tg.value);
  EXPECT_NE(pp.scenario.find("llama-bench pp 128"), std::string::npos) << pp.scenario;
  // A prompt in batches of 128 runs faster per token than one token per pass.
  EXPECT_GT(pp.value, tg.value);
}

TEST(LlamacppCalibration, ThePredictionFollowsTheParametersAFitMoves) {
  const MeasurementRow tg = row_named(read_measurements(kCsv), "LB-8E-1B-TG64");
  config::LoadContext ctx;
  DeviceSpec d =
      load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/snapdragon-8-elite.yaml", ctx);
  ctx.diagnostics.throw_if_any();
  const double base = predict_row(tg, KVSIM_CONFIG_DIR, &d).value().value;
  EXPECT_NEAR(base, predict_row(tg, KVSIM_CONFIG_DIR).value().value, 1e-9 * base);
  // Decode reads every weight once a token: halving the weights' memory
  // efficiency slows it.
  set_fit_parameter(d, "efficiency.gemm.memory",
                    get_fit_parameter(d, "efficiency.gemm.memory") / 2);
  EXPECT_LT(predict_row(tg, KVSIM_CONFIG_DIR, &d).value().value, 0.8 * base);
}

// llama-bench runs on every backend: the same row on a 910B2 (CANN) and on
// a server CPU (the CPU backend) is predicted through the serving engine's
// llama_cells with one slot; each decode reads every weight, so the rate
// stays under the device's bandwidth over the weights' bytes.
TEST(LlamacppCalibration, RowsOnEveryDeviceFamilyArePredicted) {
  for (const std::string device : {"ascend-910b2", "xeon-platinum-8480"}) {
    MeasurementRow r = row_named(read_measurements(kCsv), "LB-8E-1B-TG64");
    r.device = device;
    const std::optional<Prediction> p = predict_row(r, KVSIM_CONFIG_DIR);
    ASSERT_TRUE(p.has_value()) << device;
    EXPECT_GT(p->value, 0) << device;
    EXPECT_NE(p->scenario.find(device), std::string::npos) << p->scenario;
    const ScenarioSpec s = testing::scenario_from_text(
        "name: b\nseed: 1\ndevice: " + device +
        "\nmodel: llama-3.2-1b-instruct-w4a16\nworkload:\n  kind: synthetic\n  requests: 1\n"
        "  arrival: {process: poisson, rate_per_s: 1}\n"
        "  input_tokens: {dist: constant, value: 16}\n"
        "  output_tokens: {dist: constant, value: 4}\n");
    EXPECT_LT(p->value, static_cast<double>(s.device.memory_bandwidth) /
                            static_cast<double>(s.model.weight_bytes()))
        << device;
  }
}

TEST(LlamacppCalibration, RowsItCannotRunSayWhy) {
  MeasurementRow r = row_named(read_measurements(kCsv), "LB-8E-1B-TG64");
  r.device = "no-such-device";
  try {
    (void)predict_row(r, KVSIM_CONFIG_DIR);
    FAIL() << "a row on a device with no file ran";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no device file"), std::string::npos) << e.what();
  }
  r = row_named(read_measurements(kCsv), "LB-8E-1B-TG64");
  r.output_tokens.reset();
  try {
    (void)predict_row(r, KVSIM_CONFIG_DIR);
    FAIL() << "a tg row without its size ran";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("output_tokens"), std::string::npos) << e.what();
  }
  // Another metric is not this predictor's.
  r = row_named(read_measurements(kCsv), "LB-8E-1B-TG64");
  r.metric = "decode_rate";
  EXPECT_FALSE(predict_llamacpp_row(r, KVSIM_CONFIG_DIR).has_value());
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
