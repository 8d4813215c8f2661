// The calibration CSV's layout and speculation columns (pipeline, expert,
// data, speculative_method, num_speculative_tokens, acceptance): read with
// file:line:col errors, and run by the serving-engine predictor as the
// row's deployment (cli/studies/calibration_ascend.cpp).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "base/diagnostics.hpp"
#include "cli/studies/calibration.hpp"
#include "scenario_helpers.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::configs_dir;

const char* kHeader =
    "id,device,model,weights,kv_dtype,context,batch,input_tokens,output_tokens,metric,value,unit,"
    "software,source,pipeline,expert,data,speculative_method,num_speculative_tokens,acceptance\n";

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(CalibrationLayoutColumns, ReadsLayoutAndSpeculation) {
  const std::string path = write_temp(
      "kvsim_layout_ok.csv",
      std::string(kHeader) +
          "L1,ascend-910c x16 (tp=4),Qwen3-30B-A3B,,,,8,1024,256,output_throughput,900,"
          "tokens/s,vllm-ascend,src,2,16,2,eagle3,2,0.636\n"
          "L2,ascend-910b2,Llama-3.2-1B,,,,8,1024,256,decode_rate,50,tokens/s,,,,,,,,\n");
  const auto rows = read_measurements(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].pipeline, 2);
  EXPECT_EQ(rows[0].expert, 16);
  EXPECT_EQ(rows[0].data, 2);
  EXPECT_EQ(rows[0].speculative_method, "eagle3");
  EXPECT_EQ(rows[0].num_speculative_tokens, 2);
  ASSERT_TRUE(rows[0].acceptance.has_value());
  EXPECT_DOUBLE_EQ(*rows[0].acceptance, 0.636);
  EXPECT_TRUE(rows[0].has_layout_or_speculation());
  // Empty cells: none of it.
  EXPECT_FALSE(rows[1].has_layout_or_speculation());
  EXPECT_FALSE(rows[1].speculative());
}

