#include "cli/studies/run_provenance.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "base/input_file.hpp"
#include "base/reader.hpp"
#include "reports/input_error.hpp"
#include "reports/metrics_check.hpp"
#include "sim/scenario/invalid_combination.hpp"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFileTag = "# scenario_file: ";
constexpr const char* kConfigsTag = "# configs_dir: ";
constexpr const char* kOverrideTag = "# override: ";

std::string absolute(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? fs::absolute(path).lexically_normal().string() : p.string();
}

std::string read_text(const std::string& path) {
  // A directory reads as nothing and /dev/zero forever: refused first.
  std::string text;
  if (const std::string problem = read_input_file(path, text); !problem.empty())
    throw_input_error(path, "", problem, "a metrics.json or scenario.resolved.yaml");
  return text;
}

RunProvenance from_metrics(const std::string& path) {
  const nlohmann::ordered_json doc = read_json_file(path);
  const auto it = doc.find("provenance");
  const auto allowed = "a metrics.json written by kvsim run (it has a provenance section)";
  if (it == doc.end() || !it->is_object())
    throw_input_error(path, "provenance", "missing", allowed);
  RunProvenance p;
  try {
    p.scenario_file = it->at("scenario_file").get<std::string>();
    p.configs_dir = it->at("configs_dir").get<std::string>();
    p.overrides = it->at("overrides").get<std::vector<std::string>>();
    p.resolved_scenario = it->at("resolved_scenario").get<std::string>();
  } catch (const nlohmann::json::exception&) {
    throw_input_error(path, "provenance", "incomplete", allowed);
  }
  if (p.resolved_scenario.empty())
    throw_input_error(path, "provenance.resolved_scenario", "empty (the run had no scenario file)",
                      allowed);
  return p;
}

// `first_line`: the lines of the header before the document.
RunProvenance from_resolved_yaml(const std::string& path, int& first_line) {
  // The header comment lines name the origin; the rest is the document as
  // the run recorded it.
  RunProvenance p;
  const std::string text = read_text(path);
  size_t pos = 0;
  while (pos < text.size() && text[pos] == '#') {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string line = text.substr(pos, end - pos);
    const auto take = [&](const char* tag) -> std::optional<std::string> {
      if (line.rfind(tag, 0) != 0) return std::nullopt;
      return line.substr(std::string(tag).size());
    };
    if (auto v = take(kFileTag)) p.scenario_file = *v;
    if (auto v = take(kConfigsTag)) p.configs_dir = *v;
    if (auto v = take(kOverrideTag)) p.overrides.push_back(*v);
    pos = end + 1;
  }
  p.resolved_scenario = pos < text.size() ? text.substr(pos) : std::string();
  first_line = static_cast<int>(std::count(
      text.begin(), text.begin() + static_cast<std::ptrdiff_t>(std::min(pos, text.size())), '\n'));
  if (p.scenario_file.empty() || p.configs_dir.empty())
    throw_input_error(path, "", "no '# scenario_file:' and '# configs_dir:' header",
                      "a scenario.resolved.yaml written by kvsim run");
  return p;
}

}  // namespace

RunProvenance describe_scenario(const std::string& path,
                                const std::vector<std::string>& overrides) {
  config::LoadContext ctx;
  YAML::Node doc = config::load_file(path, ctx);
  apply_overrides(doc, overrides, path, ctx);
  // The preset expanded: the file says which value each key ran with (and
  // reruns without the preset table of a later kvsim).
  apply_presets(doc, path, ctx);
  YAML::Emitter out;
  out << doc;
  RunProvenance p;
  p.scenario_file = absolute(path);
  p.configs_dir = absolute(find_configs_dir(path));
  p.overrides = overrides;
  p.resolved_scenario = std::string(out.c_str()) + "\n";
  return p;
}

std::string resolved_scenario_file_text(const RunProvenance& p) {
  std::string text =
      "# The scenario of this run after --set, its presets expanded; `kvsim run --from` this file "
      "reruns it.\n";
  text += kFileTag + p.scenario_file + "\n";
  text += kConfigsTag + p.configs_dir + "\n";
  for (const auto& o : p.overrides) text += kOverrideTag + o + "\n";
  return text + p.resolved_scenario;
}

Reproduction load_reproduction(const std::string& from) {
  const bool json = fs::path(from).extension() == ".json";
  Reproduction r;
  int header_lines = 0;
  RunProvenance p = json ? from_metrics(from) : from_resolved_yaml(from, header_lines);
  try {
    r.spec = load_scenario_text(p.resolved_scenario, p.scenario_file, p.configs_dir);
  } catch (const config::ConfigError& e) {
    // The document is read under the original file's name (its relative
    // paths resolve from there), but its lines are the record's: a problem
    // in it is located in the file the user gave, not in the scenario file
    // of the first run (which may have changed since, or hold other lines).
    std::vector<config::Diagnostic> located = e.diagnostics();
    for (config::Diagnostic& d : located) {
      if (d.where.file != p.scenario_file) continue;
      if (json) {
        d.problem += fmt::format(" (line {} of provenance.resolved_scenario)", d.where.line);
        d.where = {from, 0, 0};
      } else {
        d.where = {from, d.where.line > 0 ? d.where.line + header_lines : 0, d.where.col};
      }
    }
    if (dynamic_cast<const InvalidCombination*>(&e) != nullptr) throw InvalidCombination(located);
    throw config::ConfigError(located);
  }
  r.provenance = std::move(p);
  return r;
}

}  // namespace kvsim
