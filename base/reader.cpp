#include "base/reader.hpp"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>

#include "base/input_file.hpp"
#include "base/yaml_error.hpp"

namespace kvsim::config {

Location LoadContext::location_of(const std::string& key_path) const {
  auto it = locations.find(key_path);
  if (it != locations.end()) return it->second;
  return {};
}

// A missing key comes back from yaml-cpp as an invalid "zombie" node whose
// type queries throw; it is replaced by a valid Undefined node.
Node::Node(YAML::Node node, std::string key_path, std::string file, LoadContext* ctx)
    : node_(node.IsDefined() ? std::move(node) : YAML::Node(YAML::NodeType::Undefined)),
      path_(std::move(key_path)),
      file_(std::move(file)),
      ctx_(ctx) {}

namespace {
// `path` is `set` or lies under it: a key of a map given there, or an item
// of a list given there (`kv_tiers.tiers[0].name` under `kv_tiers.tiers`).
bool under_set_path(const std::string& path, const std::string& set) {
  if (path.rfind(set, 0) != 0) return false;
  return path.size() == set.size() || path[set.size()] == '.' || path[set.size()] == '[';
}
}  // namespace

Location Node::location() const {
  // A key `--set KEY=null` removed has no line either: the flag removed it.
  for (const auto& p : ctx_->removed_paths)
    if (under_set_path(path_, p)) return {"--set " + p, 1, 1};
  // A value given with --set has no line in any file: point at the flag.
  for (const auto& p : ctx_->overridden_paths) {
    if (under_set_path(path_, p)) {
      const auto as = ctx_->set_as.find(p);
      return {"--set " + (as != ctx_->set_as.end() ? as->second : p), 1, 1};
    }
  }
  if (node_.IsDefined()) {
    const YAML::Mark m = node_.Mark();
    if (!m.is_null()) return {file_, m.line + 1, m.column + 1};
    // A map --set made on its way (`--set seed.x=1` over a scalar seed):
    // the flag wrote it, so the flag is blamed.
    for (const auto& p : ctx_->overridden_paths)
      if (p.rfind(path_ + ".", 0) == 0) return {"--set " + p, 1, 1};
  }
  return {file_, 0, 0};
}

void Node::error(std::string problem, std::string allowed) const {
  ctx_->diagnostics.error(location(), path_, std::move(problem), std::move(allowed));
}

namespace {
std::string scalar_text(const YAML::Node& n) {
  return n.Scalar();
}

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsMap()) return "a map";
  if (n.IsSequence()) return "a list";
  return fmt::format("'{}'", n.Scalar());
}
}  // namespace

std::optional<int64_t> Node::as_int(int64_t min, int64_t max) const {
  if (!node_.IsScalar()) {
    error(fmt::format("expected an integer, got {}", describe(node_)),
          fmt::format("an integer in [{}, {}]", min, max));
    return std::nullopt;
  }
  const std::string text = scalar_text(node_);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    error(fmt::format("expected an integer, got '{}'", text),
          fmt::format("an integer in [{}, {}]", min, max));
    return std::nullopt;
  }
  if (value < min || value > max) {
    error(fmt::format("{} is out of range", value),
          fmt::format("an integer in [{}, {}]", min, max));
    return std::nullopt;
  }
  return value;
}

std::optional<double> Node::as_double(double min, double max) const {
  const std::string allowed = fmt::format("a number in [{}, {}]", min, max);
  if (!node_.IsScalar()) {
    error(fmt::format("expected a number, got {}", describe(node_)), allowed);
    return std::nullopt;
  }
  const std::string text = scalar_text(node_);
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value)) {
    error(fmt::format("expected a number, got '{}'", text), allowed);
    return std::nullopt;
  }
  if (value < min || value > max) {
    error(fmt::format("{} is out of range", text), allowed);
    return std::nullopt;
  }
  return value;
}

std::optional<bool> Node::as_bool() const {
  if (node_.IsScalar()) {
    const std::string& t = node_.Scalar();
    if (t == "true" || t == "True" || t == "yes") return true;
    if (t == "false" || t == "False" || t == "no") return false;
  }
  error(fmt::format("expected true or false, got {}", describe(node_)), "true, false");
  return std::nullopt;
}

