#pragma once
// Whether a run was overloaded: the offered load exceeded what the engine
// served, so the queue grew for as long as requests kept arriving and every
// latency percentile measures the queue (and the run's length) rather than
// the engine. Judged over the second half of the arrival window, where a
// stable engine serves what arrives (Little's law: its backlog stays flat)
// and an overloaded one falls behind by the difference of the rates; a
// burst at the start that the engine works off is not overload. Streamed as
// a RunSink from the request rows (arrival and finish times), in at most
// kBuckets time buckets: memory stays flat whatever the run's length.
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/run_sink.hpp"

namespace kvsim {

struct LoadVerdict {
  double from_s = 0, to_s = 0;        // the second half of the arrival window
  int64_t arrived = 0, finished = 0;  // requests arriving / leaving within it
  double offered_per_s = 0, served_per_s = 0;
  int64_t backlog_from = 0, backlog_to = 0;  // requests in the system at its ends
  bool overloaded = false;
};

class LoadVerdictSink final : public RunSink {
 public:
  // Fewer arrivals than this in the judged window say nothing either way.
  static constexpr int64_t kMinArrivals = 20;
  // Overloaded when fewer than this share of the window's arrivals left it.
  static constexpr double kServedShare = 0.9;
  static constexpr size_t kBuckets = 1024;

  void request(const RequestRow& row) override;
  void timeline(const TimelineRow&) override {}

  // nullopt when the run had too few arrivals, or too short a window, to judge.
  std::optional<LoadVerdict> verdict() const;

 private:
  void count(std::vector<int64_t>& buckets, TimeNs t);
  size_t bucket(TimeNs t) const { return static_cast<size_t>(t / width_); }
  int64_t up_to(const std::vector<int64_t>& buckets, size_t last) const;

  TimeNs width_ = 1'000'000;  // 1 ms, doubled whenever a time falls past the last bucket
  std::vector<int64_t> arrivals_, finishes_;
  TimeNs first_arrival_ = -1, last_arrival_ = -1;
};

// The warning a summary and a report print for an overloaded run; empty
// when the run was not overloaded (or could not be judged).
std::string overload_warning(const std::optional<LoadVerdict>& v);

}  // namespace kvsim
