#pragma once
// Something that watches a run step by step without changing it: the
// numerics checker (SPEC 8) runs the real kernels through the policy's block
// tables after every step. Observers see the batch after the step's tokens
// are committed to the cache and before finished sequences release their
// blocks.
#include <memory>
#include <stdexcept>

#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/core/metrics.hpp"
#include "sim/serve/scheduler.hpp"

namespace kvsim {

struct InstanceSpec;

// A check an observer runs on the simulation failed (a numerics mismatch):
// the run stops and `kvsim run` exits 1, like a failed expectation.
class CheckFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  // A step finished at `now`: every item's tokens are computed and committed.
  // The batch names every sequence as an item (no
  // BatchSummary::bulk_decodes) unless watches_selectively(): then it names
  // those watches() names, and the others in every step where they start or
  // fill a block (SchedulerParams::watched); their bulk steps write inside a
  // block they already hold.
  // May throw (a failed numerics check stops the run).
  virtual void on_step_done(const ScheduledBatch& batch, const KvCachePolicy& policy,
                            TimeNs now) = 0;
  // Whether the observer needs only the sequences watches() names in every
  // step (the default: all of them, every step).
  virtual bool watches_selectively() const { return false; }
  virtual bool watches(const Sequence& seq) const {
    (void)seq;
    return true;
  }
  // A sequence's KV leaves the device: it finished, or was preempted.
  virtual void on_release(const Sequence& seq) { (void)seq; }
  // Adds what the observer measured to the run's metrics.
  virtual void report(RunMetrics& metrics) const { (void)metrics; }
};

// What the engine is given to watch its steps (the assembly passes the
// numerics checker `numerics.mode` asks for, sim/numerics/): nullptr
// from it, or no factory, for none.
using StepObserverFactory = std::unique_ptr<StepObserver> (*)(const InstanceSpec& s,
                                                              const PoolSizing& sizing);

}  // namespace kvsim
