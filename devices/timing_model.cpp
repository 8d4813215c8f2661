#include "devices/timing_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "devices/device_family.hpp"
#include "devices/duration_rounding.hpp"
#include "devices/step_graph.hpp"

namespace kvsim {

TimingModel::TimingModel(const DeviceSpec& device, const ModelSpec& model, Params params)
    : TimingModel(device, model, params, step_dependencies()) {}

TimingModel::TimingModel(const DeviceSpec& device, const ModelSpec& model, Params params,
                         const StepDependencies& deps)
    : device_(device),
      model_(model),
      params_(params),
      step_costs_(model, StepShapeParams{params.tp, params.kv_dtype_bytes, params.ep,
                                         params.expert_skew, params.ep_ranks_per_node}),
      family_(&device_family_of(device)) {
  check_inputs();
  build_rate_tables();
  flatten_step_graph(
      build_step_graph(deps, static_cast<size_t>(model_.num_hidden_layers), *family_));
}

TimingModel::TimingModel(const TimingModel& structure, const DeviceSpec& device)
    : device_(device),
      model_(structure.model_),
      params_(structure.params_),
      step_costs_(structure.model_,
                  StepShapeParams{params_.tp, params_.kv_dtype_bytes, params_.ep,
                                  params_.expert_skew, params_.ep_ranks_per_node}),
      family_(&device_family_of(device)) {
  if (family_ != structure.family_)
    throw std::invalid_argument(fmt::format("{} is not of the family {} was timed on", device_.name,
                                            structure.device_.name));
  check_inputs();
  build_rate_tables();
  // The graph's structure, as flatten_step_graph left it; every memo fresh.
  vertex_kind_ = structure.vertex_kind_;
  pred_begin_ = structure.pred_begin_;
  preds_ = structure.preds_;
  layered_ = structure.layered_;
  n_pre_ = structure.n_pre_;
  n_layer_ = structure.n_layer_;
  layers_ = structure.layers_;
  vertices_per_kind_ = structure.vertices_per_kind_;
  path_memo_ = CriticalPathMemo(OpKind::attention,
                                vertices_per_kind_[static_cast<size_t>(OpKind::attention)]);
  finish_.resize(vertex_kind_.size());
}

void TimingModel::check_inputs() const {
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
  const std::vector<std::string> problems = family_->problems(device_);
  if (!problems.empty()) throw std::invalid_argument(problems.front());
  // Ranks of the expert group on other nodes are reached over the
  // network link: the device must have one.
  if (params_.ep_ranks_per_node > 0 && params_.ep_ranks_per_node < params_.ep &&
      device_.network_link_bandwidth <= 0)
    throw std::invalid_argument(
        fmt::format("{} expert-parallel ranks span nodes of {} but {} gives no "
                    "network_link_bandwidth",
                    params_.ep, params_.ep_ranks_per_node, device_.name));
  if (model_.num_hidden_layers < 1) {
    throw std::invalid_argument(fmt::format("model '{}' has no layers to time", model_.name));
  }
}

// Roofline rates per op kind (ops or bytes per nanosecond): the family says
// which peak each op's compute runs at and which efficiency class it uses.
void TimingModel::build_rate_tables() {
  for (size_t k = 0; k < kOpKindCount; ++k) {
    const auto kind = static_cast<OpKind>(k);
    const auto cls = static_cast<size_t>(family_->class_of(kind));
    const auto peak =
        static_cast<double>(family_->compute_peak(kind, device_, model_, params_.kv_dtype_bytes));
    compute_per_ns_[k] = peak * device_.compute_efficiency[cls] / 1e9;
    peak_per_ns_[k] = peak / 1e9;
    on_matrix_[k] = family_->engine_of(kind) == Engine::matrix;
    memory_bytes_per_ns_[k] =
        static_cast<double>(device_.memory_bandwidth) * device_.memory_efficiency[cls] / 1e9;
  }
  // Links are used at the figure the device file gives: the file states the
  // effective per-direction bandwidth (SPEC 7: all-reduce over the device link).
  peak_memory_bytes_per_ns_ = static_cast<double>(device_.memory_bandwidth) / 1e9;
  link_bytes_per_ns_ = static_cast<double>(device_.device_link_bandwidth) / 1e9;
  host_bytes_per_ns_ = static_cast<double>(device_.host_link_bandwidth) / 1e9;
  network_bytes_per_ns_ = static_cast<double>(device_.network_link_bandwidth) / 1e9;
}

// Flattens the graph for the per-step longest-path pass: vertices in program
// order when the graph is layered (see is_layered), else in Boost's
// topological order, each with its sorted predecessors.
void TimingModel::flatten_step_graph(const StepGraph& g) {
  const size_t n_vertices = g.kind_of.size();
  const std::vector<size_t> reverse_order = reverse_topological_order(g);
  const bool forward =
      std::all_of(g.edges.begin(), g.edges.end(), [](const auto& e) { return e.first < e.second; });
  std::vector<uint32_t> position(n_vertices);
  std::vector<OpKind> kinds(n_vertices);
  for (size_t i = 0; i < n_vertices; ++i) {
    const size_t v = forward ? i : reverse_order[n_vertices - 1 - i];
    position[v] = static_cast<uint32_t>(i);
    kinds[i] = g.kind_of[v];
  }
  std::vector<std::vector<uint32_t>> preds(n_vertices);
  for (const auto& [from, to] : g.edges) preds[position[to]].push_back(position[from]);
  for (auto& p : preds) {
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
  }
  layered_ = is_layered(g, preds);
  n_pre_ = g.n_pre;
  n_layer_ = g.n_layer;
  layers_ = g.layers;
  for (size_t i = 0; i < n_vertices; ++i) ++vertices_per_kind_[static_cast<size_t>(kinds[i])];
  path_memo_ = CriticalPathMemo(OpKind::attention,
                                vertices_per_kind_[static_cast<size_t>(OpKind::attention)]);
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
  // No path is longer than every op end to end: below the simulated span,
  // no finish time below can wrap.
  double all_ops = 0;
  for (size_t k = 0; k < kOpKindCount; ++k)
    all_ops += static_cast<double>(vertices_per_kind_[k]) * static_cast<double>(duration[k]);
  if (!(all_ops < static_cast<double>(kMaxSimulatedTimeNs)))
    throw_duration_overflow("a step", all_ops, static_cast<double>(kMaxSimulatedTimeNs));
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

TimeNs TimingModel::op_duration(OpKind kind, const OpCost& cost, double matrix_factor) const {
  if (!cost.present) return 0;
  if (cost.layer_share > 0 && cost.layer_share < 1) {
    // Priced on the layers it runs on, then spread over all of them (the
    // longest path walks identical layers).
    OpCost on_layer = cost;
    on_layer.layer_share = 1;
    for (double* f : {&on_layer.flops, &on_layer.mem_bytes, &on_layer.link_bytes,
                      &on_layer.host_bytes, &on_layer.network_bytes})
      *f /= cost.layer_share;
    return static_cast<TimeNs>(std::llround(
        cost.layer_share * static_cast<double>(op_duration(kind, on_layer, matrix_factor))));
  }
  const auto k = static_cast<size_t>(kind);
  double ns = 0;
  if (cost.flops > 0) {
    const double rate = on_matrix_[k] && matrix_factor != 1.0
                            ? std::min(compute_per_ns_[k] * matrix_factor, peak_per_ns_[k])
                            : compute_per_ns_[k];
    ns = std::max(ns, cost.flops / rate);
  }
  if (cost.mem_bytes > 0) ns = std::max(ns, cost.mem_bytes / memory_bytes_per_ns_[k]);
  if (cost.link_bytes > 0) {
    ns = std::max(ns, cost.link_bytes / link_bytes_per_ns_ +
                          static_cast<double>(device_.device_link_latency));
  }
  if (cost.host_bytes > 0) ns = std::max(ns, cost.host_bytes / host_bytes_per_ns_);
  // The inter-node share of an all-to-all, on the NIC beside the device
  // link's share (both in flight at once: the slower sets the op).
  if (cost.network_bytes > 0) {
    ns = std::max(ns, cost.network_bytes / network_bytes_per_ns_ +
                          static_cast<double>(device_.network_link_latency));
  }
  return ceil_ns(ns) + device_.kernel_launch;
}

}  // namespace kvsim
