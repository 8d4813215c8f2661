#include "base/params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace kvsim::config {
namespace {

// A byte count as a user would write it in YAML: the largest binary unit
// that divides it exactly.
std::string yaml_bytes(Bytes b) {
  constexpr std::pair<Bytes, const char*> kUnits[] = {
      {1LL << 40, "TiB"}, {1LL << 30, "GiB"}, {1LL << 20, "MiB"}, {1LL << 10, "KiB"}};
  for (const auto& [scale, unit] : kUnits)
    if (b != 0 && b % scale == 0) return fmt::format("{}{}", b / scale, unit);
  // A decimal size (a connector preset's 5GB, 2TB) as written, not 5000000000B.
  constexpr std::pair<Bytes, const char*> kDecimal[] = {
      {1'000'000'000'000LL, "TB"}, {1'000'000'000LL, "GB"}, {1'000'000LL, "MB"}};
  for (const auto& [scale, unit] : kDecimal)
    if (b != 0 && b % scale == 0) return fmt::format("{}{}", b / scale, unit);
  return fmt::format("{}B", b);
}

std::string yaml_duration(TimeNs t) {
  constexpr std::pair<TimeNs, const char*> kUnits[] = {
      {kNsPerS, "s"}, {kNsPerMs, "ms"}, {1000, "us"}};
  for (const auto& [scale, unit] : kUnits)
    if (t != 0 && t % scale == 0) return fmt::format("{}{}", t / scale, unit);
  return fmt::format("{}ns", t);
}

// An operation rate as a device file writes it ("353TFLOPS").
std::string yaml_ops_rate(int64_t r) {
  constexpr std::pair<int64_t, const char*> kUnits[] = {{1'000'000'000'000'000'000, "EFLOPS"},
                                                        {1'000'000'000'000'000, "PFLOPS"},
                                                        {1'000'000'000'000, "TFLOPS"},
                                                        {1'000'000'000, "GFLOPS"}};
  for (const auto& [scale, unit] : kUnits)
    if (r != 0 && r % scale == 0) return fmt::format("{}{}", r / scale, unit);
  return fmt::format("{}FLOPS", r);
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string limit_text(ParamType type, double v) {
  switch (type) {
    case ParamType::bytes:
      return yaml_bytes(static_cast<Bytes>(v));
    case ParamType::duration:
      return yaml_duration(static_cast<TimeNs>(v));
    case ParamType::bandwidth:
      return format_bandwidth(static_cast<int64_t>(v));
    case ParamType::ops_rate:
      return yaml_ops_rate(static_cast<int64_t>(v));
    case ParamType::number:
      return fmt::format("{}", v);
    default:
      return fmt::format("{}", static_cast<int64_t>(v));
  }
}

ParamSpec base(std::string key, ParamType type, std::string unit, std::string doc) {
  ParamSpec p;
  p.key = std::move(key);
  p.type = type;
  p.unit = std::move(unit);
  p.doc = std::move(doc);
  return p;
}

template <typename T>
std::optional<ParamValue> wrap(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return ParamValue(*v);
}

}  // namespace

std::string_view param_type_name(ParamType type) {
  switch (type) {
    case ParamType::integer:
      return "integer";
    case ParamType::number:
      return "number";
    case ParamType::boolean:
      return "bool";
    case ParamType::string:
      return "string";
    case ParamType::choice:
      return "choice";
    case ParamType::bytes:
      return "bytes";
    case ParamType::duration:
      return "duration";
    case ParamType::bandwidth:
      return "bandwidth";
    case ParamType::ops_rate:
      return "ops rate";
    case ParamType::int_list:
      return "list of integers";
    case ParamType::section:
      return "map";
    case ParamType::quantity:
      return "quantity";
  }
  return "?";
}

std::string ParamSpec::default_text() const {
  if (type == ParamType::section || type == ParamType::quantity)
    return optional ? "none" : "required";
  if (!default_value) return optional ? "none" : "required";
  const ParamValue& v = *default_value;
  switch (type) {
    case ParamType::bytes:
      return yaml_bytes(std::get<int64_t>(v));
    case ParamType::duration:
      return yaml_duration(std::get<int64_t>(v));
    case ParamType::bandwidth:
      return format_bandwidth(std::get<int64_t>(v));
    case ParamType::ops_rate:
      return yaml_ops_rate(std::get<int64_t>(v));
    case ParamType::integer:
      return std::to_string(std::get<int64_t>(v));
    case ParamType::number:
      return fmt::format("{}", std::get<double>(v));
    case ParamType::boolean:
      return std::get<bool>(v) ? "true" : "false";
    case ParamType::string:
    case ParamType::choice:
      return std::get<std::string>(v).empty() ? "\"\"" : std::get<std::string>(v);
    case ParamType::int_list:
      return list_text(std::get<std::vector<int64_t>>(v));
    case ParamType::section:
    case ParamType::quantity:
      return "";
  }
  return "";
}

std::string ParamSpec::range_text() const {
  switch (type) {
    case ParamType::boolean:
      return "true, false";
    case ParamType::string:
      return "text";
    case ParamType::section:
    case ParamType::quantity:
      return choices.empty() ? "map" : choices.front();
    case ParamType::choice: {
      std::string s;
      for (const auto& c : choices) s += (s.empty() ? "" : ", ") + c;
      return s;
    }
    default:
      return limit_text(type, min) + ".." + limit_text(type, max);
  }
}

ParamSpec int_param(std::string key, std::optional<int64_t> def, int64_t min, int64_t max,
                    std::string unit, std::string doc) {
  ParamSpec p = base(std::move(key), ParamType::integer, std::move(unit), std::move(doc));
  p.default_value = wrap(def);
  p.min = static_cast<double>(min);
  p.max = static_cast<double>(max);
  return p;
}

ParamSpec number_param(std::string key, std::optional<double> def, double min, double max,
                       std::string unit, std::string doc) {
  ParamSpec p = base(std::move(key), ParamType::number, std::move(unit), std::move(doc));
  p.default_value = wrap(def);
  p.min = min;
  p.max = max;
  return p;
}

ParamSpec bool_param(std::string key, std::optional<bool> def, std::string doc) {
  ParamSpec p = base(std::move(key), ParamType::boolean, "", std::move(doc));
  p.default_value = wrap(def);
  return p;
}

ParamSpec string_param(std::string key, std::optional<std::string> def, std::string doc) {
  ParamSpec p = base(std::move(key), ParamType::string, "", std::move(doc));
  p.default_value = wrap(def);
  return p;
}

ParamSpec choice_param(std::string key, std::optional<std::string> def,
                       std::vector<std::string> choices, std::string doc) {
  ParamSpec p = base(std::move(key), ParamType::choice, "", std::move(doc));
  p.default_value = wrap(def);
  p.choices = std::move(choices);
  return p;
}

ParamSpec bytes_param(std::string key, std::optional<Bytes> def, Bytes min, Bytes max,
                      std::string doc) {
  ParamSpec p = base(std::move(key), ParamType::bytes, "bytes", std::move(doc));
  p.default_value = wrap(def);
  p.min = static_cast<double>(min);
  p.max = static_cast<double>(max);
  return p;
}

ParamSpec duration_param(std::string key, std::optional<TimeNs> def, TimeNs min, TimeNs max,
                         std::string doc) {
  ParamSpec p = base(std::move(key), ParamType::duration, "time", std::move(doc));
  p.default_value = wrap(def);
  p.min = static_cast<double>(min);
  p.max = static_cast<double>(max);
  return p;
}

ParamSpec bandwidth_param(std::string key, std::optional<int64_t> def, int64_t min, int64_t max,
                          std::string doc) {
  ParamSpec p = base(std::move(key), ParamType::bandwidth, "bytes/s", std::move(doc));
  p.default_value = wrap(def);
  p.min = static_cast<double>(min);
  p.max = static_cast<double>(max);
  return p;
}

ParamSpec ops_rate_param(std::string key, std::optional<int64_t> def, int64_t min, int64_t max,
                         std::string doc) {
  ParamSpec p = base(std::move(key), ParamType::ops_rate, "ops/s", std::move(doc));
  p.default_value = wrap(def);
  p.min = static_cast<double>(min);
  p.max = static_cast<double>(max);
  return p;
}

ParamSpec int_list_param(std::string key, std::optional<std::vector<int64_t>> def, int64_t min,
                         int64_t max, std::string unit, std::string doc) {
  ParamSpec p = base(std::move(key), ParamType::int_list, std::move(unit), std::move(doc));
  p.default_value = wrap(def);
  p.min = static_cast<double>(min);
  p.max = static_cast<double>(max);
  return p;
}

ParamSpec section_param(std::string key, bool required, std::string form, std::string doc) {
  ParamSpec p = base(std::move(key), ParamType::section, "", std::move(doc));
  p.optional = !required;
  p.choices = {std::move(form)};  // shown as the range
  return p;
}

ParamSpec own_reader(ParamSpec spec) {
  spec.own_reader = true;
  return spec;
}

ParamSpec citing(std::string source, ParamSpec spec) {
  spec.cites = std::move(source);
  return spec;
}

ParamSpec quantity_param(std::string key, bool required, std::string range, std::string doc) {
  ParamSpec p = base(std::move(key), ParamType::quantity, kQuantityUnit, std::move(doc));
  p.optional = !required;
  p.choices = {std::move(range)};  // shown as the range
  return p;
}

ParamSpec optional_param(ParamSpec spec) {
  spec.default_value.reset();
  spec.optional = true;
  return spec;
}

const ParamSpec* ComponentInfo::find(std::string_view key) const {
  for (const auto& p : params)
    if (p.key == key) return &p;
  return nullptr;
}

const ParamSpec& ComponentInfo::at(std::string_view key) const {
  if (const ParamSpec* p = find(key)) return *p;
  throw std::logic_error(fmt::format("{} '{}' does not declare '{}'", kind, name, key));
}

}  // namespace kvsim::config
