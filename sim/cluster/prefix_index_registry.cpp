// Prefix indexes by kind: the YAML value `cluster.router.index.kind` picks
// one (prefix_index.hpp says what each knows). The index_table below is the only
// place a kind is registered.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "sim/cluster/prefix_index.hpp"

namespace kvsim {
namespace {

struct RegisteredIndex {
  config::ComponentInfo (*info)();
  std::unique_ptr<PrefixIndex> (*make)(const config::ParamValues&);
};

// One line per kind, kept in name order.
const std::vector<RegisteredIndex>& index_table() {
  static const std::vector<RegisteredIndex> t = {
      {approximate_prefix_index_info, make_approximate_prefix_index},
      {event_prefix_index_info, make_event_prefix_index},
      {exact_prefix_index_info, make_exact_prefix_index},
  };
  return t;
}

const RegisteredIndex& find_index(std::string_view kind) {
  for (const RegisteredIndex& r : index_table())
    if (r.info().name == kind) return r;
  throw std::invalid_argument(fmt::format("unknown prefix index '{}' (known: {})", kind,
                                          fmt::join(prefix_index_names(), ", ")));
}

}  // namespace

std::vector<std::string> prefix_index_names() {
  std::vector<std::string> names;
  for (const RegisteredIndex& r : index_table()) names.push_back(r.info().name);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<config::ComponentInfo> prefix_index_infos() {
  std::vector<config::ComponentInfo> index_infos;
  for (const RegisteredIndex& r : index_table()) index_infos.push_back(r.info());
  std::sort(index_infos.begin(), index_infos.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return index_infos;
}

const config::ComponentInfo& prefix_index_info(std::string_view kind) {
  static const std::vector<config::ComponentInfo> index_infos = prefix_index_infos();
  for (const auto& info : index_infos)
    if (info.name == kind) return info;
  (void)find_index(kind);  // throws the message listing the known kinds
  throw std::logic_error("unreachable");
}

PrefixIndexConfig prefix_index_defaults(std::string_view kind) {
  PrefixIndexConfig c;
  c.kind = std::string(kind);
  for (const config::ParamSpec& p : prefix_index_info(kind).params)
    if (p.default_value) c.params.set(p.key, *p.default_value, false);
  return c;
}

std::unique_ptr<PrefixIndex> make_prefix_index(const PrefixIndexConfig& config) {
  return find_index(config.kind).make(config.params);
}

config::ParamSpec prefix_index_param() {
  return config::section_param(
      "index", false, "{kind: exact|events|approximate, ...}",
      "what the router knows of each instance's cached prefixes (prefix-index keys; default "
      "exact)");
}

}  // namespace kvsim
