// `kind: fixed`: benchmark-shaped requests with a controlled prefix,
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

#include "workloads/single_shot_source.hpp"
#include "workloads/workload_kinds.hpp"
#include "workloads/workload_params.hpp"

namespace kvsim::detail {
namespace {

constexpr int64_t kMaxGroups = 1'000'000;

const FixedWorkloadSpec& fixed_of(const WorkloadSpec& spec) {
  return std::get<FixedWorkloadSpec>(spec.body);
}

// Tokens of a prompt of `input` tokens taken from its group's prefix.
int64_t shared_tokens(const FixedPrefixSpec& prefix, int64_t input) {
  return std::llround(prefix.shared_fraction * static_cast<double>(input));
}

class FixedSource final : public SingleShotSource {
 public:
  FixedSource(FixedWorkloadSpec spec, uint64_t seed, int64_t vocab_size)
      : SingleShotSource("fixed", spec.requests, spec.arrival, seed, vocab_size),
        spec_(std::move(spec)) {}

 private:
  // [the first `shared` tokens of group i mod groups][the rest, unique]
  void build(Request& request) const override {
    const uint64_t index = request.id;
    const uint64_t group = index % static_cast<uint64_t>(spec_.prefix.groups);
    const int64_t input = draw(*spec_.input_tokens, RandomStream::input_length, index);
    const int64_t output = draw(*spec_.output_tokens, RandomStream::output_length, index);
    const int64_t shared = shared_tokens(spec_.prefix, input);
    if (shared > 0) request.prefix_group = static_cast<int32_t>(group);

    request.prompt.reserve(static_cast<size_t>(input));
    append_tokens(request.prompt, tokens(RandomStream::fixed_prefix_tokens, group), shared);
    append_own_tokens(request, input - shared, output);
  }

  FixedWorkloadSpec spec_;
};

FixedPrefixSpec parse_prefix(const config::Node& node) {
  FixedPrefixSpec prefix;
  config::MapReader reader(node);
  if (!reader.valid()) return prefix;
  const config::ParamValues values = config::read_params(reader, fixed_prefix_info());
  prefix.shared_fraction = values.number("shared_fraction");
  prefix.groups = values.integer("groups");
  reader.finish();
  return prefix;
}

}  // namespace

config::ComponentInfo fixed_prefix_info() {
  using namespace config;
  return {"section",
          "workload.prefix",
          "kind: fixed: the share of every prompt its group's prefix takes",
          {number_param("shared_fraction", std::nullopt, 0.0, 1.0, "fraction of the prompt",
                        "share of every prompt that is its group's prefix"),
           int_param("groups", 1, 1, kMaxGroups, "groups",
                     "distinct prefixes; request i uses group i mod groups")}};
}

config::ComponentInfo fixed_workload_info() {
  using namespace config;
  ComponentInfo info{"workload", "fixed",
                     "benchmark-shaped requests with a controlled shared prefix (SGLang, vLLM "
                     "prefix benchmarks)",
                     single_shot_params()};
  info.params.push_back(distribution_param("input_tokens", true, "tokens",
                                           "the whole prompt (shared prefix + unique rest), >= 1"));
  info.params.push_back(
      distribution_param("output_tokens", true, "tokens", "tokens each request generates (>= 1)"));
  info.params.push_back(section_param("prefix", false, "{shared_fraction, groups}",
                                      "without it every prompt is unique"));
  return info;
}

void parse_fixed_workload(config::MapReader& reader, WorkloadSpec& spec) {
  FixedWorkloadSpec fixed;
  const config::ParamValues values = config::read_params(reader, fixed_workload_info());
  // requests, arrival: as every single-shot kind reads them
  read_requests_and_arrival(reader, values, fixed);
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
