// Models as users have them in every study (a name, a model YAML file, a
// Hugging Face folder, a path relative to the file that names it), and a
// grid with variants whose values do not go together: those are rows with
// their reason beside the others' results.
#include <gtest/gtest.h>

#include <filesystem>
#include <tuple>

#include "cli/studies/compare_report.hpp"
#include "report_test_helpers.hpp"
#include "reports/metrics_check.hpp"
#include "tests/support/hf_folders.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;
using testing::TempFolderTest;

const std::string kConfigs = testing::configs_dir();

class FleetModels : public TempFolderTest {
 protected:
  // A model YAML file of the user's own: llama-3.2-1b's shape, renamed.
  std::string model_yaml(const std::string& name) const {
    std::string text = read(kConfigs + "/models/llama-3.2-1b.yaml");
    text.replace(text.find("name: llama-3.2-1b"), 18, "name: my-small-llama");
    return write(name, text);
  }
};

TEST_F(FleetModels, CompareVariesModelsGivenAsFolderFileAndName) {
  const std::string scenario = write("s.yaml", testing::small_scenario("own-models", 10));
  const std::string folder = testing::write_hf_llama_folder(dir_);
  const std::string yaml = model_yaml("mine.yaml");
  // A Hugging Face repository name with its organisation, which reads as a
  // path but names a shipped shape.
  const auto r = kvsim("compare " + scenario + " --vary model=" + folder + "," + yaml +
                       ",meta-llama/Llama-3.2-1B-Instruct --out " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = read_json_file(path("out") + "/compare.json");
  ASSERT_EQ(j["variants"].size(), 3u) << r.output;
  EXPECT_TRUE(j["rejected"].empty());
  // Each variant ran its own model: the folder's (named after the folder),
  // the file's, the repository name's.
  const auto run_model = [&](size_t i) {
    const std::string folder_name = j["variants"][i]["folder"].get<std::string>();
    return read_json_file(path("out") + "/" + folder_name + "/metrics.json")["model"];
  };
  EXPECT_EQ(run_model(0), "my-llama");
  EXPECT_EQ(run_model(1), "my-small-llama");
  EXPECT_EQ(run_model(2), "llama-3.2-1b");
  EXPECT_EQ(j["variants"][1]["label"], "model=" + yaml);
}

TEST_F(FleetModels, AVariantThatDoesNotFitIsARowWithItsReason) {
  const std::string scenario = write("s.yaml", testing::small_scenario("one-bad", 10));
  // llama-3.1-405b does not fit one 910B2; tensor 3 does not divide 32 heads.
  const CompareResult r = run_compare(
      scenario, {},
      {parse_vary("model=llama-3.2-1b,llama-3.1-405b"), parse_vary("parallel.tensor=1,3")},
      path("out"));
  ASSERT_EQ(r.variants.size(), 1u);
  ASSERT_EQ(r.rejected.size(), 3u);
  EXPECT_EQ(r.variants[0].label, "model=llama-3.2-1b parallel.tensor=1");
  EXPECT_EQ(r.rejected[0].position, 1u);
  EXPECT_NE(r.rejected[0].reason.find("parallel.tensor: 32 attention heads do not divide over 3"),
            std::string::npos)
      << r.rejected[0].reason;
  EXPECT_NE(r.rejected[1].reason.find("llama-3.1-405b does not fit on ascend-910b2"),
            std::string::npos)
      << r.rejected[1].reason;
  // Rows in grid order, the rejected ones with their reason.
  const auto rows = compare_rows(r);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_TRUE(rows[0].ran.has_value());
  for (size_t i = 1; i < 4; ++i) EXPECT_FALSE(rows[i].ran.has_value()) << i;
  const std::string md = read(path("out") + "/compare.md");
  EXPECT_NE(md.find("| model=llama-3.1-405b parallel.tensor=1 | - |"), std::string::npos) << md;
  EXPECT_NE(md.find("does not fit on ascend-910b2"), std::string::npos);
  const std::string html = read(path("out") + "/compare.html");
  EXPECT_NE(html.find("<th>not run</th>"), std::string::npos);
  EXPECT_NE(html.find("llama-3.1-405b does not fit on ascend-910b2"), std::string::npos);
  const auto j = read_json_file(path("out") + "/compare.json");
  ASSERT_EQ(j["rejected"].size(), 3u);
  EXPECT_EQ(j["rejected"][1]["label"], "model=llama-3.1-405b parallel.tensor=1");
  const std::string csv = read(path("out") + "/compare.csv");
  EXPECT_NE(csv.find(",rejected\n"), std::string::npos);
  EXPECT_NE(csv.find("model=llama-3.1-405b parallel.tensor=1,,"), std::string::npos);
  // The one that ran has its folder; the others have none.
  EXPECT_TRUE(fs::exists(path("out") + "/" + r.variants[0].folder + "/metrics.json"));
  EXPECT_FALSE(fs::exists(path("out") + "/02-model=llama-3.2-1b_parallel.tensor=3"));
}

TEST_F(FleetModels, CompareCommandKeepsGoingPastAVariantThatDoesNotFit) {
  const std::string scenario = write("s.yaml", testing::small_scenario("cli-bad", 10));
  auto r = kvsim("compare " + scenario + " --vary model=llama-3.2-1b,llama-3.1-405b --out " +
                 path("out"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("model=llama-3.1-405b not run: model: llama-3.1-405b does not fit"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1 of 2 variants not run"), std::string::npos) << r.output;
  // When no variant can run there is nothing to compare: exit 2, no folder.
  r = kvsim("compare " + scenario + " --vary model=llama-3.1-405b,llama-2-70b --out " +
            path("none"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("llama-3.1-405b does not fit"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("; none of the grid's 2 variants can run"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(path("none")));
  // A name that resolves to nothing is bad input, not a row.
  r = kvsim("compare " + scenario + " --vary model=llama-3.2-1b,llama-3.2-1bb --out " +
            path("typo"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no model named 'llama-3.2-1bb', did you mean 'llama-3.2-1b'?"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(path("typo")));
}

// A search file names models as a scenario does: paths relative to the file.
TEST_F(FleetModels, SearchTakesModelPathsRelativeToItsFile) {
  write("s.yaml", testing::small_scenario("search-own", 10));
  testing::write_hf_llama_folder(dir_);
  model_yaml("mine.yaml");
  fs::create_directories(dir_ / "studies");
  const std::string search = write("studies/own.yaml", R"(name: own
base: ../s.yaml
grid:
  model: [../my-llama, ../mine.yaml]
search:
  rates: [1, 2]
  slo: {ttft_p99_ms: 5000}
)");
  const auto r = kvsim("search " + search + " --jobs 2 --out " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("pruned at load"), std::string::npos) << r.output;
  const auto j = read_json_file(path("out") + "/search.json");
  const std::string text = j.dump();
  EXPECT_NE(text.find("my-llama"), std::string::npos);
  EXPECT_NE(text.find("mine.yaml"), std::string::npos);
  EXPECT_NE(r.output.find("chosen: model="), std::string::npos) << r.output;
}

// capacity --device A,B: a fleet's devices side by side in one table (a
// device column), in every output, and in --slo's searches; a phone NPU in
// the fleet is a row saying why it is not searched.
TEST_F(FleetModels, CapacityTablesAFleetSideBySide) {
  auto r = kvsim(
      "capacity --device ascend-910b2,h100-sxm5 --model llama-3-8b --context 4096 "
      "--out " +
      path("cap"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = read_json_file(path("cap") + "/capacity.json");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["device"], "ascend-910b2");
  EXPECT_EQ(rows[1]["device"], "h100-sxm5");
  EXPECT_NE(rows[0]["num_blocks"], rows[1]["num_blocks"]);  // 64 GiB against 80 GiB
  const std::string csv = read(path("cap") + "/capacity.csv");
  EXPECT_NE(csv.find("\nascend-910b2,llama-3-8b,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nh100-sxm5,llama-3-8b,"), std::string::npos) << csv;
  EXPECT_NE(r.output.find("| h100-sxm5 | llama-3-8b | fp16 | 4096 |"), std::string::npos);

  // --slo over a fleet of a device given as a file (named inside it), a
  // shipped device and a phone.
  std::string npu = read(kConfigs + "/devices/ascend-910b2.yaml");
  npu.replace(npu.find("name: ascend-910b2"), 18, "name: my-npu");
  const std::string npu_file = write("my-npu.yaml", npu);
  r = kvsim("capacity --device " + npu_file +
            ",snapdragon-8-elite --model llama-3.2-1b --context 2048 --slo ttft_p99_ms=2000 "
            "--workload " +
            kConfigs + "/scenarios/default.yaml --set workload.sessions=20 --out " + path("slo"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto slo = read_json_file(path("slo") + "/slo.json");
  ASSERT_EQ(slo["searches"].size(), 1u) << slo.dump(2);
  EXPECT_EQ(slo["searches"][0]["device"], "my-npu");
  EXPECT_TRUE(slo["searches"][0]["found"].get<bool>()) << slo.dump(2);
  ASSERT_EQ(slo["not_searched"].size(), 1u);
  EXPECT_EQ(slo["not_searched"][0]["device"], "snapdragon-8-elite");
  EXPECT_NE(slo["not_searched"][0]["reason"].get<std::string>().find("HTP device"),
            std::string::npos);
  EXPECT_NE(r.output.find("| snapdragon-8-elite | llama-3.2-1b | fp16 | 1 | - | - | 0 | not "
                          "searched: an HTP device"),
            std::string::npos)
      << r.output;
  // A fleet of phones only has nothing to search: exit 2.
  r = kvsim(
      "capacity --device snapdragon-8-elite --model llama-3.2-1b --context 2048 --slo "
      "ttft_p99_ms=2000 --workload " +
      kConfigs + "/scenarios/default.yaml --out " + path("phones"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(fs::exists(path("phones")));
}

TEST_F(FleetModels, ABadFleetListIsExit2NamingTheFlagAndWhatItTakes) {
  // Arguments, the message, and a part of what is allowed (a shipped name, a range).
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"--device ascend-910b2,ascend-910b9 --model llama-3-8b",
       "--device:1:1: device: no device named 'ascend-910b9', did you mean ", "h100-sxm5"},
      {"--device ascend-910b2,,h100-sxm5 --model llama-3-8b",
       "--device:1:1: device: 'ascend-910b2,,h100-sxm5' has an empty element (NAME[,NAME...], "
       "each a device file or one of: a100-sxm4, ",
       "h100-sxm5"},
      {"--device ascend-910b2, --model llama-3-8b", "'ascend-910b2,' has an empty element",
       "h100-sxm5"},
      {"--device ascend-910b2,ascend-910b2 --model llama-3-8b",
       "--device:1:1: device: 'ascend-910b2' is given twice", "h100-sxm5"},
      {"--device ascend-910b2 --model llama-3-8b,,qwen3-8b",
       "--model:1:1: model: 'llama-3-8b,,qwen3-8b' has an empty element (NAME[,NAME...], each a "
       "model YAML or JSON file, a Hugging Face folder with config.json, or one of: ",
       "qwen3-32b"},
      {"--device ascend-910b2 --model llama-3-8b --tp 1,,2",
       "--tp:1:1: tp: '1,,2' has an empty element (N[,N...], each an integer in 1..64)", "1..64"},
      {"--device ascend-910b2 --model llama-3-8b --context 1024,",
       "--context:1:1: context: '1024,' has an empty element", "1..1099511627776"},
      {"--device ascend-910b2 --model llama-3-8b --kv-dtype fp16,,int8",
       "--kv-dtype:1:1: kv-dtype: 'fp16,,int8' has an empty element", "bf16"},
      {"--device ascend-910b2 --model ./no-such-folder",
       "--model:1:1: model: no model file './no-such-folder'", "qwen3-32b"},
  };
  for (const auto& [args, message, listed] : cases) {
    const auto r = kvsim("capacity " + args + " --out " + path("bad"));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(listed), std::string::npos) << "says what is allowed: " << args;
    EXPECT_FALSE(fs::exists(path("bad"))) << args;
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
