#include "sim/core/acceptance_model.hpp"

#include <algorithm>
#include <stdexcept>

namespace kvsim {

int64_t accepted_drafts(int64_t draft_tokens, double acceptance_rate,
                        const std::function<double()>& uniform01) {
  return AcceptanceModel::constant(acceptance_rate).accepted(draft_tokens, uniform01);
}

AcceptanceModel AcceptanceModel::constant(double rate) {
  if (!(rate >= 0 && rate <= 1)) throw std::invalid_argument("acceptance rate outside [0, 1]");
  AcceptanceModel m;
  m.kind_ = Kind::constant;
  m.rate_ = rate;
  return m;
}

AcceptanceModel AcceptanceModel::per_position(std::vector<double> rates) {
  AcceptanceModel m;
  m.kind_ = Kind::per_position;
  double before = 1;
  for (const double r : rates) {
    if (!(r >= 0 && r <= before))
      throw std::invalid_argument("per-position acceptance rates must be non-increasing in [0, 1]");
    // P(i | i - 1) = P(i) / P(i - 1); after a zero every later one is zero.
    m.conditional_.push_back(before > 0 ? r / before : 0);
    before = r;
  }
  m.unconditional_ = std::move(rates);
  return m;
}

AcceptanceModel AcceptanceModel::lengths(std::vector<double> weights) {
  AcceptanceModel m;
  m.kind_ = Kind::lengths;
  double total = 0;
  for (const double w : weights) {
    if (!(w >= 0)) throw std::invalid_argument("accepted-length weights must be >= 0");
    total += w;
  }
  if (!(total > 0)) throw std::invalid_argument("accepted-length weights are all zero");
  double run = 0;
  for (const double w : weights) m.cumulative_.push_back((run += w) / total);
  m.cumulative_.back() = 1;
  return m;
}

int64_t AcceptanceModel::length_at(double u, int64_t drafts) const {
  const auto j = static_cast<int64_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), u) -
                                      cumulative_.begin());
  return std::min<int64_t>({j, drafts, static_cast<int64_t>(cumulative_.size()) - 1});
}

double AcceptanceModel::position_rate(int64_t i) const {
  switch (kind_) {
    case Kind::constant: {
      double p = 1;
      for (int64_t k = 0; k <= i; ++k) p *= rate_;
      return p;
    }
    case Kind::per_position:
      return i < static_cast<int64_t>(unconditional_.size())
                 ? unconditional_[static_cast<size_t>(i)]
                 : 0.0;
    case Kind::lengths: {
      // P(accepted > i) = 1 - CDF(i).
      if (i + 1 >= static_cast<int64_t>(cumulative_.size())) return 0.0;
      return 1.0 - cumulative_[static_cast<size_t>(i)];
    }
  }
  return 0;
}

// E[accepted] = sum over positions of P(position accepted).
double AcceptanceModel::expected_accepted(int64_t drafts) const {
  double e = 0;
  for (int64_t i = 0; i < drafts; ++i) e += position_rate(i);
  return e;
}

}  // namespace kvsim
