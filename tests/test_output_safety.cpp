// kvsim replaces only what it wrote (non-negotiable 3, SPEC 11 "Outputs"):
// an --out onto a file, a user's folder, the working folder or one of its
// parents is exit 2 with everything left as it was; a folder kvsim wrote
// (it carries .kvsim) is replaced; names from YAML become one safe path
// component; leftovers of dead runs are cleaned; a second writer is refused;
// an interrupted run removes its temporary folder.
#include <fmt/format.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "report_test_helpers.hpp"
#include "reports/output_dir.hpp"
#include "reports/output_rule.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;

class OutputSafety : public testing::TempFolderTest {
 protected:
  std::string scenario(const std::string& name = "safety", int requests = 20) {
    return write(name + ".yaml", testing::small_scenario(name, requests));
  }
  // `kvsim run` with the working folder set to this test's folder.
  testing::CommandResult run_here(const std::string& args) {
    return testing::run_command("cd " + dir_.string() + " && " + std::string(KVSIM_BINARY) +
                                " run " + args);
  }
};

// What the signal handler removes a temporary folder with: system calls
// only (no allocation), the whole tree, files, links (not their targets) and
// folders nested past a read buffer's worth of entries.
TEST_F(OutputSafety, TheSignalSafeRemovalTakesAWholeTreeAndNoLinkTarget) {
  const fs::path root = dir_ / ".out.tmp-1";
  fs::create_directories(root / "a" / "b" / "c");
  for (int i = 0; i < 300; ++i)  // more entries than one getdents64 buffer holds
    std::ofstream(root / "a" / fmt::format("file-with-a-long-name-{:04}.csv", i)) << i;
  std::ofstream(root / "a" / "b" / "c" / "deep.json") << "{}";
  const fs::path outside = dir_ / "keep.txt";
  std::ofstream(outside) << "mine";
  fs::create_symlink(outside, root / "a" / "link");
  fs::create_directory_symlink(dir_, root / "dirlink");
  remove_tree_signal_safe(root.c_str());
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::is_regular_file(outside));
  EXPECT_TRUE(fs::is_directory(dir_));
  remove_tree_signal_safe((dir_ / "never-there").c_str());  // nothing to do, no error
  std::ofstream(dir_ / "one.txt") << "x";
  remove_tree_signal_safe((dir_ / "one.txt").c_str());
  EXPECT_FALSE(fs::exists(dir_ / "one.txt"));
}

TEST_F(OutputSafety, AFileAtOutIsRefusedAndKept) {
  const std::string target = write("notes.txt", "my notes\n");
  const auto r = kvsim("run " + scenario() + " --quiet --out " + target);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("not a folder kvsim wrote"), std::string::npos) << r.output;
  EXPECT_EQ(read(target), "my notes\n");
}

