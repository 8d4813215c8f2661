#pragma once
// The words of a yaml-cpp parse error that a user can act on.
#include <yaml-cpp/exceptions.h>

#include <string>

namespace kvsim::config {

// e.msg, except where yaml-cpp's own text does not say what is wrong: a
// document nested past its stack guard reports "bad file".
std::string yaml_error_text(const YAML::Exception& e);

}  // namespace kvsim::config
