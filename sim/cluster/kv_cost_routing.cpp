// kv_cost: NVIDIA Dynamo's KV router cost (ai-dynamo/dynamo,
// lib/kv-router/src/scheduling/selector.rs, DefaultWorkerSelector, and
// docs/router/kv_cache_routing.md). For each instance
//   cost = overlap_score_weight x prefill_blocks + decode_blocks
// where
//   prefill_blocks = max(0, prompt_tokens / block_size - credit)
//   credit = device blocks of the prompt's prefix the index says it holds
//            + host_cache_hit_weight x those in its host tier
//            + disk_cache_hit_weight x those in its disk tier
//            + shared_cache_multiplier x those in a tier all instances share
//   decode_blocks = its active blocks + the request's prompt blocks
// and the cheapest instance takes the request (ties to the lowest index).
// With temperature > 0 an instance is drawn with probability proportional
// to exp(-(cost - min) / ((max - min) x temperature)), the costs rescaled
// to [0, 1] first as Dynamo's softmax_sample does (all costs equal: each
// instance alike), from a generator seeded by the scenario's seed.
//
// Defaults are Dynamo's: kv-overlap-score-weight 1.0, router-temperature
// 0.0, host_cache_hit_weight 0.75, disk_cache_hit_weight 0.25,
// shared_cache_multiplier 0.0 (lib/kv-router/src/scheduling/config.rs).
// Dynamo now splits overlap_score_weight into overlap_score_credit and
// prefill_load_scale; the single weight here is the documented formula
// (a weight of w is credit 1 and scale w there, w = 0 also credit 0).
// Active blocks are what the router counted for the requests it sent an
// instance and that have not left it (InstanceView::outstanding_blocks:
// prompt + output tokens in blocks), as Dynamo tracks its workers' active
// blocks from its own routing rather than from the engines.
#include <algorithm>
#include <cmath>

#include "sim/cluster/routing_policies.hpp"
#include "workloads/rng.hpp"

namespace kvsim {
namespace {

struct KvCostWeights {
  double overlap = 1.0, host = 0.75, disk = 0.25, shared = 0.0, temperature = 0.0;
};

class KvCostRouting final : public RoutingPolicy {
 public:
  KvCostRouting(KvCostWeights w, std::unique_ptr<PrefixIndex> index, uint64_t seed)
      : w_(w), index_(std::move(index)), rng_(mix64(seed ^ 0x6b765f636f7374ULL)) {}
  std::string_view name() const override { return "kv_cost"; }
  PrefixIndex* prefix_index() override { return index_.get(); }

  size_t pick(const Request& request, std::span<const InstanceView> instances) override {
    index_->overlaps(request, instances, overlaps_);
    costs_.resize(instances.size());
    const auto prompt = static_cast<double>(request.prompt.size());
    for (size_t i = 0; i < instances.size(); ++i) {
      const InstanceView& v = instances[i];
      const double bs = static_cast<double>(std::max<int64_t>(v.block_size, 1));
      const PrefixOverlap& o = overlaps_[i];
      const double credit =
          (static_cast<double>(o.device) + w_.host * static_cast<double>(o.host) +
           w_.disk * static_cast<double>(o.disk) + w_.shared * static_cast<double>(o.shared)) /
          bs;
      const double prefill = std::max(0.0, prompt / bs - credit);
      const double decode = static_cast<double>(v.outstanding_blocks) + std::ceil(prompt / bs);
      costs_[i] = w_.overlap * prefill + decode;
    }
    const size_t i = w_.temperature > 0 ? sample() : cheapest();
    index_->routed(request, i);
    return i;
  }

 private:
  size_t cheapest() const {
    size_t best = 0;
    for (size_t i = 1; i < costs_.size(); ++i)
      if (costs_[i] < costs_[best]) best = i;
    return best;
  }

  size_t sample() {
    const auto [lo, hi] = std::minmax_element(costs_.begin(), costs_.end());
    const double min = *lo, span = *hi - *lo;
    double sum = 0;
    weights_.resize(costs_.size());
    for (size_t i = 0; i < costs_.size(); ++i) {
      weights_[i] = span > 0 ? std::exp(-(costs_[i] - min) / (span * w_.temperature)) : 1.0;
      sum += weights_[i];
    }
    const double u = rng_.uniform01() * sum;
    double acc = 0;
    for (size_t i = 0; i < weights_.size(); ++i) {
      acc += weights_[i];
      if (u < acc) return i;
    }
    return weights_.size() - 1;
  }

  KvCostWeights w_;
  std::unique_ptr<PrefixIndex> index_;
  Rng rng_;
  std::vector<PrefixOverlap> overlaps_;
  std::vector<double> costs_, weights_;
};

}  // namespace

config::ComponentInfo kv_cost_routing_info() {
  using namespace config;
  return {"router",
          "kv_cost",
          "NVIDIA Dynamo's KV router: least overlap_score_weight x prefill blocks + active decode "
          "blocks, or a softmax draw over them with temperature > 0",
          {number_param("overlap_score_weight", 1.0, 0.0, 1000.0, "",
                        "weight of the prefill blocks the request would compute on an instance "
                        "against its active decode blocks (Dynamo's kv-overlap-score-weight)"),
           number_param("temperature", 0.0, 0.0, 1000.0, "",
                        "0: the cheapest instance; above 0: a softmax draw over the costs "
                        "rescaled to [0, 1] (Dynamo's router-temperature)"),
           number_param("host_cache_hit_weight", 0.75, 0.0, 1.0, "",
                        "what a prefix block in an instance's host (dram) tier counts for, a "
                        "device block counting 1"),
           number_param("disk_cache_hit_weight", 0.25, 0.0, 1.0, "",
                        "what a prefix block in an instance's disk (ssd) tier counts for"),
           number_param("shared_cache_multiplier", 0.0, 0.0, 1.0, "",
                        "what a prefix block in a tier every instance shares (the global pool) "
                        "counts for"),
           prefix_index_param()}};
}

std::unique_ptr<RoutingPolicy> make_kv_cost_routing(const RoutingPolicyArgs& args) {
  const config::ParamValues& p = args.params;
  KvCostWeights w;
  w.overlap = p.number("overlap_score_weight");
  w.temperature = p.number("temperature");
  w.host = p.number("host_cache_hit_weight");
  w.disk = p.number("disk_cache_hit_weight");
  w.shared = p.number("shared_cache_multiplier");
  return std::make_unique<KvCostRouting>(w, make_prefix_index(args.index), args.seed);
}

}  // namespace kvsim
