#include "devices/timing_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "devices/device_family.hpp"

namespace kvsim {

// The step's ops as a graph over the device's engines, built once (its
// shape does not depend on the batch). Vertex ids are global program order:
// pre ops, layer 0..L-1, post ops.
struct StepGraph {
  std::vector<OpKind> kind_of;
  std::vector<std::pair<size_t, size_t>> edges;
  size_t n_pre = 0, n_layer = 0, layers = 0;
};

namespace {

// Durations are integer nanoseconds, rounded up: an op never takes less than
// its roofline. The small slack keeps an exact quotient (say 1000.0000000001
// from floating-point division) from rounding up a whole nanosecond.
TimeNs ceil_ns(double ns) {
  if (ns <= 0) return 0;
  // std::ceil without a library call (x86-64's baseline has no rounding
  // instruction): truncate, then one up if that was below. Exact while the
  // value fits in 63 bits, as every duration here does.
  const double up_to = ns - 1e-6;
  const auto whole = static_cast<TimeNs>(up_to);
  return static_cast<double>(whole) < up_to ? whole + 1 : whole;
}

constexpr double kTwoTo52 = 4503599627370496.0;

// A whole number of magnitude below 2^52 (sums of two such are exact).
bool whole_below_2_52(double x) {
  return std::abs(x) < kTwoTo52 && static_cast<double>(static_cast<int64_t>(x)) == x;
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

// A topological order of the graph, reversed (Boost's output); throws on a
// cycle.
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

// Whether price() may skip identical layers (see longest_path): every edge
// runs forward in program order (so program order is itself a topological
// order and layers are contiguous ranges), each layer reads only itself and
// the layer before (layer 0 also pre ops), and post ops read only pre ops,
// the last layer and themselves. preds: sorted predecessors by program order.
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

}  // namespace

TimingModel::TimingModel(const DeviceSpec& device, const ModelSpec& model, Params params)
    : TimingModel(device, model, params, step_dependencies()) {}

TimingModel::TimingModel(const DeviceSpec& device, const ModelSpec& model, Params params,
                         const StepDependencies& deps)
    : device_(device),
      model_(model),
      params_(params),
      step_costs_(model,
                  StepShapeParams{params.tp, params.kv_dtype_bytes, params.ep, params.expert_skew}),
      family_(&device_family_of(device)) {
  check_inputs();
  build_rate_tables();
  flatten_step_graph(
      build_step_graph(deps, static_cast<size_t>(model_.num_hidden_layers), *family_));
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
    for (double* f :
         {&on_layer.flops, &on_layer.mem_bytes, &on_layer.link_bytes, &on_layer.host_bytes})
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
  return ceil_ns(ns) + device_.kernel_launch;
}

namespace {
// Every field op_duration() may read: a field added to OpCost must be
// compared here too, or a remembered duration could outlive its cost.
static_assert(sizeof(OpCost) == 11 * sizeof(double), "OpCost changed: compare it in same_cost()");
bool same_cost(const OpCost& a, const OpCost& b) {
  return a.present == b.present && a.flops == b.flops && a.mem_bytes == b.mem_bytes &&
         a.link_bytes == b.link_bytes && a.host_bytes == b.host_bytes &&
         a.weight_bytes == b.weight_bytes && a.kv_read_bytes == b.kv_read_bytes &&
         a.kv_write_bytes == b.kv_write_bytes && a.residual_bytes == b.residual_bytes &&
         a.vector_flops == b.vector_flops && a.layer_share == b.layer_share;
}
}  // namespace

TimeNs TimingModel::timed(size_t kind, const OpCost& cost, double matrix_factor) const {
  TimedCost& last = last_timed_[kind];
  if (last.valid && last.matrix_factor == matrix_factor && same_cost(last.cost, cost))
    return last.duration;
  last.valid = true;
  last.cost = cost;
  last.matrix_factor = matrix_factor;
  last.duration = op_duration(static_cast<OpKind>(kind), cost, matrix_factor);
  return last.duration;
}

double TimingModel::matrix_factor_of(int64_t pass_tokens) const {
  if (pass_tokens != last_pass_tokens_) {
    last_pass_tokens_ = pass_tokens;
    last_matrix_factor_ = device_.matrix_shape_factor(pass_tokens);
  }
  return last_matrix_factor_;
}

void TimingModel::remember_shape(const StepOpCosts& costs, double matrix_factor,
                                 ShapeDurations& known) const {
  constexpr auto attention = static_cast<size_t>(OpKind::attention);
  known.matrix_factor = matrix_factor;
  known.before_attention = StepTiming{};
  known.any_present = false;
  known.terms_after = 0;
  for (size_t k = 0; k < kOpKindCount; ++k) {
    const OpCost& c = costs[k];
    known.duration[k] = 0;
    if (k == attention || !c.present) continue;
    known.any_present = true;
    known.duration[k] = timed(k, c, matrix_factor);
    const auto copies = vertices_per_kind_[k];
    known.before_attention.op_time[k] = known.duration[k] * copies;
    const double mem = c.mem_bytes * static_cast<double>(copies);
    const double flops = c.flops * static_cast<double>(copies);
    if (k < attention) {
      known.before_attention.mem_bytes += mem;
      known.before_attention.flops += flops;
    } else {
      known.mem_after[known.terms_after] = mem;
      known.flops_after[known.terms_after] = flops;
      ++known.terms_after;
    }
  }
  // Whole numbers below 2^52 add exactly, in any order, while the sums
  // stay below 2^53: the terms after attention can then be summed once.
  const StepTiming& before = known.before_attention;
  bool exact = whole_below_2_52(before.mem_bytes) && whole_below_2_52(before.flops);
  double mem_size = std::abs(before.mem_bytes), flops_size = std::abs(before.flops);
  known.mem_after_sum = 0;
  known.flops_after_sum = 0;
  for (size_t i = 0; i < known.terms_after && exact; ++i) {
    exact = whole_below_2_52(known.mem_after[i]) && whole_below_2_52(known.flops_after[i]);
    mem_size += std::abs(known.mem_after[i]);
    flops_size += std::abs(known.flops_after[i]);
    known.mem_after_sum += known.mem_after[i];
    known.flops_after_sum += known.flops_after[i];
  }
  // The sizes are sums of whole numbers too: exact while below 2^52.
  known.sums_exact = exact && mem_size < kTwoTo52 && flops_size < kTwoTo52;
}

int64_t TimingModel::pass_tokens_of(const StepWork& work) const {
  if (device_.matrix_tokens_exponent == 0.0) return 0;
  if (work.totals_given) return static_cast<int64_t>(work.totals.tokens);
  int64_t tokens = 0;
  for (const SeqWork& s : work.seqs) tokens += s.query_tokens;
  return tokens;
}

TimingModel::StepSums TimingModel::price_sums(const StepWork& work) const {
  const StepOpCosts& costs = step_costs_.costs(work);
  // Tokens per pass, for the matrix engine's pass-shape efficiency.
  const int64_t tokens = pass_tokens_of(work);
  const double matrix_factor = matrix_factor_of(tokens);
  // Every op but attention costs what it cost when this shape's entry was
  // filled: its durations and its terms of the step's sums are kept with
  // the entry (same costs, same factor: the same numbers as working them
  // out anew, and added in the same order as finish_pricing adds them).
  constexpr auto attention = static_cast<size_t>(OpKind::attention);
  ShapeDurations& known = shape_durations_[step_costs_.last_entry()];
  if (known.stamp != step_costs_.last_stamp() || known.matrix_factor != matrix_factor) {
    remember_shape(costs, matrix_factor, known);
    known.stamp = step_costs_.last_stamp();
    known.path = {};
  }
  return sums_with_attention(known, costs[attention], matrix_factor);
}

TimingModel::StepSums TimingModel::sums_with_attention(ShapeDurations& known, const OpCost& att,
                                                       double matrix_factor) const {
  constexpr auto attention = static_cast<size_t>(OpKind::attention);
  StepSums sums;
  sums.known = &known;
  sums.mem_bytes = known.before_attention.mem_bytes;
  sums.flops = known.before_attention.flops;
  // Attention's cost moves every step (the contexts grow): timed afresh,
  // without comparing it to the last one first.
  if (att.present) {
    sums.attention_time = op_duration(OpKind::attention, att, matrix_factor);
    const auto copies = static_cast<double>(vertices_per_kind_[attention]);
    sums.mem_bytes += att.mem_bytes * copies;
    sums.flops += att.flops * copies;
  }
  if (known.sums_exact && whole_below_2_52(sums.mem_bytes) && whole_below_2_52(sums.flops)) {
    // Every partial sum is a whole number below 2^53 (each of the two
    // parts is below 2^52): exact, so the same as adding term by term.
    sums.mem_bytes += known.mem_after_sum;
    sums.flops += known.flops_after_sum;
  } else {
    for (size_t i = 0; i < known.terms_after; ++i) {
      sums.mem_bytes += known.mem_after[i];
      sums.flops += known.flops_after[i];
    }
  }
  sums.any_present = known.any_present || att.present;
  if (!sums.any_present) return sums;
  // The other durations are the shape's: the memo entry they were last
  // looked up in answers without hashing them, while it holds them.
  TimeNs path = path_memo_.remembered(known.path, sums.attention_time);
  if (path < 0) {
    std::array<TimeNs, kOpKindCount> duration = known.duration;
    duration[attention] = sums.attention_time;
    path = path_memo_.critical_path(
        duration, [this](const auto& d) { return longest_path(d, /*allow_layer_skip=*/true); },
        &known.path);
  }
  sums.critical_path = path;
  return sums;
}

StepTiming TimingModel::price(const StepWork& work) const {
  const StepSums sums = price_sums(work);
  remember_repeat(work);
  constexpr auto attention = static_cast<size_t>(OpKind::attention);
  StepTiming out;
  out.op_time = sums.known->before_attention.op_time;
  // 0 when attention does not run, as remember_shape leaves it.
  out.op_time[attention] = sums.attention_time * vertices_per_kind_[attention];
  out.mem_bytes = sums.mem_bytes;
  out.flops = sums.flops;
  if (sums.any_present) finish_latency(out, sums.critical_path);
  return out;
}

TimeNs TimingModel::step_latency(const StepWork& work) const {
  StepSums sums;
  if (repeats_last_shape(work)) {
    sums = repeat_sums(work);
    ++repeats_;
  } else {
    sums = price_sums(work);
    remember_repeat(work);
  }
  if (!sums.any_present) return 0;  // price(): a step of no op takes no time
  // finish_latency(), for the latency alone.
  return std::max(sums.critical_path, ceil_ns(sums.mem_bytes / peak_memory_bytes_per_ns_)) +
         device_.step_overhead;
}

// The engine's summed decode steps mostly repeat the last step's shape (the
// same token counts, only the contexts grown): then the shape's entry of
// step_costs_ and of shape_durations_ are those the last call used, still
// filled as then while their stamps say so, and only attention is new.
// Its cost is the one StepCostCache::costs() would write (the dense
// formula from the engine's sums), the inputs were checked when the shape
// was first priced, and the matrix factor is the entry's (it depends only
// on the shape's tokens): the same numbers as price_sums(), without the
// shape's lookup.
bool TimingModel::repeats_last_shape(const StepWork& work) const {
  if (!repeat_.valid || !work.totals_given) return false;
  if (!(step_detail::shape_of(work, work.totals) == repeat_.shape)) return false;
  return step_costs_.stamp_at(repeat_.entry) == repeat_.stamp &&
         shape_durations_[repeat_.entry].stamp == repeat_.stamp;
}

TimingModel::StepSums TimingModel::repeat_sums(const StepWork& work) const {
  ShapeDurations& known = shape_durations_[repeat_.entry];
  OpCost attention;
  if (work.totals.tokens > 0)
    step_detail::write_dense_attention(work.totals, step_costs_.dims(), attention);
  return sums_with_attention(known, attention, known.matrix_factor);
}

void TimingModel::remember_repeat(const StepWork& work) const {
  // Right after price_sums(work): the entry its costs() call used. Only
  // summed steps of a model whose attention is the dense formula.
  repeat_.valid = work.totals_given && step_costs_.dense_full();
  if (!repeat_.valid) return;
  repeat_.shape = step_detail::shape_of(work, work.totals);
  repeat_.entry = step_costs_.last_entry();
  repeat_.stamp = step_costs_.last_stamp();
}

StepTiming TimingModel::price_costs(const StepOpCosts& costs, int64_t pass_tokens) const {
  const double matrix_factor = matrix_factor_of(pass_tokens);
  // Per-layer ops are identical in every layer: each kind is timed once.
  std::array<TimeNs, kOpKindCount> duration{};
  for (size_t k = 0; k < kOpKindCount; ++k)
    if (costs[k].present) duration[k] = timed(k, costs[k], matrix_factor);
  return finish_pricing(costs, duration);
}

StepTiming TimingModel::finish_pricing(const StepOpCosts& costs,
                                       const std::array<TimeNs, kOpKindCount>& duration) const {
  StepTiming out;
  bool any_present = false;
  for (size_t k = 0; k < kOpKindCount; ++k) {
    const OpCost& c = costs[k];
    if (!c.present) continue;
    any_present = true;
    const auto copies = vertices_per_kind_[k];
    out.op_time[k] = duration[k] * copies;
    out.mem_bytes += c.mem_bytes * static_cast<double>(copies);
    out.flops += c.flops * static_cast<double>(copies);
  }
  if (any_present) finish_path(out, duration);
  return out;
}

void TimingModel::finish_path(StepTiming& out,
                              const std::array<TimeNs, kOpKindCount>& duration) const {
  // Longest path by dynamic programming over the flattened graph (price()
  // runs once per engine step: it is the simulator's hot loop).
  finish_latency(out, path_memo_.critical_path(duration, [this](const auto& d) {
    return longest_path(d, /*allow_layer_skip=*/true);
  }));
}

void TimingModel::finish_latency(StepTiming& out, TimeNs critical_path) const {
  out.critical_path = critical_path;
  // Engines that overlap in time still share one memory system: the step can
  // never beat its total traffic at peak bandwidth.
  out.memory_floor = ceil_ns(out.mem_bytes / peak_memory_bytes_per_ns_);
  out.latency = std::max(out.critical_path, out.memory_floor) + device_.step_overhead;
}

}  // namespace kvsim
