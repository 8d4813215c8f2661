#pragma once
// An engine is a component on a shared clock (DESIGN, "engines that take a
// shared clock instead of owning one"): it schedules its events on a
// Simulator it does not own, receives requests through submit() and hands
// each one back through an EngineUplink when it leaves. Whoever feeds it (an
// ArrivalPump for one engine, a router for several) owns the request source,
// so two engines on one clock are two components, not two simulations.
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/units.hpp"
#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/core/latency_histogram.hpp"
#include "sim/core/link_path.hpp"
#include "sim/core/metrics.hpp"
#include "workloads/request.hpp"

namespace kvsim {

// Where a long run stands, for a progress line (the CLI shows it on a
// terminal). Reported every few thousand steps; never affects the run.
class DataParallelGroup;

struct RunProgress {
  int64_t arrived = 0, completed = 0, rejected = 0;
  int64_t running = 0, waiting = 0;
  TimeNs simulated = 0;
  int64_t instances = 1;  // a cluster: running and waiting sum over them
};

// The engine's way back to whoever feeds it requests.
class EngineUplink {
 public:
  virtual ~EngineUplink() = default;
  // A request left the engine at `now` (completed or rejected). A closed-loop
  // source learns of its next request here, so the feeder may arm an arrival.
  virtual void request_done(const Request& request, TimeNs now) = 0;
  // True when no request will ever be submitted to this engine again.
  virtual bool requests_exhausted() const = 0;
  // The engine has nothing left to do, ever, although some of its periodic
  // events (an HTP co-runner's duty cycle) are still queued: a run of this
  // engine alone stops the clock here.
  virtual void engine_stopped() = 0;
};

class InferenceEngine {
 public:
  virtual ~InferenceEngine() = default;
  // The registry name of this kind of engine ("serving", "genie").
  virtual std::string_view kind() const = 0;
  // Before the clock runs: schedules the engine's own events that no request
  // brings (co-runners' duty cycles). Called once.
  virtual void start() = 0;
  // A request arrives now (its arrival time is sim.now() or earlier).
  virtual void submit(Request request) = 0;
  // Every request due at this instant has been submitted (possibly none: an
  // arrival event can find nothing due after the source changed its mind).
  // The serving engine starts a step from here, after all of them joined.
  virtual void arrivals_done() {}
  // After the clock stopped: checks that the run ended clean (throws
  // std::logic_error otherwise) and returns the engine's metrics.
  virtual RunMetrics finish() = 0;
  // What the report's memory plan shows (the paged pool, or the device's
  // budget, weights and KV buffers).
  virtual PoolSizing memory_plan() const = 0;
  virtual void set_progress(std::function<void(const RunProgress&)> callback) = 0;
  // The engine's KV cache, read-only, for a router that routes by cached
  // prefix (sim/cluster/); nullptr when the engine has none to offer.
  virtual const KvCachePolicy* cache_policy() const { return nullptr; }
  // Every inter-token latency the engine measures is also added to `itl`
  // (a cluster's latencies span its instances); nullptr stops it.
  virtual void mirror_itl(LatencyHistogram* itl) { (void)itl; }
  // Before start(): the engine's cache reaches `tier` (a cluster's global
  // pool, one object for every instance) in place of its own tier of that
  // name. False when the engine has no such tier to replace.
  virtual bool share_kv_tier(std::shared_ptr<KvTier> tier) {
    (void)tier;
    return false;
  }
  // Before start(): reads from and writes to the engine's tier `tier` also
  // cross `read` / `write` (links other instances share: a node's NIC, the
  // pool's servers), after the tier's own port. False without such a tier.
  virtual bool add_kv_tier_hops(const std::string& tier, const LinkPath& read,
                                const LinkPath& write) {
    (void)tier;
    (void)read;
    (void)write;
    return false;
  }
  // Before start(): the engine's cache tells `listener` of the blocks it
  // makes findable and drops (KV events, a router's event-fed index). False
  // when its cache publishes none.
  virtual bool publish_kv_events(KvEventListener* listener) {
    (void)listener;
    return false;
  }
  // Before start(): the engine becomes rank `rank` of a data-parallel
  // group whose ranks step together (sim/serve/data_parallel_group.hpp).
  // False when it cannot.
  virtual bool join_data_parallel(DataParallelGroup* group, size_t rank) {
    (void)group, (void)rank;
    return false;
  }
};

}  // namespace kvsim
