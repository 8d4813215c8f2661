// numerics.mode selects the checker: `full` checks every sequence every
// step, `sampled` follows one request in sample_every for its whole life
// (chunk_lru: checks every sequence one step in sample_every, since its
// chunk placement writes every sequence's shadow), `off` runs none (SPEC 8).
// Which checker follows a policy's blocks, the policy says
// (BlockPoolContract::numerics). numerics.reuse_quality adds its probe
// (sim/numerics/reuse_quality_probe.hpp) beside any of them.
#include "sim/numerics/numerics_observer.hpp"

#include "sim/numerics/chunk_numerics_checker.hpp"
#include "sim/numerics/numerics_checker.hpp"
#include "sim/numerics/reuse_quality_probe.hpp"
#include "sim/numerics/sampled_numerics_checker.hpp"

namespace kvsim {

namespace {

// The checker and the reuse-quality probe side by side.
class ObserverPair final : public StepObserver {
 public:
  ObserverPair(std::unique_ptr<StepObserver> a, std::unique_ptr<StepObserver> b)
      : a_(std::move(a)), b_(std::move(b)) {}
  void on_step_done(const ScheduledBatch& batch, const KvCachePolicy& policy, TimeNs now) override {
    a_->on_step_done(batch, policy, now);
    b_->on_step_done(batch, policy, now);
  }
  bool watches_selectively() const override {
    return a_->watches_selectively() && b_->watches_selectively();
  }
  bool watches(const Sequence& seq) const override { return a_->watches(seq) || b_->watches(seq); }
  void on_release(const Sequence& seq) override {
    a_->on_release(seq);
    b_->on_release(seq);
  }
  void report(RunMetrics& metrics) const override {
    a_->report(metrics);
    b_->report(metrics);
  }

 private:
  std::unique_ptr<StepObserver> a_, b_;
};

std::unique_ptr<StepObserver> make_reuse_quality_probe(const InstanceSpec& s) {
  const NumericsConfig& n = s.numerics;
  const BlockPoolContract* pool = s.policy().block_pool();
  if (n.quality_checkpoint.empty() || pool == nullptr) return nullptr;
  ReusePath path;
  path.chunks = pool->reuses_chunks();
  path.attention = pool->chunk_attention();
  path.recompute_ratio = pool->chunk_recompute_ratio();
  path.virtual_pos_start = pool->virtual_pos_start();
  path.block_size = pool->block_size();
  return std::make_unique<ReuseQualityProbe>(n.quality_checkpoint, n.quality_requests,
                                             n.quality_generated, path);
}

std::unique_ptr<StepObserver> make_checker(const InstanceSpec& s, const PoolSizing& sizing) {
  if (!s.numerics.on()) return nullptr;
  const BlockPoolContract* pool = s.policy().block_pool();
  if (pool == nullptr || pool->numerics() == ServingNumerics::none) return nullptr;
  numerics::CheckerParams params = numerics::checker_params(s, sizing);
  if (pool->numerics() == ServingNumerics::chunks) {
    params.sample_sequences = false;
    return std::make_unique<numerics::ChunkLruNumericsChecker>(params, sizing.chunk_pool_blocks,
                                                               pool->virtual_pos_start());
  }
  if (params.sample_sequences) {
    // Two values per 32-bit hash, vectorised (synthetic_kv.hpp): sampled's budget.
    params.shape.values_per_hash = 2;
    return std::make_unique<numerics::SampledNumericsChecker>(params);
  }
  return std::make_unique<numerics::NumericsChecker>(params);
}

}  // namespace

std::unique_ptr<StepObserver> make_numerics_observer(const InstanceSpec& s,
                                                     const PoolSizing& sizing) {
  std::unique_ptr<StepObserver> checker = make_checker(s, sizing);
  std::unique_ptr<StepObserver> probe = make_reuse_quality_probe(s);
  if (checker && probe) return std::make_unique<ObserverPair>(std::move(checker), std::move(probe));
  return checker ? std::move(checker) : std::move(probe);
}

}  // namespace kvsim
