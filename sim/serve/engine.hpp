#pragma once
// The serving engine (vLLM-style continuous batching, SPEC 5): the scheduler
// builds each step with the cache policy, the timing model prices it, and the
// engine schedules the step's end on the clock it was given (DESIGN, "the
// flow of one run"). Nothing here knows a bandwidth; nothing below the
// scheduler schedules events. Arrivals, request counters, latencies and the
// common metrics live in the EngineShell it composes (sim/engine/).
#include <functional>
#include <memory>
#include <vector>

#include "devices/pipeline_timing.hpp"
#include "devices/timing_model.hpp"
#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cache/llama_backend_cost.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/core/link_path.hpp"
#include "sim/core/metrics.hpp"
#include "sim/core/shared_link.hpp"
#include "sim/core/simulator.hpp"
#include "sim/engine/arrival_pump.hpp"
#include "sim/engine/engine_shell.hpp"
#include "sim/engine/inference_engine.hpp"
#include "sim/engine/run_sink.hpp"
#include "sim/serve/async_loads.hpp"
#include "sim/serve/data_parallel_group.hpp"
#include "sim/serve/kv_layout_host_cost.hpp"
#include "sim/serve/scheduler.hpp"
#include "sim/serve/session_retention.hpp"
#include "sim/serve/speculation.hpp"
#include "sim/serve/step_observer.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

class ServingEngine final : public InferenceEngine {
 public:
  // It keeps nothing of a request once it leaves: a dialog's turns must
  // carry their conversation (SourceOptions).
  static constexpr bool kTurnsCarryHistory = true;

  // A component on a shared clock: `sim` and `uplink` (whoever submits the
  // requests) outlive the engine. `sink` may be null (rows are dropped).
  // `observers` makes the step observer (the numerics checker) for the
  // engine's pool; none watches without it. The policy runs through its
  // block pool (BlockPoolContract).
  ServingEngine(const InstanceSpec& scenario, Simulator& sim, EngineUplink& uplink, RunSink* sink,
                StepObserverFactory observers = nullptr);
  // Alone on a clock of its own, fed by the scenario's workload; run() runs it.
  ServingEngine(const InstanceSpec& scenario, RunSink* sink,
                StepObserverFactory observers = nullptr);
  // The engine keeps a reference to its scenario, so a temporary one would
  // dangle: refused at compile time.
  ServingEngine(InstanceSpec&& scenario, Simulator& sim, EngineUplink& uplink, RunSink* sink,
                StepObserverFactory observers = nullptr) = delete;
  ServingEngine(InstanceSpec&& scenario, RunSink* sink,
                StepObserverFactory observers = nullptr) = delete;
  ~ServingEngine() override;
  ServingEngine(const ServingEngine&) = delete;
  ServingEngine& operator=(const ServingEngine&) = delete;

  // Alone only: runs the whole workload and returns its metrics. Throws
  // std::logic_error when an invariant breaks (e.g. blocks not back in the
  // pool at the end), or when the engine was built on a shared clock.
  RunMetrics run();

  std::string_view kind() const override { return "serving"; }
  void start() override { shell_.start(); }
  void submit(Request request) override;
  void arrivals_done() override {
    close_retention_if_done();
    kick();
  }
  RunMetrics finish() override;
  PoolSizing memory_plan() const override { return sizing_; }
  void set_progress(std::function<void(const RunProgress&)> callback) override {
    shell_.set_progress(std::move(callback));
  }

  const KvCachePolicy* cache_policy() const override { return policy_.get(); }
  void mirror_itl(LatencyHistogram* itl) override { shell_.mirror_itl(itl); }
  bool share_kv_tier(std::shared_ptr<KvTier> tier) override {
    return policy_->share_tier(std::move(tier));
  }
  bool add_kv_tier_hops(const std::string& tier, const LinkPath& read,
                        const LinkPath& write) override;
  bool publish_kv_events(KvEventListener* listener) override {
    return policy_->set_kv_event_listener(listener);
  }
  // Before the run: the engine becomes rank `rank` of `group`, stepping
  // with the others (false with tiers, whose loads the group does not run).
  bool join_data_parallel(DataParallelGroup* group, size_t rank) override;

