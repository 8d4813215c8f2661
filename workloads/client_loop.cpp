// Benchmark clients around a request stream (SPEC 5 "closed" and
// "max_concurrency"), as `vllm bench serve` and SGLang's bench_serving drive a
// server:
//
// - Closed loop (`arrival: {process: closed, concurrency: N, think_time}`):
//   N clients start at t = 0; each sends its next request think_time after
//   its previous one completes (or is rejected), until the stream's
//   `requests` have been sent. The stream underneath gives content only; its
//   arrival times (all 0) are replaced by the client's send time.
// - Concurrency cap (`workload.max_concurrency: M`): at most M requests in
//   flight; a request whose arrival time has come while M are in flight waits
//   AT THE CLIENT and is sent when one completes. Its Request::arrival stays
//   the time the client wanted to send it, so TTFT and E2E include that wait,
//   as a benchmark client measures them (its clock starts before it acquires
//   the concurrency semaphore).
//
// Both are pure functions of the seed and the completion order, which the
// engine makes deterministic.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "workloads/workload_kinds.hpp"

namespace kvsim::detail {
namespace {

class ClosedLoopSource final : public WorkloadSource {
 public:
  ClosedLoopSource(std::unique_ptr<WorkloadSource> inner, ClosedLoopParams params, uint64_t seed)
      : inner_(std::move(inner)), params_(std::move(params)), seed_(seed) {
    // Every client is ready at t = 0 (a benchmark opens with a burst of N).
    for (int64_t c = 0; c < params_.concurrency; ++c) ready_.push_back({0, c});
    std::make_heap(ready_.begin(), ready_.end(), later);
  }

  std::optional<TimeNs> next_arrival() const override {
    if (inner_->exhausted() || ready_.empty()) return std::nullopt;
    return ready_.front().at;
  }

  Request take() override {
    if (inner_->exhausted() || ready_.empty())
      throw std::logic_error("take() on a closed-loop source with no client ready");
    std::pop_heap(ready_.begin(), ready_.end(), later);
    const Ready client = ready_.back();
    ready_.pop_back();
    Request request = inner_->take();
    request.arrival = client.at;
    busy_.emplace(request.id, client.client);
    return request;
  }

  void on_complete(const Request& request, TimeNs now) override {
    inner_->on_complete(request, now);
    const auto it = busy_.find(request.id);
    if (it == busy_.end()) return;  // not one of ours (cannot happen)
    const int64_t client = it->second;
    busy_.erase(it);
    Rng think_rng = Rng::keyed(seed_, RandomStream::client_think, request.id);
    ready_.push_back({now + params_.think_time->sample(think_rng), client});
    std::push_heap(ready_.begin(), ready_.end(), later);
  }

  bool exhausted() const override { return inner_->exhausted(); }
  int64_t skipped_records() const override { return inner_->skipped_records(); }
  size_t held_entries() const override {
    return inner_->held_entries() + ready_.size() + busy_.size();
  }
  uint64_t taken() const override { return inner_->taken(); }

 private:
  struct Ready {
    TimeNs at;
    int64_t client;
  };
  // Min-heap on (time, client): ties go to the lowest client id.
  static bool later(const Ready& a, const Ready& b) {
    return a.at != b.at ? a.at > b.at : a.client > b.client;
  }

  std::unique_ptr<WorkloadSource> inner_;
  ClosedLoopParams params_;
  uint64_t seed_;
  std::vector<Ready> ready_;                    // clients waiting to send
  std::unordered_map<uint64_t, int64_t> busy_;  // request id -> its client
};

class ConcurrencyCapSource final : public WorkloadSource {
 public:
  ConcurrencyCapSource(std::unique_ptr<WorkloadSource> inner, int64_t max_in_flight)
      : inner_(std::move(inner)), max_in_flight_(max_in_flight) {}

  // Holding back is all it takes: the stream underneath keeps the waiting
  // request (its arrival time in the past), and the engine takes it at once
  // when a completion frees a slot.
  std::optional<TimeNs> next_arrival() const override {
    if (in_flight_ >= max_in_flight_) return std::nullopt;
    return inner_->next_arrival();
  }

  Request take() override {
    if (in_flight_ >= max_in_flight_)
      throw std::logic_error("take() beyond workload.max_concurrency");
    ++in_flight_;
    return inner_->take();
  }

  void on_complete(const Request& request, TimeNs now) override {
    if (in_flight_ > 0) --in_flight_;
    inner_->on_complete(request, now);
  }

  bool exhausted() const override { return inner_->exhausted(); }
  int64_t skipped_records() const override { return inner_->skipped_records(); }
  size_t held_entries() const override { return inner_->held_entries(); }
  uint64_t taken() const override { return inner_->taken(); }

 private:
  std::unique_ptr<WorkloadSource> inner_;
  int64_t max_in_flight_;
  int64_t in_flight_ = 0;
};

}  // namespace

const ArrivalProcess* arrival_of(const WorkloadSpec& spec) {
  return std::visit(
      [](const auto& body) -> const ArrivalProcess* {
        if constexpr (requires { body.arrival; }) {
          return body.arrival.get();
        } else {
          return nullptr;
        }
      },
      spec.body);
}

void parse_benchmark_clients(config::MapReader& reader, WorkloadSpec& spec) {
  // max_concurrency: optional cap on requests in flight; later ones wait at
  // the client and that wait counts in their TTFT
  const config::ComponentInfo keys = workload_section_info();
  const config::ParamSpec& cap_spec = keys.at("max_concurrency");
  const config::Node cap = reader.child(cap_spec.key);
  if (cap.defined())
    spec.max_concurrency =
        cap.as_int(static_cast<int64_t>(cap_spec.min), static_cast<int64_t>(cap_spec.max));
  const ArrivalProcess* arrival = arrival_of(spec);
  if (arrival == nullptr || arrival->closed_loop() == nullptr) return;
  if (std::holds_alternative<ChatWorkloadSpec>(spec.body) ||
      std::holds_alternative<AgenticWorkloadSpec>(spec.body) ||
      std::holds_alternative<DialogWorkloadSpec>(spec.body)) {
    reader.child("arrival").child_at("process").error(
        fmt::format("process: closed does not apply to kind: {} (its turns already follow their "
                    "session's completions)",
                    spec.kind),
        "poisson | gamma | constant for session starts; cap sessions in flight with "
        "workload.max_concurrency");
  }
}

std::unique_ptr<WorkloadSource> wrap_benchmark_clients(const WorkloadSpec& spec,
                                                       std::unique_ptr<WorkloadSource> source,
                                                       uint64_t seed) {
  const ArrivalProcess* arrival = arrival_of(spec);
  if (arrival != nullptr && arrival->closed_loop() != nullptr) {
    source = std::make_unique<ClosedLoopSource>(std::move(source), *arrival->closed_loop(), seed);
  }
  if (spec.max_concurrency) {
    source = std::make_unique<ConcurrencyCapSource>(std::move(source), *spec.max_concurrency);
  }
  return source;
}

}  // namespace kvsim::detail
