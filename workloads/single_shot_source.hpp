#pragma once
// Internal to workloads/: the stream of the single-shot kinds (synthetic,
// fixed, rag). Their requests are independent: request i is a pure function
// of (seed, i) and arrives by the kind's arrival process after request i - 1,
// so the stream keeps only the next index and its arrival time and its memory
// is O(1) whatever the length. A kind says only what request i contains.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "workloads/workload_kinds.hpp"

namespace kvsim::detail {

// Most requests a single-shot kind may ask for: a bound, not a budget (the
// stream is O(1) in memory whatever its length).
constexpr int64_t kMaxSingleShotRequests = 1'000'000'000'000;

// Reads the two keys every single-shot kind starts with into `body`:
// `requests`, how many requests the stream produces, and `arrival`, the
// process that spaces them ({process: poisson | gamma | constant, ...} or
// {process: closed, concurrency, think_time}).
// The declarations of those two keys, first in every single-shot kind's list.
std::vector<config::ParamSpec> single_shot_params();
template <class Body>
void read_requests_and_arrival(config::MapReader& reader, const config::ParamValues& values,
                               Body& body) {
  body.requests = values.integer("requests");
  body.arrival = read_arrival(reader, "arrival");
}

class SingleShotSource : public WorkloadSource {
 public:
  std::optional<TimeNs> next_arrival() const final;
  Request take() final;
  bool exhausted() const final { return next_index_ >= static_cast<uint64_t>(requests_); }
  size_t held_entries() const final { return 0; }
  uint64_t taken() const final { return next_index_; }

 protected:
  // `kind` names the source in errors ("take() on an exhausted rag request
  // source"); `requests` and `arrival` are the kind's keys of the same names.
  SingleShotSource(const char* kind, int64_t requests,
                   std::shared_ptr<const ArrivalProcess> arrival, uint64_t seed,
                   int64_t vocab_size);

  // Fills the prompt, output and prefix group of `request`, whose id (its
  // index) and arrival are set.
  virtual void build(Request& request) const = 0;

  // One draw of `quantity` keyed by (stream, key), the key a request index
  // or whatever else the value belongs to (a rag document).
  // (keyed_sample's draw, the stream's fixed fields mixed once.)
  int64_t draw(const ClampedDistribution& quantity, RandomStream stream, uint64_t key) const {
    Rng rng(keys(stream)(key));
    return quantity.sample(rng);
  }
  // The token ids keyed by (stream, key), in [0, vocab_size).
  TokenStream tokens(RandomStream stream, uint64_t key) const {
    return TokenStream(keys(stream)(key), vocabulary_);
  }
  // Appends what is the request's own: `prompt` unique tokens after whatever
  // shared prefix the kind put first, and the `output` tokens it generates.
  void append_own_tokens(Request& request, int64_t prompt, int64_t output) const;

  uint64_t seed() const { return seed_; }
  int64_t vocab_size() const { return vocab_size_; }

 private:
  const char* kind_;
  int64_t requests_;
  std::shared_ptr<const ArrivalProcess> arrival_;
  uint64_t seed_;
  int64_t vocab_size_;
  FastModulo vocabulary_;  // vocab_size_'s, built once: each one costs a 128-bit divide
  uint64_t next_index_ = 0;
  TimeNs next_time_ = 0;  // request 0 arrives at time 0

  // stream_key(seed_, stream, ...) for every request: the streams numbered
  // below kKeyedStreams (the common ones, rng.hpp) keyed once, others anew.
  StreamKeys keys(RandomStream stream) const {
    const auto s = static_cast<uint64_t>(stream);
    return s < kKeyedStreams ? keyed_[s] : StreamKeys(seed_, stream);
  }
  static constexpr uint64_t kKeyedStreams = 16;
  std::array<StreamKeys, kKeyedStreams> keyed_;
};

}  // namespace kvsim::detail
