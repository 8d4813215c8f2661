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

// ---- values ------------------------------------------------------------------

const ParamValue& ParamValues::at(std::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end())
    throw std::logic_error(fmt::format("parameter '{}' was not declared by its component", key));
  return it->second.first;
}

int64_t ParamValues::integer(std::string_view key) const {
  return std::get<int64_t>(at(key));
}
double ParamValues::number(std::string_view key) const {
  return std::get<double>(at(key));
}
bool ParamValues::boolean(std::string_view key) const {
  return std::get<bool>(at(key));
}
const std::string& ParamValues::string(std::string_view key) const {
  return std::get<std::string>(at(key));
}
const std::vector<int64_t>& ParamValues::int_list(std::string_view key) const {
  return std::get<std::vector<int64_t>>(at(key));
}
bool ParamValues::has(std::string_view key) const {
  return values_.find(key) != values_.end();
}
bool ParamValues::given(std::string_view key) const {
  auto it = values_.find(key);
  return it != values_.end() && it->second.second;
}
void ParamValues::set(std::string key, ParamValue value, bool given) {
  values_[std::move(key)] = {std::move(value), given};
}

// ---- reading -------------------------------------------------------------------

namespace {

// A range limit as int64, saturating: INT64_MAX does not survive the trip
// through double (it rounds up to 2^63, which no int64 holds).
int64_t limit_int(double v) {
  constexpr double kTop = 9223372036854775807.0;  // == 2^63 as a double
  if (v >= kTop) return INT64_MAX;
  if (v <= -kTop) return INT64_MIN;
  return static_cast<int64_t>(v);
}

ParamValue zero_of(ParamType type) {
  switch (type) {
    case ParamType::number:
      return 0.0;
    case ParamType::boolean:
      return false;
    case ParamType::string:
    case ParamType::choice:
      return std::string();
    case ParamType::int_list:
      return std::vector<int64_t>();
    default:
      return int64_t{0};
  }
}

std::vector<int64_t> read_int_list(const Node& node, int64_t min, int64_t max, bool* ok) {
  std::vector<int64_t> list;
  *ok = false;
  if (!node.is_sequence()) {
    node.error("expected a list of integers", fmt::format("a list such as [1, 32, 128], each in "
                                                          "[{}, {}]",
                                                          min, max));
    return list;
  }
  bool all = true;
  for (const Node& item : node.items()) {
    if (auto n = item.as_int(min, max))
      list.push_back(*n);
    else
      all = false;
  }
  if (list.empty() && all) {
    node.error("is empty", "a list such as [1, 32, 128]");
    return list;
  }
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
  *ok = all;
  return list;
}

}  // namespace

ParamValues read_params(MapReader& reader, const ComponentInfo& info) {
  ParamValues out;
  for (const ParamSpec& p : info.params) {
    const bool given = reader.has(p.key);
    if (p.type == ParamType::section || p.type == ParamType::quantity || p.own_reader ||
        (p.optional && !given)) {
      reader.declare(p.key);
      continue;
    }
    const ParamValue fallback = p.default_value.value_or(zero_of(p.type));
    const int64_t lo = limit_int(p.min);
    const int64_t hi = limit_int(p.max);
    // An optional key that is given reads like a required one.
    const bool has_def = p.default_value.has_value();
    auto def_int = [&]() -> std::optional<int64_t> {
      if (!has_def) return std::nullopt;
      return std::get<int64_t>(*p.default_value);
    };
    ParamValue v = fallback;
    switch (p.type) {
      case ParamType::integer:
        v = reader.integer(p.key, def_int(), lo, hi);
        break;
      case ParamType::bytes:
        v = reader.bytes(p.key, def_int(), lo, hi);
        break;
      case ParamType::duration:
        v = reader.duration(p.key, def_int(), lo, hi);
        break;
      case ParamType::bandwidth:
        v = reader.bandwidth(p.key, def_int(), lo, hi);
        break;
      case ParamType::ops_rate:
        v = reader.ops_rate(p.key, def_int(), lo, hi);
        break;
      case ParamType::number:
        v = reader.number(
            p.key,
            has_def ? std::optional<double>(std::get<double>(*p.default_value)) : std::nullopt,
            p.min, p.max);
        break;
      case ParamType::boolean:
        v = reader.boolean(
            p.key, has_def ? std::optional<bool>(std::get<bool>(*p.default_value)) : std::nullopt);
        break;
      case ParamType::string:
        v = reader.string(
            p.key, has_def ? std::optional<std::string>(std::get<std::string>(*p.default_value))
                           : std::nullopt);
        break;
      case ParamType::choice:
        v = reader.choice(p.key,
                          has_def
                              ? std::optional<std::string>(std::get<std::string>(*p.default_value))
                              : std::nullopt,
                          p.choices);
        break;
      case ParamType::int_list: {
        const Node n = reader.child(p.key);
        if (n.defined()) {
          bool ok = false;
          auto list = read_int_list(n, lo, hi, &ok);
          if (ok) v = std::move(list);
        } else if (!has_def && reader.valid()) {
          reader.node().context().diagnostics.error(reader.node().location(), n.path(),
                                                    "is required but missing");
        }
        break;
      }
      case ParamType::section:
      case ParamType::quantity:
        break;  // declared above, read by its component
    }
    out.set(p.key, std::move(v), given);
  }
  return out;
}

