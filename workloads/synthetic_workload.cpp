// `kind: synthetic`: independent single-shot requests with an arrival
// process, prompt and output length distributions and optional shared
// prefixes (groups of requests that start with the same tokens, like a system
// prompt or a few-shot header shared by many users).
#include <fmt/format.h>

#include "workloads/distribution_impl.hpp"
#include "workloads/single_shot_source.hpp"
#include "workloads/workload_kinds.hpp"

namespace kvsim::detail {
namespace {

constexpr int64_t kMaxPrefixGroups = 1'000'000;

std::optional<SharedPrefixSpec> parse_shared_prefix(const config::Node& node) {
  auto& diagnostics = node.context().diagnostics;
  const size_t errors_before = diagnostics.size();
  config::MapReader reader(node);
  if (!reader.valid()) return std::nullopt;
  SharedPrefixSpec prefix;
  // groups: how many distinct prefixes (each request uses one)
  prefix.groups = reader.integer("groups", 1, 1, kMaxPrefixGroups);
  // tokens: length of every group's prefix, identical within a group
  prefix.tokens = reader.integer("tokens", std::nullopt, 1, kMaxTokensPerValue);
  // popularity: uniform | zipf — how requests pick their group
  prefix.popularity = reader.choice("popularity", "uniform", {"uniform", "zipf"});
  // zipf_s: exponent of the zipf popularity (> 0; group g has weight 1/(g+1)^s)
  const config::Node zipf_s = reader.child("zipf_s");
  if (zipf_s.defined()) {
    if (prefix.popularity != "zipf") {
      zipf_s.error("applies only to popularity: zipf", "remove it, or set popularity: zipf");
    } else if (auto s = zipf_s.as_double(0.0, 20.0)) {
      if (*s <= 0) zipf_s.error(fmt::format("must be greater than 0, got {}", *s), "(0, 20]");
      prefix.zipf_s = *s;
    }
  }
  reader.finish();
  if (diagnostics.size() != errors_before) return std::nullopt;
  const int64_t last = prefix.groups - 1;
  std::unique_ptr<Distribution> group =
      prefix.popularity == "zipf" ? make_zipf(0, last, prefix.zipf_s) : make_uniform(0, last);
  prefix.group = std::make_shared<const ClampedDistribution>(std::move(group), 0, last);
  return prefix;
}

const SyntheticWorkloadSpec& synthetic_of(const WorkloadSpec& spec) {
  return std::get<SyntheticWorkloadSpec>(spec.body);
}

class SyntheticSource final : public SingleShotSource {
 public:
  SyntheticSource(SyntheticWorkloadSpec spec, uint64_t seed, int64_t vocab_size)
      : SingleShotSource("synthetic", spec.requests, spec.arrival, seed, vocab_size),
        spec_(std::move(spec)) {}

 private:
  // [the group's shared prefix, if any][unique tokens]
  void build(Request& request) const override {
    const uint64_t index = request.id;
    int64_t prefix_tokens = 0;
    if (spec_.shared_prefix) {
      request.prefix_group = static_cast<int32_t>(
          draw(*spec_.shared_prefix->group, RandomStream::prefix_group, index));
      prefix_tokens = spec_.shared_prefix->tokens;
    }
    const int64_t unique_tokens = draw(*spec_.input_tokens, RandomStream::input_length, index);
    const int64_t output_tokens = draw(*spec_.output_tokens, RandomStream::output_length, index);

    request.prompt.reserve(static_cast<size_t>(prefix_tokens + unique_tokens));
    if (prefix_tokens > 0) {
      const auto group = static_cast<uint64_t>(request.prefix_group);
      append_tokens(request.prompt, tokens(RandomStream::prefix_tokens, group), prefix_tokens);
    }
    append_own_tokens(request, unique_tokens, output_tokens);
  }

  SyntheticWorkloadSpec spec_;
};

}  // namespace

void parse_synthetic_workload(config::MapReader& reader, WorkloadSpec& spec) {
  SyntheticWorkloadSpec synthetic;
  // requests, arrival: as every single-shot kind reads them
  read_requests_and_arrival(reader, synthetic);
  // shared_prefix: optional {groups, tokens, popularity, zipf_s}
  const config::Node prefix = reader.child("shared_prefix");
  if (prefix.defined()) synthetic.shared_prefix = parse_shared_prefix(prefix);
  // input_tokens: the unique tokens after the shared prefix (the whole prompt
  // without one); may be 0 only when a shared prefix provides the prompt.
  const bool has_prefix = prefix.defined();
  synthetic.input_tokens = read_distribution(
      reader, "input_tokens",
      {QuantityKind::tokens, has_prefix ? 0 : 1, "a prompt needs at least 1 token"});
  // output_tokens: tokens each request generates (>= 1)
  synthetic.output_tokens = read_distribution(reader, "output_tokens", output_length_rules());
  spec.body = std::move(synthetic);
}

std::unique_ptr<WorkloadSource> make_synthetic_source(const WorkloadSpec& spec, uint64_t seed,
                                                      int64_t vocab_size) {
  return std::make_unique<SyntheticSource>(synthetic_of(spec), seed, vocab_size);
}

WorkloadBounds synthetic_bounds(const WorkloadSpec& spec) {
  const SyntheticWorkloadSpec& s = synthetic_of(spec);
  const int64_t prefix = s.shared_prefix ? s.shared_prefix->tokens : 0;
  return {prefix + s.input_tokens->upper_bound(), s.output_tokens->upper_bound()};
}

}  // namespace kvsim::detail
