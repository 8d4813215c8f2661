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
         "cached_tokens,preemptions,ttft_ms,tpot_ms,e2e_ms,kv_wait_ms\n";
}

void CsvRunSink::request(const RequestRow& r) {
  const bool done = r.status == "completed";
  const std::string ttft = done ? ms_or_empty(r.first_token - r.arrival) : "";
  const std::string tpot = done && r.output_tokens > 1
                               ? ms_or_empty((r.finished - r.first_token) / (r.output_tokens - 1))
                               : "";
  const std::string e2e = done ? ms_or_empty(r.finished - r.arrival) : "";
  // kv_wait_ms: its steps' stalls on KV loads and stores (RequestRow::kv_wait).
  const std::string kv_wait = done ? ms_or_empty(r.kv_wait) : "";
  requests_ << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.id, r.status,
                           r.session, r.turn, ms_or_empty(r.arrival), ms_or_empty(r.first_token),
                           ms_or_empty(r.finished), r.prompt_tokens, r.output_tokens,
                           r.cached_tokens, r.preemptions, ttft, tpot, e2e, kv_wait);
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
  cluster_capacity_ = 0;
  for (const ClusterInstanceInfo& i : instances) cluster_capacity_ += i.kv_capacity_bytes;
  timeline_ << "time_ms,instance,group,role,running,waiting,swapped,blocks_used,kv_used_bytes,"
               "kv_capacity_bytes,tokens_held,step_tokens,step_ms,steps,step_seqs,"
               "transfers_in_flight,transfer_bytes_in_flight,tier_blocks,pool_blocks\n";
  timeline_header_written_ = true;
}

namespace {

void put(fmt::memory_buffer& b, std::string_view text) {
  b.append(text.data(), text.data() + text.size());
}

void put_int(fmt::memory_buffer& b, int64_t v) {
  const fmt::format_int f(v);
  b.append(f.data(), f.data() + f.size());
  b.push_back(',');
}

// Milliseconds with three decimals, the nanoseconds rounded to the nearest
// microsecond (half up): no floating point for a row's ~20 numbers.
void put_ms(fmt::memory_buffer& b, TimeNs t) {
  const int64_t us = (t + 500) / 1000;
  const fmt::format_int whole(us / 1000);
  b.append(whole.data(), whole.data() + whole.size());
  const auto frac = static_cast<int>(us % 1000);
  const char digits[5] = {'.', static_cast<char>('0' + frac / 100),
                          static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10), ','};
  b.append(digits, digits + 5);
}

}  // namespace

// A cluster writes (instances + 1) rows an interval: appended to one buffer
// piece by piece (a formatted row costs several times more) and written in
// large pieces, with no string built per row.
void CsvRunSink::cluster_timeline(const ClusterTimelineRow& c) {
  const TimelineRow& r = c.state;
  fmt::memory_buffer& b = cluster_rows_;
  put_ms(b, r.time);
  Bytes capacity = 0;
  if (c.instance < 0) {
    put(b, "cluster,,,");
    capacity = cluster_capacity_;
  } else {
    const ClusterInstanceInfo& i = instances_.at(static_cast<size_t>(c.instance));
    put_int(b, c.instance);
    put(b, i.group);
    b.push_back(',');
    put(b, i.role);
    b.push_back(',');
    capacity = i.kv_capacity_bytes;
  }
  for (const int64_t v : {r.running, r.waiting, r.swapped, r.blocks_used, r.kv_used_bytes, capacity,
                          r.tokens_held, r.step_tokens})
    put_int(b, v);
  put_ms(b, r.step_latency);
  for (const int64_t v :
       {r.steps, r.step_seqs, c.transfers_in_flight, c.transfer_bytes_in_flight, c.tier_blocks})
    put_int(b, v);
  if (c.pool_blocks >= 0) {
    const fmt::format_int pool(c.pool_blocks);
    b.append(pool.data(), pool.data() + pool.size());
  }
  b.push_back('\n');
  if (b.size() >= (size_t{1} << 16)) flush_cluster_rows();
}

void CsvRunSink::flush_cluster_rows() {
  timeline_.write(cluster_rows_.data(), static_cast<std::streamsize>(cluster_rows_.size()));
  cluster_rows_.clear();
}

void CsvRunSink::close() {
  if (!timeline_header_written_) write_timeline_header(true);
  flush_cluster_rows();
  requests_.flush();
  timeline_.flush();
  if (!requests_ || !timeline_) throw_write_error(!requests_ ? requests_path_ : timeline_path_);
  requests_.close();
  timeline_.close();
}

}  // namespace kvsim
