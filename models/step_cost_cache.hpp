#pragma once
// Step costs for one model and one set of shape parameters, remembered
// across steps. Consecutive engine steps mostly repeat their shape: a
// decode step differs from the last only in attention's context sums (and,
// as sequences arrive and finish, the batch size alternates between a few
// values). Every op but attention reads only the step's shape (token
// counts, the graph's flags, the once-per-step transfers), so those ops are
// kept for the last few shapes and only attention is worked out per step.
// The answer is exactly step_op_costs(): the same formulas on the same
// inputs.
#include <array>
#include <cstddef>
#include <cstdint>

#include "models/model_spec.hpp"
#include "models/step_ops.hpp"
#include "models/step_ops_parts.hpp"

namespace kvsim {

class StepCostCache {
 public:
  StepCostCache(ModelSpec model, StepShapeParams params);

  // step_op_costs(model, work, params), with its exceptions. The reference
  // stays valid until the next call.
  const StepOpCosts& costs(const StepWork& work);

  const ModelSpec& model() const { return model_; }
  const StepShapeParams& params() const { return params_; }
  // Calls answered from a remembered shape (tests check the path is taken).
  int64_t reuses() const { return reuses_; }
  // Which remembered shape the last costs() call used, and a stamp that
  // changes whenever that entry is filled anew: equal stamps mean every op
  // but attention costs what it cost at the previous call with that stamp
  // (a caller may keep what it derived from those ops under the stamp).
  size_t last_entry() const { return last_entry_; }
  uint64_t last_stamp() const { return entries_[last_entry_].stamp; }
  // Entry `entry`'s stamp now (as last_stamp() gave it for the call that
  // used it: equal while the entry holds that filling).
  uint64_t stamp_at(size_t entry) const { return entries_[entry].stamp; }
  // Attention is the dense formula (no latent attention, no sliding
  // layers), of these dimensions (step_detail::write_dense_attention).
  bool dense_full() const { return dense_full_; }
  const step_detail::AttentionDims& dims() const { return dims_; }
  // Batches of a few sizes alternate: one entry per recent shape, chosen by
  // a hash of the token counts.
  static constexpr size_t kEntries = 64;
  static_assert((kEntries & (kEntries - 1)) == 0, "slot_of takes the hash's top bits");

 private:
  struct Entry {
    bool used = false;
    uint64_t stamp = 0;
    step_detail::StepShape shape;
    StepOpCosts ops{};
  };
  size_t slot_of(const step_detail::StepShape& shape) const;

  ModelSpec model_;
  StepShapeParams params_;
  step_detail::AttentionDims dims_;
  bool dense_full_ = true;
  std::array<Entry, kEntries> entries_{};
  int64_t reuses_ = 0;
  uint64_t fills_ = 0;
  size_t last_entry_ = 0;
};

}  // namespace kvsim
