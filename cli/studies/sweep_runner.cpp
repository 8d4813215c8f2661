#include "cli/studies/sweep_runner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "base/cancellation.hpp"

namespace kvsim {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Json outcome_to_json(const VariantOutcome& o) {
  Json j;
  j["index"] = o.index;
  j["label"] = o.label;
  j["sets"] = o.sets;
  j["status"] = o.status;
  j["reason"] = o.reason;
  j["exit_code"] = o.exit_code;
  j["message"] = o.message;
  j["devices"] = o.devices;
  j["inputs"] = o.inputs_digest;
  j["metrics"] = o.metrics;
  return j;
}

VariantOutcome outcome_from_json(const Json& j) {
  VariantOutcome o;
  o.index = j.at("index").get<size_t>();
  o.label = j.at("label").get<std::string>();
  o.sets = j.at("sets").get<std::vector<std::string>>();
  o.status = j.at("status").get<std::string>();
  // Journals written before reasons were recorded: a rejection there may
  // have been the environment's, so it is not trusted (it runs again).
  o.reason = j.contains("reason") ? j.at("reason").get<std::string>() : std::string("unknown");
  o.exit_code = j.at("exit_code").get<int>();
  o.message = j.at("message").get<std::string>();
  o.devices = j.at("devices").get<int64_t>();
  if (j.contains("inputs")) o.inputs_digest = j.at("inputs").get<std::string>();
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

bool outcome_is_final(const VariantOutcome& o) {
  if (o.status == "ok" || o.status == "expect_failed") return true;
  return o.status == "rejected" && o.reason == "invalid_configuration";
}

void run_variant_pool(TaskSource& source, const PoolOptions& options, size_t max_tasks) {
  std::mutex mutex;
  std::condition_variable changed;
  int running = 0;
  std::exception_ptr error;
  // Whatever a worker meets (a spawn that fails, memory that runs out while
  // it copies a task) stops the pool with that error rather than leaving a
  // thread by an exception, which would end the process (std::terminate).
  const auto worker = [&] {
    std::unique_lock lock(mutex);
    bool counted = false;  // this thread's variant is in `running`
    try {
      while (!error) {
        // A stop request (base/cancellation.hpp) starts no other variant,
        // and the one it cut short is not recorded: --resume runs it again.
        throw_if_cancelled();
        if (auto task = source.next()) {
          ++running;
          counted = true;
          lock.unlock();
          VariantOutcome o = run_variant_process(*task, options);
          lock.lock();
          --running;
          counted = false;
          throw_if_cancelled();
          source.done(o);
          if (options.on_outcome) options.on_outcome(o);
          changed.notify_all();
          continue;
        }
        if (running == 0) break;
        changed.wait(lock);
      }
    } catch (...) {
      if (!lock.owns_lock()) lock.lock();
      if (counted) --running;
      if (!error) error = std::current_exception();
    }
    changed.notify_all();
  };
  // One thread per job waits for one child: never more threads than jobs or
  // variants, and as many as the system gives (each needs a stack).
  const size_t wanted =
      std::max<size_t>(1, std::min(static_cast<size_t>(std::max(1, options.jobs)), max_tasks));
  std::vector<std::thread> threads;
  std::exception_ptr start_error;
  for (size_t i = 0; i < wanted; ++i) {
    try {
      threads.emplace_back(worker);
    } catch (const std::system_error&) {
      start_error = std::current_exception();
      break;
    } catch (const std::bad_alloc&) {
      start_error = std::current_exception();
      break;
    }
  }
  if (threads.empty() && start_error) {
    throw std::filesystem::filesystem_error(
        fmt::format("cannot start a worker thread (--jobs {})", options.jobs),
        std::error_code(EAGAIN, std::generic_category()));
  }
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
