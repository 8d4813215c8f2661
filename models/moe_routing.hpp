#pragma once
// Where a step's tokens go in a mixture-of-experts layer: how many
// (token, expert) assignments and how many distinct experts the busiest
// expert-parallel rank serves. The busiest rank sets the layer's time (every
// rank waits for it at the combine), and only the experts a rank's tokens
// touch have their weights read.
#include <cstdint>

#include "models/model_shape_parts.hpp"

namespace kvsim {

struct ExpertRankLoad {
  double assignments = 0;      // (token, expert) pairs the busiest rank computes
  double experts_touched = 0;  // expected distinct experts of that rank that run
};

// `tokens` tokens routed top-k over E experts held E/ep per rank.
// skew 0: uniform routing, each token picks k of E experts uniformly: a rank
//   gets tokens*k/ep assignments and touches (E/ep) * (1 - (1 - k/E)^tokens)
//   experts (an expert is missed by all tokens with (1 - k/E)^tokens).
// skew s > 0: expert popularity p_i ~ 1/(i+1)^s (Zipf, i by popularity), a
//   token picks expert i with probability min(1, k*p_i) (top-k taken as k
//   independent draws of p, capped), and experts sit on ranks round-robin by
//   popularity (i mod ep: what a load balancer such as DeepSeek's EPLB
//   approaches without replicating experts); rank 0, holding the most popular
//   expert, is the busiest. s = 0 gives the uniform figures.
ExpertRankLoad busiest_expert_rank(const MoeShape& moe, double tokens, int64_t ep, double skew);

}  // namespace kvsim
