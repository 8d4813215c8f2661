#pragma once
// Prices a step: each op by a roofline,
//   t = max(flops / (peak * eff_compute), mem_bytes / (bw * eff_mem),
//           link_bytes / link_bw + link latency, host_bytes / host_bw,
//           network_bytes / network_bw + network latency) + launch
// and the step's ops as a graph (Boost.Graph) over the device's engines: data
// dependencies from the model, plus program order on each engine (an engine
// is an in-order stream). The step latency is the critical path, and never
// less than the step's total device-memory bytes over the memory bandwidth
// (engines that overlap in time share one memory system).
//
// Pure: price() takes the step's work and returns durations; it never touches
// the clock (DESIGN practice 8).
#include <array>
#include <cstdint>
#include <vector>

#include "devices/critical_path_memo.hpp"
#include "devices/device_spec.hpp"
#include "models/model_spec.hpp"
#include "models/step_cost_cache.hpp"
#include "models/step_ops.hpp"

namespace kvsim {

class DeviceFamily;
struct StepGraph;

struct StepTiming {
  TimeNs latency = 0;                          // what the engine step takes
  TimeNs critical_path = 0;                    // longest path through the op graph
  TimeNs memory_floor = 0;                     // total mem bytes / memory bandwidth
  double mem_bytes = 0;                        // device-memory bytes of the whole step
  double flops = 0;                            // whole step
  std::array<TimeNs, kOpKindCount> op_time{};  // per kind, summed over layers
};

class TimingModel {
 public:
  struct Params {
    int64_t tp = 1;
    Bytes kv_dtype_bytes = 2;
    int64_t ep = 1;          // expert parallelism (models/step_ops.hpp StepShapeParams)
    double expert_skew = 0;  // Zipf exponent of expert popularity, 0: uniform
    // Expert-parallel ranks per node (0: all on one node); fewer than ep
    // sends part of the all-to-all over the network link.
    int64_t ep_ranks_per_node = 0;
  };
  // Throws std::invalid_argument when tp is outside [1, device.max_tensor_parallel]
  // or the model has no layers, std::logic_error when the dependencies do not
  // list every OpKind exactly once or form a cycle.
  TimingModel(const DeviceSpec& device, const ModelSpec& model, Params params);
  // Same, with an explicit dependency structure instead of step_dependencies()
  // (tests build small hand-made graphs with it).
  TimingModel(const DeviceSpec& device, const ModelSpec& model, Params params,
              const StepDependencies& deps);

  // The model, parameters and step graph of `structure`, on `device`: what
  // TimingModel(device, structure.model(), ...) with structure's
  // dependencies builds, without building the graph again (a fit prices one
  // recorded run on hundreds of devices that differ in their efficiencies).
  // Nothing `structure` remembered of the steps it priced is kept. Throws as
  // the constructor does; std::invalid_argument when `device` is of another
  // family (whose engines would give another graph).
  TimingModel(const TimingModel& structure, const DeviceSpec& device);

  StepTiming price(const StepWork& work) const;
  // price(work).latency alone, without the per-kind times (a serving
  // engine's step needs only its latency): the same arithmetic, so the
  // same number.
  TimeNs step_latency(const StepWork& work) const;
  // price() once the per-op costs are known (price = price_costs(step_op_costs(...),
  // tokens computed)). pass_tokens sets the matrix unit's shape factor
  // (DeviceSpec::matrix_shape_factor); 0: none.
  StepTiming price_costs(const StepOpCosts& costs, int64_t pass_tokens = 0) const;
  // The step's tokens per pass for price_costs, 0 when the device has no
  // pass-shape term (then the sum is not needed).
  int64_t pass_tokens_of(const StepWork& work) const;

  // Longest path through the step graph for per-kind op durations; with
  // allow_layer_skip the identical-layer shortcut is taken when it applies
  // (both give the same answer; public so tests can compare them).
  TimeNs longest_path(const std::array<TimeNs, kOpKindCount>& duration,
                      bool allow_layer_skip) const;

  // Time of one op from its cost (used by price(); public for tests), with
  // the matrix unit's pass-shape factor `matrix_factor` (1: none).
  TimeNs op_duration(OpKind kind, const OpCost& cost, double matrix_factor = 1.0) const;

  // step_latency() calls answered from the last shape it priced (tests
  // check the path is taken).
  int64_t repeated_shapes() const { return repeats_; }

  const DeviceSpec& device() const { return device_; }
  const ModelSpec& model() const { return model_; }

 private:
  // Construction, step by step: tp, dtype and the device's rates are sane;
  // the per-kind roofline rates; the step graph flattened for longest_path
  // (with the layering that enables the identical-layer skip).
  void check_inputs() const;
  void build_rate_tables();
  void flatten_step_graph(const StepGraph& graph);

