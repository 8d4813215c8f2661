#include "reports/trace_writer.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace kvsim {
namespace {

constexpr int kRequestsPid = 1, kEnginePid = 2;
// The first line of every trace this writer makes, and the start of its last
// record: together, the marker that lets a later run replace the file.
constexpr std::string_view kFirstLine = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
constexpr std::string_view kGeneratorRecord = "],\"otherData\":{\"generator\":\"kvsim\",";
constexpr int kStepsTid = 1, kUpdatesTid = 2, kTransfersTid = 3, kVtcmTid = 4, kTierLoadsTid = 5;
// Links take threads from here on, in the order their first transfer ends.
constexpr int kFirstLinkTid = 10;
// A cluster's instance i is process kFirstInstancePid + i; the cluster's
// own counters are on kEnginePid.
constexpr int kFirstInstancePid = 100;

double mib(Bytes b) {
  return static_cast<double>(b) / (1024.0 * 1024.0);
}

// Trace timestamps are microseconds; kvsim's nanoseconds keep three decimals.
std::string us(TimeNs t) {
  return fmt::format("{}.{:03}", t / 1000, t % 1000);
}

std::string json_string(std::string_view s) {
  return nlohmann::json(std::string(s)).dump();
}

std::string metadata(const char* what, int pid, int tid, std::string_view name) {
  return fmt::format(R"({{"ph":"M","name":"{}","pid":{},"tid":{},"args":{{"name":{}}}}})", what,
                     pid, tid, json_string(name));
}

}  // namespace

bool TraceRunSink::Sampler::keep() {
  const bool take = seen_++ % stride_ == 0;
  if (!take) return false;
  if (++kept_ >= next_halving_ && stride_ < (uint64_t{1} << 40)) {
    stride_ *= 2;
    // Past the budget every kept event halves the rate: at most ~40 more.
    next_halving_ +=
        next_halving_ < budget_ ? std::max<uint64_t>(1, (budget_ - next_halving_) / 2) : 1;
  }
  return true;
}

bool TraceRunSink::written_by_kvsim(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(kFirstLine.size(), '\0');
  if (!in.read(head.data(), static_cast<std::streamsize>(head.size())) || head != kFirstLine)
    return false;
  // The generator record is the last line, well within the last 4 KiB.
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - 4096);
  in.seekg(from);
  std::string tail(static_cast<size_t>(size - from), '\0');
  if (!in.read(tail.data(), static_cast<std::streamsize>(tail.size()))) return false;
  const size_t at = tail.rfind(kGeneratorRecord);
  return at != std::string::npos && tail.find('\n', at) == tail.size() - 1;
}

TraceRunSink::TraceRunSink(const std::string& path, const std::string& title, uint64_t max_events,
                           bool force)
    : target_(output_target("--trace", path, OutputShape::file, force)),
      path_(path),
      title_(title),
      requests_(max_events / 2 / 5),  // ~5 events per request
      steps_(max_events / 4),
      others_(max_events / 8),
      counters_(max_events / 8),
      max_events_(max_events) {
  target_.kvsim_wrote_file = &TraceRunSink::written_by_kvsim;
  refuse_unless_writable(target_);
  temp_ = TemporaryPath(temporary_sibling(target_.path));
  out_.open(temp_.path(), std::ios::binary | std::ios::trunc);
  if (!out_)
    throw std::filesystem::filesystem_error("cannot write the trace", target_.path,
                                            std::error_code(errno, std::generic_category()));
  out_ << kFirstLine;
  event(metadata("process_name", kRequestsPid, 0, "requests: " + title));
}

// An engine's first event (its first timeline row, at time 0) comes before
// any request's: the file reads as if its process were named up front.
void TraceRunSink::engine_metadata() {
  if (engine_named_) return;
  engine_named_ = true;
  event(metadata("process_name", kEnginePid, 0, "engine: " + title_));
  event(metadata("thread_name", kEnginePid, kStepsTid, "steps / passes"));
  event(metadata("thread_name", kEnginePid, kUpdatesTid, "KV updates"));
  event(metadata("thread_name", kEnginePid, kTransfersTid, "KV transfers"));
  event(metadata("thread_name", kEnginePid, kVtcmTid, "VTCM"));
  event(metadata("thread_name", kEnginePid, kTierLoadsTid, "tier loads"));
}

