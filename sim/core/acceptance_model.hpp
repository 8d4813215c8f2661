#pragma once
// How many of a verify pass's drafts the target model accepts: the run of
// accepted drafts up to the first rejection (standard speculative sampling,
// Leviathan et al. 2023; vLLM's rejection sampler keeps the accepted prefix
// and adds one token of its own). Shared by the engines that speculate: the
// serving engine (speculative:, sim/serve/speculation.hpp) and Genie's
// dialog (workload.speculative, sim/genie/).
//
// Three ways to state it, as users have the figures:
//   constant      every draft accepted with probability `rate`, given the
//                 ones before it were;
//   per_position  vLLM's "acceptance rate per position" (spec decode
//                 metrics: num_accepted_tokens_per_pos / num_drafts): the
//                 unconditional probability that draft i is accepted, so
//                 non-increasing; drafts past the list are rejected;
//   lengths       an empirical distribution of accepted drafts per pass:
//                 weights of 0, 1, ..., n accepted (n <= K), cut at the
//                 drafts a pass has.
#include <cstdint>
#include <functional>
#include <vector>

namespace kvsim {

// The constant-rate run: each draft is accepted with probability
// `acceptance_rate` (a draw from `uniform01` each) until the first
// rejection. Genie's verify passes take it as it is.
int64_t accepted_drafts(int64_t draft_tokens, double acceptance_rate,
                        const std::function<double()>& uniform01);

class AcceptanceModel {
 public:
  enum class Kind : uint8_t { constant, per_position, lengths };

  static AcceptanceModel constant(double rate);
  // `rates[i]`: P(draft i accepted), non-increasing, in [0, 1].
  static AcceptanceModel per_position(std::vector<double> rates);
  // `weights[j]`: relative frequency of j accepted drafts (>= 0, some > 0).
  static AcceptanceModel lengths(std::vector<double> weights);

  Kind kind() const { return kind_; }
  // Drafts accepted out of `drafts`, from draws of `uniform01` in [0, 1):
  // constant and per_position draw once per draft until a rejection,
  // lengths once per pass.
  int64_t accepted(int64_t drafts, const std::function<double()>& uniform01) const {
    return accepted_with(drafts, uniform01);
  }
  // The same with any callable (no std::function per draw: the serving
  // engine draws for every sequence of every step).
  template <class Uniform01>
  int64_t accepted_with(int64_t drafts, Uniform01&& uniform01) const {
    switch (kind_) {
      case Kind::constant: {
        int64_t a = 0;
        while (a < drafts && uniform01() < rate_) ++a;
        return a;
      }
      case Kind::per_position: {
        const auto listed = static_cast<int64_t>(conditional_.size());
        int64_t a = 0;
        while (a < drafts && a < listed && uniform01() < conditional_[static_cast<size_t>(a)]) ++a;
        return a;
      }
      case Kind::lengths:
        return length_at(uniform01(), drafts);
    }
    return 0;
  }
  // P(draft i accepted | the drafts before it were) for the kinds that draw
  // once per draft (constant, per_position; 0 past a per_position list,
  // where accepted_with stops), so that a caller may draw every draft at
  // once and keep the run before the first rejection.
  double conditional_rate(int64_t i) const {
    if (kind_ == Kind::constant) return rate_;
    return i < static_cast<int64_t>(conditional_.size()) ? conditional_[static_cast<size_t>(i)]
                                                         : 0.0;
  }
  // E[accepted drafts] out of `drafts`: with a constant rate a,
  // a + a^2 + ... + a^K, so 1 + E = (1 - a^(K+1)) / (1 - a) tokens a pass.
  double expected_accepted(int64_t drafts) const;
  // P(draft i accepted) for i < drafts: the figure vLLM reports per position.
  double position_rate(int64_t i) const;

 private:
  Kind kind_ = Kind::constant;
  double rate_ = 0;
  std::vector<double> conditional_;  // per_position: P(i accepted | i - 1 accepted)
  std::vector<double> unconditional_;
  std::vector<double> cumulative_;  // lengths: normalised CDF over 0..n accepted
  int64_t length_at(double u, int64_t drafts) const;
};

}  // namespace kvsim
