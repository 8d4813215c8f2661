#pragma once
// Streams the records of a trace file in replay order: one line at a time
// (memory does not depend on the trace length), the window
// [start, start + duration) of trace time, `loop` passes back to back,
// at most `max_requests` records, and the on_error policy for malformed
// lines (fail: throw config::ConfigError located at FILE:LINE; skip: count
// and drop). Independent of the format: the format only parses a line.
#include <cstdint>
#include <fstream>
#include <string>

#include "workloads/trace_format.hpp"
#include "workloads/workload_spec.hpp"

namespace kvsim {

// A record and where it lands in the simulation.
struct ReplayedRecord {
  TraceRecord record;
  TimeNs arrival = 0;  // simulated time (ns from the start of the run)
  int64_t pass = 0;    // 0-based pass of `loop`
};

class TraceFileReader {
 public:
  // Opens the file and reads a CSV format's header. Throws config::ConfigError
  // when the file cannot be read or the header lacks a column.
  explicit TraceFileReader(const TraceWorkloadSpec& spec);

  // The next record to replay; false when the replay is over. Throws
  // config::ConfigError on a malformed line under on_error: fail.
  bool next(ReplayedRecord& out);

  int64_t skipped_records() const { return skipped_; }
  // Throws config::ConfigError saying that the window holds no record (the
  // source calls it when the replay would be empty: a wrong start_s).
  [[noreturn]] void fail_empty() const;
  int64_t lines_read() const { return lines_read_; }

 private:
  // The next well-formed record of the current pass in file order (time
  // order checked); false at the end of the file.
  bool read_record(TraceRecord& out);
  void start_pass();
  // std::getline on the file; a read error (an I/O error, a file such as
  // /proc/self/mem) is a config::ConfigError at the line, not an internal one.
  bool read_line();
  [[noreturn]] void throw_at(int64_t line, std::string key_path, std::string problem,
                             std::string allowed) const;
  [[noreturn]] void fail(int64_t line, const std::string& problem, const std::string& allowed);

  TraceWorkloadSpec spec_;
  const TraceFormat* format_;
  std::ifstream in_;
  std::string line_;
  int64_t line_number_ = 0;
  int64_t lines_read_ = 0;
  CsvColumns columns_;
  bool have_origin_ = false;
  TimeNs origin_ = 0;           // trace time of the file's first record
  bool have_previous_ = false;  // time order is checked within a pass
  TimeNs previous_time_ = 0;
  int64_t previous_line_ = 0;
  int64_t pass_ = 0;
  TimeNs pass_span_ = -1;       // window length of trace time one pass covers
  TimeNs last_relative_ = 0;    // of the last record replayed in this pass
  TimeNs latest_relative_ = 0;  // of the last record read
  bool pass_replayed_any_ = false;
  int64_t emitted_ = 0;
  int64_t skipped_ = 0;
  bool done_ = false;
};

}  // namespace kvsim
