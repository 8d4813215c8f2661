// The stream shared by the single-shot kinds (single_shot_source.hpp).
#include "workloads/single_shot_source.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace kvsim::detail {

std::vector<config::ParamSpec> single_shot_params() {
  using namespace config;
  return {int_param("requests", std::nullopt, 1, kMaxSingleShotRequests, "requests",
                    "how many requests the stream produces"),
          section_param("arrival", true, "{process: ..., ...}",
                        "when requests arrive (an arrival process, `kvsim list arrivals`)")};
}

SingleShotSource::SingleShotSource(const char* kind, int64_t requests,
                                   std::shared_ptr<const ArrivalProcess> arrival, uint64_t seed,
                                   int64_t vocab_size)
    : kind_(kind),
      requests_(requests),
      arrival_(std::move(arrival)),
      seed_(seed),
      vocab_size_(vocab_size),
      vocabulary_(static_cast<uint64_t>(vocab_size)) {
  for (uint64_t s = 0; s < kKeyedStreams; ++s) keyed_[s] = StreamKeys(seed, RandomStream{s});
}

std::optional<TimeNs> SingleShotSource::next_arrival() const {
  if (exhausted()) return std::nullopt;
  return next_time_;
}

Request SingleShotSource::take() {
  if (exhausted())
    throw std::logic_error(fmt::format("take() on an exhausted {} request source", kind_));
  Request request;
  request.id = next_index_;
  request.arrival = next_time_;
  build(request);
  // The next arrival is drawn now, from its own keyed generator: it does not
  // depend on what the kind drew for this request.
  ++next_index_;
  if (!exhausted()) {
    Rng arrival_rng(keys(RandomStream::arrival)(next_index_));
    next_time_ = arrival_->next_arrival(next_time_, next_index_, arrival_rng);
  }
  return request;
}

void SingleShotSource::append_own_tokens(Request& request, int64_t prompt, int64_t output) const {
  // Described, not generated: the ids are this request's alone (a waiting
  // request holds a few words, the engine hashes its blocks from the keys).
  append_described(request.prompt, tokens(RandomStream::prompt_tokens, request.id), prompt);
  append_described(request.output, tokens(RandomStream::output_tokens, request.id), output);
}

}  // namespace kvsim::detail
