// A request's way through the scheduler: the hash memo a finished sequence
// leaves serves the next admission with exactly the hashes a memo of its
// own would hold, and a queue that waits on nobody admits nobody.
#include <gtest/gtest.h>

#include <vector>

#include "sim/cache/paged_policy.hpp"
#include "sim/serve/scheduler.hpp"
#include "workloads/token_content.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr int64_t kBlock = 4;
constexpr int64_t kVocab = 32000;

PagedParams paged(int64_t blocks) {
  PagedParams p;
  p.num_blocks = blocks;
  p.block_size = kBlock;
  p.block_bytes = 1000;
  p.prefix_caching = true;
  return p;
}

// A request described as the single-shot workloads describe theirs.
void describe(Sequence& seq, uint64_t id, int64_t prompt, int64_t output) {
  seq.request.id = id;
  seq.request.prompt.append_stream(1000 + id, kVocab, prompt);
  seq.request.output.append_stream(2000 + id, kVocab, output);
  seq.prompt_tokens = seq.prompt_len();
  seq.output_tokens = seq.output_len();
}

TEST(RequestLifecycle, AFinishedSequencesMemoServesTheNextAdmissionWithItsOwnHashes) {
  PagedPolicy policy(paged(64));
  SchedulerParams params;
  params.max_num_seqs = 1;  // the second waits until the first finishes
  Scheduler scheduler(params, policy);
  Sequence first, second;
  describe(first, 0, 10 * kBlock, 4);
  describe(second, 1, 6 * kBlock + 1, 4);
  scheduler.add_waiting(&first);
  scheduler.add_waiting(&second);

  ScheduledBatch batch;
  scheduler.schedule(batch);
  ASSERT_EQ(batch.summary.admitted, std::vector<Sequence*>{&first});
  EXPECT_EQ(first.block_hashes.size(), 10u);
  const size_t room = first.block_hashes.capacity();
  EXPECT_EQ(second.block_hashes.capacity(), 0u);

  scheduler.finish(&first);
  EXPECT_EQ(first.block_hashes.capacity(), 0u);  // handed on, not kept
  scheduler.schedule(batch);
  ASSERT_EQ(batch.summary.admitted, std::vector<Sequence*>{&second});
  EXPECT_EQ(second.block_hashes.capacity(), room);

  // The hashes a memo of its own would hold, none of the first's.
  std::vector<BlockHash> own;
  policy.lookup_prefix(second.tokens(), own);
  EXPECT_EQ(second.block_hashes, own);
  EXPECT_EQ(own.size(), 6u);
  scheduler.finish(&second);
  policy.check_drained();
}

TEST(RequestLifecycle, AnEmptyQueueAdmitsNobodyAndTheRunningGoOn) {
  PagedPolicy policy(paged(16));
  Scheduler scheduler(SchedulerParams{}, policy);
  Sequence only;
  describe(only, 0, 2 * kBlock, 3);
  scheduler.add_waiting(&only);
  ScheduledBatch batch;
  scheduler.schedule(batch);
  ASSERT_EQ(batch.summary.admitted.size(), 1u);
  EXPECT_EQ(scheduler.num_waiting(), 0u);
  only.computed += batch.items.front().tokens;  // the prompt, and a token sampled
  ++only.generated;
  scheduler.schedule(batch);  // nobody waits: the running decode alone
  EXPECT_TRUE(batch.summary.admitted.empty());
  ASSERT_EQ(batch.items.size(), 1u);
  EXPECT_EQ(batch.items.front().seq, &only);
  EXPECT_EQ(batch.items.front().tokens, 1);
  EXPECT_EQ(scheduler.num_running(), 1u);
  scheduler.finish(&only);
  policy.check_drained();
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
