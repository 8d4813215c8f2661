#include "devices/pipeline_timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "devices/duration_rounding.hpp"

namespace kvsim {
namespace {

// A share of a byte count for one of m micro-batches.
Bytes share(Bytes bytes, int64_t m) {
  return bytes / m;
}

}  // namespace

PipelineTiming::PipelineTiming(const DeviceSpec& device, const ModelSpec& model,
                               TimingModel::Params params, PipelineParams pipeline)
    : device_(device), model_(model), params_(params), pipeline_(pipeline) {
  if (pipeline_.micro_batches < 1)
    throw std::invalid_argument(
        fmt::format("micro_batches must be >= 1, got {}", pipeline_.micro_batches));
  if (const std::string why = pipeline_problem(model_, pipeline_.stages, pipeline_.partition);
      !why.empty())
    throw std::invalid_argument(why);
  stages_ = pipeline_stages(model_.num_hidden_layers, pipeline_.stages, pipeline_.partition);
  for (const PipelineStage& stage : stages_) {
    stage_models_.push_back(stage_model(model_, stage));
    timing_.push_back(std::make_unique<TimingModel>(device_, stage_models_.back(), params_));
  }
  kv_bytes_layers_ =
      pipeline_.kv_bytes_layers > 0 ? pipeline_.kv_bytes_layers : model_.num_hidden_layers;
  if (stages_.size() > 1) {
    const int64_t bw =
        pipeline_.network_link ? device_.network_link_bandwidth : device_.device_link_bandwidth;
    if (bw <= 0)
      throw std::invalid_argument(
          fmt::format("{} gives no {} bandwidth for the activations between pipeline stages",
                      device_.name, pipeline_.network_link ? "network_link" : "device_link"));
  }
}

PipelineTiming::~PipelineTiming() = default;

double PipelineTiming::boundary_bytes(double tokens) const {
  // hidden_states and residual (vLLM's IntermediateTensors).
  return 2.0 * tokens * static_cast<double>(model_.hidden_size) *
         static_cast<double>(model_.activation_bytes());
}

TimeNs PipelineTiming::transfer_time(double tokens) const {
  if (tokens <= 0 || stages_.size() < 2) return 0;
  const double bytes = boundary_bytes(tokens);
  const auto tp = static_cast<double>(params_.tp);
  const double link_bw =
      static_cast<double>(pipeline_.network_link ? device_.network_link_bandwidth
                                                 : device_.device_link_bandwidth) /
      1e9;
  const TimeNs link_latency =
      pipeline_.network_link ? device_.network_link_latency : device_.device_link_latency;
  double ns = bytes / tp / link_bw + static_cast<double>(link_latency);
  if (params_.tp > 1) {
    // The receiving stage gathers the tp slices over its own device link.
    ns += (tp - 1.0) / tp * bytes / (static_cast<double>(device_.device_link_bandwidth) / 1e9) +
          static_cast<double>(device_.device_link_latency);
  }
  return ceil_ns(ns);
}

StepTiming PipelineTiming::price_on_stage(size_t s, const StepWork& work) const {
  const PipelineStage& stage = stages_[s];
  StepOpCosts costs =
      step_op_costs(stage_models_[s], work,
                    StepShapeParams{params_.tp, params_.kv_dtype_bytes, params_.ep,
                                    params_.expert_skew, params_.ep_ranks_per_node});
  auto op = [&costs](OpKind k) -> OpCost& { return costs[static_cast<size_t>(k)]; };
  if (!stage.first) op(OpKind::embedding) = OpCost{};
  if (!stage.last) {
    op(OpKind::final_norm) = OpCost{};
    op(OpKind::lm_head) = OpCost{};
    op(OpKind::sampling) = OpCost{};
  }
  // Swapped and copied blocks: each stage's devices move their own layers.
  const double layer_share =
      static_cast<double>(stage.layers) / static_cast<double>(kv_bytes_layers_);
  for (OpKind k : {OpKind::swap_in, OpKind::swap_out, OpKind::kv_copy}) {
    op(k).host_bytes *= layer_share;
    op(k).mem_bytes *= layer_share;
  }
  return timing_[s]->price_costs(costs, timing_[s]->pass_tokens_of(work));
}

StepTiming PipelineTiming::price(const StepWork& work, int64_t sequences) const {
  if (stages_.size() == 1) return timing_.front()->price(work);
  return price_stages(work, sequences).step;
}

TimeNs PipelineTiming::step_latency(const StepWork& work, int64_t sequences) const {
  if (stages_.size() == 1) return timing_.front()->step_latency(work);
  return price_stages(work, sequences).step.latency;
}

PipelineStepTiming PipelineTiming::price_stages(const StepWork& work, int64_t sequences) const {
  PipelineStepTiming out;
  const size_t p = stages_.size();
  if (p == 1) {
    out.step = timing_.front()->price(work);
    out.stage_time = {out.step.latency};
    out.fill = out.interval = out.step.latency;
    return out;
  }
  const int64_t m = std::clamp<int64_t>(sequences, 1, pipeline_.micro_batches);
  out.micro_batches = m;
  // The micro-batches: equal shares of the step's sums, all alike (priced
  // once, counted m times); with per-sequence work (sliding-window layers),
  // the sequences dealt out in turn.
  std::vector<StepWork> parts;
  int64_t copies = 1;
  auto base_of = [&](StepWork& w) {
    w.fixed_shape = work.fixed_shape;
    w.swap_in_bytes = share(work.swap_in_bytes, m);
    w.swap_out_bytes = share(work.swap_out_bytes, m);
    w.kv_copy_bytes = share(work.kv_copy_bytes, m);
    w.rerope_tokens = work.rerope_tokens / m;
  };
  if (work.totals_given || m == 1) {
    StepWork w;
    base_of(w);
    if (work.totals_given) {
      const double f = 1.0 / static_cast<double>(m);
      w.totals_given = true;
      w.totals = work.totals;
      StepTotals& t = w.totals;
      for (double* v : {&t.tokens, &t.samplers, &t.attended_pairs, &t.kv_tokens_read,
                        &t.context_read, &t.prefill_pairs, &t.prefill_kv_tokens})
        *v *= f;
    } else {
      w.seqs = work.seqs;
    }
    if (m == 1) {
      w.swap_in_bytes = work.swap_in_bytes;
      w.swap_out_bytes = work.swap_out_bytes;
      w.kv_copy_bytes = work.kv_copy_bytes;
      w.rerope_tokens = work.rerope_tokens;
    }
    parts.push_back(std::move(w));
    copies = m;
  } else {
    parts.resize(static_cast<size_t>(m));
    for (StepWork& w : parts) base_of(w);
    for (size_t i = 0; i < work.seqs.size(); ++i)
      parts[i % static_cast<size_t>(m)].seqs.push_back(work.seqs[i]);
  }

  std::vector<TimeNs> busy(p, 0);
  out.stage_time.assign(p, 0);
  double transfer_sum = 0;
  for (const StepWork& w : parts) {
    double tokens = 0;
    if (w.totals_given)
      tokens = w.totals.tokens;
    else
      for (const SeqWork& q : w.seqs) tokens += static_cast<double>(q.query_tokens);
    const TimeNs x = transfer_time(tokens);
    transfer_sum += static_cast<double>(x * copies);
    out.stage_link_bytes +=
        boundary_bytes(tokens) * static_cast<double>(p - 1) * static_cast<double>(copies);
    TimeNs fill = 0;
    for (size_t s = 0; s < p; ++s) {
      const StepTiming t = price_on_stage(s, w);
      const TimeNs send = s + 1 < p ? x : 0;
      fill += t.latency + send;
      busy[s] += (t.latency + send) * copies;
      out.stage_time[s] += t.latency * copies;
      out.step.mem_bytes += t.mem_bytes * static_cast<double>(copies);
      out.step.flops += t.flops * static_cast<double>(copies);
      out.step.memory_floor = std::max(out.step.memory_floor, t.memory_floor);
      for (size_t k = 0; k < kOpKindCount; ++k) out.step.op_time[k] += t.op_time[k] * copies;
    }
    out.fill = std::max(out.fill, fill);
  }
  for (TimeNs& t : out.stage_time) t /= m;
  out.transfer = static_cast<TimeNs>(transfer_sum / static_cast<double>(m));
  const TimeNs busiest = *std::max_element(busy.begin(), busy.end());
  out.interval = busiest / m;
  out.step.critical_path = out.fill;
  out.step.latency = std::max(out.fill, busiest);
  return out;
}

}  // namespace kvsim
