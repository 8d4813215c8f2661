// kv_tiers.* in metrics.json: what the tiers below device HBM served and
// moved (TierChain::report fills them). Written for every run, zeros
// without tiers, so files of different runs compare key for key.
#include "sim/core/metrics.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {
namespace {

using Tier = RunMetrics::KvTierMetrics;

constexpr std::pair<const char*, Tier RunMetrics::KvTiers::*> kTiers[] = {
    {"dram", &RunMetrics::KvTiers::dram},
    {"ssd", &RunMetrics::KvTiers::ssd},
    {"global", &RunMetrics::KvTiers::global},
};

void write_kv_tiers(const RunMetrics& m, nlohmann::ordered_json& doc) {
  MetricsObject o = metrics_object(doc, "kv_tiers");
  o.at_end().put("device_hit_rate", m.kv_tiers.device_hit_rate);
  o.put("load_time_s", m.kv_tiers.load_time_s);
  for (const auto& [name, member] : kTiers) {
    const Tier& t = m.kv_tiers.*member;
    o.put(name, nlohmann::ordered_json{{"hit_rate", t.hit_rate},
                                       {"hit_tokens", t.hit_tokens},
                                       {"bytes_read", t.bytes_read},
                                       {"bytes_written", t.bytes_written},
                                       {"evictions", t.evictions},
                                       {"blocks_held", t.blocks_held}});
  }
}

}  // namespace

RunMetrics::KvTierMetrics* RunMetrics::KvTiers::tier(std::string_view name) {
  for (const auto& [n, member] : kTiers)
    if (name == n) return &(this->*member);
  return nullptr;
}

const RunMetrics::KvTierMetrics* RunMetrics::KvTiers::tier(std::string_view name) const {
  return const_cast<KvTiers*>(this)->tier(name);
}

MetricsSection kv_tiers_metrics_section() {
  return {"kv_tiers", write_kv_tiers};
}

}  // namespace kvsim
