#include "models/moe_routing.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace kvsim {

ExpertRankLoad busiest_expert_rank(const MoeShape& moe, double tokens, int64_t ep, double skew) {
  if (ep < 1) throw std::invalid_argument("expert parallel size must be >= 1");
  if (skew < 0) throw std::invalid_argument("expert routing skew must be >= 0");
  ExpertRankLoad load;
  if (!moe.enabled() || tokens <= 0) return load;
  const double e = static_cast<double>(moe.experts);
  const double k = static_cast<double>(moe.experts_per_token);
  const double ranks = static_cast<double>(ep);
  if (skew == 0) {
    load.assignments = tokens * k / ranks;
    load.experts_touched = e / ranks * (1.0 - std::pow(1.0 - k / e, tokens));
    return load;
  }
  std::vector<double> p(static_cast<size_t>(moe.experts));
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] = std::pow(static_cast<double>(i + 1), -skew);
    sum += p[i];
  }
  for (size_t i = 0; i < p.size(); i += static_cast<size_t>(ep)) {
    const double pick = std::min(1.0, k * p[i] / sum);
    load.assignments += tokens * pick;
    load.experts_touched += 1.0 - std::pow(1.0 - pick, tokens);
  }
  return load;
}

}  // namespace kvsim
