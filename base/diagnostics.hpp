#pragma once
// Config errors: every problem names FILE:LINE:COL, the dotted key path, what
// is wrong and what is allowed. Problems are collected, not thrown one by one,
// so a user sees every error of a file at once (DESIGN practice 4).
#include <stdexcept>
#include <string>
#include <vector>

namespace kvsim::config {

struct Location {
  std::string file;
  int line = 0;  // 1-based; 0 when unknown
  int col = 0;   // 1-based; 0 when unknown
};

struct Diagnostic {
  Location where;
  std::string key_path;
  std::string problem;
  std::string allowed;  // may be empty

  // "FILE:LINE:COL: key.path: problem (allowed)"
  std::string format() const;
};

// Thrown by loaders after collecting; main() turns it into exit code 2.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

class Diagnostics {
 public:
  void error(Location where, std::string key_path, std::string problem, std::string allowed = {});
  // A key `--set KEY=null` removed: an error about it (it is required) is
  // located at the flag, whichever reader finds it missing.
  void note_removed(const std::string& key_path) { removed_.push_back(key_path); }
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  const std::vector<Diagnostic>& all() const { return items_; }
  // Throws ConfigError with every collected problem, ordered by file and
  // position (stable for problems at the same place), when there is any.
  void throw_if_any() const;

 private:
  std::vector<Diagnostic> items_;
  std::vector<std::string> removed_;
};

// The closest candidate to `key` by edit distance, or "" when none is close.
std::string closest_match(const std::string& key, const std::vector<std::string>& candidates);

}  // namespace kvsim::config
