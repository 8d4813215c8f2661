// What the calibration predictors share about a row's setup: its device
// column, and the serving engine's own per-step cost, read from
// configs/calibration/engine_step_overheads.csv (software,step_overhead,
// kv_cache_free_fraction,source[,admission]), so that the device's efficiencies are
// fitted apart from the engine's host work and its memory rule (each
// engine's figures carry their own source).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <stdexcept>

#include "base/units.hpp"
#include "cli/studies/calibration.hpp"

namespace kvsim {

std::string lower_ascii(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::optional<DeviceColumn> parse_device_column(const std::string& text) {
  static const std::regex pattern(
      R"(^\s*(\S+)\s*(?:x\s*(\d+))?\s*(?:\(\s*tp\s*=\s*(\d+)\s*\))?\s*$)", std::regex::icase);
  std::smatch m;
  if (!std::regex_match(text, m, pattern)) return std::nullopt;
  DeviceColumn d;
  d.name = lower_ascii(m[1].str());
  if (m[2].matched) d.count = std::stoll(m[2].str());
  d.tp = m[3].matched ? std::stoll(m[3].str()) : d.count;
  if (d.count < 1 || d.tp < 1) return std::nullopt;
  return d;
}

namespace {

// One line's fields: plain ones up to a comma, a quoted one up to its closing quote.
std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= line.size()) {
    std::string f;
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (i < line.size()) {
        if (line[i] == '"' && i + 1 < line.size() && line[i + 1] == '"') {
          f += '"';
          i += 2;
        } else if (line[i] == '"') {
          ++i;
          break;
        } else {
          f += line[i++];
        }
      }
      while (i < line.size() && line[i] != ',') ++i;
    } else {
      while (i < line.size() && line[i] != ',') f += line[i++];
    }
    out.push_back(f);
    ++i;
  }
  return out;
}

std::vector<EngineStepOverhead> read_table(const std::string& path) {
  std::vector<EngineStepOverhead> rows;
  std::ifstream in(path);
  if (!in) return rows;  // no table: every row keeps its device's figure
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1 || line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::vector<std::string> f = fields_of(line);
    if (f.size() < 4 || f[0].empty())
      throw std::runtime_error(fmt::format(
          "{}:{}: expected software,step_overhead,kv_cache_free_fraction,source", path, line_no));
    EngineStepOverhead e;
    e.software = f[0];
    const ParsedQuantity d = parse_duration(f[1]);
    if (!d.value || *d.value < 0)
      throw std::runtime_error(fmt::format("{}:{}: step_overhead '{}': {}", path, line_no, f[1],
                                           d.problem.empty() ? "negative" : d.problem));
    e.step_overhead = *d.value;
    if (!f[2].empty()) {
      size_t used = 0;
      double x = -1;
      try {
        x = std::stod(f[2], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != f[2].size() || !(x > 0 && x <= 1))
        throw std::runtime_error(fmt::format("{}:{}: kv_cache_free_fraction '{}' is not in (0, 1]",
                                             path, line_no, f[2]));
      e.kv_cache_free_fraction = x;
    }
    e.source = f[3];
    if (e.source.empty())
      throw std::runtime_error(fmt::format("{}:{}: the source is empty", path, line_no));
    if (f.size() > 4 && !f[4].empty()) {
      if (f[4] != "whole_sequence")
        throw std::runtime_error(fmt::format(
            "{}:{}: admission '{}': expected whole_sequence or empty", path, line_no, f[4]));
      e.reserves_whole_sequence = true;
    }
    rows.push_back(std::move(e));
  }
  return rows;
}

}  // namespace

std::optional<EngineStepOverhead> find_engine_step_overhead(const std::string& software,
                                                            const std::string& configs_dir) {
  static std::mutex mu;
  static std::map<std::string, std::vector<EngineStepOverhead>> tables;
  const std::string path = configs_dir + "/calibration/engine_step_overheads.csv";
  std::vector<EngineStepOverhead> table;
  {
    const std::lock_guard<std::mutex> lock(mu);
    auto it = tables.find(path);
    if (it == tables.end()) it = tables.emplace(path, read_table(path)).first;
    table = it->second;
  }
  const std::string s = lower_ascii(software);
  for (const EngineStepOverhead& e : table)
    if (s.rfind(lower_ascii(e.software), 0) == 0) return e;
  return std::nullopt;
}

}  // namespace kvsim
