#pragma once
// Every kind of pluggable component and what each of its components
// declares (base/params.hpp): the one list that `kvsim list KIND --params`,
// `kvsim describe NAME` and the parameter tables of docs/yaml.md are made
// from. Adding a kind is one line in component_catalog.cpp; adding a
// component is done in its own registry, which this list asks.
#include <string>
#include <vector>

#include "base/params.hpp"

namespace kvsim {

struct ComponentKind {
  std::string name;  // as `kvsim list` takes it: "policies", "engines"
  std::string doc;
  std::vector<config::ComponentInfo> infos;
};

std::vector<ComponentKind> component_catalog();

// The catalog as the Markdown that docs/yaml.md holds between
// `<!-- params:KIND:NAME -->` and `<!-- /params -->` markers, one block per
// component, keyed by the marker's "KIND:NAME".
// The KIND:NAME of a component's block in docs/yaml.md (no spaces).
std::string catalog_marker_key(const config::ComponentInfo& info);
std::vector<std::pair<std::string, std::string>> catalog_markdown_blocks();

}  // namespace kvsim