std::optional<std::string> Node::as_string() const {
  if (!node_.IsScalar()) {
    error(fmt::format("expected a string, got {}", describe(node_)), "a string");
    return std::nullopt;
  }
  return node_.Scalar();
}

std::optional<std::string> Node::as_choice(const std::vector<std::string>& allowed) const {
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  if (!node_.IsScalar()) {
    error(fmt::format("expected one of the names, got {}", describe(node_)), list);
    return std::nullopt;
  }
  const std::string& v = node_.Scalar();
  for (const auto& a : allowed)
    if (a == v) return v;
  const std::string near = closest_match(v, allowed);
  error(near.empty() ? fmt::format("unknown value '{}'", v)
                     : fmt::format("unknown value '{}', did you mean '{}'?", v, near),
        list);
  return std::nullopt;
}

std::optional<int64_t> Node::quantity(int64_t min, int64_t max, const char* what,
                                      const char* example,
                                      ParsedQuantity (*parse)(std::string_view)) const {
  const std::string allowed = fmt::format("{} such as {}", what, example);
  if (!node_.IsScalar()) {
    error(fmt::format("expected {}, got {}", what, describe(node_)), allowed);
    return std::nullopt;
  }
  const ParsedQuantity q = parse(node_.Scalar());
  if (!q.value) {
    error(q.problem, allowed);
    return std::nullopt;
  }
  if (*q.value < min || *q.value > max) {
    error(fmt::format("'{}' is out of range", node_.Scalar()),
          fmt::format("{} between {} and {}", what, min, max));
    return std::nullopt;
  }
  return q.value;
}

std::optional<Bytes> Node::as_bytes(Bytes min, Bytes max) const {
  return quantity(min, max, "a size", "64GiB or 4096B", parse_bytes);
}
std::optional<int64_t> Node::as_bandwidth(int64_t min, int64_t max) const {
  return quantity(min, max, "a bandwidth", "1.6TB/s", parse_bandwidth);
}
std::optional<TimeNs> Node::as_duration(TimeNs min, TimeNs max) const {
  return quantity(min, max, "a duration", "20us or 1.5s", parse_duration);
}
std::optional<int64_t> Node::as_ops_rate(int64_t min, int64_t max) const {
  return quantity(min, max, "a compute rate", "353.9TFLOPS", parse_ops_rate);
}

std::vector<Node> Node::items() const {
  std::vector<Node> out;
  if (!node_.IsSequence()) {
    error(fmt::format("expected a list, got {}", describe(node_)), "a list");
    return out;
  }
  for (size_t i = 0; i < node_.size(); ++i)
    out.emplace_back(node_[i], fmt::format("{}[{}]", path_, i), file_, ctx_);
  return out;
}

Node Node::child_at(const std::string& key) const {
  const std::string p = path_.empty() ? key : path_ + "." + key;
  if (!node_.IsMap()) return Node(YAML::Node(YAML::NodeType::Undefined), p, file_, ctx_);
  return Node(node_[key], p, file_, ctx_);
}

// ---------------------------------------------------------------------------

MapReader::MapReader(const Node& map) : map_(map) {
  if (map_.raw().IsDefined() && !map_.raw().IsNull() && !map_.raw().IsMap()) {
    map_.error(fmt::format("expected a map of keys, got {}", describe(map_.raw())), "a YAML map");
    valid_ = false;
  }
}

Node MapReader::child(std::string_view key) {
  declared_.emplace_back(key);
  Node c = map_.child_at(std::string(key));
  if (c.raw().IsDefined()) map_.context().locations[c.path()] = c.location();
  return c;
}

bool MapReader::has(std::string_view key) const {
  return valid_ && map_.raw().IsMap() && map_.raw()[std::string(key)].IsDefined();
}

bool MapReader::declared(std::string_view key) const {
  for (const auto& d : declared_)
    if (d == key) return true;
  return false;
}

void MapReader::ignore(std::initializer_list<std::string_view> keys) {
  for (auto k : keys) declared_.emplace_back(k);
}

