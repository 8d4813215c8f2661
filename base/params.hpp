#pragma once
// Parameters declared by the component that owns them (DESIGN practice 2,
// SPEC 11 "Components"): key, type, default, unit, range and one line of
// doc, written once beside the code that uses the value. The declaration
// drives the YAML reading (default and range come from it, never from a
// second copy), `kvsim list KIND --params`, and the YAML reference (a test
// holds docs/yaml.md against the declarations).
//
// A component (a cache policy, a device family, a workload kind, an arrival
// process, a distribution, an engine, an eviction order, an event queue) is
// described by a ComponentInfo: its kind, its name, its doc and its
// parameters. Registries expose the infos of what they register; the
// catalog (component_catalog) lists every kind for the docs and the CLI.
//
// Reading: read_params() reads exactly the declared keys of one component
// from a MapReader and returns their values; a key of the section that this
// component does not declare but a sibling of the same kind does is reported
// by report_foreign_keys() as "not a parameter of policy 'paged' (it belongs
// to pointer_shift, shift_concat, smart_mask)".
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/reader.hpp"
#include "base/units.hpp"

namespace kvsim::config {

enum class ParamType : uint8_t {
  integer,    // int64
  number,     // double
  boolean,    // bool
  string,     // free text
  choice,     // one of `choices`
  bytes,      // "64GiB" -> int64 bytes
  duration,   // "20us" -> int64 nanoseconds
  bandwidth,  // "1.6TB/s" -> int64 bytes per second
  ops_rate,   // "353TFLOPS" -> int64 operations per second
  int_list,   // [1, 32, 128] -> sorted, unique int64 values
  section,    // a map or list the component reads itself (a distribution, co-runners)
  // An amount in the unit of the quantity the enclosing key describes: a
  // distribution of tokens takes `mean: 300`, one of time `mean: 8s`. Read
  // by its component, which knows that unit.
  quantity,
};
std::string_view param_type_name(ParamType type);

using ParamValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

struct ParamSpec {
  std::string key;
  ParamType type = ParamType::integer;
  // The default as a typed value (int64 for integer, bytes, duration and
  // bandwidth; double for number; bool; string for string and choice; a
  // list for int_list). No value: the key is required, unless `optional`.
  std::optional<ParamValue> default_value;
  // Absent means "not set" (no value at all), not an error: a byte count
  // that is derived when not given, say.
  bool optional = false;
  std::string unit;  // "tokens", "bytes", "fraction of device memory", "" when none
  // Inclusive range for integer-like and number types.
  double min = 0;
  double max = 0;
  std::vector<std::string> choices;  // choice
  std::string doc;                   // one line
  // Read by the component itself (a check the generic reader cannot make,
  // such as "> 0" or "only with popularity: zipf"); read_params only
  // declares it. The component still takes its range and default from here.
  bool own_reader = false;
  // A number of a device file: the source it should cite, as a labelled note
  // ("V: the LPDDR part's datasheet rate"). Named in the error when the
  // number is missing: every number in a device file has a source (DESIGN),
  // and a user writing a new device needs to know which kind. Empty for keys
  // that are not sourced numbers.
  std::string cites;

