#pragma once
// The serving engine as a rank of its data-parallel group
// (sim/serve/data_parallel_group.hpp): the group prices the step the engine
// holds under the group's tokens and launches it for the slowest rank's
// time. Private to the engine's files.
#include "sim/serve/engine.hpp"

namespace kvsim {

// The engine as a rank of its data-parallel group.
class ServingEngine::DpRank final : public DataParallelRank {
 public:
  explicit DpRank(ServingEngine& e) : e_(e) {}
  TimeNs price_step(double group_tokens, double group_draft_tokens) override {
    e_.work_.moe_tokens = group_tokens;
    e_.group_draft_tokens_ = group_draft_tokens;
    e_.price_step();
    return e_.step_latency_;
  }
  double step_tokens() const override { return static_cast<double>(e_.batch_.total_tokens); }
  double draft_tokens() const override {
    return e_.speculation_ ? static_cast<double>(e_.draft_batch_.sequences) : 0.0;
  }
  int64_t step_seqs() const override { return e_.batch_.num_seqs(); }
  void launch_step(TimeNs step) override {
    e_.step_latency_ = step;
    e_.launch_step(e_.sim_.now());
  }
  void wake() override { e_.kick(); }

 private:
  ServingEngine& e_;
};

}  // namespace kvsim
