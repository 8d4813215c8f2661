// `kind: synthetic`: independent single-shot requests with an arrival
// process, prompt and output length distributions and optional shared
// prefixes (groups of requests that start with the same tokens, like a system
// prompt or a few-shot header shared by many users).
#include <fmt/format.h>

#include "workloads/distribution_impl.hpp"
#include "workloads/single_shot_source.hpp"
#include "workloads/workload_kinds.hpp"
#include "workloads/workload_params.hpp"

namespace kvsim::detail {
namespace {

constexpr int64_t kMaxPrefixGroups = 1'000'000;

std::optional<SharedPrefixSpec> parse_shared_prefix(const config::Node& node) {
  auto& diagnostics = node.context().diagnostics;
  const size_t errors_before = diagnostics.size();
  config::MapReader reader(node);
  if (!reader.valid()) return std::nullopt;
  const config::ComponentInfo info = shared_prefix_info();
  const config::ParamValues values = config::read_params(reader, info);
  SharedPrefixSpec prefix;
  prefix.groups = values.integer("groups");
  prefix.tokens = values.integer("tokens");
  prefix.popularity = values.string("popularity");
  // zipf_s only with popularity: zipf, and > 0 (its own reader)
  const config::ParamSpec& s = info.at("zipf_s");
  prefix.zipf_s = info.default_of<double>("zipf_s");
  const config::Node zipf_s = reader.child(s.key);
  if (zipf_s.defined()) {
    if (prefix.popularity != "zipf") {
      zipf_s.error("applies only to popularity: zipf", "remove it, or set popularity: zipf");
    } else if (auto v = zipf_s.as_double(s.min, s.max)) {
      if (*v <= 0) zipf_s.error(fmt::format("must be greater than 0, got {}", *v), "(0, 20]");
      prefix.zipf_s = *v;
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

    if (prefix_tokens > 0) {
      // Every request of the group describes the prefix the same way.
      const auto group = static_cast<uint64_t>(request.prefix_group);
      append_described(request.prompt, tokens(RandomStream::prefix_tokens, group), prefix_tokens);
    }
    append_own_tokens(request, unique_tokens, output_tokens);
  }

  SyntheticWorkloadSpec spec_;
};

}  // namespace

config::ComponentInfo shared_prefix_info() {
  using namespace config;
  return {"section",
          "workload.shared_prefix",
          "kind: synthetic: groups of requests that start with the same tokens",
          {int_param("groups", 1, 1, kMaxPrefixGroups, "groups",
                     "how many distinct prefixes (each request uses one)"),
           int_param("tokens", std::nullopt, 1, kMaxTokensPerValue, "tokens",
                     "length of every group's prefix, identical within a group"),
           choice_param("popularity", std::string("uniform"), {"uniform", "zipf"},
                        "how requests pick their group"),
           own_reader(number_param("zipf_s", 1.0, 0.0, 20.0, "",
                                   "popularity: zipf only: exponent > 0; group g has weight "
                                   "1/(g+1)^s"))}};
}

config::ComponentInfo synthetic_workload_info() {
  using namespace config;
  ComponentInfo info{"workload", "synthetic",
                     "independent single-shot requests, optionally with shared prefixes",
                     single_shot_params()};
  info.params.push_back(section_param("shared_prefix", false,
                                      "{groups, tokens, popularity, zipf_s}",
                                      "groups of requests that start with the same tokens"));
  info.params.push_back(distribution_param(
      "input_tokens", true, "tokens",
      "the unique tokens after the shared prefix (the whole prompt without one)"));
  info.params.push_back(
      distribution_param("output_tokens", true, "tokens", "tokens each request generates (>= 1)"));
  return info;
}

void parse_synthetic_workload(config::MapReader& reader, WorkloadSpec& spec) {
  SyntheticWorkloadSpec synthetic;
  const config::ParamValues values = config::read_params(reader, synthetic_workload_info());
  // requests, arrival: as every single-shot kind reads them
  read_requests_and_arrival(reader, values, synthetic);
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
