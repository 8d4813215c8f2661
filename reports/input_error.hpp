#pragma once
// One bad command-line value as a config::ConfigError (exit code 2), located
// at the flag: "--vary:1:1: vary: problem (allowed)", as `--set` errors are.
#include <string>

#include "base/diagnostics.hpp"

namespace kvsim {

[[noreturn]] void throw_input_error(const std::string& where, const std::string& key_path,
                                    const std::string& problem, const std::string& allowed);

}  // namespace kvsim