Node MapReader::required_or_default(std::string_view key, bool has_default,
                                    std::string_view allowed) {
  Node c = child(key);
  if (!c.defined() && !has_default && valid_) {
    const bool removed = map_.context().removed_paths.count(c.path()) > 0;
    Location where = removed ? c.location() : map_.location();
    map_.context().diagnostics.error(where, c.path(), "is required but missing",
                                     std::string(allowed));
  }
  return c;
}

int64_t MapReader::integer(std::string_view key, std::optional<int64_t> def, int64_t min,
                           int64_t max) {
  Node c = required_or_default(key, def.has_value());
  if (!c.defined()) return def.value_or(min);
  return c.as_int(min, max).value_or(def.value_or(min));
}

double MapReader::number(std::string_view key, std::optional<double> def, double min, double max) {
  Node c = required_or_default(key, def.has_value());
  if (!c.defined()) return def.value_or(min);
  return c.as_double(min, max).value_or(def.value_or(min));
}

bool MapReader::boolean(std::string_view key, std::optional<bool> def) {
  Node c = required_or_default(key, def.has_value());
  if (!c.defined()) return def.value_or(false);
  return c.as_bool().value_or(def.value_or(false));
}

std::string MapReader::string(std::string_view key, std::optional<std::string> def) {
  Node c = required_or_default(key, def.has_value());
  if (!c.defined()) return def.value_or("");
  return c.as_string().value_or(def.value_or(""));
}

std::string MapReader::choice(std::string_view key, std::optional<std::string> def,
                              const std::vector<std::string>& allowed) {
  Node c = required_or_default(key, def.has_value());
  if (!c.defined()) return def.value_or(allowed.empty() ? "" : allowed.front());
  return c.as_choice(allowed).value_or(def.value_or(allowed.empty() ? "" : allowed.front()));
}

Bytes MapReader::bytes(std::string_view key, std::optional<Bytes> def, Bytes min, Bytes max) {
  Node c = required_or_default(key, def.has_value());
  if (!c.defined()) return def.value_or(min);
  return c.as_bytes(min, max).value_or(def.value_or(min));
}

int64_t MapReader::bandwidth(std::string_view key, std::optional<int64_t> def, int64_t min,
                             int64_t max) {
  Node c = required_or_default(key, def.has_value());
  if (!c.defined()) return def.value_or(min);
  return c.as_bandwidth(min, max).value_or(def.value_or(min));
}

TimeNs MapReader::duration(std::string_view key, std::optional<TimeNs> def, TimeNs min,
                           TimeNs max) {
  Node c = required_or_default(key, def.has_value());
  if (!c.defined()) return def.value_or(min);
  return c.as_duration(min, max).value_or(def.value_or(min));
}

int64_t MapReader::ops_rate(std::string_view key, std::optional<int64_t> def, int64_t min,
                            int64_t max) {
  Node c = required_or_default(key, def.has_value());
  if (!c.defined()) return def.value_or(min);
  return c.as_ops_rate(min, max).value_or(def.value_or(min));
}

Node MapReader::sourced(std::string_view key, std::string* source_out, std::string_view missing) {
  Node c = required_or_default(key, false, missing);
  if (!c.defined()) return c;
  if (!c.is_map()) {
    c.error("a device number needs its source",
            fmt::format("write {}: {{value: {}, source: \"datasheet/measured/derived ...\"}}", key,
                        c.is_scalar() ? c.raw().Scalar() : "..."));
    return Node(YAML::Node(YAML::NodeType::Undefined), c.path(), c.file(), &c.context());
  }
  MapReader inner(c);
  Node value = inner.child("value");
  const std::string src = inner.string("source", std::nullopt);
  if (!value.defined()) c.error("'value' is missing", "{value: ..., source: ...}");
  if (source_out) *source_out = src;
  inner.finish();
  // Errors on the value are reported under the parent key's path.
  return Node(value.raw(), c.path(), c.file(), &c.context());
}

void MapReader::finish() {
  if (finished_ || !valid_) return;
  finished_ = true;
  if (!map_.raw().IsMap()) return;
  for (auto it = map_.raw().begin(); it != map_.raw().end(); ++it) {
    const std::string key = it->first.Scalar();
    bool known = false;
    for (const auto& d : declared_) known = known || d == key;
    if (known) continue;
    const std::string p = map_.path().empty() ? key : map_.path() + "." + key;
    Node key_node(it->first, p, map_.file(), &map_.context());
    const std::string near = closest_match(key, declared_);
    std::string allowed;
    for (const auto& d : declared_) allowed += (allowed.empty() ? "known keys: " : ", ") + d;
    key_node.error(near.empty() ? fmt::format("unknown key '{}'", key)
                                : fmt::format("unknown key '{}', did you mean '{}'?", key, near),
                   allowed);
  }
}

