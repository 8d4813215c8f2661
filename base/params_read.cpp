// Reading declared parameters from YAML, and what is left over: a key
// another component of the same kind takes (base/params.hpp).
#include "base/params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace kvsim::config {

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