void TraceRunSink::cluster_started(const std::vector<ClusterInstanceInfo>& instances) {
  engine_named_ = true;  // the cluster's process takes the engine's place
  instances_ = instances.size();
  const uint64_t n = std::max<uint64_t>(instances_, 1);
  event(metadata("process_name", kEnginePid, 0,
                 fmt::format("cluster: {} ({} instances)", title_, instances_)));
  event(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,)"
                    R"("args":{{"sort_index":{}}}}})",
                    kEnginePid, 0));
  for (size_t i = 0; i < instances.size(); ++i) {
    const ClusterInstanceInfo& info = instances[i];
    const int pid = kFirstInstancePid + static_cast<int>(i);
    const std::string devices = info.pp > 1 ? fmt::format("TP {} x PP {}", info.tp, info.pp)
                                            : fmt::format("TP {}", info.tp);
    event(metadata("process_name", pid, 0,
                   fmt::format("instance {}: {} ({}, {})", i, info.group, info.role, devices)));
    event(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,)"
                      R"("args":{{"sort_index":{}}}}})",
                      pid, i + 1));
    event(metadata("thread_name", pid, kStepsTid, "steps"));
    event(metadata("thread_name", pid, kTransfersTid, "KV transfers"));
    event(metadata("thread_name", pid, kTierLoadsTid, "tier loads"));
  }
  instance_steps_.assign(instances_, Sampler(std::max<uint64_t>(1, max_events_ / 4 / n)));
  instance_others_.assign(instances_, Sampler(std::max<uint64_t>(1, max_events_ / 8 / n)));
  // Each row time writes 2 counters per instance and 4 for the cluster.
  row_times_ = Sampler(std::max<uint64_t>(1, max_events_ / 8 / (2 * n + 4)));
}

void TraceRunSink::cluster_timeline(const ClusterTimelineRow& c) {
  // A row time's rows come instance 0 first, the cluster last: all of them
  // are kept or none.
  if (c.instance <= 0 && (c.instance == 0 || instances_ == 0)) keep_row_time_ = row_times_.keep();
  if (!keep_row_time_) return;
  const TimelineRow& r = c.state;
  const int pid = c.instance < 0 ? kEnginePid : kFirstInstancePid + c.instance;
  event(fmt::format(
      R"({{"ph":"C","name":"queue","pid":{},"tid":0,"ts":{},"args":{{"running":{},"waiting":{},)"
      R"("swapped":{}}}}})",
      pid, us(r.time), r.running, r.waiting, r.swapped));
  event(fmt::format(R"({{"ph":"C","name":"KV in use, MiB","pid":{},"tid":0,"ts":{},)"
                    R"("args":{{"kv":{:.3f}}}}})",
                    pid, us(r.time), mib(r.kv_used_bytes)));
  if (c.instance >= 0) return;
  event(fmt::format(R"({{"ph":"C","name":"KV transfers in flight","pid":{},"tid":0,"ts":{},)"
                    R"("args":{{"transfers":{},"MiB":{:.3f}}}}})",
                    pid, us(r.time), c.transfers_in_flight, mib(c.transfer_bytes_in_flight)));
  event(fmt::format(R"({{"ph":"C","name":"blocks below HBM","pid":{},"tid":0,"ts":{},)"
                    R"("args":{{"instance_tiers":{},"global_pool":{}}}}})",
                    pid, us(r.time), c.tier_blocks, std::max<int64_t>(c.pool_blocks, 0)));
}

