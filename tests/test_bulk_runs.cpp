// The scheduler's runs of bulk decodes as the engine uses them, driven
// directly over a paged policy: the commit of a bulk decode takes its
// content from Scheduler::content (the same view as its request's) and its
// new horizon goes to Scheduler::committed only, and every Sequence is
// brought up to date when settled (its commit horizon the policy's).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "sim/cache/paged_policy.hpp"
#include "sim/serve/scheduler.hpp"
#include "tests/support/step_commits.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

bool same_view(const TokenView& a, const TokenView& b) {
  return a.prompt == b.prompt && a.prompt_len == b.prompt_len && a.output == b.output &&
         a.output_len == b.output_len && a.prompt_content == b.prompt_content &&
         a.output_content == b.output_content;
}

// After a step, what the engine does with it (ServingEngine::on_step_done,
// without latencies): commits in batch order, then tokens sampled.
// Returns the bulk commits seen.
int64_t finish_step(Scheduler& scheduler, PagedPolicy& policy, ScheduledBatch& batch,
                    std::vector<Sequence*>& done) {
  const BatchSummary& sum = batch.summary;
  commit_step_one_by_one(scheduler, policy, batch);
  for (const ScheduledSeq& item : batch.items) {
    Sequence* seq = item.seq;
    if (seq->computed < seq->known_tokens()) continue;
    ++seq->generated;
    seq->last_token_at = 1;
    if (seq->generated >= seq->output_tokens) {
      scheduler.finish(seq);
      done.push_back(seq);
    }
  }
  return static_cast<int64_t>(sum.bulk_commits.size());
}

TEST(BulkRuns, ABulkCommitReadsTheRequestsContentAndItsHorizonReachesTheSequence) {
  constexpr int64_t kBlock = 4;
  PagedParams params;
  params.num_blocks = 256;
  params.block_size = kBlock;
  params.block_bytes = 1;
  params.prefix_caching = true;
  PagedPolicy policy(params);
  SchedulerParams sp;
  sp.max_num_seqs = 8;
  sp.max_batched_tokens = 1024;
  sp.bulk_decodes = true;
  Scheduler scheduler(sp, policy);
  // Prompts and outputs of several lengths, so that blocks fill in
  // different steps; ids as vectors (the view's pointers are theirs).
  std::vector<Sequence> seqs(6);
  for (size_t k = 0; k < seqs.size(); ++k) {
    Sequence& seq = seqs[k];
    seq.request.id = k;
    std::vector<int32_t> prompt(5 + 3 * k);
    std::iota(prompt.begin(), prompt.end(), static_cast<int32_t>(100 * k));
    std::vector<int32_t> output(30 + 7 * k);
    std::iota(output.begin(), output.end(), static_cast<int32_t>(100 * k + 50));
    seq.request.prompt = std::move(prompt);
    seq.request.output = std::move(output);
    seq.prompt_tokens = seq.prompt_len();
    seq.output_tokens = seq.output_len();
    scheduler.add_waiting(&seq);
  }
  std::vector<Sequence*> done;
  ScheduledBatch batch;
  int64_t bulk_commits = 0;
  for (int step = 0; step < 200 && done.size() < seqs.size(); ++step) {
    scheduler.schedule(batch);
    for (const StepCommit& b : batch.summary.bulk_commits) {
      const Sequence* owner = nullptr;
      for (const Sequence& seq : seqs)
        if (seq.slot == b.seq && seq.state == SeqState::running) owner = &seq;
      ASSERT_NE(owner, nullptr);
      // The entry's own content (what commit_step reads) is the request's.
      EXPECT_TRUE(same_view(
          b.tokens(), TokenView::of(owner->request.prompt, owner->request.output, b.generated)));
      EXPECT_TRUE(
          same_view(scheduler.content(b.seq, b.generated),
                    TokenView::of(owner->request.prompt, owner->request.output, b.generated)));
    }
    bulk_commits += finish_step(scheduler, policy, batch, done);
    scheduler.step_done(step + 1);
    // Between steps, every running sequence settled: its horizon is the
    // policy's (a bulk commit told only the scheduler).
    if (step % 5 == 4) {
      scheduler.settle_all();
      for (const Sequence& seq : seqs) {
        if (seq.state != SeqState::running) continue;
        EXPECT_EQ(seq.commit_horizon, policy.commit_horizon(seq.slot))
            << "request " << seq.request.id << " step " << step;
      }
    }
  }
  EXPECT_EQ(done.size(), seqs.size());
  EXPECT_GT(bulk_commits, 10);  // the runs went through block fills
  policy.check_drained();       // every block back, every token accounted for
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