  // How the default reads in YAML ("128", "4GiB", "lru", "[1, 32, 128]",
  // "required").
  std::string default_text() const;
  // How the range reads ("1..65536", "lru, lfu", "true, false").
  std::string range_text() const;
};

// Builders, so a declaration reads as one line each.
ParamSpec int_param(std::string key, std::optional<int64_t> def, int64_t min, int64_t max,
                    std::string unit, std::string doc);
ParamSpec number_param(std::string key, std::optional<double> def, double min, double max,
                       std::string unit, std::string doc);
ParamSpec bool_param(std::string key, std::optional<bool> def, std::string doc);
ParamSpec string_param(std::string key, std::optional<std::string> def, std::string doc);
ParamSpec choice_param(std::string key, std::optional<std::string> def,
                       std::vector<std::string> choices, std::string doc);
ParamSpec bytes_param(std::string key, std::optional<Bytes> def, Bytes min, Bytes max,
                      std::string doc);
ParamSpec duration_param(std::string key, std::optional<TimeNs> def, TimeNs min, TimeNs max,
                         std::string doc);
ParamSpec bandwidth_param(std::string key, std::optional<int64_t> def, int64_t min, int64_t max,
                          std::string doc);
ParamSpec ops_rate_param(std::string key, std::optional<int64_t> def, int64_t min, int64_t max,
                         std::string doc);
// A nested map or list that the component reads with its own reader;
// `form` says what it looks like ("{dist: ..., ...}"). Declared so that the
// docs list it and the key counts as the component's.
ParamSpec section_param(std::string key, bool required, std::string form, std::string doc);
// The same spec, not required and without a default (see ParamSpec::optional).
ParamSpec optional_param(ParamSpec spec);
// The same spec, read by its component (see ParamSpec::own_reader).
ParamSpec own_reader(ParamSpec spec);
// The same spec, with the source its number should cite (ParamSpec::cites).
ParamSpec citing(std::string source, ParamSpec spec);
// An amount whose unit is that of the quantity its map describes (tokens
// or time); `range` reads like "> 0" or ">= 0".
ParamSpec quantity_param(std::string key, bool required, std::string range, std::string doc);
// The unit a quantity parameter shows.
inline constexpr const char* kQuantityUnit = "tokens or time, as the key it describes";
ParamSpec int_list_param(std::string key, std::optional<std::vector<int64_t>> def, int64_t min,
                         int64_t max, std::string unit, std::string doc);

// What a registry says about one of its implementations.
struct ComponentInfo {
  std::string kind;  // "policy", "device family", "workload kind", "eviction order", ...
  std::string name;  // the YAML value that picks it ("paged", "htp", "lru")
  std::string doc;   // one line
  std::vector<ParamSpec> params;

  const ParamSpec* find(std::string_view key) const;
  // The declared spec of `key`; std::logic_error when not declared (a
  // component asking for a key it did not declare is a bug).
  const ParamSpec& at(std::string_view key) const;
  // The declared default of `key` as T (int64_t, double, bool, std::string).
  template <typename T>
  T default_of(std::string_view key) const {
    return std::get<T>(at(key).default_value.value());
  }
};

// The values read for one component, by key. Every declared key has a value
// after read_params (its default when absent, or the default when the given
// value was wrong: the error is in the diagnostics).
class ParamValues {
 public:
  int64_t integer(std::string_view key) const;  // integer, bytes, duration, bandwidth
  double number(std::string_view key) const;
  bool boolean(std::string_view key) const;
  const std::string& string(std::string_view key) const;  // string, choice
  const std::vector<int64_t>& int_list(std::string_view key) const;
  // False for an optional key that was not given (and for a section).
  bool has(std::string_view key) const;
  const std::map<std::string, std::pair<ParamValue, bool>, std::less<>>& all() const {
    return values_;
  }
  // True when the key was written in the YAML (or by --set), not defaulted.
  bool given(std::string_view key) const;

  void set(std::string key, ParamValue value, bool given);

 private:
  const ParamValue& at(std::string_view key) const;
  std::map<std::string, std::pair<ParamValue, bool>, std::less<>> values_;
};

// Reads every parameter `info` declares from `reader` (declaring them on
// the reader, so its finish() knows them). A required key that is missing,
// a wrong type or a value out of range is recorded in the diagnostics. A
// section is only declared (its component reads it); an optional key that
// is absent gets no value.
ParamValues read_params(MapReader& reader, const ComponentInfo& info);

// For each key of the reader's map that `chosen` does not declare, that is
// not in `shared_keys`, and that some of `siblings` (same kind) declares:
// an error "not a parameter of <kind> '<name>' (it belongs to a, b)", and
// the key is marked declared so finish() does not report it twice. Keys
// nobody declares are left for finish() (unknown key, did you mean).
void report_foreign_keys(MapReader& reader, const ComponentInfo& chosen,
                         const std::vector<ComponentInfo>& siblings,
                         const std::vector<std::string>& shared_keys = {});

// `first`'s parameters followed by those of `second` that `first` does not
// declare: a component that composes another (a sliding window over its
// update mode) takes the keys of both. Kind, name and doc are `first`'s.
ComponentInfo compose_infos(const ComponentInfo& first, const ComponentInfo& second);

// A Markdown table of a component's parameters (key, type, default, unit,
// range, doc): the form docs/yaml.md holds and `kvsim list --params` prints.
std::string params_markdown(const ComponentInfo& info);

}  // namespace kvsim::config