namespace {

// Offset of the first byte that does not belong to well-formed UTF-8
// (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF), or npos.
size_t invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + n >= s.size()) return i;  // cut short
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

// Reports a scalar (value or key) that is not UTF-8: it would end in a
// JSON library's exception when written to metrics.json, far from its line.
void report_invalid_utf8(const YAML::Node& scalar, const std::string& key_path,
                         const std::string& file, LoadContext& ctx) {
  const std::string& text = scalar.Scalar();
  const size_t at = invalid_utf8_at(text);
  if (at == std::string_view::npos) return;
  const YAML::Mark m = scalar.Mark();
  ctx.diagnostics.error({file, m.line + 1, m.column + 1}, key_path,
                        fmt::format("is not valid UTF-8 (byte 0x{:02X} at offset {})",
                                    static_cast<unsigned char>(text[at]), at),
                        "text in UTF-8");
}

// yaml-cpp keeps every pair of a map, and a lookup finds the first: a key
// written twice would silently lose its second value. Every key and scalar
// must also be UTF-8.
void report_duplicate_keys(const YAML::Node& node, const std::string& file, LoadContext& ctx,
                           int depth, const std::string& path = {}) {
  if (depth > 256) {
    const YAML::Mark m = node.Mark();
    ctx.diagnostics.error({file, m.line + 1, m.column + 1}, "", "nested deeper than 256 levels",
                          "a configuration a few levels deep");
    return;
  }
  if (node.IsMap()) {
    std::map<std::string, YAML::Mark> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      std::string child_path = path;
      if (it->first.IsScalar()) {
        const std::string key = it->first.Scalar();
        child_path = path.empty() ? key : path + "." + key;
        report_invalid_utf8(it->first, child_path, file, ctx);
        const YAML::Mark m = it->first.Mark();
        auto [first, fresh] = seen.emplace(key, m);
        if (!fresh)
          ctx.diagnostics.error(
              {file, m.line + 1, m.column + 1}, key,
              fmt::format("duplicate key '{}' (first at line {})", key, first->second.line + 1),
              "each key once per map");
      }
      report_duplicate_keys(it->second, file, ctx, depth + 1, child_path);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) report_duplicate_keys(item, file, ctx, depth + 1, path);
  } else if (node.IsScalar()) {
    report_invalid_utf8(node, path, file, ctx);
  }
}

}  // namespace

void check_duplicate_keys(const YAML::Node& doc, const std::string& file, LoadContext& ctx) {
  if (doc.IsDefined()) report_duplicate_keys(doc, file, ctx, 0);
}

std::string yaml_error_text(const YAML::Exception& e) {
  // yaml-cpp stops a document nested 500 deep (its stack guard) with the
  // message "bad file"; say what is wrong instead.
  if (dynamic_cast<const YAML::DeepRecursion*>(&e) != nullptr)
    return "nested too deeply (yaml-cpp reads up to 500 levels)";
  return e.msg;
}

namespace {

// Counts the documents of a stream, by the parser's events: where the second
// one starts, if there is one. Two documents at most are asked for (the
// parser's own LoadAll loops forever on some malformed text, such as ", e ").
class DocumentStarts : public YAML::EventHandler {
 public:
  int documents = 0;
  YAML::Mark second;
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents == 2) second = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// The start of a second document in `text`, when there is one.
std::optional<YAML::Mark> second_document(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  if (!parser.HandleNextDocument(starts) || !parser.HandleNextDocument(starts)) return std::nullopt;
  return starts.second;
}

}  // namespace