  const PoolSizing& sizing() const { return sizing_; }
  // Decodes advanced in bulk (the default wherever the step allows it) or
  // one by one: the run is the same either way, to the bit; tests compare
  // the two. Call between steps.
  void set_bulk_decodes(bool on);
  // Decodes advanced in bulk so far, all steps together.
  int64_t bulk_decodes() const { return bulk_decodes_; }
  // Called with every step's work as the step is priced (a step the policy
  // splits into micro-batches: each piece): a calibration records a run
  // whose schedule does not depend on timing and re-prices it.
  void set_step_recorder(std::function<void(const StepWork&)> recorder) {
    step_recorder_ = std::move(recorder);
  }
  // Sequence objects ever allocated: bounded by the requests in flight at
  // once, not by the requests served (a memory check for long runs).
  size_t pooled_sequences() const { return sequences_made_; }
  // Session KV retention (scheduler.session_retention), null when off.
  const SessionRetention* retention() const { return retention_.get(); }

 private:
  ServingEngine(const InstanceSpec& scenario, RunSink* sink, StepObserverFactory observers,
                std::unique_ptr<SoloRig> rig);

  void kick();
  void start_step();
  void price_step();             // step_latency_ of the batch in batch_ / work_
  void launch_step(TimeNs now);  // the step priced, on the clock
  class DpRank;
  DataParallelGroup* dp_ = nullptr;  // the data-parallel group, null alone
  size_t dp_rank_ = 0;
  std::unique_ptr<DpRank> dp_rank_obj_;
  TimeNs step_verify_ = 0, step_draft_ = 0;  // speculation: the step's parts
  // Speculation: the step's sequences that sample (start_step counts them),
  // and the data-parallel group's (0 alone: the rule without a group).
  DraftBatch draft_batch_;
  double group_draft_tokens_ = 0;
  DraftBatch sampling_batch() const;
  void on_step_done();
  void complete(Sequence* seq);
  void reject(Sequence* seq);
  void observe(TimeNs now, int64_t step_tokens, TimeNs step_latency, bool force_row = false,
               int64_t step_seqs = 0);
  void span_step(TimeNs now);
  Sequence* new_sequence(Request&& request);
  void recycle(Sequence* seq);
  // Once nothing is in flight and no request can come, no pin can be hit:
  // they all go (so no expiry outlives the run's last event).
  void close_retention_if_done();

  std::unique_ptr<SoloRig> solo_;  // alone only; declared first, it outlives the shell
  const InstanceSpec& scenario_;
  const BlockPoolContract& pool_;  // the policy's block pool
  EngineShell shell_;
  Simulator& sim_;
  PoolSizing sizing_;
  std::unique_ptr<KvCachePolicy> policy_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<SessionRetention> retention_;  // holds slots of policy_: declared after it
  // One stage: the TimingModel's price exactly; more: stage by stage
  // (devices/pipeline_timing.hpp).
  std::unique_ptr<PipelineTiming> timing_;
  // The layout's per-step host work (ATB block tables), null when none.
  std::unique_ptr<KvLayoutHostCost> layout_cost_;
  std::unique_ptr<LlamaBackendCost> host_work_;  // llama_cells' host CPU share, when any
  // Speculative decoding (`speculative:`), null when off: the drafter's
  // price and the acceptance draws.
  std::unique_ptr<Speculation> speculation_;
  // The step's verify of its drafts (speculation on): rejected drafts'
  // slots back, items cut to what the target kept.
  void verify_drafts();
  struct DraftVerdict {
    int64_t drafts = 0, accepted = 0;
  };
  std::vector<DraftVerdict> verdicts_;  // verify_drafts' scratch, per item at its horizon

