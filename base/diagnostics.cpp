#include "base/diagnostics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace kvsim::config {

std::string Diagnostic::format() const {
  std::string out =
      fmt::format("{}:{}:{}: ", where.file.empty() ? "<input>" : where.file, where.line, where.col);
  if (!key_path.empty()) out += key_path + ": ";
  out += problem;
  if (!allowed.empty()) out += " (" + allowed + ")";
  return out;
}

namespace {
std::string join_messages(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) {
    if (!out.empty()) out += '\n';
    out += d.format();
  }
  return out;
}
}  // namespace

ConfigError::ConfigError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(join_messages(diagnostics)), diagnostics_(std::move(diagnostics)) {}

void Diagnostics::error(Location where, std::string key_path, std::string problem,
                        std::string allowed) {
  for (const std::string& removed : removed_)
    if (removed == key_path) where = {"--set " + key_path, 1, 1};
  items_.push_back({std::move(where), std::move(key_path), std::move(problem), std::move(allowed)});
}

void Diagnostics::throw_if_any() const {
  if (items_.empty()) return;
  // Files in the order their first problem was found, then by position
  // (stable for problems at the same place).
  std::vector<std::string> files;
  auto file_rank = [&files](const std::string& f) {
    for (size_t i = 0; i < files.size(); ++i)
      if (files[i] == f) return i;
    files.push_back(f);
    return files.size() - 1;
  };
  std::vector<std::pair<size_t, const Diagnostic*>> keyed;
  for (const auto& d : items_) keyed.emplace_back(file_rank(d.where.file), &d);
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    if (a.second->where.line != b.second->where.line)
      return a.second->where.line < b.second->where.line;
    return a.second->where.col < b.second->where.col;
  });
  std::vector<Diagnostic> sorted;
  for (const auto& [rank, d] : keyed) sorted.push_back(*d);
  throw ConfigError(std::move(sorted));
}

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string closest_match(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, key.size() / 3) + 1;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(key, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

}  // namespace kvsim::config