TEST_F(OutputSafety, AUsersFolderIsRefusedUnlessForced) {
  fs::create_directories(path("mine"));
  write("mine/notes.txt", "keep me\n");
  auto r = kvsim("run " + scenario() + " --quiet --out " + path("mine"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no .kvsim marker"), std::string::npos) << r.output;
  EXPECT_EQ(read(path("mine/notes.txt")), "keep me\n");
  r = kvsim("run " + scenario() + " --quiet --force --out " + path("mine"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(path("mine/notes.txt")));
  EXPECT_TRUE(fs::exists(path("mine/metrics.json")));
}

TEST_F(OutputSafety, AFolderKvsimWroteIsReplacedAndAnEmptyOneTaken) {
  fs::create_directories(path("empty"));
  auto r = kvsim("run " + scenario() + " --quiet --out " + path("empty"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(path("empty/.kvsim")));
  r = kvsim("run " + scenario() + " --quiet --out " + path("empty"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(path("empty/metrics.json")));
}

// Files with kvsim's names are no proof that kvsim wrote them (a user's
// hand-written report.md, a folder laid out like a compare's): only the
// .kvsim marker is, so such a folder is kept unless --force.
TEST_F(OutputSafety, AFolderOfKvsimNamedFilesWithoutTheMarkerIsKept) {
  fs::create_directories(path("old/01-base"));
  write("old/compare.csv", "mine\n");
  write("old/01-base/metrics.json", "{}");
  auto r = kvsim("run " + scenario() + " --quiet --out " + path("old"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no .kvsim marker"), std::string::npos) << r.output;
  EXPECT_EQ(read(path("old/compare.csv")), "mine\n");
  EXPECT_TRUE(fs::exists(path("old/01-base/metrics.json")));
  fs::create_directories(path("notes"));
  write("notes/report.md", "# my notes\n");
  r = kvsim("run " + scenario() + " --quiet --out " + path("notes"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(read(path("notes/report.md")), "# my notes\n");
  EXPECT_FALSE(fs::exists(path("notes/.kvsim")));
}

TEST_F(OutputSafety, TheWorkingFolderAndItsParentsAreNeverReplaced) {
  write("keep.txt", "x");
  for (const std::string& out : std::vector<std::string>{".", "..", dir_.string(), "/"}) {
    SCOPED_TRACE(out);
    const auto r = run_here(scenario() + " --quiet --force --out " + out);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(fs::exists(path("keep.txt")));
  }
}

TEST_F(OutputSafety, AScenarioNameBecomesOneSafePathComponent) {
  fs::create_directories(path("work/sub"));
  write("work/sub/keep.txt", "x");
  const std::string file = write("work/sub/evil.yaml", testing::small_scenario("../..", 10));
  const auto r = testing::run_command("cd " + path("work/sub") + " && " +
                                      std::string(KVSIM_BINARY) + " run evil.yaml --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(path("work/sub/keep.txt")));
  EXPECT_TRUE(fs::exists(path("work/sub/out/_._../metrics.json")));
  EXPECT_EQ(safe_path_component("x/../.."), "x_.._..");
  EXPECT_EQ(safe_path_component(".."), "_.");
  EXPECT_EQ(safe_path_component(""), "scenario");
  EXPECT_EQ(safe_path_component(std::string("a\0b\nc", 5)), "a_b_c");
  EXPECT_EQ(safe_path_component(std::string(300, 'n')).size(), 96u);
}

TEST_F(OutputSafety, LeftoversOfDeadRunsAreCleanedAndLiveOnesKept) {
  // A pid far above any live one: the process is gone.
  fs::create_directories(path(".run.tmp-999999999"));
  fs::create_directories(path("run.old-999999999"));
  const std::string live = ".run.tmp-" + std::to_string(getpid());
  fs::create_directories(path(live));
  const auto r = kvsim("run " + scenario() + " --quiet --out " + path("run"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(path(".run.tmp-999999999")));
  EXPECT_FALSE(fs::exists(path("run.old-999999999")));
  EXPECT_TRUE(fs::exists(path(live)));  // this test process is alive
  EXPECT_FALSE(fs::exists(path(".run.lock")));
}

TEST_F(OutputSafety, ASecondWriterOfOneFolderIsRefused) {
  const std::string lock = path(".busy.lock");
  const int fd = ::open(lock.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const auto r = kvsim("run " + scenario() + " --quiet --out " + path("busy"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("another kvsim is writing it"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("busy")));
  ::close(fd);
}

TEST_F(OutputSafety, TheHomeFolderIsNeverReplaced) {
  fs::create_directories(path("home"));
  write("home/notes.txt", "keep me\n");
  const auto r =
      testing::run_command("HOME=" + path("home") + " " + std::string(KVSIM_BINARY) + " run " +
                           scenario() + " --quiet --force --out " + path("home"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("home folder"), std::string::npos) << r.output;
  EXPECT_EQ(read(path("home/notes.txt")), "keep me\n");
}

TEST_F(OutputSafety, ACompareNameBecomesOneSafePathComponent) {
  fs::create_directories(path("work/sub"));
  write("work/sub/keep.txt", "x");
  write("work/sub/evil.yaml", testing::small_scenario("x/../..", 6));
  const auto r =
      testing::run_command("cd " + path("work/sub") + " && " + std::string(KVSIM_BINARY) +
                           " compare evil.yaml --vary kv_cache.block_size=16,32 --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(path("work/sub/keep.txt")));
  EXPECT_TRUE(fs::exists(path("work/sub/out/compare-x_.._../compare.json")));
}

// Two runs into one --out at the same time: each either writes it or is
// refused with exit 2; the folder ends whole and nothing is left beside it.
TEST_F(OutputSafety, TwoRunsIntoOneFolderAtOnceLeaveOneWholeOutput) {
  const std::string s = scenario("both", 200);
  const std::string run = std::string(KVSIM_BINARY) + " run " + s + " --quiet --out " +
                          path("both") + " >/dev/null 2>&1";
  const auto r = testing::run_command("(" + run + "; echo a=$? > " + path("a.rc") + ") & (" + run +
                                      "; echo b=$? > " + path("b.rc") + ") & wait");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* rc : {"a.rc", "b.rc"}) {
    const std::string text = read(path(rc));
    EXPECT_TRUE(text.ends_with("=0\n") || text.ends_with("=2\n")) << rc << ": " << text;
  }
  EXPECT_TRUE(fs::exists(path("both/metrics.json")));
  EXPECT_TRUE(fs::exists(path("both/.kvsim")));
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;
    EXPECT_EQ(name.find(".old-"), std::string::npos) << name;
    EXPECT_EQ(name.find(".lock"), std::string::npos) << name;
  }
}

// SIGINT (Ctrl-C), SIGTERM (kill) and SIGHUP (a closed terminal), and the
// other signals that end a process by default (QUIT, USR1, USR2, PIPE, ALRM,
// XFSZ, XCPU), each remove the run's temporary folder and lock; SIGKILL
// cannot be caught, and its leftovers are cleaned by the next run
// (LeftoversOfDeadRuns... above).
class InterruptedRun : public OutputSafety, public ::testing::WithParamInterface<int> {};

TEST_P(InterruptedRun, LeavesNoTemporaryFolder) {
  const int sig = GetParam();
  // Long enough to be interrupted mid-run: 2 million requests.
  const std::string s = scenario("long", 2000000);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(KVSIM_BINARY, "kvsim", "run", s.c_str(), "--quiet", "--out", path("long").c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until the run has its temporary folder, then interrupt it.
  const fs::path temp = dir_ / (".long.tmp-" + std::to_string(pid));
  for (int i = 0; i < 1000 && !fs::exists(temp); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const bool started = fs::exists(temp);
  ASSERT_EQ(::kill(pid, sig), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(started) << "the run did not start";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_FALSE(fs::exists(path(".long.lock")));
  EXPECT_FALSE(fs::exists(path("long")));
}

INSTANTIATE_TEST_SUITE_P(Signals, InterruptedRun,
                         ::testing::Values(SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
                                           SIGPIPE, SIGALRM, SIGXFSZ, SIGXCPU),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string("SIG") + sigabbrev_np(p.param);
                         });

TEST_F(OutputSafety, CapacityWritesAFreshFolderPerInvocation) {
  const std::string cmd = "cd " + dir_.string() + " && " + std::string(KVSIM_BINARY) +
                          " capacity --device ascend-910b2 --model llama-3-8b --context 4096";
  const auto first = testing::run_command(cmd);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto second = testing::run_command(cmd);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "capacity" / "capacity.json"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "capacity-2" / "capacity.json"));
  EXPECT_NE(second.output.find("out/capacity-2"), std::string::npos) << second.output;
}

TEST(FreshOutputFolder, TakesTheFirstFreeSuffix) {
  const fs::path d = fs::temp_directory_path() / ("kvsim-fresh-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d / "x");
  fs::create_directories(d / "x-2");
  EXPECT_EQ(fresh_output_folder((d / "y").string()), (d / "y").string());
  EXPECT_EQ(fresh_output_folder((d / "x").string()), (d / "x-3").string());
  fs::remove_all(d);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
