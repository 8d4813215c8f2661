// The table of distributions, the shared `min`/`max` clamps and the parameter
// reader every implementation uses.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "workloads/distribution.hpp"
#include "workloads/distribution_impl.hpp"
#include "workloads/nearest_integer.hpp"
#include "workloads/workload_params.hpp"

namespace kvsim {
namespace {

struct DistributionEntry {
  const char* name;
  config::ComponentInfo (*info)();  // its own keys (dist, min and max are shared)
  std::unique_ptr<Distribution> (*parse)(detail::DistributionReader&);
  // Defined over [min, max] (uniform, zipf): both keys are required.
  bool needs_min_and_max;
  // Unbounded support (normal, lognormal, exponential): a token count needs
  // an explicit `max`, or one draw in a million would build a giant prompt.
  bool unbounded;
};

// Every distribution `dist:` accepts. Adding one: write its parse function
// and list it here (the registry test compares this list with the docs).
constexpr DistributionEntry kDistributions[] = {
    {"constant", detail::constant_distribution_info, detail::parse_constant, false, false},
    {"empirical", detail::empirical_distribution_info, detail::parse_empirical, false, false},
    {"exponential", detail::exponential_distribution_info, detail::parse_exponential, false, true},
    {"lognormal", detail::lognormal_distribution_info, detail::parse_lognormal, false, true},
    {"normal", detail::normal_distribution_info, detail::parse_normal, false, true},
    {"uniform", detail::uniform_distribution_info, detail::parse_uniform, true, false},
    {"zipf", detail::zipf_distribution_info, detail::parse_zipf, true, false},
};

// The keys every distribution shares.
config::ComponentInfo distribution_section_info() {
  using namespace config;
  return {"section",
          "distribution",
          "the keys every distribution shares",
          {choice_param("dist", std::nullopt, length_distributions(),
                        "the distribution; its own keys follow in its table"),
           quantity_param("min", false, ">= the quantity's floor",
                          "smallest value a draw is clamped to (required by uniform and zipf)"),
           quantity_param("max", false, ">= min",
                          "largest value a draw is clamped to (required by uniform and zipf, and "
                          "for tokens by the unbounded ones)")}};
}

std::vector<config::ComponentInfo> own_infos() {
  std::vector<config::ComponentInfo> infos;
  for (const auto& e : kDistributions) infos.push_back(e.info());
  return infos;
}

int64_t value_cap(const QuantityRules& rules) {
  return rules.kind == QuantityKind::tokens ? kMaxTokensPerValue : kMaxDurationValue;
}

std::string describe_value(int64_t value, const QuantityRules& rules) {
  return rules.kind == QuantityKind::tokens ? fmt::format("{}", value) : format_duration(value);
}

void require_missing(const config::Node& map, const config::Node& child) {
  map.context().diagnostics.error(map.location(), child.path(), "is required but missing");
}

}  // namespace

// ---- ClampedDistribution ---------------------------------------------------

ClampedDistribution::ClampedDistribution(std::shared_ptr<const Distribution> distribution,
                                         int64_t min, int64_t max)
    : distribution_(std::move(distribution)), min_(min), max_(max) {}

int64_t ClampedDistribution::sample(Rng& rng) const {
  const double x = distribution_->draw(rng);
  // Clamp in floating point first: llround of a value beyond int64 is undefined.
  if (!(x < static_cast<double>(max_))) return max_;
  if (x <= static_cast<double>(min_)) return min_;
  return std::clamp<int64_t>(round_half_away(x), min_, max_);
}

int64_t ClampedDistribution::lower_bound() const {
  const double lo = distribution_->support_min();
  if (!(lo > static_cast<double>(min_))) return min_;
  if (!(lo < static_cast<double>(max_))) return max_;
  return std::clamp<int64_t>(std::llround(lo), min_, max_);
}

int64_t ClampedDistribution::upper_bound() const {
  const double hi = distribution_->support_max();
  if (!(hi < static_cast<double>(max_))) return max_;
  if (hi <= static_cast<double>(min_)) return min_;
  return std::clamp<int64_t>(std::llround(hi), min_, max_);
}

// ---- DistributionReader ----------------------------------------------------

namespace detail {

std::optional<int64_t> read_whole_amount(const config::Node& node, const QuantityRules& rules) {
  if (rules.kind == QuantityKind::tokens) return node.as_int(0, kMaxTokensPerValue);
  return node.as_duration(0, kMaxDurationValue);
}

config::Node DistributionReader::required_child(std::string_view key, bool required) {
  config::Node c = reader_.child(key);
  if (!c.defined() && required) require_missing(reader_.node(), c);
  return c;
}

std::optional<double> DistributionReader::amount(std::string_view key, bool positive,
                                                 bool required) {
  const config::Node c = required_child(key, required);
  if (!c.defined()) return std::nullopt;
  std::optional<double> value;
  if (rules_.kind == QuantityKind::tokens) {
    value = c.as_double(0, static_cast<double>(kMaxTokensPerValue));
  } else if (auto ns = c.as_duration(0, kMaxDurationValue)) {
    value = static_cast<double>(*ns);
  }
  if (value && positive && *value <= 0) {
    c.error(fmt::format("must be greater than 0, got {}", c.raw().Scalar()),
            rules_.kind == QuantityKind::tokens ? "a positive number"
                                                : "a positive duration such as 500ms");
    return std::nullopt;
  }
  return value;
}

std::optional<int64_t> DistributionReader::whole_amount(std::string_view key, bool required) {
  const config::Node c = required_child(key, required);
  if (!c.defined()) return std::nullopt;
  return read_whole_amount(c, rules_);
}

std::optional<double> DistributionReader::number(std::string_view key, double lo, double hi,
                                                 bool positive, bool required) {
  const config::Node c = required_child(key, required);
  if (!c.defined()) return std::nullopt;
  auto value = c.as_double(lo, hi);
  if (value && positive && *value <= 0) {
    c.error(fmt::format("must be greater than 0, got {}", c.raw().Scalar()),
            fmt::format("a number in (0, {}]", hi));
    return std::nullopt;
  }
  return value;
}

bool DistributionReader::check_floor(int64_t value, const config::Node& where,
                                     const std::string& what) {
  if (min_given_ || value >= rules_.floor) return true;
  where.error(fmt::format("{} {} is below {}: {}", what, describe_value(value, rules_),
                          describe_value(rules_.floor, rules_), rules_.floor_reason),
              fmt::format("values >= {}, or set `min` to clamp them explicitly",
                          describe_value(rules_.floor, rules_)));
  return false;
}

}  // namespace detail

// ---- parse_distribution ----------------------------------------------------

std::vector<config::ComponentInfo> distribution_infos() {
  std::vector<config::ComponentInfo> infos = own_infos();
  infos.insert(infos.begin(), distribution_section_info());
  return infos;
}

std::vector<std::string> length_distributions() {
  std::vector<std::string> names;
  for (const auto& e : kDistributions) names.emplace_back(e.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<ClampedDistribution> parse_distribution(const config::Node& node,
                                                      const QuantityRules& rules) {
  auto& diagnostics = node.context().diagnostics;
  const size_t errors_before = diagnostics.size();
  const int64_t cap = value_cap(rules);

  if (!node.defined()) {
    node.error("is required but missing", "a distribution such as {dist: uniform, min: 1, max: 8}");
    return std::nullopt;
  }
  if (node.is_scalar()) {
    // Shorthand for a constant: `output_tokens: 128`, `think_time: 5s`.
    const auto value = detail::read_whole_amount(node, rules);
    if (!value) return std::nullopt;
    if (*value < rules.floor) {
      node.error(fmt::format("{} is below {}: {}", describe_value(*value, rules),
                             describe_value(rules.floor, rules), rules.floor_reason),
                 fmt::format("a value >= {}", describe_value(rules.floor, rules)));
      return std::nullopt;
    }
    return ClampedDistribution(detail::make_constant(static_cast<double>(*value)), rules.floor,
                               cap);
  }

  config::MapReader reader(node);
  if (!reader.valid()) return std::nullopt;
  // which distribution: constant | empirical | exponential | lognormal | normal | uniform | zipf
  const std::string name = reader.choice("dist", std::nullopt, length_distributions());
  if (diagnostics.size() != errors_before) return std::nullopt;  // missing or unknown (reported)
  const DistributionEntry* entry = nullptr;
  for (const auto& e : kDistributions)
    if (name == e.name) entry = &e;
  if (entry == nullptr) return std::nullopt;
  // A key of another distribution is named as such (`sigma` under normal).
  config::report_foreign_keys(reader, entry->info(), own_infos(), {"dist", "min", "max"});

  // The clamps every distribution accepts.
  const config::Node min_node = reader.child("min");  // smallest value a draw is clamped to
  const config::Node max_node = reader.child("max");  // largest value a draw is clamped to
  if (entry->needs_min_and_max) {
    if (!min_node.defined()) require_missing(node, min_node);
    if (!max_node.defined()) require_missing(node, max_node);
  } else if (entry->unbounded && rules.kind == QuantityKind::tokens && !max_node.defined()) {
    node.context().diagnostics.error(
        node.location(), max_node.path(),
        fmt::format("is required: a {} distribution is unbounded", entry->name),
        "add max: the largest value a draw may take");
  }
  int64_t min = rules.floor;
  int64_t max = cap;
  bool clamps_ok = true;
  if (min_node.defined()) {
    const auto v = detail::read_whole_amount(min_node, rules);
    if (v && *v < rules.floor) {
      min_node.error(fmt::format("{} is below {}: {}", describe_value(*v, rules),
                                 describe_value(rules.floor, rules), rules.floor_reason),
                     fmt::format("min >= {}", describe_value(rules.floor, rules)));
    }
    clamps_ok = clamps_ok && v && *v >= rules.floor;
    if (v) min = *v;
  }
  if (max_node.defined()) {
    const auto v = detail::read_whole_amount(max_node, rules);
    clamps_ok = clamps_ok && v;
    if (v) max = *v;
  }
  if (clamps_ok && min > max) {
    max_node.error(fmt::format("max ({}) is less than min ({})", describe_value(max, rules),
                               describe_value(min, rules)),
                   "min <= max");
    clamps_ok = false;
  }

  detail::DistributionReader params(reader, rules, min, max, min_node.defined());
  std::unique_ptr<Distribution> distribution = entry->parse(params);
  reader.finish();
  if (!clamps_ok || !distribution || diagnostics.size() != errors_before) return std::nullopt;
  return ClampedDistribution(std::move(distribution), min, max);
}

}  // namespace kvsim
