#include "reports/csv_sink.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace kvsim {
namespace {
// Milliseconds with microsecond resolution, or empty when the event did not happen.
std::string ms_or_empty(TimeNs t) {
  return t < 0 ? std::string() : fmt::format("{:.3f}", static_cast<double>(t) / 1e6);
}

// A full disk or a read-only folder is the environment's fault: a
// filesystem_error with the OS's text (exit 2), not an internal error.
[[noreturn]] void throw_write_error(const std::string& path) {
  throw std::filesystem::filesystem_error(
      "cannot write", std::filesystem::path(path),
      std::error_code(errno ? errno : EIO, std::generic_category()));
}
}  // namespace

CsvRunSink::CsvRunSink(const std::string& requests_path, const std::string& timeline_path)
    : requests_(requests_path),
      timeline_(timeline_path),
      requests_path_(requests_path),
      timeline_path_(timeline_path) {
  if (!requests_ || !timeline_) throw_write_error(!requests_ ? requests_path_ : timeline_path_);
  requests_
      << "id,status,session,turn,arrival_ms,first_token_ms,finish_ms,prompt_tokens,output_tokens,"
         "cached_tokens,preemptions,ttft_ms,tpot_ms,e2e_ms\n";
}

void CsvRunSink::request(const RequestRow& r) {
  const bool done = r.status == "completed";
  const std::string ttft = done ? ms_or_empty(r.first_token - r.arrival) : "";
  const std::string tpot = done && r.output_tokens > 1
                               ? ms_or_empty((r.finished - r.first_token) / (r.output_tokens - 1))
                               : "";
  const std::string e2e = done ? ms_or_empty(r.finished - r.arrival) : "";
  requests_ << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.id, r.status, r.session,
                           r.turn, ms_or_empty(r.arrival), ms_or_empty(r.first_token),
                           ms_or_empty(r.finished), r.prompt_tokens, r.output_tokens,
                           r.cached_tokens, r.preemptions, ttft, tpot, e2e);
}

// The columns follow the engine (the first row tells): a serving engine's
// block pool has blocks and swap; the dialog engine's buffers have neither,
// and its file leaves those columns out rather than carry a zero throughout
// (tokens_held is its occupancy). step_tokens and step_ms sum the steps
// launched since the previous row, steps counts them and step_seqs sums
// their batch sizes (step_seqs / steps: the mean batch).
void CsvRunSink::write_timeline_header(bool pool_of_blocks) {
  timeline_ << (pool_of_blocks ? "time_ms,running,waiting,swapped,blocks_used,kv_used_bytes,"
                                 "tokens_held,step_tokens,step_ms,steps,step_seqs\n"
                               : "time_ms,running,waiting,kv_used_bytes,tokens_held,step_tokens,"
                                 "step_ms,steps,step_seqs\n");
  timeline_header_written_ = true;
}

void CsvRunSink::timeline(const TimelineRow& r) {
  if (!timeline_header_written_) write_timeline_header(r.pool_of_blocks);
  if (r.pool_of_blocks) {
    timeline_ << fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", ms_or_empty(r.time), r.running,
                             r.waiting, r.swapped, r.blocks_used, r.kv_used_bytes, r.tokens_held,
                             r.step_tokens, ms_or_empty(r.step_latency), r.steps, r.step_seqs);
  } else {
    timeline_ << fmt::format("{},{},{},{},{},{},{},{},{}\n", ms_or_empty(r.time), r.running,
                             r.waiting, r.kv_used_bytes, r.tokens_held, r.step_tokens,
                             ms_or_empty(r.step_latency), r.steps, r.step_seqs);
  }
}

// A cluster's columns: the instance (or "cluster"), its group and role, the
// one-instance columns (KV bytes of the instance's devices together, and
// its pool's capacity), then what moves between and below the instances.
void CsvRunSink::cluster_started(const std::vector<ClusterInstanceInfo>& instances) {
  instances_ = instances;
  timeline_ << "time_ms,instance,group,role,running,waiting,swapped,blocks_used,kv_used_bytes,"
               "kv_capacity_bytes,tokens_held,step_tokens,step_ms,steps,step_seqs,"
               "transfers_in_flight,transfer_bytes_in_flight,tier_blocks,pool_blocks\n";
  timeline_header_written_ = true;
}

void CsvRunSink::cluster_timeline(const ClusterTimelineRow& c) {
  const TimelineRow& r = c.state;
  const bool cluster = c.instance < 0;
  std::string who, group, role;
  Bytes capacity = 0;
  if (cluster) {
    who = "cluster";
    for (const ClusterInstanceInfo& i : instances_) capacity += i.kv_capacity_bytes;
  } else {
    const ClusterInstanceInfo& i = instances_.at(static_cast<size_t>(c.instance));
    who = std::to_string(c.instance);
    group = i.group;
    role = i.role;
    capacity = i.kv_capacity_bytes;
  }
  timeline_ << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                           ms_or_empty(r.time), who, group, role, r.running, r.waiting, r.swapped,
                           r.blocks_used, r.kv_used_bytes, capacity, r.tokens_held, r.step_tokens,
                           ms_or_empty(r.step_latency), r.steps, r.step_seqs, c.transfers_in_flight,
                           c.transfer_bytes_in_flight, c.tier_blocks,
                           c.pool_blocks < 0 ? std::string() : std::to_string(c.pool_blocks));
}

void CsvRunSink::close() {
  if (!timeline_header_written_) write_timeline_header(true);
  requests_.flush();
  timeline_.flush();
  if (!requests_ || !timeline_) throw_write_error(!requests_ ? requests_path_ : timeline_path_);
  requests_.close();
  timeline_.close();
}

}  // namespace kvsim