void TraceRunSink::instance_span(int32_t instance, const SpanRow& r) {
  if (instance < 0 || static_cast<size_t>(instance) >= instances_) return;
  const auto i = static_cast<size_t>(instance);
  const bool step = r.track == "step" || r.track == "pass";
  if (!(step ? instance_steps_[i] : instance_others_[i]).keep()) return;
  span_event(kFirstInstancePid + instance, r);
}

void TraceRunSink::event(const std::string& json) {
  out_ << (first_ ? "" : ",\n") << json;
  first_ = false;
}

void TraceRunSink::request(const RequestRow& r) {
  if (!requests_.keep()) return;
  const std::string name = fmt::format("request {}", r.id);
  if (r.status != "completed") {
    event(fmt::format(
        R"({{"ph":"i","s":"p","name":"rejected {}","cat":"request","pid":{},"tid":0,"ts":{},)"
        R"("args":{{"prompt_tokens":{},"output_tokens":{}}}}})",
        r.id, kRequestsPid, us(r.finished), r.prompt_tokens, r.output_tokens));
    return;
  }
  const auto async = [&](const char* ph, const std::string& what, TimeNs t,
                         const std::string& args) {
    event(
        fmt::format(R"({{"ph":"{}","name":{},"cat":"request","id":{},"pid":{},"tid":0,"ts":{}{}}})",
                    ph, json_string(what), r.id, kRequestsPid, us(t), args));
  };
  async("b", name, r.arrival,
        fmt::format(R"(,"args":{{"prompt_tokens":{},"output_tokens":{},"cached_tokens":{},)"
                    R"("preemptions":{},"session":{},"turn":{}}})",
                    r.prompt_tokens, r.output_tokens, r.cached_tokens, r.preemptions, r.session,
                    r.turn));
  const TimeNs started = r.started >= 0 ? r.started : r.arrival;
  const auto phase = [&](const char* what, TimeNs a, TimeNs b) {
    if (b < a) return;
    async("b", what, a, "");
    async("e", what, b, "");
  };
  phase("queue", r.arrival, started);
  phase("prefill", started, r.first_token);
  phase("decode", r.first_token, r.finished);
  async("e", name, r.finished, "");
}

void TraceRunSink::timeline(const TimelineRow& r) {
  engine_metadata();
  if (!counters_.keep()) return;
  event(fmt::format(
      R"({{"ph":"C","name":"queue","pid":{},"tid":0,"ts":{},"args":{{"running":{},"waiting":{},)"
      R"("swapped":{}}}}})",
      kEnginePid, us(r.time), r.running, r.waiting, r.swapped));
  event(fmt::format(R"({{"ph":"C","name":"KV in use, MiB","pid":{},"tid":0,"ts":{},)"
                    R"("args":{{"kv":{:.3f}}}}})",
                    kEnginePid, us(r.time),
                    static_cast<double>(r.kv_used_bytes) / (1024.0 * 1024.0)));
}

void TraceRunSink::span(const SpanRow& r) {
  engine_metadata();
  const bool step = r.track == "step" || r.track == "pass";
  if (!(step ? steps_.keep() : others_.keep())) return;
  span_event(kEnginePid, r);
}

