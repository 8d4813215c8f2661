// kv_tiers.* in metrics.json: what the tiers below device HBM served and
// moved (TierChain::report fills them). Written for every run, zeros
// without tiers, so files of different runs compare key for key.
#include "sim/cache/tiers/tier_metrics.hpp"

#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {

using Tier = KvTierMetrics;

constexpr std::pair<const char*, Tier KvTiersMetrics::*> kTiers[] = {
    {"dram", &KvTiersMetrics::dram},
    {"ssd", &KvTiersMetrics::ssd},
    {"global", &KvTiersMetrics::global},
};

void write_kv_tiers(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const KvTiersMetrics& tiers = m.parts.get_or_zero<KvTiersMetrics>();
  MetricsObject o = metrics_object(doc, "kv_tiers");
  o.at_end().put("device_hit_rate", tiers.device_hit_rate);
  o.put("load_time_s", tiers.load_time_s);
  o.put("store_wait_s", tiers.store_wait_s);
  o.put("lookup_time_s", tiers.lookup_time_s);
  for (const auto& [name, member] : kTiers) {
    const Tier& t = tiers.*member;
    o.put(name, nlohmann::ordered_json{{"hit_rate", t.hit_rate},
                                       {"hit_tokens", t.hit_tokens},
                                       {"bytes_read", t.bytes_read},
                                       {"bytes_written", t.bytes_written},
                                       {"evictions", t.evictions},
                                       {"blocks_held", t.blocks_held},
                                       {"pinned_peak_blocks", t.pinned_peak_blocks}});
  }
}

}  // namespace

KvTierMetrics* KvTiersMetrics::tier(std::string_view name) {
  for (const auto& [n, member] : kTiers)
    if (name == n) return &(this->*member);
  return nullptr;
}

const KvTierMetrics* KvTiersMetrics::tier(std::string_view name) const {
  return const_cast<KvTiersMetrics*>(this)->tier(name);
}

MetricsSection kv_tiers_metrics_section() {
  return {"kv_tiers", write_kv_tiers};
}

}  // namespace kvsim
