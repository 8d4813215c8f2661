// A sweep or search whose environment breaks (cli/studies/failure_class.hpp):
// a variant another process holds, a worker killed from outside, a sweep
// killed while its workers run, a base scenario edited between a sweep and
// its --resume. Only an invalid configuration is "rejected"; anything else
// is "failed" with its reason, makes the command exit non-zero, and runs
// again on --resume; workers never outlive their sweep.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "report_test_helpers.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kSweep = R"(name: faults
base: base.yaml
grid:
  seed: [1, 2]
metrics: [requests.completed]
)";

// Whether a process still runs (a zombie waiting for its reaper does not).
bool running(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("State:", 0) == 0) return line.find('Z') == std::string::npos;
  return false;
}

// Workers' pids from their temporary folders (.NNNN.tmp-PID) under `dir`.
std::vector<pid_t> worker_pids(const fs::path& dir) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const size_t at = name.find(".tmp-");
    if (name.front() == '.' && at != std::string::npos)
      out.push_back(static_cast<pid_t>(std::stol(name.substr(at + 5))));
  }
  return out;
}

class SweepFaults : public testing::TempFolderTest {
 protected:
  std::string sweep(int requests = 6) {
    write("base.yaml", testing::small_scenario("faults", requests));
    return write("sweep.yaml", kSweep);
  }
  testing::CommandResult kvsim_here(const std::string& args) {
    return testing::run_command("cd " + dir_.string() + " && " + std::string(KVSIM_BINARY) + " " +
                                args);
  }
};

// Another process holds a variant's folder: the environment's fault. The
// variant is failed (environment), the sweep exits 2, and --resume runs it
// once the folder is free.
TEST_F(SweepFaults, AFolderHeldByAnotherProcessIsAFailureNotARejection) {
  sweep();
  ASSERT_EQ(kvsim_here("sweep sweep.yaml --quiet --out s").exit_code, 0);
  // Variant 1 again, while another process holds its lock.
  std::ifstream in(path("s/journal.jsonl"));
  std::string line, kept;
  while (std::getline(in, line))
    if (line.rfind("{\"index\":0,", 0) == 0) kept = line + "\n";
  in.close();
  write("s/journal.jsonl", kept);
  const int fd = ::open(path("s/variants/.0001.lock").c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  auto r = kvsim_here("sweep sweep.yaml --resume --out s");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("1 failed"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rejected"), std::string::npos) << r.output;
  const std::string csv = read(path("s/sweep.csv"));
  EXPECT_NE(csv.find("\n1,2,failed,environment,"), std::string::npos) << csv;
  ::close(fd);
  r = kvsim_here("sweep sweep.yaml --resume --out s");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 ok (1 taken from the journal)"), std::string::npos) << r.output;
}

// An invalid configuration is the one thing "rejected" means.
TEST_F(SweepFaults, AnInvalidVariantIsRejectedWithItsReason) {
  write("base.yaml", testing::small_scenario("faults", 6));
  write("sweep.yaml", "name: r\nbase: base.yaml\ngrid:\n  parallel.tensor: [1, 3]\n");
  const auto r = kvsim_here("sweep sweep.yaml --quiet --out s");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string csv = read(path("s/sweep.csv"));
  EXPECT_NE(csv.find("\n1,3,rejected,invalid_configuration,"), std::string::npos) << csv;
}

// A worker killed from outside: the variant failed for the environment,
// and the search says it cannot choose rather than "no configuration meets
// the SLO".
TEST_F(SweepFaults, ASearchWhoseProbeWasKilledIsUndetermined) {
  write("base.yaml", testing::small_scenario("faults", 5000000));
  write("search.yaml",
        "name: k\nbase: base.yaml\ngrid:\n  seed: [1]\nsearch:\n  rates: [20]\n"
        "  slo: {ttft_p99_ms: 1000000}\n");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string out = path("out.txt");
    const int fd = ::open(out.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    execl(KVSIM_BINARY, "kvsim", "search", path("search.yaml").c_str(), "--out", path("s").c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  std::vector<pid_t> workers;
  for (int i = 0; i < 1000 && workers.empty(); ++i) {
    std::this_thread::sleep_for(10ms);
    workers = worker_pids(path("s/probes"));
  }
  ASSERT_EQ(workers.size(), 1u) << "the probe did not start";
  ::kill(workers[0], SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const std::string out = read(path("out.txt"));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status << "\n" << out;
  EXPECT_NE(out.find("undetermined"), std::string::npos) << out;
  EXPECT_EQ(out.find("no configuration meets the SLO"), std::string::npos) << out;
  EXPECT_NE(read(path("s/search.md")).find("Undetermined"), std::string::npos);
}

// The base scenario edited after a sweep: its journal lines are results of
// another scenario, so --resume runs every variant again.
TEST_F(SweepFaults, ResumeAfterTheBaseWasEditedRunsEveryVariantAgain) {
  sweep(6);
  ASSERT_EQ(kvsim_here("sweep sweep.yaml --quiet --out s").exit_code, 0);
  EXPECT_NE(read(path("s/sweep.csv")).find("\n0,1,ok,,1,6,"), std::string::npos);
  write("base.yaml", testing::small_scenario("faults", 9));
  const auto r = kvsim_here("sweep sweep.yaml --resume --out s");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("taken from the journal"), std::string::npos) << r.output;
  const std::string csv = read(path("s/sweep.csv"));
  EXPECT_NE(csv.find("\n0,1,ok,,1,9,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n1,2,ok,,1,9,"), std::string::npos) << csv;
}

// Killing the sweep (SIGTERM, or SIGKILL, which it cannot catch) ends its
// workers too; none keeps running, or holds its variant's folder.
class KilledSweep : public SweepFaults, public ::testing::WithParamInterface<int> {};

TEST_P(KilledSweep, TakesItsWorkersWithIt) {
  sweep(5000000);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(null_fd, STDERR_FILENO);
    execl(KVSIM_BINARY, "kvsim", "sweep", path("sweep.yaml").c_str(), "--jobs", "2", "--out",
          path("s").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::vector<pid_t> workers;
  for (int i = 0; i < 1000 && workers.size() < 2; ++i) {
    std::this_thread::sleep_for(10ms);
    workers = worker_pids(path("s/variants"));
  }
  ASSERT_EQ(workers.size(), 2u) << "the workers did not start";
  ASSERT_EQ(::kill(pid, GetParam()), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  bool any_left = true;
  for (int i = 0; i < 500 && any_left; ++i) {
    std::this_thread::sleep_for(10ms);
    any_left = false;
    for (const pid_t w : workers) any_left = any_left || running(w);
  }
  for (const pid_t w : workers) {
    EXPECT_FALSE(running(w)) << "worker " << w << " outlived its sweep";
    if (running(w)) ::kill(w, SIGKILL);  // do not leave it running
  }
  EXPECT_TRUE(worker_pids(path("s/variants")).empty()) << "a worker's temporary folder is left";
}

INSTANTIATE_TEST_SUITE_P(Signals, KilledSweep, ::testing::Values(SIGTERM, SIGKILL),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string("SIG") + sigabbrev_np(p.param);
                         });

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
