#include "devices/timing_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <utility>

namespace kvsim {
namespace {

// Durations are integer nanoseconds, rounded up: an op never takes less than
// its roofline. The small slack keeps an exact quotient (say 1000.0000000001
// from floating-point division) from rounding up a whole nanosecond.
TimeNs ceil_ns(double ns) {
  if (ns <= 0) return 0;
  return static_cast<TimeNs>(std::ceil(ns - 1e-6));
}

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

TimingModel::TimingModel(const DeviceSpec& device, const ModelSpec& model, Params params)
    : TimingModel(device, model, params, step_dependencies()) {}

TimingModel::TimingModel(const DeviceSpec& device, const ModelSpec& model, Params params,
                         const StepDependencies& deps)
    : device_(device), model_(model), params_(params) {
  if (params_.tp < 1 || params_.tp > device_.max_tensor_parallel) {
    throw std::invalid_argument(fmt::format("tensor parallelism {} is outside [1, {}] for {}",
                                            params_.tp, device_.max_tensor_parallel, device_.name));
  }
  if (params_.kv_dtype_bytes < 1) {
    throw std::invalid_argument(
        fmt::format("kv_dtype_bytes must be >= 1, got {}", params_.kv_dtype_bytes));
  }
  // A DeviceSpec that came out of a file with errors holds zeros: refuse it
  // here rather than divide by zero on the hot path.
  for (const auto& [rate, what] :
       {std::pair{device_.memory_bandwidth, "memory_bandwidth"},
        std::pair{device_.matrix_fp16_ops, "matrix_fp16"},
        std::pair{device_.matrix_int8_ops, "matrix_int8"},
        std::pair{device_.vector_fp16_ops, "vector_fp16"},
        std::pair{device_.device_link_bandwidth, "device_link_bandwidth"},
        std::pair{device_.host_link_bandwidth, "host_link_bandwidth"}}) {
    if (rate <= 0) {
      throw std::invalid_argument(
          fmt::format("device '{}': {} must be > 0, got {}", device_.name, what, rate));
    }
  }
  for (size_t c = 0; c < kOpClassCount; ++c) {
    for (const double eff : {device_.compute_efficiency[c], device_.memory_efficiency[c]}) {
      if (!(eff > 0.0 && eff <= 1.0)) {
        throw std::invalid_argument(
            fmt::format("device '{}': efficiency.{} must be in (0, 1], got {}", device_.name,
                        op_class_name(static_cast<OpClass>(c)), eff));
      }
    }
  }
  if (model_.num_hidden_layers < 1) {
    throw std::invalid_argument(fmt::format("model '{}' has no layers to time", model_.name));
  }

  // --- roofline rates per op kind (ops or bytes per nanosecond) -------------
  // w8a8 runs its projections on the int8 cube (twice the fp16 rate on
  // Ascend); attention stays fp16 because the KV cache and activations do.
  const bool int8_gemms = model_.weights_dtype == "w8a8";
  for (size_t k = 0; k < kOpKindCount; ++k) {
    const auto kind = static_cast<OpKind>(k);
    const auto cls = static_cast<size_t>(class_of(kind));
    double peak = 0;
    switch (engine_of(kind)) {
      case Engine::matrix:
        peak = static_cast<double>(int8_gemms && class_of(kind) == OpClass::gemm
                                       ? device_.matrix_int8_ops
                                       : device_.matrix_fp16_ops);
        break;
      default:
        // Transfers and collectives do their little arithmetic (the
        // all-reduce sum) on the vector unit.
        peak = static_cast<double>(device_.vector_fp16_ops);
        break;
    }
    compute_per_ns_[k] = peak * device_.compute_efficiency[cls] / 1e9;
    memory_bytes_per_ns_[k] =
        static_cast<double>(device_.memory_bandwidth) * device_.memory_efficiency[cls] / 1e9;
  }
  // Links are used at the figure the device file gives: the file states the
  // effective per-direction bandwidth (SPEC 7: all-reduce over the device link).
  link_bytes_per_ns_ = static_cast<double>(device_.device_link_bandwidth) / 1e9;
  host_bytes_per_ns_ = static_cast<double>(device_.host_link_bandwidth) / 1e9;

  // --- the step graph: built once, its shape does not depend on the batch ---
  const std::array<Placement, kOpKindCount> where = place_ops(deps);
  const auto layers = static_cast<size_t>(model_.num_hidden_layers);
  const size_t n_pre = deps.pre_ops.size();
  const size_t n_layer = deps.layer_ops.size();
  const size_t n_vertices = n_pre + layers * n_layer + deps.post_ops.size();

  // Vertex ids are global program order: pre ops, layer 0..L-1, post ops.
  std::vector<OpKind> kind_of(n_vertices);
  for (size_t i = 0; i < n_pre; ++i) kind_of[i] = deps.pre_ops[i];
  for (size_t l = 0; l < layers; ++l)
    for (size_t i = 0; i < n_layer; ++i) kind_of[n_pre + l * n_layer + i] = deps.layer_ops[i];
  for (size_t i = 0; i < deps.post_ops.size(); ++i)
    kind_of[n_pre + layers * n_layer + i] = deps.post_ops[i];

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

  std::vector<std::pair<size_t, size_t>> edges;
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
    const auto e = static_cast<size_t>(engine_of(kind_of[v]));
    if (last_on_engine[e] != n_vertices) edges.emplace_back(last_on_engine[e], v);
    last_on_engine[e] = v;
  }

  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  Graph graph(n_vertices);
  for (const auto& [from, to] : edges) boost::add_edge(from, to, graph);
  std::vector<size_t> reverse_order;
  reverse_order.reserve(n_vertices);
  try {
    boost::topological_sort(graph, std::back_inserter(reverse_order));
  } catch (const boost::not_a_dag&) {
    throw std::logic_error(
        "the step graph has a cycle: a data dependency runs against program order on an engine");
  }

