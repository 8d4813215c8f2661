#pragma once
// Strict, path-aware reading of YAML configuration.
//
// A Node is a YAML node plus where it came from (file, key path). A MapReader
// reads the keys of one map: each typed getter declares its key, converts and
// range-checks the value and records an error (never throws) when it is wrong;
// finish() reports every key nobody declared, with a "did you mean".
// Declaring a parameter is one call next to the code that uses it
// (DESIGN practices 2-4).
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.hpp"
#include "base/units.hpp"

namespace kvsim::config {

// Shared by every node read during one load: the error list and where each
// key path was found (for cross-field checks in a second pass).
struct LoadContext {
  Diagnostics diagnostics;
  std::map<std::string, Location> locations;
  // Key paths set by --set: their errors point at the command line.
  std::set<std::string> overridden_paths;
  // Key paths `--set KEY=null` removed: a "required" error names the flag.
  std::set<std::string> removed_paths;
  // A key path given on the command line under another name (a vLLM name,
  // say): errors say the --set the user wrote.
  std::map<std::string, std::string> set_as;

  Location location_of(const std::string& key_path) const;
};

class Node {
 public:
  Node(YAML::Node node, std::string key_path, std::string file, LoadContext* ctx);

  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }
  const YAML::Node& raw() const { return node_; }
  LoadContext& context() const { return *ctx_; }
  Location location() const;

  bool defined() const { return node_.IsDefined() && !node_.IsNull(); }
  bool is_map() const { return node_.IsMap(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool is_sequence() const { return node_.IsSequence(); }

  // Records an error located at this node.
  void error(std::string problem, std::string allowed = {}) const;

  // Conversions: each records an error at this node and returns nullopt when
  // the value is missing, of the wrong type or out of range.
  std::optional<int64_t> as_int(int64_t min, int64_t max) const;
  std::optional<double> as_double(double min, double max) const;
  std::optional<bool> as_bool() const;
  std::optional<std::string> as_string() const;
  std::optional<std::string> as_choice(const std::vector<std::string>& allowed) const;
  std::optional<Bytes> as_bytes(Bytes min, Bytes max) const;
  std::optional<int64_t> as_bandwidth(int64_t min, int64_t max) const;
  std::optional<TimeNs> as_duration(TimeNs min, TimeNs max) const;
  std::optional<int64_t> as_ops_rate(int64_t min, int64_t max) const;

  // Elements of a sequence (error and empty when this is not a sequence).
  std::vector<Node> items() const;
  Node child_at(const std::string& key) const;  // no declaration, no checks

 private:
  std::optional<int64_t> quantity(int64_t min, int64_t max, const char* what, const char* example,
                                  ParsedQuantity (*parse)(std::string_view)) const;

  YAML::Node node_;
  std::string path_;
  std::string file_;
  LoadContext* ctx_;
};

class MapReader {
 public:
  // An undefined node reads as an empty map (every key takes its default).
  explicit MapReader(const Node& map);

  const Node& node() const { return map_; }
  bool valid() const { return valid_; }

  // Declares `key` and returns its node (possibly undefined).
  Node child(std::string_view key);
  bool has(std::string_view key) const;
  // Declares keys that are accepted and deliberately not used.
  void ignore(std::initializer_list<std::string_view> keys);
  // Declares one key (its errors are reported elsewhere, or it is not used).
  void declare(std::string_view key) { declared_.emplace_back(key); }
  bool declared(std::string_view key) const;

  // Typed getters: std::nullopt as default means the key is required.
  int64_t integer(std::string_view key, std::optional<int64_t> def, int64_t min, int64_t max);
  double number(std::string_view key, std::optional<double> def, double min, double max);
  bool boolean(std::string_view key, std::optional<bool> def);
  std::string string(std::string_view key, std::optional<std::string> def);
  std::string choice(std::string_view key, std::optional<std::string> def,
                     const std::vector<std::string>& allowed);
  Bytes bytes(std::string_view key, std::optional<Bytes> def, Bytes min, Bytes max);
  int64_t bandwidth(std::string_view key, std::optional<int64_t> def, int64_t min, int64_t max);
  TimeNs duration(std::string_view key, std::optional<TimeNs> def, TimeNs min, TimeNs max);
  int64_t ops_rate(std::string_view key, std::optional<int64_t> def, int64_t min, int64_t max);

  // Device-file form `key: {value: 1.6TB/s, source: "..."}`: returns the value
  // node and stores the source text; a bare value is an error (every number in
  // a device file has a source). `missing`: what the error for a missing key
  // says is allowed (the source the number should cite), when not empty.
  Node sourced(std::string_view key, std::string* source_out, std::string_view missing = {});

  // Reports undeclared keys with a "did you mean". Call once, after reading.
  void finish();

 private:
  Node required_or_default(std::string_view key, bool has_default, std::string_view allowed = {});

  Node map_;
  bool valid_ = true;
  std::vector<std::string> declared_;
  bool finished_ = false;
};

// Loads a YAML (or JSON) file; parse errors, missing or unreadable files and
// a second document in the file become diagnostics (with line and column)
// and an undefined node.
YAML::Node load_file(const std::string& path, LoadContext& ctx);
// Records an error for every key written twice in one map (yaml-cpp would
// keep the first silently); load_file() calls it.
void check_duplicate_keys(const YAML::Node& doc, const std::string& file, LoadContext& ctx);

// Applies `--set key.path=value` to a loaded document (creating maps on the
// way) and records the path as overridden; `key.path=null` (or `~`) removes
// the key instead. Returns false with an error in ctx when the text is not
// KEY=VALUE, the value is empty, or the key to remove is not there.
bool apply_override(YAML::Node& root, const std::string& assignment, LoadContext& ctx);

}  // namespace kvsim::config
