#pragma once
// Runs variants of a scenario on local worker processes. Each variant is a
// child `kvsim run BASE --set ... --quiet --out FOLDER` (the binary itself,
// by posix_spawn): a process shares no mutable state with its siblings, and
// a variant that crashes takes only itself down. Threads of the parent only
// wait for their child, so the engine never runs twice in one process.
//
// Outcomes stream to a journal (one JSON line per finished variant, written
// with one O_APPEND write) so an interrupted sweep keeps what finished.
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kvsim {

struct VariantTask {
  size_t index = 0;
  std::string label;
  std::vector<std::string> sets;
  std::string folder;   // run folder of the child
  int64_t devices = 0;  // copied into the outcome
};

struct VariantOutcome {
  size_t index = 0;
  std::string label;
  std::vector<std::string> sets;
  // ok | expect_failed (metrics valid) | rejected (the configuration is
  // invalid: does not fit, a value out of range) | failed (the environment
  // broke: a full disk, a folder held by another process, a signal from
  // outside; or an internal error). cli/studies/failure_class.hpp.
  std::string status;
  // Why a variant is rejected or failed: invalid_configuration (rejected
  // only), environment or internal; empty when it ran.
  std::string reason;
  int exit_code = 0;
  std::string message;
  int64_t devices = 0;             // tensor-parallel ranks of the variant
  std::string inputs_digest;       // of the input files it ran on (sweep_inputs_digest)
  nlohmann::ordered_json metrics;  // metrics.json (null unless ok/expect_failed)
};

nlohmann::ordered_json outcome_to_json(const VariantOutcome& o);
VariantOutcome outcome_from_json(const nlohmann::ordered_json& j);  // throws on a bad line

// Appends outcomes to DIR/journal[-RANK].jsonl.
class SweepJournal {
 public:
  explicit SweepJournal(std::string path);
  void append(const VariantOutcome& o) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Every outcome in DIR/journal*.jsonl by index (a torn last line, from a
// killed sweep, is skipped).
std::map<size_t, VariantOutcome> read_journals(const std::string& dir);
// Removes DIR/journal*.jsonl (a fresh sweep).
void remove_journals(const std::string& dir);

// Hands out tasks and hears of outcomes; called under the pool's lock, so
// implementations need no locking. next() returning nullopt while variants
// still run means "nothing yet": the pool asks again after each outcome
// (a search queues a higher rate only when the lower one met the SLO).
class TaskSource {
 public:
  virtual ~TaskSource() = default;
  virtual std::optional<VariantTask> next() = 0;
  virtual void done(const VariantOutcome& outcome) = 0;
};

struct PoolOptions {
  std::string kvsim_binary;  // the executable to spawn (/proc/self/exe)
  std::string base;          // scenario path
  int jobs = 1;
  // Called under the lock after each outcome (progress, journal).
  std::function<void(const VariantOutcome&)> on_outcome;
};

// Runs until the source has nothing left and no variant runs, on at most
// options.jobs threads (each waits for one child; fewer when the system
// will not create more, and an environment error when it creates none).
// `max_tasks` caps the threads: no more than there are variants.
void run_variant_pool(TaskSource& source, const PoolOptions& options,
                      size_t max_tasks = static_cast<size_t>(-1));

// Whether the journal's verdict on a variant stands on --resume: a result
// or a rejection of the configuration; a failure runs again.
bool outcome_is_final(const VariantOutcome& o);

// One variant in a child process, waiting for it.
VariantOutcome run_variant_process(const VariantTask& task, const PoolOptions& options);

// The default --jobs: the machine's cores (at least 1).
int default_jobs();

// "\rkvsim sweep: 12/64 variants, 3.1/s, ~17 s left" on stderr when it is a
// terminal; nothing otherwise.
class SweepProgress {
 public:
  SweepProgress(size_t total, size_t already_done, bool enabled);
  void tick(const VariantOutcome& o);
  ~SweepProgress();

 private:
  size_t total_, done_, start_done_, failed_ = 0;
  bool enabled_, printed_ = false;
  double start_s_;
};

}  // namespace kvsim
