#pragma once
// Data-parallel attention ranks of one MoE deployment, stepping together
// (vLLM V1's DP engine cores with expert parallelism,
// vllm/v1/engine/core.py DPEngineCoreProc; vllm-ascend runs DeepSeek so:
// docs/source/tutorials/models/DeepSeek-R1.md, dp4 x tp4). Each rank has its
// own scheduler, running batch and KV pool (a ServingEngine of its own), but
// the MoE layers' all-to-all is a collective of every rank: a step of the
// group starts when the ranks with work have scheduled their batches, every
// rank's tokens meet in the expert group (moe_tokens: the busiest expert
// rank serves the whole group's assignments), and the step ends for all at
// the slowest rank's price. A rank with nothing to run joins with a dummy
// batch of one token (vLLM's execute_dummy_batch) and waits the step out.
//
// On the clock: the ranks with a step ready join at an instant (their
// kicks run at the engine's kick priority); the group prices and launches
// the step after the last of those (kPrioLaunch), and a rank kicked while
// a step of the group is in flight is woken when it ends, to join the next
// one. Deterministic: ranks are priced and woken in rank order.
#include <cstdint>
#include <vector>

#include "base/units.hpp"
#include "sim/core/simulator.hpp"

namespace kvsim {

// One rank as the group drives it (the serving engine's side).
class DataParallelRank {
 public:
  virtual ~DataParallelRank() = default;
  // The step the rank holds, its expert group routing `group_tokens` in the
  // target's pass and `group_draft_tokens` in each one-token pass of a
  // speculative drafter (its first pass routes the target's tokens).
  virtual TimeNs price_step(double group_tokens, double group_draft_tokens) = 0;
  virtual double step_tokens() const = 0;  // tokens it computes in that step
  // Tokens of each of its drafter's one-token passes in that step (the
  // sequences that sample); 0 without speculation.
  virtual double draft_tokens() const = 0;
  virtual int64_t step_seqs() const = 0;      // sequences in its batch
  virtual void launch_step(TimeNs step) = 0;  // the step runs `step` for every rank
  virtual void wake() = 0;                    // try to schedule again
};

struct DataParallelRankMetrics {
  int64_t steps = 0;   // group steps it ran a batch in
  double tokens = 0;   // summed over them
  double seqs = 0;     // batch sizes summed over them
  double own_ns = 0;   // its own price of those steps, summed
  double wait_ns = 0;  // group step time it spent past its own price (or idle)
};

struct DataParallelGroupMetrics {
  int64_t ranks = 0;
  int64_t steps = 0;         // steps of the group
  double step_ns = 0;        // their durations summed
  double wait_ns = 0;        // rank-time past each rank's own price, all ranks
  double max_over_mean = 0;  // sum over steps of slowest price / mean price of the busy ranks
  std::vector<DataParallelRankMetrics> per_rank;
};

class DataParallelGroup {
 public:
  // After every same-instant kick (the serving engine's are at 2).
  static constexpr int32_t kPrioLaunch = 3;

  DataParallelGroup(Simulator& sim, int64_t ranks);
  void attach(size_t rank, DataParallelRank* r);
  size_t ranks() const { return ranks_.size(); }

  // A step of the group is in flight: a rank must not start one.
  bool launched() const { return launched_; }
  // `rank` wants to schedule while a step is in flight: woken at its end.
  void defer(size_t rank);
  // `rank` holds a step ready now.
  void join(size_t rank);
  // `rank`'s part of the launched step ended.
  void finished(size_t rank);

  const DataParallelGroupMetrics& metrics() const { return metrics_; }

 private:
  void launch();

  Simulator& sim_;
  std::vector<DataParallelRank*> ranks_;
  std::vector<char> joined_, deferred_;
  bool launch_pending_ = false, launched_ = false;
  int64_t in_flight_ = 0;
  std::vector<TimeNs> price_;  // scratch, per rank
  DataParallelGroupMetrics metrics_;
};

}  // namespace kvsim
