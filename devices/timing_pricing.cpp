// The timing model's pricing of a step from its op costs: durations
// remembered per shape, sums kept exact where they can be, and the
// longest path over the step graph (timing_model.cpp builds the tables).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "devices/device_family.hpp"
#include "devices/duration_rounding.hpp"
#include "devices/timing_model.hpp"

namespace kvsim {

namespace {
// Every field op_duration() may read: a field added to OpCost must be
// compared here too, or a remembered duration could outlive its cost.
static_assert(sizeof(OpCost) == 12 * sizeof(double), "OpCost changed: compare it in same_cost()");
bool same_cost(const OpCost& a, const OpCost& b) {
  return a.present == b.present && a.flops == b.flops && a.mem_bytes == b.mem_bytes &&
         a.link_bytes == b.link_bytes && a.host_bytes == b.host_bytes &&
         a.weight_bytes == b.weight_bytes && a.kv_read_bytes == b.kv_read_bytes &&
         a.kv_write_bytes == b.kv_write_bytes && a.residual_bytes == b.residual_bytes &&
         a.vector_flops == b.vector_flops && a.layer_share == b.layer_share &&
         a.network_bytes == b.network_bytes;
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