YAML::Node load_file(const std::string& path, LoadContext& ctx) {
  std::string text;
  if (const std::string problem = read_input_file(path, text); !problem.empty()) {
    ctx.diagnostics.error({path, 0, 0}, "", problem == "not found" ? "file not found" : problem);
    return YAML::Node(YAML::NodeType::Undefined);
  }
  try {
    YAML::Node doc = YAML::Load(text);
    // yaml-cpp reads the first document and drops the rest silently: a
    // second one is an error at its start.
    if (const auto second = second_document(text)) {
      ctx.diagnostics.error({path, second->line + 1, second->column + 1}, "",
                            "a second YAML document: kvsim reads one document per file",
                            "one document (remove the '---' line and what follows, or split the "
                            "file)");
      return YAML::Node(YAML::NodeType::Undefined);
    }
    check_duplicate_keys(doc, path, ctx);
    return doc;
  } catch (const YAML::Exception& e) {
    ctx.diagnostics.error({path, e.mark.line + 1, e.mark.column + 1}, "",
                          "invalid YAML: " + yaml_error_text(e));
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

namespace {

// The dotted parts of an override's key path ("a.b.c" -> a, b, c).
std::vector<std::string> key_parts(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

// `--set KEY=null` (or `~`): the key leaves the document, so the scenario
// reads as if it had never been written and takes its declared default;
// the way to compare a policy that owns a key with one that does not
// (sliding_window's `window` against paged).
bool remove_key(YAML::Node& root, const std::string& path, const std::vector<std::string>& parts,
                LoadContext& ctx) {
  YAML::Node cur = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    // Const look-ups: a missing key must not be created on the way.
    const YAML::Node& view = cur;
    YAML::Node next = cur.IsMap() ? view[parts[i]] : YAML::Node();
    if (!next.IsDefined() || !next.IsMap()) {
      cur.reset(YAML::Node());
      break;
    }
    cur.reset(next);
  }
  const YAML::Node& view = cur;
  if (!cur.IsMap() || !view[parts.back()].IsDefined()) {
    ctx.diagnostics.error({"--set " + path, 1, 1}, path,
                          "is not in the scenario: there is nothing to remove",
                          "the dotted path of a key the scenario writes");
    return false;
  }
  cur.remove(parts.back());
  ctx.removed_paths.insert(path);
  ctx.diagnostics.note_removed(path);
  return true;
}

}  // namespace

bool apply_override(YAML::Node& root, const std::string& assignment, LoadContext& ctx) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    ctx.diagnostics.error({"--set", 1, 1}, assignment, "expected KEY=VALUE",
                          "a dotted key path such as kv_cache.block_size=64");
    return false;
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  if (const size_t bad = invalid_utf8_at(assignment); bad != std::string_view::npos) {
    ctx.diagnostics.error({"--set " + path, 1, static_cast<int>(bad) + 1}, path,
                          fmt::format("is not valid UTF-8 (byte 0x{:02X} at offset {})",
                                      static_cast<unsigned char>(assignment[bad]), bad),
                          "text in UTF-8");
    return false;
  }
  if (text.find_first_not_of(" \t") == std::string::npos) {
    ctx.diagnostics.error({"--set " + path, 1, static_cast<int>(eq) + 2}, path, "has no value",
                          fmt::format("{}=VALUE, or {}=null to remove the key", path, path));
    return false;
  }
  YAML::Node value;
  try {
    value = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    ctx.diagnostics.error({"--set " + path, 1, static_cast<int>(eq) + 2}, path,
                          "invalid value: " + yaml_error_text(e));
    return false;
  }
  const std::vector<std::string> parts = key_parts(path);
  for (const auto& part : parts) {
    if (part.empty()) {
      ctx.diagnostics.error({"--set", 1, 1}, path, "empty key in path", "a.b.c=value");
      return false;
    }
  }
  if (value.IsNull()) return remove_key(root, path, parts, ctx);
  if (!root.IsMap()) root = YAML::Node(YAML::NodeType::Map);
  // Walk with explicit node copies: yaml-cpp nodes are handles, so assigning
  // through a copy writes into the document.
  YAML::Node cur = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = cur[parts[i]];
    if (!next.IsDefined() || !next.IsMap()) {
      cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next.reset(cur[parts[i]]);
    }
    cur.reset(next);
  }
  cur[parts.back()] = value;
  ctx.overridden_paths.insert(path);
  return true;
}

}  // namespace kvsim::config