  // Sequences are pooled: a finished one is reused for a later request, so
  // memory follows the number in flight, not the number served.
  // They are made by chunks, a heap block for kSequenceChunk of them, not
  // one (over-aligned) block each: fewer allocations as requests arrive
  // and fewer frees when the engine goes.
  static constexpr size_t kSequenceChunk = 64;
  std::vector<std::unique_ptr<Sequence[]>> sequence_chunks_;
  size_t sequences_made_ = 0;
  std::vector<Sequence*> free_sequences_;

  // A model with sliding-window layers is priced from each sequence's
  // position; the others from the batch's sums (StepWork::totals).
  bool per_sequence_pricing_ = false;
  bool bulk_decodes_allowed_ = false;  // SchedulerParams::bulk_decodes
  int64_t ubatch_ = 0;                 // the policy's micro-batch tokens (0: one pass a step)
  int64_t bulk_decodes_ = 0;
  bool step_in_flight_ = false;
  bool kick_pending_ = false;
  ScheduledBatch batch_;
  // This step's sequences at their commit horizon, in batch order, as
  // KvCachePolicy::commit_step takes them; and those of them that are
  // items, whose Sequence learns its new horizon (a bulk decode's learns it
  // from the scheduler: BatchSummary::bulk_commits).
  std::vector<StepCommit> committing_;
  struct CommittingItem {
    size_t entry;  // in committing_
    Sequence* seq;
  };
  std::vector<CommittingItem> committing_items_;
  StepWork work_;
  TimeNs step_latency_ = 0;
  // Tier reads of the step in flight over their links (TierChain::read_back):
  // the step ends once its compute and its reads allow (TierLoad).
  TierChain* chain_ = nullptr;                           // the policy's, when it has tiers
  std::vector<std::unique_ptr<SharedLink>> tier_links_;  // each tier's own port, read and write
  TimeNs step_compute_ = 0;
  // The step's compute without its lookups, when it started, and the KV
  // stalls (elapsed - compute) of every step so far (RequestRow::kv_wait).
  TimeNs step_pure_compute_ = 0, step_started_at_ = 0, kv_wait_total_ = 0;
  bool load_in_flight_ = false, compute_in_flight_ = false, load_layerwise_ = false;
  // The step waits for stores before its compute (TierChain::flush_writes).
  bool store_gate_ = false;
  // And for its swaps, over the host link the tiers use (make_tier_links),
  // when the instance has tiers; null: swap is priced in the step.
  SharedLink* swap_read_ = nullptr;
  // This step's swaps on those links, from its batch to its launch (a
  // data-parallel group launches later than the batch is made).
  Bytes step_swap_in_ = 0, step_swap_out_ = 0;
  SharedLink* swap_write_ = nullptr;
  bool swap_in_flight_ = false;
  bool compute_held() const { return store_gate_ || swap_in_flight_; }
  Bytes instance_bytes(Bytes per_rank) const;
  TimeNs start_swaps(Bytes in, Bytes out);
  void on_swaps_done();
  void open_compute();
  TimeNs store_gate_since_ = 0;
  // Async loads of tier hits (kv_tiers.load_overlap: async), null when off.
  std::unique_ptr<AsyncLoads> loads_;
  std::vector<Sequence*> loads_landed_;
  void on_loads_woken();
  void make_tier_links();
  void trace_link(SharedLink& link);
  void schedule_step_done();
  void start_layerwise_compute();
  void on_load_done();
  void on_store_gate_open();
  std::function<void(const StepWork&)> step_recorder_;

  // kind: llama_bench: each test's timed runs (ns), by test index.
  std::vector<std::vector<TimeNs>> bench_samples_;
  // What only a paged pool measures; the shell has the rest.
  int64_t preempted_requests_ = 0;
  int64_t steps_ = 0;
  double stage_link_bytes_ = 0;  // activations between pipeline stages, whole run
  KvUsageIntegral kv_used_;
  double frag_integral_ = 0;  // fraction-nanoseconds while blocks are used
  double frag_time_ = 0;
  double current_frag_ = 0;
  bool current_has_blocks_ = false;
  std::unique_ptr<StepObserver> numerics_;
};

}  // namespace kvsim