TEST(CalibrationLayoutColumns, BadCellsNameLineAndColumn) {
  const std::string row = "R,ascend-910b2,Llama-3.2-1B,,,,8,1024,256,decode_rate,50,tokens/s,,,";
  std::string csv = kHeader;
  char id = 'A';  // a one-letter id before every row but the first: unique ids
  for (const char* rest : {"0,,,,,\n",             // pipeline 0
                           ",,,medusa,2,0.5\n",    // no such method
                           ",,,eagle3,2,1.5\n",    // rate beyond 1
                           ",,,eagle3,,0.5\n"}) {  // no K
    if (csv.size() > std::string(kHeader).size()) csv.push_back(id++);
    csv.append(row).append(rest);
  }
  const std::string path = write_temp("kvsim_layout_bad.csv", csv);
  try {
    read_measurements(path);
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    const std::string all = e.what();
    const auto col = [&](int extra) { return std::to_string(row.size() + 1 + extra); };
    EXPECT_NE(all.find(path + ":2:" + col(0) + ": pipeline: '0' is not a whole number >= 1"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(path + ":3:" + col(4) + ": speculative_method: 'medusa'"), std::string::npos)
        << all;
    EXPECT_NE(all.find(path + ":4:" + col(13) + ": acceptance: '1.5' is not an acceptance rate"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(path + ":5:" + col(4) +
                       ": speculative_method: speculation needs speculative_method, "
                       "num_speculative_tokens and acceptance together"),
              std::string::npos)
        << all;
  }
}

MeasurementRow decode_row() {
  MeasurementRow row;
  row.id = "D";
  row.device = "ascend-910b2";
  row.model = "Llama-3.2-1B";
  row.metric = "decode_rate";
  row.batch = 4;
  row.input_tokens = 256;
  row.output_tokens = 256;
  return row;
}

TEST(CalibrationLayoutColumns, SpeculativeRowRunsTheDrafter) {
  // A model whose decode step streams its weights (16 GB): a verify pass
  // of 3 tokens costs about a step (Llama-3.2-1B's steps are mostly fixed
  // costs, which the head's passes pay again).
  MeasurementRow plain = decode_row();
  plain.model = "Qwen3-8B";
  MeasurementRow spec = plain;
  spec.speculative_method = "eagle3";
  spec.num_speculative_tokens = 2;
  spec.acceptance = 0.7;
  const auto base = predict_ascend_row(plain, configs_dir());
  const auto fast = predict_ascend_row(spec, configs_dir());
  ASSERT_TRUE(base && fast);
  // 1 + 0.7 + 0.49 = 2.19 tokens a verify pass at about a decode step's
  // price plus the head's passes: well above 1.3x the plain decode rate
  // (1.62x: 109.1 against 67.2 tokens/s).
  EXPECT_GT(fast->value, 1.3 * base->value) << fast->scenario << " vs " << base->scenario;
  EXPECT_NE(fast->scenario.find("eagle3 K=2 acceptance 0.7"), std::string::npos) << fast->scenario;
  // Drafts never accepted cost their passes and give nothing.
  spec.acceptance = 0.0;
  const auto slow = predict_ascend_row(spec, configs_dir());
  ASSERT_TRUE(slow);
  EXPECT_LT(slow->value, base->value);
}

TEST(CalibrationLayoutColumns, PipelineAndExpertReachTheRun) {
  MeasurementRow row = decode_row();
  row.metric = "output_throughput_per_device";
  row.device = "ascend-910b2 x2 (tp=1)";
  const auto two_instances = predict_ascend_row(row, configs_dir());
  row.pipeline = 2;
  const auto one_pipeline = predict_ascend_row(row, configs_dir());
  ASSERT_TRUE(two_instances && one_pipeline);
  EXPECT_NE(one_pipeline->scenario.find("tp=1 pp=2"), std::string::npos) << one_pipeline->scenario;
  EXPECT_NE(one_pipeline->value, two_instances->value);
  // Experts over 2 ranks of tensor parallelism 2 (a MoE model).
  MeasurementRow moe = decode_row();
  moe.model = "Qwen3-30B-A3B";
  moe.device = "ascend-910b2 x2 (tp=2)";
  const auto dense_ranks = predict_ascend_row(moe, configs_dir());
  moe.expert = 2;
  const auto expert_ranks = predict_ascend_row(moe, configs_dir());
  ASSERT_TRUE(dense_ranks && expert_ranks);
  EXPECT_NE(expert_ranks->scenario.find("tp=2 ep=2"), std::string::npos) << expert_ranks->scenario;
  EXPECT_NE(expert_ranks->value, dense_ranks->value);
}

TEST(CalibrationLayoutColumns, DataMustMatchTheDevices) {
  MeasurementRow row = decode_row();
  row.metric = "output_throughput";
  row.device = "ascend-910b2 x4 (tp=2)";
  const auto without = predict_ascend_row(row, configs_dir());
  // 2 data-parallel ranks of tp 2 (the column's 4 devices) serving the
  // group's 8 clients, 4 each: a dense model's ranks are independent
  // replicas behind the even split, so the two instances of 4 clients.
  row.data = 2;
  row.batch = 8;
  const auto with = predict_ascend_row(row, configs_dir());
  ASSERT_TRUE(without && with);
  EXPECT_NE(with->scenario.find("tp=2 dp=2"), std::string::npos) << with->scenario;
  EXPECT_NEAR(with->value, without->value, 0.005 * without->value)
      << with->scenario << " vs " << without->scenario;
  row.data = 4;  // 8 devices the column does not have
  try {
    (void)predict_ascend_row(row, configs_dir());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("data 4 x tensor 2 x pipeline 1 is 8 devices"),
              std::string::npos)
        << e.what();
  }
}

// The server and benchmark settings a source states (max_num_seqs,
// max_batched_tokens, requests): read, checked, and run.
TEST(CalibrationLayoutColumns, ServerSettingsReachTheRun) {
  const std::string header =
      "id,device,model,weights,kv_dtype,context,batch,input_tokens,output_tokens,metric,value,"
      "unit,software,source,max_num_seqs,max_batched_tokens,requests\n";
  const std::string row = "S1,ascend-910b2,Qwen3-8B,,,,8,512,64,output_throughput,100,tokens/s,,,";
  const auto rows =
      read_measurements(write_temp("kvsim_server_ok.csv", header + row + "2,1024,12\n"));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].max_num_seqs, 2);
  EXPECT_EQ(rows[0].max_batched_tokens, 1024);
  EXPECT_EQ(rows[0].requests, 12);
  EXPECT_TRUE(rows[0].has_layout_or_speculation());
  MeasurementRow open = rows[0];
  open.max_num_seqs.reset();
  open.max_batched_tokens.reset();
  const auto capped = predict_ascend_row(rows[0], configs_dir());
  const auto free = predict_ascend_row(open, configs_dir());
  ASSERT_TRUE(capped && free);
  EXPECT_NE(capped->scenario.find("12 requests"), std::string::npos) << capped->scenario;
  EXPECT_NE(capped->scenario.find("max_num_seqs 2 and max_batched_tokens 1024 per rank"),
            std::string::npos)
      << capped->scenario;
  // 8 clients, 2 running at a time: a decode step streams the weights for
  // 2 sequences instead of 8.
  EXPECT_LT(capped->value, 0.6 * free->value) << capped->scenario << " vs " << free->scenario;
  const std::string bad = write_temp("kvsim_server_bad.csv", header + row + "0,1024,12\n");
  try {
    read_measurements(bad);
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    const std::string all = e.what();
    EXPECT_NE(all.find(bad + ":2:" + std::to_string(row.size() + 1) +
                       ": max_num_seqs: '0' is not a whole number >= 1"),
              std::string::npos)
        << all;
  }
}