namespace {
// A component takes `key` when it declares it or a key under it (a device
// family's `htp.vtcm` makes `htp` its key).
bool takes_key(const ComponentInfo& info, const std::string& key) {
  if (info.find(key) != nullptr) return true;
  const std::string prefix = key + ".";
  for (const auto& p : info.params)
    if (p.key.rfind(prefix, 0) == 0) return true;
  return false;
}
}  // namespace

void report_foreign_keys(MapReader& reader, const ComponentInfo& chosen,
                         const std::vector<ComponentInfo>& siblings,
                         const std::vector<std::string>& shared_keys) {
  const Node& map = reader.node();
  if (!reader.valid() || !map.raw().IsMap()) return;
  for (auto it = map.raw().begin(); it != map.raw().end(); ++it) {
    const std::string key = it->first.Scalar();
    if (takes_key(chosen, key) || reader.declared(key)) continue;
    if (std::find(shared_keys.begin(), shared_keys.end(), key) != shared_keys.end()) continue;
    std::vector<std::string> owners;
    for (const auto& s : siblings)
      if (s.name != chosen.name && takes_key(s, key)) owners.push_back(s.name);
    if (owners.empty()) continue;
    std::string list;
    for (const auto& o : owners) list += (list.empty() ? "" : ", ") + o;
    std::string own;
    for (const auto& p : chosen.params) own += (own.empty() ? "" : ", ") + p.key;
    for (const auto& s : shared_keys) own += (own.empty() ? "" : ", ") + s;
    const std::string path = map.path().empty() ? key : map.path() + "." + key;
    Node key_node(it->first, path, map.file(), &map.context());
    key_node.error(fmt::format("not a parameter of {} '{}' (it belongs to {})", chosen.kind,
                               chosen.name, list),
                   own.empty() ? std::string("no keys") : "keys of " + chosen.name + ": " + own);
    reader.declare(key);
  }
}

ComponentInfo compose_infos(const ComponentInfo& first, const ComponentInfo& second) {
  ComponentInfo out = first;
  for (const auto& p : second.params)
    if (out.find(p.key) == nullptr) out.params.push_back(p);
  return out;
}

std::string params_markdown(const ComponentInfo& info) {
  std::string md = "| key | type | default | unit | range | what it is |\n";
  md += "| --- | --- | --- | --- | --- | --- |\n";
  for (const auto& p : info.params) {
    md += fmt::format("| `{}` | {} | `{}` | {} | {} | {} |\n", p.key, param_type_name(p.type),
                      p.default_text(), p.unit.empty() ? "-" : p.unit, p.range_text(), p.doc);
  }
  return md;
}

}  // namespace kvsim::config
