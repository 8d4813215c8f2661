#include "workloads/trace_file_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "base/checked_math.hpp"
#include "base/diagnostics.hpp"
#include "base/input_file.hpp"

namespace kvsim {
namespace {
constexpr const char* kSkipHint = "fix the line, or set on_error: skip to drop such lines";
}

TraceFileReader::TraceFileReader(const TraceWorkloadSpec& spec)
    : spec_(spec), format_(find_trace_format(spec.format)) {
  if (!format_) throw std::invalid_argument(fmt::format("unknown trace format '{}'", spec.format));
  // A directory or a device (/dev/zero never ends a line) is refused before
  // it is read.
  std::error_code ec;
  const auto status = std::filesystem::status(spec_.path, ec);
  const char* problem = nullptr;
  if (!std::filesystem::exists(status))
    problem = "file not found";
  else if (!std::filesystem::is_regular_file(status))
    problem = "is not a regular file";
  if (!problem) {
    remember_input_file(spec_.path);
    in_.open(spec_.path, std::ios::binary);
    if (!in_) problem = "cannot be opened";
  }
  if (problem) {
    throw_at(0, spec_.key_path + ".path", problem,
             "a readable file; a relative path is from the YAML file's folder");
  }
  start_pass();
}

void TraceFileReader::throw_at(int64_t line, std::string key_path, std::string problem,
                               std::string allowed) const {
  // Built field by field: a braced temporary here trips g++ 12's
  // -Wmaybe-uninitialized inside std::string.
  config::Diagnostic d;
  d.where.file = spec_.path;
  d.where.line = static_cast<int>(line);
  d.where.col = line > 0 ? 1 : 0;
  d.key_path = std::move(key_path);
  d.problem = std::move(problem);
  d.allowed = std::move(allowed);
  std::vector<config::Diagnostic> all;
  all.push_back(std::move(d));
  throw config::ConfigError(std::move(all));
}

void TraceFileReader::fail(int64_t line, const std::string& problem, const std::string& allowed) {
  throw_at(line, spec_.key_path, fmt::format("{} trace: {}", format_->name, problem), allowed);
}

void TraceFileReader::fail_empty() const {
  const std::string window =
      spec_.duration ? fmt::format("[{:.3f} s, {:.3f} s)", static_cast<double>(spec_.start) / 1e9,
                                   static_cast<double>(spec_.start + *spec_.duration) / 1e9)
                     : fmt::format("from {:.3f} s", static_cast<double>(spec_.start) / 1e9);
  const std::string problem =
      have_origin_ ? fmt::format("no record in the replay window {}: the trace spans {:.3f} s",
                                 window, static_cast<double>(latest_relative_) / 1e9)
                   : std::string("the file holds no record");
  throw_at(std::max<int64_t>(line_number_, 1), spec_.key_path,
           fmt::format("{} trace: {}", format_->name, problem),
           "a start_s within the trace; a file with at least one well-formed record");
}

void TraceFileReader::start_pass() {
  in_.clear();
  in_.seekg(0);
  line_number_ = 0;
  have_previous_ = false;
  pass_replayed_any_ = false;
  if (!format_->header) return;
  // The first non-blank line must be the header: its column names locate the
  // fields (always an error, whatever on_error says: no line could be read).
  while (read_line()) {
    ++line_number_;
    if (line_number_ == 1) strip_utf8_bom(line_);
    if (line_.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string problem = format_->read_header(line_, columns_);
    if (!problem.empty())
      fail(line_number_, problem, fmt::format("a header line such as {}", format_->header));
    return;
  }
  fail(std::max<int64_t>(line_number_, 1), "the file has no header line",
       fmt::format("a header line such as {}", format_->header));
}

bool TraceFileReader::read_line() {
  try {
    if (std::getline(in_, line_)) return true;
  } catch (const std::ios_base::failure&) {
    in_.setstate(std::ios::badbit);
  }
  if (in_.bad())
    throw_at(std::max<int64_t>(line_number_ + 1, 1), spec_.key_path + ".path",
             "cannot be read (an input/output error)", "a readable regular file");
  return false;
}

bool TraceFileReader::read_record(TraceRecord& out) {
  while (read_line()) {
    ++line_number_;
    ++lines_read_;
    out.line = line_number_;
    const LineResult r = format_->parse_line(line_, columns_, out);
    if (r.kind == LineKind::blank) continue;
    std::string problem = r.problem;
    if (r.kind == LineKind::record && have_previous_ && out.time < previous_time_) {
      // A trace is replayed in file order; a record earlier than its
      // predecessor cannot be placed without reading ahead (unbounded memory).
      // The gap in doubles: records centuries apart overflow an int64_t of ns.
      problem = fmt::format(
          "time goes backwards: this record is {:.3f} ms before the previous record (line {})",
          (static_cast<double>(previous_time_) - static_cast<double>(out.time)) / 1e6,
          previous_line_);
    }
    if (!problem.empty()) {
      if (!spec_.skip_malformed) fail(line_number_, problem, kSkipHint);
      ++skipped_;
      continue;
    }
    have_previous_ = true;
    previous_time_ = out.time;
    previous_line_ = line_number_;
    return true;
  }
  return false;
}

bool TraceFileReader::next(ReplayedRecord& out) {
  while (!done_) {
    if (spec_.max_requests && emitted_ >= *spec_.max_requests) break;
    TraceRecord& r = out.record;
    bool in_window = false;
    bool end_of_pass = !read_record(r);
    if (!end_of_pass) {
      if (!have_origin_) {
        have_origin_ = true;
        origin_ = r.time;
      }
      const auto since_origin = checked_sub(r.time, origin_);
      if (!since_origin || *since_origin > kMaxSimulatedTimeNs)
        fail(line_number_, "this record is too far from the first one",
             fmt::format("records within {} of each other", simulated_span_text()));
      const TimeNs relative = *since_origin;
      latest_relative_ = relative;
      if (relative < spec_.start) continue;
      if (spec_.duration && relative >= spec_.start + *spec_.duration) {
        end_of_pass = true;  // times only grow: nothing later in the file is in the window
      } else {
        in_window = true;
        last_relative_ = relative - spec_.start;
      }
    }
    if (end_of_pass) {
      if (pass_ == 0) {
        // The first pass fixes the span every pass covers: the window's length,
        // or without one the time of its last record, so pass k's records land
        // k spans later.
        pass_span_ = spec_.duration ? *spec_.duration : last_relative_;
      }
      if (!pass_replayed_any_ || pass_ + 1 >= spec_.loop) break;
      ++pass_;
      start_pass();
      continue;
    }
    if (!in_window) continue;
    pass_replayed_any_ = true;
    // pass * span + relative, then scaled: checked, so a long trace looped
    // many times or slowed down a million-fold is an error, never a wrap.
    const auto offset = checked_mul(pass_, pass_span_);
    const auto unscaled = offset ? checked_add(*offset, last_relative_) : std::nullopt;
    const auto arrival = unscaled
                             ? round_in_range(static_cast<double>(*unscaled) * spec_.time_scale, 0,
                                              kMaxSimulatedTimeNs)
                             : std::nullopt;
    if (!arrival)
      throw_at(line_number_, spec_.key_path + (pass_ > 0 ? ".loop" : ".time_scale"),
               fmt::format("replaying this record (pass {}) puts it beyond {}", pass_ + 1,
                           simulated_span_text()),
               "fewer loop passes, a smaller time_scale, or a shorter window");
    out.arrival = *arrival;
    out.pass = pass_;
    ++emitted_;
    return true;
  }
  done_ = true;
  return false;
}

}  // namespace kvsim
