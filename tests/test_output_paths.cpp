// Every path kvsim writes, against every kind of thing that may already be
// there (reports/output_rule.hpp): a user's file, a user's folder holding
// only files with kvsim's names, a FIFO, a symbolic link, a device node
// (made with mknod in the test's own folder, only when the test runs as
// root), and an input of the run itself (the scenario, sweep or
// measurements file). None is changed, with --force and without, except
// what --force is for: a user's file at --trace (a file replaced by a file)
// and a user's folder at --out (a folder by a folder); each refusal is exit 2 naming the flag, and
// nothing is left beside the target (no .tmp-, .lock, .old-, .partial).
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <map>

#include "report_test_helpers.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;

struct WritePath {
  const char* name;
  const char* args;   // after `kvsim`, run in the test folder; {t} is the target
  const char* flag;   // the flag a refusal names
  const char* input;  // a file of the test folder this command reads (never replaced)
  bool file = false;  // the output is one file (--trace), not a folder
};

const WritePath kWritePaths[] = {
    {"RunOut", "run base.yaml --quiet --out {t}", "--out", "base.yaml"},
    {"RunTrace", "run base.yaml --quiet --out runs/r --trace {t}", "--trace", "base.yaml", true},
    {"Compare", "compare base.yaml --vary seed=1,2 --quiet --out {t}", "--out", "base.yaml"},
    {"Capacity", "capacity --device ./dev.yaml --model llama-3.2-1b --context 1024 --out {t}",
     "--out", "dev.yaml"},
    {"Calibrate", "calibrate cal.csv --out {t}", "--out", "cal.csv"},
    {"Hitcurve", "hitcurve base.yaml --capacity-tokens 1000 --out {t}", "--out", "base.yaml"},
    {"Sweep", "sweep sweep.yaml --jobs 1 --quiet --out {t}", "--out", "sweep.yaml"},
    {"Search", "search search.yaml --jobs 1 --quiet --out {t}", "--out", "search.yaml"},
};

enum class Decoy { user_file, kvsim_named_folder, fifo, symlink, device_node, the_input };

std::string decoy_name(Decoy d) {
  switch (d) {
    case Decoy::user_file:
      return "UserFile";
    case Decoy::kvsim_named_folder:
      return "UserFolderOfKvsimNames";
    case Decoy::fifo:
      return "Fifo";
    case Decoy::symlink:
      return "Symlink";
    case Decoy::device_node:
      return "DeviceNode";
    case Decoy::the_input:
      break;
  }
  return "TheInputItself";
}

constexpr const char* kSweep = R"(name: paths
base: base.yaml
grid:
  seed: [1]
metrics: [requests.completed]
)";

constexpr const char* kSearch = R"(name: paths
base: base.yaml
grid:
  seed: [1]
search:
  rates: [1]
  slo: {ttft_p99_ms: 1000000}
)";

class OutputPaths : public testing::TempFolderTest,
                    public ::testing::WithParamInterface<std::tuple<WritePath, Decoy>> {
 protected:
  void SetUp() override {
    testing::TempFolderTest::SetUp();
    write("base.yaml", testing::small_scenario("paths", 6));
    fs::copy_file(std::string(KVSIM_SOURCE_DIR) + "/configs/devices/ascend-910b2.yaml",
                  path("dev.yaml"));
    // One row the HTP predictor answers in a moment, written here so the
    // test needs no shared data.
    write("cal.csv",
          "id,device,model,weights,kv_dtype,context,batch,input_tokens,output_tokens,metric,"
          "value,unit,software,source\n"
          "Q1t,snapdragon-8-elite,Llama-3.2-3B-Instruct,w4a16,,4096,1,128,,"
          "ttft_one_ar128_pass,88.2,ms,Qualcomm Genie (AI Hub),test row\n");
    write("sweep.yaml", kSweep);
    write("search.yaml", kSearch);
  }

  // The target's kind and contents (a folder: every entry under it).
  std::string fingerprint(const fs::path& p) const {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return "<absent>";
    std::string out = std::to_string(st.st_mode & S_IFMT) + ":" + std::to_string(st.st_ino) + ":";
    if (S_ISLNK(st.st_mode)) return out + fs::read_symlink(p).string();
    if (S_ISREG(st.st_mode)) return out + read(p.string());
    if (S_ISDIR(st.st_mode)) {
      std::map<std::string, std::string> entries;
      for (const auto& e : fs::recursive_directory_iterator(p))
        entries[fs::relative(e.path(), p).string()] =
            e.is_regular_file() ? read(e.path().string()) : "<dir>";
      for (const auto& [k, v] : entries) out += k + "=" + v + ";";
    }
    return out;
  }

  // Names left beside the target or in the test folder by a write.
  std::vector<std::string> leftovers() const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      for (const char* mark : {".tmp-", ".old-", ".partial", ".lock"})
        if (name.find(mark) != std::string::npos) out.push_back(e.path().string());
    }
    return out;
  }

  // Makes the decoy; returns its path, or "" when it cannot be made here.
  std::string make_decoy(Decoy d, const WritePath& w) {
    switch (d) {
      case Decoy::user_file:
        return write("target", "my notes\n");
      case Decoy::kvsim_named_folder:
        fs::create_directories(path("target/01-baseline"));
        write("target/report.md", "# written by hand\n");
        write("target/compare.csv", "mine\n");
        write("target/01-baseline/metrics.json", "{}\n");
        return path("target");
      case Decoy::fifo:
        if (::mkfifo(path("target").c_str(), 0644) != 0) return "";
        return path("target");
      case Decoy::symlink:
        write("elsewhere.txt", "the link's target\n");
        fs::create_symlink("elsewhere.txt", path("target"));
        return path("target");
      case Decoy::device_node:
        // /dev/null's numbers: harmless if anything ever wrote to it.
        if (::geteuid() != 0) return "";
        if (::mknod(path("target").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) return "";
        return path("target");
      case Decoy::the_input:
        return path(w.input);
    }
    return "";
  }
};

