#include "models/step_cost_cache.hpp"

#include <bit>
#include <cstdint>
#include <utility>

namespace kvsim {

// The key is every input of StepWork that an op other than attention reads
// (step_detail::StepShape, whose shape_of() names every field of StepWork);
// attention is recomputed on every call.
StepCostCache::StepCostCache(ModelSpec model, StepShapeParams params)
    : model_(std::move(model)), params_(params) {
  // Bad parameters throw on the first costs() call, as step_op_costs does.
  if (params_.tp >= 1) dims_ = step_detail::attention_dims(model_, params_);
  dense_full_ = step_detail::attention_is_dense_full(model_);
}

size_t StepCostCache::slot_of(const step_detail::StepShape& shape) const {
  const auto t = static_cast<uint64_t>(shape.tokens);
  const auto s = static_cast<uint64_t>(shape.samplers);
  return static_cast<size_t>(((t * 3 + s) * 0x9E3779B97F4A7C15ULL) >>
                             (64 - std::countr_zero(kEntries)));
}

const StepOpCosts& StepCostCache::costs(const StepWork& work) {
  step_detail::check_step_inputs(work, params_);
  // The engine's sums are read where they are, not copied.
  step_detail::BatchTotals walked;
  if (!work.totals_given) walked = step_detail::totals_of(work, 0);
  const step_detail::BatchTotals& all = work.totals_given ? work.totals : walked;
  const step_detail::StepShape shape = step_detail::shape_of(work, all);
  last_entry_ = slot_of(shape);
  Entry& e = entries_[last_entry_];
  if (!e.used || !(e.shape == shape)) {
    e.used = false;
    e.ops = StepOpCosts{};
    step_detail::token_op_costs(model_, shape, params_, e.ops);
    e.shape = shape;
    e.stamp = ++fills_;
    e.used = true;
  } else {
    ++reuses_;
  }
  OpCost& attention = e.ops[static_cast<size_t>(OpKind::attention)];
  // step_detail::attention_cost, case by case, the dense one written in place.
  if (all.tokens <= 0)
    attention = OpCost{};
  else if (dense_full_)
    step_detail::write_dense_attention(all, dims_, attention);
  else
    attention = step_detail::variant_attention(model_, work, params_, all);
  return e.ops;
}

}  // namespace kvsim