void TraceRunSink::span_event(int pid, const SpanRow& r) {
  int tid = kStepsTid;
  std::string name(r.name);
  std::string args;
  if (r.track == "step") {
    args = fmt::format(R"("step":{},"batch_size":{},"tokens":{},"swap_bytes":{})", r.id, r.seqs,
                       r.tokens, r.bytes);
  } else if (r.track == "pass") {
    name = fmt::format("{} AR-{}", r.name, r.variant);
    args = fmt::format(R"("pass":{},"turn":{},"variant":{},"tokens":{})", r.id, r.turn, r.variant,
                       r.tokens);
  } else if (r.track == "kv_update") {
    tid = kUpdatesTid;
    args = fmt::format(R"("turn":{},"bytes_moved":{},"pointer_updates":{},"variant_after":{})",
                       r.turn, r.bytes, r.pointer_updates, r.variant);
  } else if (r.track == "kv_transfer" && pid != kEnginePid && r.name == "PD transfer") {
    tid = kTransfersTid;
    name = fmt::format("KV of request {} to instance {}", r.id, r.seqs);
    args = fmt::format(R"("request":{},"tokens":{},"bytes":{},"to_instance":{})", r.id, r.tokens,
                       r.bytes, r.seqs);
  } else if (r.track == "kv_transfer") {
    tid = kTransfersTid;
    args = fmt::format(R"("step":{},"bytes":{})", r.id, r.bytes);
  } else if (r.track == "link") {
    tid = link_thread(pid, r.name);
    name = format_bytes(r.bytes);
    args = fmt::format(R"("bytes":{},"delay_us":{})", r.bytes, us(r.delay));
  } else if (r.track == "tier_load") {
    tid = kTierLoadsTid;
    name = fmt::format("load from {}", r.name);
    args = fmt::format(R"("step":{},"bytes":{})", r.id, r.bytes);
  } else {
    tid = kVtcmTid;
    args = fmt::format(R"("turn":{},"granted_bytes":{})", r.turn, r.bytes);
  }
  event(fmt::format(
      R"({{"ph":"X","name":{},"cat":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
      json_string(name), json_string(r.track), pid, tid, us(r.start), us(r.duration), args));
}

int TraceRunSink::link_thread(int pid, std::string_view name) {
  const auto key = std::make_pair(pid, std::string(name));
  const auto it = link_threads_.find(key);
  if (it != link_threads_.end()) return it->second;
  int tid = kFirstLinkTid;
  for (const auto& [k, t] : link_threads_)
    if (k.first == pid) tid = std::max(tid, t + 1);
  link_threads_.emplace(key, tid);
  event(metadata("thread_name", pid, tid, fmt::format("link {}", name)));
  return tid;
}

// A cluster's samplers, summed over its instances (row times: each keeps
// all of its rows); nothing for one instance. Closes otherData.
std::string TraceRunSink::instances_sampled() const {
  if (instances_ == 0) return "}}\n";
  uint64_t steps_seen = 0, steps_kept = 0, spans_seen = 0, spans_kept = 0;
  for (size_t i = 0; i < instances_; ++i) {
    steps_seen += instance_steps_[i].seen();
    steps_kept += instance_steps_[i].kept();
    spans_seen += instance_others_[i].seen();
    spans_kept += instance_others_[i].kept();
  }
  return fmt::format(
      R"(,"instances":{},"instance_steps":{{"seen":{},"kept":{}}},)"
      R"("instance_spans":{{"seen":{},"kept":{}}},"row_times":{{"seen":{},"kept":{}}}}}}})"
      "\n",
      instances_, steps_seen, steps_kept, spans_seen, spans_kept, row_times_.seen(),
      row_times_.kept());
}

void TraceRunSink::close() {
  if (closed_) return;
  closed_ = true;
  const auto sampled = [](const Sampler& s) {
    return fmt::format(R"({{"seen":{},"kept":{}}})", s.seen(), s.kept());
  };
  out_ << "\n"
       << kGeneratorRecord
       << fmt::format(
              "\"time_unit\":\"us of simulated time\","
              "\"sampling\":\"every event until half of a kind's budget is spent, then every 2nd, "
              "4th, ...\",\"requests\":{},\"steps\":{},\"spans\":{},\"counters\":{}",
              sampled(requests_), sampled(steps_), sampled(others_), sampled(counters_))
       << instances_sampled();
  out_.flush();
  const int write_error = errno ? errno : EIO;
  if (!out_)
    throw std::filesystem::filesystem_error("cannot write the trace", target_.path,
                                            std::error_code(write_error, std::generic_category()));
  out_.close();
  // The file appears whole or not at all, and only where the rule still
  // allows it (something may have been put there while the run went).
  refuse_unless_writable(target_);
  std::filesystem::rename(temp_.path(), target_.path);
  temp_.release();
}

TraceRunSink::~TraceRunSink() {
  if (out_.is_open()) out_.close();
  // temp_ removes the unfinished file.
}

}  // namespace kvsim
