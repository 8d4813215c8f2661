#pragma once
// Host work a KV layout adds to each serving step (seed 000). Under `atb`
// the host converts every scheduled sequence's Ksana block ids into one
// ATB block table per layer before the step runs (b * layers * 2 + layer,
// kernels/kv_layout.hpp): blocks x layers int32 entries a step. Each entry
// reads its Ksana id and writes its ATB id, 4 + 4 bytes of host memory
// traffic, priced at the device file's host_memory_bandwidth (the socket's
// peak, so the time is a lower bound): ns = ceil(entries * 8 B / bandwidth).
// A layout that builds no tables (ksana) has no such component at all, so
// its runs are priced exactly as without one.
#include <cstdint>
#include <memory>
#include <string>

#include "base/units.hpp"
#include "kernels/kv_layout.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {

struct InstanceSpec;
struct RunMetrics;
struct ScheduledBatch;
class KvCachePolicy;

// metrics.json `kv_layout`: written only for a layout that adds host work.
struct KvLayoutMetrics {
  std::string layout;
  int64_t block_tables_built = 0;   // per-layer tables, all steps
  int64_t block_table_entries = 0;  // their entries
  TimeNs block_table_host_ns = 0;   // the host time charged to steps for them
};

// Written after `pipeline`, before `provenance`: for a layout with host
// tables only, so a ksana run's file keeps exactly its keys.
MetricsSection kv_layout_metrics_section();

class KvLayoutHostCost {
 public:
  static constexpr int64_t kBytesPerEntry = 8;  // read a Ksana id, write an ATB id (int32 each)

  // nullptr when the instance's layout builds no tables on the host.
  static std::unique_ptr<KvLayoutHostCost> make(const InstanceSpec& s);

  // ceil(entries * kBytesPerEntry / bandwidth) in ns; throws
  // UnrepresentableQuantity past int64.
  static TimeNs price(int64_t entries, int64_t host_memory_bandwidth);

  // The host time of this step's tables (every sequence of the batch; its
  // items must list them all: the engine turns bulk decodes off), counted.
  TimeNs step(const ScheduledBatch& batch, const KvCachePolicy& policy);
  void report(RunMetrics& m) const;

 private:
  KvLayoutHostCost(std::unique_ptr<KvLayout> layout, BlockGeometry g, int64_t bandwidth);
  std::unique_ptr<KvLayout> layout_;
  BlockGeometry geometry_;
  int64_t bandwidth_;
  KvLayoutMetrics counted_;
};

}  // namespace kvsim
