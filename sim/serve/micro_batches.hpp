#pragma once
// A step's batch cut into micro-batches, as llama.cpp's llama_decode runs
// a batch of n_batch tokens: llama_batch_allocr splits it into ubatches of
// at most n_ubatch tokens (split_simple for a unified cache: the batch's
// tokens in order), and each ubatch is one graph compute, one after
// another (src/llama-context.cpp, llama_context::decode). Each piece is
// priced as a step of its own: every ubatch reads the weights again.
#include <cstdint>
#include <vector>

#include "models/step_ops.hpp"
#include "sim/cache/kv_cache_policy.hpp"
#include "sim/serve/scheduler.hpp"

namespace kvsim {

struct MicroBatch {
  StepWork work;          // its sequences' pieces (seqs), totals not given
  int64_t sequences = 0;  // pieces in it (a sequence cut in two counts in both)
};

// The items of `batch` in batch order, cut every `ubatch` tokens; a
// sequence's piece attends over its own earlier pieces (context_before
// grows by each piece, through the policy's attention_context) and samples
// only in its last piece, when the item samples. The batch's swap bytes go
// with the first micro-batch (they precede the compute). `ubatch` > 0.
std::vector<MicroBatch> split_micro_batches(const ScheduledBatch& batch,
                                            const KvCachePolicy& policy, int64_t ubatch,
                                            bool fixed_shape);

}  // namespace kvsim
