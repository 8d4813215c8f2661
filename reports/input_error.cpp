#include "reports/input_error.hpp"

#include <vector>

namespace kvsim {

void throw_input_error(const std::string& where, const std::string& key_path,
                       const std::string& problem, const std::string& allowed) {
  config::Diagnostic d;
  d.where.file = where;
  d.where.line = 1;
  d.where.col = 1;
  d.key_path = key_path;
  d.problem = problem;
  d.allowed = allowed;
  std::vector<config::Diagnostic> all;
  all.push_back(std::move(d));
  throw config::ConfigError(std::move(all));
}

}  // namespace kvsim
