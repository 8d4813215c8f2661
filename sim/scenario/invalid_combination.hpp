#pragma once
// What load_scenario throws when every value parsed and resolved but some do
// not go together (its second pass, DESIGN practice 5): a model that does not
// fit the device, a tensor size that does not divide the heads, a pipeline
// longer than the layers, a format the part lacks. A study over many
// variants (kvsim compare) reports such a variant as a row with this reason
// and runs the others; any other ConfigError (a misspelt key, a value of the
// wrong type, a name that resolves to nothing) is bad input of the command.
#include "base/diagnostics.hpp"

namespace kvsim {

class InvalidCombination : public config::ConfigError {
 public:
  using config::ConfigError::ConfigError;
};

}  // namespace kvsim
