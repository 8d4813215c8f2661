#include "sim/serve/kv_layout_host_cost.hpp"

#include <fmt/format.h>

#include <cmath>

#include "base/checked_math.hpp"
#include "sim/core/metrics.hpp"
#include "sim/serve/scheduler.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

std::unique_ptr<KvLayoutHostCost> KvLayoutHostCost::make(const InstanceSpec& s) {
  const BlockPoolContract* pool = s.policy().block_pool();
  if (pool == nullptr) return nullptr;
  auto layout = make_kv_layout(pool->layout());
  if (!layout) return nullptr;
  // The host builds the tables of every layer of the instance (the seed's
  // layer_num), one host for the instance.
  const BlockGeometry g{s.model.num_hidden_layers, pool->block_size(),
                        s.model.kv_heads_per_rank(s.tp), s.model.head_dim, s.kv.dtype_bytes()};
  if (layout->host_table_entries(g, 1) == 0) return nullptr;
  // The policy check refuses such a layout without the bandwidth.
  if (s.device.host_memory_bandwidth <= 0)
    throw std::logic_error("KvLayoutHostCost: no host_memory_bandwidth");
  return std::unique_ptr<KvLayoutHostCost>(
      new KvLayoutHostCost(std::move(layout), g, s.device.host_memory_bandwidth));
}

KvLayoutHostCost::KvLayoutHostCost(std::unique_ptr<KvLayout> layout, BlockGeometry g,
                                   int64_t bandwidth)
    : layout_(std::move(layout)), geometry_(g), bandwidth_(bandwidth) {
  counted_.layout = std::string(layout_->name());
}

TimeNs KvLayoutHostCost::price(int64_t entries, int64_t host_memory_bandwidth) {
  const double ns = std::ceil(static_cast<double>(entries) * static_cast<double>(kBytesPerEntry) *
                              1e9 / static_cast<double>(host_memory_bandwidth));
  const auto t = round_in_range(ns, 0, kMaxSimulatedTimeNs);
  if (!t)
    throw UnrepresentableQuantity(fmt::format(
        "the host time of {} ATB block-table entries exceeds {}", entries, simulated_span_text()));
  return *t;
}

TimeNs KvLayoutHostCost::step(const ScheduledBatch& batch, const KvCachePolicy& policy) {
  int64_t entries = 0;
  for (const ScheduledSeq& item : batch.items) {
    const auto blocks = static_cast<int64_t>(policy.block_table(item.seq->slot).size());
    entries += layout_->host_table_entries(geometry_, blocks);
  }
  const TimeNs t = price(entries, bandwidth_);
  counted_.block_tables_built += static_cast<int64_t>(batch.items.size()) * geometry_.layers;
  counted_.block_table_entries += entries;
  counted_.block_table_host_ns += t;
  return t;
}

void KvLayoutHostCost::report(RunMetrics& m) const {
  m.part<KvLayoutMetrics>() = counted_;
}

namespace {
void write_kv_layout(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const KvLayoutMetrics* found = m.find<KvLayoutMetrics>();
  if (found == nullptr) return;
  MetricsObject o = metrics_object(doc, "kv_layout");
  o.put("layout", found->layout)
      .put("block_tables_built", found->block_tables_built)
      .put("block_table_entries", found->block_table_entries)
      .put("block_table_host_s", static_cast<double>(found->block_table_host_ns) / 1e9);
}
}  // namespace

MetricsSection kv_layout_metrics_section() {
  return {"kv_layout", write_kv_layout};
}

}  // namespace kvsim