TEST(CalibrationLayoutColumns, PhoneRowsRefuseTheColumns) {
  MeasurementRow row = decode_row();
  row.device = "snapdragon-8-elite";
  row.speculative_method = "eagle3";
  row.num_speculative_tokens = 2;
  row.acceptance = 0.5;
  EXPECT_THROW((void)predict_htp_row(row, configs_dir()), std::runtime_error);
  const auto report = calibrate_rows({row}, configs_dir(), "test");
  ASSERT_EQ(report.entries.size(), 1u);
  EXPECT_FALSE(report.entries[0].prediction.has_value());
  EXPECT_NE(report.entries[0].not_predicted.find("serving-engine rows"), std::string::npos)
      << report.entries[0].not_predicted;
}

// Every column the reader takes is named where a user looks for it: the
// help of `kvsim calibrate` and the error for a header missing a column.
TEST(CalibrationLayoutColumns, HelpAndErrorsListEveryColumn) {
  const std::string text = calibration_columns_text();
  for (const char* column :
       {"id", "device", "model", "metric", "value", "unit", "prefix_hit", "arrival", "pipeline",
        "expert", "data", "max_num_seqs", "max_batched_tokens", "requests", "speculative_method",
        "num_speculative_tokens", "acceptance", "lengths"})
    EXPECT_NE(text.find(column), std::string::npos) << column;
  const std::string command = std::string(KVSIM_BINARY) + " calibrate --help 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string help;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) help.append(buffer, n);
  pclose(pipe);
  // CLI11 wraps long descriptions; compare without line breaks and indents.
  std::string flat;
  for (size_t i = 0; i < help.size(); ++i) {
    if (help[i] == '\n') {
      while (i + 1 < help.size() && help[i + 1] == ' ') ++i;
      continue;
    }
    flat += help[i];
  }
  EXPECT_NE(flat.find("lengths"), std::string::npos) << help;
  EXPECT_NE(flat.find("acceptance"), std::string::npos) << help;
}

// The published Ascend rows (configs/calibration/ascend_published.csv and
// its misses): each
// names the vllm-ascend file and the 40-hex commit its figure comes from (a
// row may say it shares the previous row's), and the DP attention + EP rows
// reach the run as the deployment their config file states: the group of
// data x tensor dies, experts over all of them, MTP where it ran.
TEST(CalibrationLayoutColumns, PublishedAscendRowsNameTheirSourceAndLayout) {
  // The rows the fit takes, and the one it leaves out (the misses file).
  const auto rows = read_measurements(
      std::vector<std::string>{configs_dir() + "/calibration/ascend_published.csv",
                               configs_dir() + "/calibration/ascend_published_misses.csv"});
  ASSERT_GE(rows.size(), 9u);
  const std::regex commit("vllm-project/vllm-ascend [^ ]+\\.yaml at [0-9a-f]{40}");
  int with_layout = 0;
  for (const MeasurementRow& row : rows) {
    EXPECT_TRUE(std::regex_search(row.source, commit) ||
                row.source.rfind("same file and commit", 0) == 0)
        << row.id << ": " << row.source;
    if (!row.data) continue;
    ++with_layout;
    const auto device = parse_device_column(row.device);
    ASSERT_TRUE(device && row.expert) << row.id;
    EXPECT_EQ(*row.expert, *row.data * device->tp) << row.id;  // vLLM's EP = DP x TP
    const auto p = predict_ascend_row(row, configs_dir());
    ASSERT_TRUE(p) << row.id;
    const std::string layout =
        fmt::format("x{} tp={} ep={} dp={}", device->count, device->tp, *row.expert, *row.data);
    EXPECT_NE(p->scenario.find(layout), std::string::npos) << row.id << ": " << p->scenario;
    if (row.speculative()) {
      EXPECT_NE(p->scenario.find("mtp K=1 acceptance 0.85"), std::string::npos)
          << row.id << ": " << p->scenario;
    }
    EXPECT_GT(p->value, 0.0) << row.id;
  }
  EXPECT_EQ(with_layout, 4);  // AD1, AD2 (16 dies), AQ2, AD3 (32 dies over 2 nodes)
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
