#pragma once
// `numerics.reuse_quality` (seed 003 §1.2's quality question): what the
// run's cache policy does to a real model's output when it serves KV it did
// not compute for this prompt. The serving run's synthetic K/V (SPEC 8)
// depends on no context, so it proves placement, not quality; this probe
// takes the first `requests` requests to leave the device and runs each
// one's prompt through a llama2.c checkpoint (stories260K) twice: a full
// prefill, and the path the policy serves it by:
//  - chunk_lru: its segments computed where the chunk cache computes them
//    (chunk_attention), copied and re-rotated, then recompute_ratio of each
//    recomputed (kernels/llama2_chunk_reuse.hpp);
//  - any other block pool (paged with prefix caching): the request's
//    prefix-cache hit computed by a pass of its own, the rest over it, as a
//    hit's blocks were written by an earlier request's pass.
// The prompt is the request's own structure in the model's terms: token ids
// folded into the model's vocabulary (the separator kept as id 0) and each
// segment cut to its first tokens in proportion, so the prompt and the
// compared continuation fit the model's positions (stories260K has 512).
// Reported: the placed KV's and the last prompt logits' max and mean |diff|
// from the full prefill, and top-1 agreement over the greedy continuation.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>

#include "kernels/chunk_mask.hpp"
#include "kernels/llama2_model.hpp"
#include "sim/core/metrics_section.hpp"
#include "sim/serve/step_observer.hpp"

namespace kvsim {

struct ReuseQualityMetrics {
  std::string checkpoint;   // file name of the model probed
  int64_t requests = 0;     // prompts probed
  double prompt_scale = 0;  // mean fraction of each prompt's tokens kept
  double kv_max_abs_diff = 0, kv_mean_abs_diff = 0;
  double logits_max_abs_diff = 0, logits_mean_abs_diff = 0;
  int64_t generated = 0;      // continuation positions compared
  double top1_agreement = 0;  // of those, the fraction whose argmax agreed
  int64_t recomputed_tokens = 0;
};

// Written after `numerics`, only for a run that probed.
MetricsSection reuse_quality_metrics_section();

// What the policy serves a prompt by (see above).
struct ReusePath {
  bool chunks = false;  // chunk_lru's path; otherwise prefix reuse
  kernels::ChunkAttention attention = kernels::ChunkAttention::system_prompt;
  double recompute_ratio = 0;
  int64_t virtual_pos_start = 4096;
  int64_t block_size = 16;
};

class ReuseQualityProbe : public StepObserver {
 public:
  // Throws std::runtime_error naming the checkpoint when it cannot be read.
  ReuseQualityProbe(const std::string& checkpoint, int64_t requests, int64_t generated,
                    const ReusePath& path);

  void on_step_done(const ScheduledBatch&, const KvCachePolicy&, TimeNs) override {}
  // Only releases matter: the engine need not name every sequence each step.
  bool watches_selectively() const override { return true; }
  bool watches(const Sequence&) const override { return false; }
  void on_release(const Sequence& seq) override;
  void report(RunMetrics& metrics) const override;

 private:
  kernels::Llama2Weights weights_;
  std::string checkpoint_name_;
  int64_t requests_, generated_;
  ReusePath path_;
  std::unordered_set<uint64_t> probed_;
  ReuseQualityMetrics sums_;  // means taken at report()
  int64_t agreements_ = 0;
};

}  // namespace kvsim