  DeviceSpec device_;
  ModelSpec model_;
  Params params_;
  // The step's op costs, only attention's worked out anew when the step's
  // shape matches a recent one (models/step_cost_cache.hpp).
  mutable StepCostCache step_costs_;
  const DeviceFamily* family_;  // the registry's, lives for the program
  // The step graph is built once (structure does not depend on the batch):
  // vertices in topological order, flattened for the per-step longest-path
  // pass: vertex i has kind vertex_kind_[i] and predecessors
  // preds_[pred_begin_[i] .. pred_begin_[i + 1]).
  std::vector<OpKind> vertex_kind_;
  std::vector<uint32_t> pred_begin_;
  std::vector<uint32_t> preds_;
  // Scratch for price(): one TimingModel per engine, so no sharing.
  mutable std::vector<TimeNs> finish_;
  // Longest paths of recent steps, to price the next without a walk when
  // only attention's duration moved (devices/critical_path_memo.hpp).
  mutable CriticalPathMemo path_memo_{OpKind::attention, 0};
  // The last cost each kind was timed for, and its duration: consecutive
  // steps repeat most ops' costs exactly (in a decode only attention grows).
  struct TimedCost {
    bool valid = false;
    OpCost cost;
    double matrix_factor = 1;
    TimeNs duration = 0;
  };
  mutable std::array<TimedCost, kOpKindCount> last_timed_{};
  mutable int64_t last_pass_tokens_ = -1;
  mutable double last_matrix_factor_ = 1;
  TimeNs timed(size_t kind, const OpCost& cost, double matrix_factor) const;
  double matrix_factor_of(int64_t pass_tokens) const;
  // Per remembered shape of step_costs_: the durations of every op but
  // attention, valid while the entry's stamp and the matrix factor stay
  // (a step of a recent shape then times attention only).
  struct ShapeDurations {
    uint64_t stamp = 0;  // 0: never filled (cache stamps start at 1)
    double matrix_factor = 1;
    std::array<TimeNs, kOpKindCount> duration{};
    // The step's sums over the ops before attention (program of
    // finish_pricing, stopped there), and the terms of the present ops
    // after it, to be added in the same order.
    StepTiming before_attention;
    bool any_present = false;  // an op other than attention runs
    size_t terms_after = 0;
    std::array<double, kOpKindCount> mem_after{};
    std::array<double, kOpKindCount> flops_after{};
    // Their sums, to add at once when that is exact (whole numbers whose
    // sums stay below 2^53; see price()).
    bool sums_exact = false;
    double mem_after_sum = 0, flops_after_sum = 0;
    // Where path_memo_ keeps the longest paths of these durations.
    CriticalPathMemo::Ticket path;
  };
  mutable std::array<ShapeDurations, StepCostCache::kEntries> shape_durations_{};
  void remember_shape(const StepOpCosts& costs, double matrix_factor, ShapeDurations& known) const;
  // What price() and step_latency() share: the step's sums, attention's
  // duration and the longest path (when an op runs).
  struct StepSums {
    const ShapeDurations* known = nullptr;  // the shape's entry (other ops' times)
    double mem_bytes = 0, flops = 0;
    TimeNs attention_time = 0;  // one layer's, 0 when attention does not run
    bool any_present = false;   // some op runs (else nothing below is set)
    TimeNs critical_path = 0;
  };
  StepSums price_sums(const StepWork& work) const;
  // price_sums() from here on, once the shape's entry and attention's cost
  // are known.
  StepSums sums_with_attention(ShapeDurations& known, const OpCost& att,
                               double matrix_factor) const;
  // step_latency() of a step of the last shape it priced (see the .cpp).
  struct RepeatedShape {
    bool valid = false;
    step_detail::StepShape shape;
    size_t entry = 0;    // its entry in step_costs_ and shape_durations_
    uint64_t stamp = 0;  // that entry's filling
  };
  mutable RepeatedShape repeat_;
  mutable int64_t repeats_ = 0;
  bool repeats_last_shape(const StepWork& work) const;
  StepSums repeat_sums(const StepWork& work) const;
  void remember_repeat(const StepWork& work) const;
  // The step's timing from its costs and every op's duration.
  StepTiming finish_pricing(const StepOpCosts& costs,
                            const std::array<TimeNs, kOpKindCount>& duration) const;
  // The longest path and the latency of `out`, whose sums are done.
  void finish_path(StepTiming& out, const std::array<TimeNs, kOpKindCount>& duration) const;
  // The memory floor and the latency of `out`, whose sums are done.
  void finish_latency(StepTiming& out, TimeNs critical_path) const;
  // Program order is a topological order with layers as contiguous ranges
  // (true for the model's step graph): enables the identical-layer skip.
  bool layered_ = false;
  size_t n_pre_ = 0, n_layer_ = 0, layers_ = 0;

  // Per op kind, fixed at construction: how many vertices of the kind the
  // graph holds (num_hidden_layers for per-layer ops, else 1), and the
  // effective rates its roofline uses, in units per nanosecond.
  std::array<int64_t, kOpKindCount> vertices_per_kind_{};
  std::array<double, kOpKindCount> compute_per_ns_{};
  std::array<double, kOpKindCount> peak_per_ns_{};  // efficiency 1: the shape factor's cap
  std::array<bool, kOpKindCount> on_matrix_{};
  std::array<double, kOpKindCount> memory_bytes_per_ns_{};
  double peak_memory_bytes_per_ns_ = 0;  // the whole step's memory floor
  double link_bytes_per_ns_ = 0;
  double host_bytes_per_ns_ = 0;
  double network_bytes_per_ns_ = 0;
};

}  // namespace kvsim
