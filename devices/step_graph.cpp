#include "devices/step_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <stdexcept>

namespace kvsim {
namespace {

// Which of the step's three op lists a kind sits in, and where.
struct Placement {
  enum Part : uint8_t { none, pre, layer, post } part = none;
  uint32_t index = 0;  // position within its list
};

std::array<Placement, kOpKindCount> place_ops(const StepDependencies& deps) {
  std::array<Placement, kOpKindCount> where{};
  auto put = [&](const std::vector<OpKind>& ops, Placement::Part part, const char* list) {
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto k = static_cast<size_t>(ops[i]);
      if (k >= kOpKindCount) throw std::logic_error(fmt::format("{}: not an op kind", list));
      if (where[k].part != Placement::none) {
        throw std::logic_error(
            fmt::format("step dependencies list op '{}' twice", op_kind_name(ops[i])));
      }
      where[k] = {part, static_cast<uint32_t>(i)};
    }
  };
  put(deps.pre_ops, Placement::pre, "pre_ops");
  put(deps.layer_ops, Placement::layer, "layer_ops");
  put(deps.post_ops, Placement::post, "post_ops");
  // A kind in no list would be priced at zero whatever its cost: refuse it.
  for (size_t k = 0; k < kOpKindCount; ++k) {
    if (where[k].part == Placement::none) {
      throw std::logic_error(
          fmt::format("step dependencies leave out op '{}'", op_kind_name(static_cast<OpKind>(k))));
    }
  }
  return where;
}

}  // namespace

StepGraph build_step_graph(const StepDependencies& deps, size_t layers,
                           const DeviceFamily& family) {
  const std::array<Placement, kOpKindCount> where = place_ops(deps);
  StepGraph g;
  g.layers = layers;
  g.n_pre = deps.pre_ops.size();
  g.n_layer = deps.layer_ops.size();
  const size_t n_pre = g.n_pre, n_layer = g.n_layer;
  const size_t n_vertices = n_pre + layers * n_layer + deps.post_ops.size();

  g.kind_of.resize(n_vertices);
  for (size_t i = 0; i < n_pre; ++i) g.kind_of[i] = deps.pre_ops[i];
  for (size_t l = 0; l < layers; ++l)
    for (size_t i = 0; i < n_layer; ++i) g.kind_of[n_pre + l * n_layer + i] = deps.layer_ops[i];
  for (size_t i = 0; i < deps.post_ops.size(); ++i)
    g.kind_of[n_pre + layers * n_layer + i] = deps.post_ops[i];

  auto vertex = [&](OpKind kind, size_t layer, Placement::Part expected, const char* edge_list) {
    const Placement& p = where[static_cast<size_t>(kind)];
    if (p.part != expected) {
      throw std::logic_error(
          fmt::format("{}: op '{}' is not in the expected op list", edge_list, op_kind_name(kind)));
    }
    switch (p.part) {
      case Placement::pre:
        return static_cast<size_t>(p.index);
      case Placement::layer:
        return n_pre + layer * n_layer + p.index;
      default:
        return n_pre + layers * n_layer + p.index;
    }
  };

  auto& edges = g.edges;
  for (size_t l = 0; l < layers; ++l) {
    for (const auto& [from, to] : deps.layer_edges) {
      edges.emplace_back(vertex(from, l, Placement::layer, "layer_edges"),
                         vertex(to, l, Placement::layer, "layer_edges"));
    }
    if (l + 1 < layers) {
      edges.emplace_back(vertex(deps.layer_exit, l, Placement::layer, "layer_exit"),
                         vertex(deps.layer_entry, l + 1, Placement::layer, "layer_entry"));
    }
  }
  for (const auto& [from, to] : deps.pre_to_first_layer) {
    edges.emplace_back(vertex(from, 0, Placement::pre, "pre_to_first_layer"),
                       vertex(to, 0, Placement::layer, "pre_to_first_layer"));
  }
  for (const auto& [from, to] : deps.last_layer_to_post) {
    edges.emplace_back(vertex(from, layers - 1, Placement::layer, "last_layer_to_post"),
                       vertex(to, 0, Placement::post, "last_layer_to_post"));
  }
  for (const auto& [from, to] : deps.post_edges) {
    edges.emplace_back(vertex(from, 0, Placement::post, "post_edges"),
                       vertex(to, 0, Placement::post, "post_edges"));
  }
  // Each engine is an in-order stream (one Ascend task queue per engine):
  // consecutive ops on the same engine in program order cannot overlap.
  std::array<size_t, kEngineCount> last_on_engine;
  last_on_engine.fill(n_vertices);
  for (size_t v = 0; v < n_vertices; ++v) {
    const auto e = static_cast<size_t>(family.engine_of(g.kind_of[v]));
    if (last_on_engine[e] != n_vertices) edges.emplace_back(last_on_engine[e], v);
    last_on_engine[e] = v;
  }
  return g;
}

std::vector<size_t> reverse_topological_order(const StepGraph& g) {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  const size_t n_vertices = g.kind_of.size();
  Graph graph(n_vertices);
  for (const auto& [from, to] : g.edges) boost::add_edge(from, to, graph);
  std::vector<size_t> reverse_order;
  reverse_order.reserve(n_vertices);
  try {
    boost::topological_sort(graph, std::back_inserter(reverse_order));
  } catch (const boost::not_a_dag&) {
    throw std::logic_error(
        "the step graph has a cycle: a data dependency runs against program order on an engine");
  }
  return reverse_order;
}

bool is_layered(const StepGraph& g, const std::vector<std::vector<uint32_t>>& preds) {
  if (!std::all_of(g.edges.begin(), g.edges.end(),
                   [](const auto& e) { return e.first < e.second; }))
    return false;
  const size_t first_post = g.n_pre + g.layers * g.n_layer;
  for (size_t i = 0; i < preds.size(); ++i) {
    const auto& p = preds[i];
    if (p.empty()) continue;
    if (i >= g.n_pre && i < first_post) {
      const size_t layer = (i - g.n_pre) / g.n_layer;
      const size_t allowed_from = layer == 0 ? 0 : g.n_pre + (layer - 1) * g.n_layer;
      if (p.front() < allowed_from) return false;
    } else if (i >= first_post) {
      for (uint32_t q : p)
        if (!(q < g.n_pre || q >= g.n_pre + (g.layers - 1) * g.n_layer)) return false;
    }
  }
  return true;
}

}  // namespace kvsim
