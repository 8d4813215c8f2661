// `kind: fixed`: benchmark-shaped requests with a controlled prefix (issue 8),
// the way prefix-cache benchmarks build them (SGLang's generated-shared-prefix
// dataset, vLLM's prefix-repetition dataset): every prompt is
//   [round(shared_fraction * input) tokens of its group's prefix][the rest, unique]
// and request i belongs to group i mod groups, so the groups are equally
// popular and every group's prefix reappears at a fixed stride.
//
// A separate kind rather than a key of `synthetic`: here `input_tokens` is
// the whole prompt (a benchmark's --input-len, which the shared fraction
// divides), while `synthetic` counts only the unique tokens after its
// `shared_prefix`. Lengths are the usual distributions (a constant for a
// strict fixed shape); arrivals any process, `closed` included.
//
// The prefix content of group g is the first tokens of one token stream per
// group, so requests of a group with different prompt lengths still share
// the shorter one's prefix token for token.
#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "workloads/workload_kinds.hpp"

namespace kvsim::detail {
namespace {

constexpr int64_t kMaxRequests = 1'000'000'000'000;  // a bound: streams are O(1)
constexpr int64_t kMaxGroups = 1'000'000;

const FixedWorkloadSpec& fixed_of(const WorkloadSpec& spec) {
  return std::get<FixedWorkloadSpec>(spec.body);
}

// Tokens of a prompt of `input` tokens taken from its group's prefix.
int64_t shared_tokens(const FixedPrefixSpec& prefix, int64_t input) {
  return std::llround(prefix.shared_fraction * static_cast<double>(input));
}

class FixedSource final : public WorkloadSource {
 public:
  FixedSource(FixedWorkloadSpec spec, uint64_t seed, int64_t vocab_size)
      : spec_(std::move(spec)), seed_(seed), vocab_size_(vocab_size) {}

  std::optional<TimeNs> next_arrival() const override {
    if (exhausted()) return std::nullopt;
    return next_time_;
  }

  Request take() override {
    if (exhausted()) throw std::logic_error("take() on an exhausted fixed request source");
    const uint64_t index = next_index_;
    Request request;
    request.id = index;
    request.arrival = next_time_;
    const uint64_t group = index % static_cast<uint64_t>(spec_.prefix.groups);
    Rng input_rng = Rng::keyed(seed_, RandomStream::input_length, index);
    Rng output_rng = Rng::keyed(seed_, RandomStream::output_length, index);
    const int64_t input = spec_.input_tokens->sample(input_rng);
    const int64_t output = spec_.output_tokens->sample(output_rng);
    const int64_t shared = shared_tokens(spec_.prefix, input);
    if (shared > 0) request.prefix_group = static_cast<int32_t>(group);

    request.prompt.reserve(static_cast<size_t>(input));
    append_tokens(
        request.prompt,
        TokenStream(stream_key(seed_, RandomStream::fixed_prefix_tokens, group), vocab_size_),
        shared);
    append_tokens(request.prompt,
                  TokenStream(stream_key(seed_, RandomStream::prompt_tokens, index), vocab_size_),
                  input - shared);
    request.output.reserve(static_cast<size_t>(output));
    append_tokens(request.output,
                  TokenStream(stream_key(seed_, RandomStream::output_tokens, index), vocab_size_),
                  output);

    ++next_index_;
    if (!exhausted()) {
      Rng arrival_rng = Rng::keyed(seed_, RandomStream::arrival, next_index_);
      next_time_ = spec_.arrival->next_arrival(next_time_, next_index_, arrival_rng);
    }
    return request;
  }

  bool exhausted() const override { return next_index_ >= static_cast<uint64_t>(spec_.requests); }
  size_t held_entries() const override { return 0; }
  uint64_t taken() const override { return next_index_; }

 private:
  FixedWorkloadSpec spec_;
  uint64_t seed_;
  int64_t vocab_size_;
  uint64_t next_index_ = 0;
  TimeNs next_time_ = 0;
};

FixedPrefixSpec parse_prefix(const config::Node& node) {
  FixedPrefixSpec prefix;
  config::MapReader reader(node);
  if (!reader.valid()) return prefix;
  // shared_fraction: share of every prompt that is its group's prefix, [0, 1]
  prefix.shared_fraction = reader.number("shared_fraction", std::nullopt, 0.0, 1.0);
  // groups: distinct prefixes; request i uses group i mod groups
  prefix.groups = reader.integer("groups", 1, 1, kMaxGroups);
  reader.finish();
  return prefix;
}

}  // namespace

void parse_fixed_workload(config::MapReader& reader, WorkloadSpec& spec) {
  FixedWorkloadSpec fixed;
  // requests: how many requests the stream produces
  fixed.requests = reader.integer("requests", std::nullopt, 1, kMaxRequests);
  // arrival: {process: closed, concurrency, think_time} or an open-loop process
  fixed.arrival = read_arrival(reader, "arrival");
  // input_tokens: the whole prompt (shared prefix + unique rest), >= 1
  fixed.input_tokens = read_distribution(
      reader, "input_tokens", {QuantityKind::tokens, 1, "a prompt needs at least 1 token"});
  // output_tokens: tokens each request generates (>= 1)
  fixed.output_tokens = read_distribution(reader, "output_tokens", output_length_rules());
  // prefix: optional {shared_fraction, groups}; without it every prompt is unique
  const config::Node prefix = reader.child("prefix");
  if (prefix.defined()) fixed.prefix = parse_prefix(prefix);
  spec.body = std::move(fixed);
}

std::unique_ptr<WorkloadSource> make_fixed_source(const WorkloadSpec& spec, uint64_t seed,
                                                  int64_t vocab_size) {
  return std::make_unique<FixedSource>(fixed_of(spec), seed, vocab_size);
}

WorkloadBounds fixed_bounds(const WorkloadSpec& spec) {
  const FixedWorkloadSpec& f = fixed_of(spec);
  return {f.input_tokens->upper_bound(), f.output_tokens->upper_bound()};
}

}  // namespace kvsim::detail