  // Vertex ids are program order. When every edge runs forward in program
  // order (it does for the model's step), program order is itself a
  // topological order and layers are contiguous ranges, which lets price()
  // skip identical layers (see price_costs). Otherwise the DP follows the
  // Boost topological order.
  layered_ =
      std::all_of(edges.begin(), edges.end(), [](const auto& e) { return e.first < e.second; });
  std::vector<uint32_t> position(n_vertices);
  std::vector<OpKind> kinds(n_vertices);
  for (size_t i = 0; i < n_vertices; ++i) {
    const size_t v = layered_ ? i : reverse_order[n_vertices - 1 - i];
    position[v] = static_cast<uint32_t>(i);
    kinds[i] = kind_of[v];
  }
  std::vector<std::vector<uint32_t>> preds(n_vertices);
  for (const auto& [from, to] : edges) preds[position[to]].push_back(position[from]);
  n_pre_ = n_pre;
  n_layer_ = n_layer;
  layers_ = layers;
  for (size_t i = 0; i < n_vertices; ++i) {
    auto& p = preds[i];
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    ++vertices_per_kind_[static_cast<size_t>(kinds[i])];
    // The layer skip needs each layer to read only itself and the layer
    // before (layer 0 also pre ops), and post ops to read only pre ops, the
    // last layer and themselves.
    if (layered_ && !p.empty()) {
      const size_t first_post = n_pre + layers * n_layer;
      const size_t lowest = p.front();
      if (i >= n_pre && i < first_post) {
        const size_t layer = (i - n_pre) / n_layer;
        const size_t allowed_from = layer == 0 ? 0 : n_pre + (layer - 1) * n_layer;
        layered_ = layered_ && lowest >= allowed_from;
      } else if (i >= first_post) {
        for (uint32_t q : p) {
          layered_ = layered_ && (q < n_pre || q >= n_pre + (layers - 1) * n_layer);
        }
      }
    }
  }
  vertex_kind_ = std::move(kinds);
  pred_begin_.reserve(n_vertices + 1);
  for (const auto& p : preds) {
    pred_begin_.push_back(static_cast<uint32_t>(preds_.size()));
    preds_.insert(preds_.end(), p.begin(), p.end());
  }
  pred_begin_.push_back(static_cast<uint32_t>(preds_.size()));
  finish_.resize(n_vertices);
}

TimeNs TimingModel::longest_path(const std::array<TimeNs, kOpKindCount>& duration,
                                 bool allow_layer_skip) const {
  TimeNs* finish = finish_.data();
  const uint32_t* preds = preds_.data();
  const uint32_t* begin = pred_begin_.data();
  TimeNs critical = 0;
  auto eval = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      TimeNs start = 0;
      for (uint32_t e = begin[i]; e < begin[i + 1]; ++e) start = std::max(start, finish[preds[e]]);
      finish[i] = start + duration[static_cast<size_t>(vertex_kind_[i])];
      critical = std::max(critical, finish[i]);
    }
  };
  const size_t n = vertex_kind_.size();
  if (!layered_ || !allow_layer_skip) {
    eval(0, n);
    return critical;
  }
  // Layers are identical and, past layer 0, layer l + 1 depends only on
  // layer l through max and plus. So once a layer's finish times are the
  // previous layer's shifted by one constant delta, every later layer is too
  // (max-plus maps commute with a uniform shift): the last layer is computed
  // directly instead of walking the ones in between. Exact in integers.
  eval(0, n_pre_);
  size_t l = 0;
  for (; l < layers_; ++l) {
    const size_t base = n_pre_ + l * n_layer_;
    eval(base, base + n_layer_);
    if (l == 0 || l + 1 >= layers_) continue;
    const size_t prev = base - n_layer_;
    const TimeNs delta = finish[base] - finish[prev];
    bool uniform = true;
    for (size_t i = 1; i < n_layer_ && uniform; ++i)
      uniform = finish[base + i] - finish[prev + i] == delta;
    if (!uniform) continue;
    const size_t last = n_pre_ + (layers_ - 1) * n_layer_;
    const TimeNs shift = static_cast<TimeNs>(layers_ - 1 - l) * delta;
    for (size_t i = 0; i < n_layer_; ++i) {
      finish[last + i] = finish[base + i] + shift;
      critical = std::max(critical, finish[last + i]);
    }
    break;
  }
  eval(n_pre_ + layers_ * n_layer_, n);
  return critical;
}

