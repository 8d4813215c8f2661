#pragma once
// A step's commits as ServingEngine::on_step_done makes them, one policy
// call at a time (the calls KvCachePolicy::commit_step stands for): every
// item and every bulk decode at its horizon, in batch order, the bulk
// decodes' content from Scheduler::content and their horizon to
// Scheduler::committed only. For tests that drive a scheduler over a policy
// directly; the tokens sampled after are theirs to count.
#include <cstddef>

#include "sim/cache/kv_cache_policy.hpp"
#include "sim/serve/scheduler.hpp"

namespace kvsim {

inline void commit_step_one_by_one(Scheduler& scheduler, KvCachePolicy& policy,
                                   ScheduledBatch& batch) {
  const BatchSummary& sum = batch.summary;
  size_t next_bulk = 0;
  auto commit_bulk_before = [&](size_t item) {
    for (; next_bulk < sum.bulk_commits.size() && sum.bulk_commits[next_bulk].items_before <= item;
         ++next_bulk) {
      const BatchSummary::BulkCommit& b = sum.bulk_commits[next_bulk];
      const TokenView tokens = scheduler.content(b.slot, b.generated);
      policy.prepare_commit(b.slot, tokens, b.computed);
      policy.commit(b.slot, tokens, b.computed);
      scheduler.committed(b.slot, policy.commit_horizon(b.slot));
    }
  };
  for (size_t i = 0; i < batch.items.size(); ++i) {
    commit_bulk_before(i);
    Sequence* seq = batch.items[i].seq;
    seq->computed += batch.items[i].tokens;
    if (seq->computed >= seq->commit_horizon) {
      policy.prepare_commit(seq->slot, seq->tokens(), seq->computed);
      policy.commit(seq->slot, seq->tokens(), seq->computed);
      seq->commit_horizon = policy.commit_horizon(seq->slot);
      scheduler.committed(seq->slot, seq->commit_horizon);
    }
  }
  commit_bulk_before(batch.items.size());
}

}  // namespace kvsim
