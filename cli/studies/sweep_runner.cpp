#include "cli/studies/sweep_runner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

extern char** environ;

namespace kvsim {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The last non-empty line of a child's stderr, without the "kvsim: " prefix.
std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  for (const char* prefix : {"kvsim: error: ", "kvsim: internal error: ", "kvsim: "}) {
    if (last.rfind(prefix, 0) == 0) return last.substr(std::string(prefix).size());
  }
  return last;
}

}  // namespace

Json outcome_to_json(const VariantOutcome& o) {
  Json j;
  j["index"] = o.index;
  j["label"] = o.label;
  j["sets"] = o.sets;
  j["status"] = o.status;
  j["exit_code"] = o.exit_code;
  j["message"] = o.message;
  j["devices"] = o.devices;
  j["metrics"] = o.metrics;
  return j;
}

VariantOutcome outcome_from_json(const Json& j) {
  VariantOutcome o;
  o.index = j.at("index").get<size_t>();
  o.label = j.at("label").get<std::string>();
  o.sets = j.at("sets").get<std::vector<std::string>>();
  o.status = j.at("status").get<std::string>();
  o.exit_code = j.at("exit_code").get<int>();
  o.message = j.at("message").get<std::string>();
  o.devices = j.at("devices").get<int64_t>();
  o.metrics = j.at("metrics");
  return o;
}

SweepJournal::SweepJournal(std::string path) : path_(std::move(path)) {
  // A sweep killed mid-write leaves a torn last line: end it, so the next
  // line appended starts on its own and the torn one alone is skipped.
  std::ifstream in(path_, std::ios::binary | std::ios::ate);
  if (in && in.tellg() > 0) {
    in.seekg(-1, std::ios::end);
    if (in.get() != '\n') std::ofstream(path_, std::ios::app) << '\n';
  }
}

void SweepJournal::append(const VariantOutcome& o) const {
  // One write() of a whole line with O_APPEND: concurrent writers (ranks
  // sharing a folder write separate files anyway) never interleave lines,
  // and a kill leaves at most one torn last line.
  const std::string line = outcome_to_json(o).dump() + "\n";
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open the journal " + path_);
  const ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size()))
    throw std::runtime_error("cannot write the journal " + path_);
}

std::map<size_t, VariantOutcome> read_journals(const std::string& dir) {
  std::map<size_t, VariantOutcome> out;
  if (!fs::is_directory(dir)) return out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("journal", 0) == 0 && name.ends_with(".jsonl")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    std::string line;
    while (std::getline(in, line)) {
      try {
        VariantOutcome o = outcome_from_json(Json::parse(line));
        out[o.index] = std::move(o);
      } catch (const std::exception&) {
        // A line torn by a kill: that variant simply runs again.
      }
    }
  }
  return out;
}

void remove_journals(const std::string& dir) {
  if (!fs::is_directory(dir)) return;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("journal", 0) == 0 && name.ends_with(".jsonl")) fs::remove(e.path());
  }
}

VariantOutcome run_variant_process(const VariantTask& task, const PoolOptions& options) {
  VariantOutcome o;
  o.index = task.index;
  o.label = task.label;
  o.sets = task.sets;
  o.devices = task.devices;
  std::vector<std::string> args = {options.kvsim_binary, "run", options.base, "--quiet", "--out",
                                   task.folder};
  for (const auto& s : task.sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = task.folder + ".log";

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc =
      posix_spawn(&pid, options.kvsim_binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    o.status = "failed";
    o.exit_code = -1;
    o.message = fmt::format("cannot start {}: {}", options.kvsim_binary, std::strerror(rc));
    return o;
  }
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(wstatus)) {
    o.exit_code = WEXITSTATUS(wstatus);
  } else {
    o.exit_code = 128 + (WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0);
  }
  const std::string metrics_path = task.folder + "/metrics.json";
  if ((o.exit_code == 0 || o.exit_code == 1) && fs::is_regular_file(metrics_path)) {
    o.status = o.exit_code == 0 ? "ok" : "expect_failed";
    std::ifstream in(metrics_path);
    o.metrics = Json::parse(in);
    o.metrics["sim"].erase("wall_s");  // the host's time: not part of a reproducible sweep
    if (o.exit_code == 1) o.message = last_line(log);
  } else {
    o.status = o.exit_code == 2 ? "rejected" : "failed";
    o.message = last_line(log);
    if (o.message.empty()) o.message = fmt::format("exit status {}", o.exit_code);
  }
  return o;
}

void run_variant_pool(TaskSource& source, const PoolOptions& options) {
  std::mutex mutex;
  std::condition_variable changed;
  int running = 0;
  std::exception_ptr error;
  const auto worker = [&] {
    std::unique_lock lock(mutex);
    while (!error) {
      if (auto task = source.next()) {
        ++running;
        lock.unlock();
        VariantOutcome o;
        try {
          o = run_variant_process(*task, options);
        } catch (...) {
          lock.lock();
          --running;
          error = std::current_exception();
          changed.notify_all();
          return;
        }
        lock.lock();
        --running;
        source.done(o);
        if (options.on_outcome) options.on_outcome(o);
        changed.notify_all();
        continue;
      }
      if (running == 0) break;
      changed.wait(lock);
    }
    changed.notify_all();
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < std::max(1, options.jobs); ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

int default_jobs() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

SweepProgress::SweepProgress(size_t total, size_t already_done, bool enabled)
    : total_(total),
      done_(already_done),
      start_done_(already_done),
      enabled_(enabled),
      start_s_(now_s()) {}

void SweepProgress::tick(const VariantOutcome& o) {
  ++done_;
  if (o.status != "ok") ++failed_;
  if (!enabled_) return;
  printed_ = true;
  const double elapsed = now_s() - start_s_;
  const double rate = elapsed > 0 ? static_cast<double>(done_ - start_done_) / elapsed : 0;
  const double left = rate > 0 ? static_cast<double>(total_ - done_) / rate : 0;
  std::cerr << fmt::format("\rkvsim sweep: {}/{} variants ({} not ok), {:.1f}/s, ~{:.0f} s left   ",
                           done_, total_, failed_, rate, left)
            << std::flush;
}

SweepProgress::~SweepProgress() {
  if (printed_) std::cerr << "\n";
}

}  // namespace kvsim