TimeNs TimingModel::op_duration(OpKind kind, const OpCost& cost) const {
  if (!cost.present) return 0;
  const auto k = static_cast<size_t>(kind);
  double ns = 0;
  if (cost.flops > 0) ns = std::max(ns, cost.flops / compute_per_ns_[k]);
  if (cost.mem_bytes > 0) ns = std::max(ns, cost.mem_bytes / memory_bytes_per_ns_[k]);
  if (cost.link_bytes > 0) {
    ns = std::max(ns, cost.link_bytes / link_bytes_per_ns_ +
                          static_cast<double>(device_.device_link_latency));
  }
  if (cost.host_bytes > 0) ns = std::max(ns, cost.host_bytes / host_bytes_per_ns_);
  return ceil_ns(ns) + device_.kernel_launch;
}

StepTiming TimingModel::price(const StepWork& work) const {
  const StepOpCosts costs =
      step_op_costs(model_, work, StepShapeParams{params_.tp, params_.kv_dtype_bytes});
  return price_costs(costs);
}

StepTiming TimingModel::price_costs(const StepOpCosts& costs) const {
  StepTiming out;
  // Per-layer ops are identical in every layer: each kind is timed once.
  std::array<TimeNs, kOpKindCount> duration{};
  bool any_present = false;
  for (size_t k = 0; k < kOpKindCount; ++k) {
    const OpCost& c = costs[k];
    if (!c.present) continue;
    any_present = true;
    duration[k] = op_duration(static_cast<OpKind>(k), c);
    const auto copies = vertices_per_kind_[k];
    out.op_time[k] = duration[k] * copies;
    out.mem_bytes += c.mem_bytes * static_cast<double>(copies);
    out.flops += c.flops * static_cast<double>(copies);
  }
  if (!any_present) return out;

  // Longest path by dynamic programming over the flattened graph (price()
  // runs once per engine step: it is the simulator's hot loop).
  out.critical_path = longest_path(duration, /*allow_layer_skip=*/true);
  // Engines that overlap in time still share one memory system: the step can
  // never beat its total traffic at peak bandwidth.
  out.memory_floor = ceil_ns(out.mem_bytes / (static_cast<double>(device_.memory_bandwidth) / 1e9));
  out.latency = std::max(out.critical_path, out.memory_floor) + device_.step_overhead;
  return out;
}

}  // namespace kvsim
