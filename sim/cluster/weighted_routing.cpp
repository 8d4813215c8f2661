// weighted: a weighted sum of scorers, each in [0, 1] with 1 the best, the
// highest sum taking the request, as llm-d's inference scheduler (the
// Gateway API Inference Extension's endpoint picker) composes its scorer
// plugins (kubernetes-sigs/gateway-api-inference-extension,
// pkg/epp/scheduling/framework/plugins/scorer/ and .../multi/prefix/):
// - prefix: the share of the prompt's tokens the prefix index says the
//   instance holds (prefix-cache-scorer: matched chunks / prompt chunks);
// - queue: (max - q) / (max - min) over the candidates of q, the requests
//   routed to the instance and not finished, 1 for all when they are equal
//   (queue-scorer, which reads the engine's waiting-queue metric; here the
//   router's own count, with no scrape interval);
// - kv_utilization: 1 - the fraction of the instance's KV blocks in use
//   (kv-cache-utilization-scorer over vLLM's kv_cache_usage), read at the
//   instant of routing.
// Defaults are the weights llm-d's inference-scheduling guide gives them
// (prefix 3, queue 2, kv utilisation 2). Ties go to the instance with
// fewer outstanding tokens, then to the lowest index (llm-d's max-score
// picker draws among ties at random; a fixed rule keeps runs reproducible).
#include <algorithm>

#include "sim/cluster/routing_policies.hpp"

namespace kvsim {
namespace {

struct ScorerWeights {
  double prefix = 3, queue = 2, kv_utilization = 2;
};

class WeightedRouting final : public RoutingPolicy {
 public:
  WeightedRouting(ScorerWeights w, std::unique_ptr<PrefixIndex> index)
      : w_(w), index_(std::move(index)) {}
  std::string_view name() const override { return "weighted"; }
  PrefixIndex* prefix_index() override { return index_.get(); }

  size_t pick(const Request& request, std::span<const InstanceView> instances) override {
    index_->overlaps(request, instances, overlaps_);
    int64_t qmin = instances[0].outstanding_requests, qmax = qmin;
    for (const InstanceView& v : instances) {
      qmin = std::min(qmin, v.outstanding_requests);
      qmax = std::max(qmax, v.outstanding_requests);
    }
    const auto prompt = static_cast<double>(std::max<size_t>(request.prompt.size(), 1));
    size_t best = 0;
    double best_score = -1;
    for (size_t i = 0; i < instances.size(); ++i) {
      const InstanceView& v = instances[i];
      const double prefix = std::min(1.0, static_cast<double>(overlaps_[i].total()) / prompt);
      const double queue = qmax == qmin ? 1.0
                                        : static_cast<double>(qmax - v.outstanding_requests) /
                                              static_cast<double>(qmax - qmin);
      const double kv = 1.0 - std::clamp(v.kv_utilization, 0.0, 1.0);
      const double score = w_.prefix * prefix + w_.queue * queue + w_.kv_utilization * kv;
      if (score > best_score ||
          (score == best_score && v.outstanding_tokens < instances[best].outstanding_tokens)) {
        best = i;
        best_score = score;
      }
    }
    index_->routed(request, best);
    return best;
  }

 private:
  ScorerWeights w_;
  std::unique_ptr<PrefixIndex> index_;
  std::vector<PrefixOverlap> overlaps_;
};

}  // namespace

config::ComponentInfo weighted_routing_info() {
  using namespace config;
  return {"router",
          "weighted",
          "the highest weighted sum of scorers in [0, 1]: prefix overlap, queue depth, KV "
          "utilisation (llm-d's inference scheduler)",
          {number_param("prefix_weight", 3.0, 0.0, 100.0, "",
                        "weight of the share of the prompt the prefix index says the instance "
                        "holds (prefix-cache-scorer)"),
           number_param("queue_weight", 2.0, 0.0, 100.0, "",
                        "weight of (max - q) / (max - min) of the requests outstanding at each "
                        "instance (queue-scorer)"),
           number_param("kv_utilization_weight", 2.0, 0.0, 100.0, "",
                        "weight of 1 - the fraction of the instance's KV blocks in use "
                        "(kv-cache-utilization-scorer)"),
           prefix_index_param()}};
}

std::unique_ptr<RoutingPolicy> make_weighted_routing(const RoutingPolicyArgs& args) {
  const config::ParamValues& p = args.params;
  ScorerWeights w;
  w.prefix = p.number("prefix_weight");
  w.queue = p.number("queue_weight");
  w.kv_utilization = p.number("kv_utilization_weight");
  return std::make_unique<WeightedRouting>(w, make_prefix_index(args.index));
}

}  // namespace kvsim