TEST_P(OutputPaths, NothingIsReplacedThatKvsimDidNotWrite) {
  const auto& [w, decoy] = GetParam();
  const std::string target = make_decoy(decoy, w);
  if (target.empty()) GTEST_SKIP() << "this decoy needs root (mknod) or mkfifo";
  for (const bool force : {false, true}) {
    SCOPED_TRACE(force ? "with --force" : "without --force");
    const std::string before = fingerprint(target);
    const std::string templ = w.args;
    const size_t at = templ.find("{t}");
    std::string args = templ.substr(0, at) + target + templ.substr(at + 3);
    if (force) args += " --force";
    const auto r = testing::run_command("cd " + dir_.string() + " && " + std::string(KVSIM_BINARY) +
                                        " " + args + " < /dev/null");
    for (const std::string& left : leftovers()) ADD_FAILURE() << args << " left " << left;
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
    if (force && (w.file ? decoy == Decoy::user_file : decoy == Decoy::kvsim_named_folder)) {
      // What --force exists for: a user's file replaced by a file (the
      // trace), a user's folder by (or written into as) a folder.
      EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
      if (w.file) {
        EXPECT_EQ(read(target).rfind("{\"displayTimeUnit\"", 0), 0u);
      }
      continue;
    }
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(std::string(w.flag) + " "), std::string::npos) << r.output;
    EXPECT_TRUE(fingerprint(target) == before) << args << " changed " << target;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryWritePath, OutputPaths,
    ::testing::Combine(::testing::ValuesIn(kWritePaths),
                       ::testing::Values(Decoy::user_file, Decoy::kvsim_named_folder, Decoy::fifo,
                                         Decoy::symlink, Decoy::device_node, Decoy::the_input)),
    [](const ::testing::TestParamInfo<std::tuple<WritePath, Decoy>>& p) {
      return std::string(std::get<0>(p.param).name) + "_" + decoy_name(std::get<1>(p.param));
    });

// A folder that holds an input of the run is no more replaceable than the
// input: `--out .` is refused as the working folder, and a folder given by
// path that holds the scenario is refused even with --force.
TEST_F(OutputPaths, AFolderHoldingTheScenarioIsNeverReplaced) {
  fs::create_directories(path("work"));
  write("work/s.yaml", testing::small_scenario("inside", 6));
  const auto r = kvsim("run " + path("work/s.yaml") + " --quiet --force --out " + path("work"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("an input of this run"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(path("work/s.yaml")));
}

// A trace kvsim wrote carries its marker (its first line and its generator
// record): the next run replaces it without --force.
TEST_F(OutputPaths, ATraceKvsimWroteIsReplacedWithoutForce) {
  write("base.yaml", testing::small_scenario("again", 6));
  for (int i = 0; i < 2; ++i) {
    const auto r = kvsim("run " + path("base.yaml") + " --quiet --out " +
                         path(i == 0 ? "o0" : "o1") + " --trace " + path("t.json"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  EXPECT_NE(read(path("t.json")).find("\"generator\":\"kvsim\""), std::string::npos);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
