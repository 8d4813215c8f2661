#pragma once
// A step's commits as ServingEngine::on_step_done makes them, one policy
// call at a time (the calls KvCachePolicy::commit_step stands for): every
// item and every bulk decode at its horizon, in batch order, the bulk
// decodes' content from Scheduler::content and their horizon to
// Scheduler::committed only. For tests that drive a scheduler over a policy
// directly; the tokens sampled after are theirs to count.
#include <gtest/gtest.h>

#include <cstddef>

#include "sim/cache/kv_cache_policy.hpp"
#include "sim/serve/scheduler.hpp"

namespace kvsim {

inline void commit_step_one_by_one(Scheduler& scheduler, KvCachePolicy& policy,
                                   ScheduledBatch& batch) {
  const BatchSummary& sum = batch.summary;
  EXPECT_EQ(sum.at_horizon_bulk_commits.size(), sum.at_horizon.size());
  size_t next_bulk = 0;
  auto commit_bulk_until = [&](size_t end) {
    for (; next_bulk < end; ++next_bulk) {
      const StepCommit& b = sum.bulk_commits[next_bulk];
      const TokenView tokens = scheduler.content(b.seq, b.generated);
      policy.prepare_commit(b.seq, tokens, b.computed_tokens);
      policy.commit(b.seq, tokens, b.computed_tokens);
      scheduler.committed(b.seq, policy.commit_horizon(b.seq));
    }
  };
  size_t next_at_horizon = 0;
  for (size_t i = 0; i < batch.items.size(); ++i) {
    if (next_at_horizon < sum.at_horizon.size() && sum.at_horizon[next_at_horizon] == i)
      commit_bulk_until(sum.at_horizon_bulk_commits[next_at_horizon++]);
    Sequence* seq = batch.items[i].seq;
    seq->computed += batch.items[i].tokens;
    if (seq->computed >= seq->commit_horizon) {
      // Listed at its horizon.
      EXPECT_TRUE(next_at_horizon > 0 && sum.at_horizon[next_at_horizon - 1] == i);
      policy.prepare_commit(seq->slot, seq->tokens(), seq->computed);
      policy.commit(seq->slot, seq->tokens(), seq->computed);
      seq->commit_horizon = policy.commit_horizon(seq->slot);
      scheduler.committed(seq->slot, seq->commit_horizon);
    }
  }
  commit_bulk_until(sum.bulk_commits.size());
}

}  // namespace kvsim
