#include "sim/serve/engine.hpp"
#include "sim/serve/micro_batches.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "base/checked_math.hpp"
#include "sim/cache/tiers/tier_chain.hpp"
#include "sim/cache/tiers/tier_config.hpp"
#include "sim/core/served_metrics.hpp"
#include "sim/serve/serving_dp_rank.hpp"

namespace kvsim {
namespace {
// Same-time events: finish the step first, then take arrivals
// (kArrivalPriority), then start the next step, so a request arriving exactly
// when a step ends joins the next one.
constexpr int32_t kPrioStepDone = 0;
constexpr int32_t kPrioKick = 2;
static_assert(kPrioStepDone < kArrivalPriority && kArrivalPriority < kPrioKick);

}  // namespace

namespace {
bool has_sliding_layers(const ModelSpec& model) {
  return std::any_of(model.layer_attention.begin(), model.layer_attention.end(),
                     [](const LayerAttention& a) { return a.sliding; });
}

// An item's commit's content (StepCommit::content_of), from its Sequence
// (a bulk decode's comes from the scheduler: Scheduler::content_of).
TokenView content_of_sequence(const void* seq, SeqSlot, int64_t generated) {
  const Request& request = static_cast<const Sequence*>(seq)->request;
  return TokenView::of(request.prompt, request.output, generated);
}

// A verify pass of `q` tokens (the sequence's token and its drafts) after
// `context` cached ones: StepTotals::add of a sequence that samples, with
// logits at each of its q positions (the rejection sampler reads them all)
// and its attention counted as decode, not prefill: vLLM's MLA backends run
// a request of at most 1 + num_speculative_tokens queries through the
// decode kernel (vllm/v1/attention/backends/mla/common.py,
// reorder_batch_threshold), where a prefill chunk's would decompress every
// cached latent (models/step_ops_variants.cpp mla_attention).
void add_verify(StepTotals& totals, int64_t q, int64_t context) {
  const double n = static_cast<double>(q);
  const double c = static_cast<double>(context);
  totals.tokens += n;
  totals.samplers += n;
  totals.attended_pairs += n * c + n * (n + 1) / 2;
  totals.kv_tokens_read += c + n;
  totals.context_read += c;
}
}  // namespace

namespace {
// The policy's block pool: the serving engine's contract (the scenario's
// engine checks refuse a policy without one first).
const BlockPoolContract& block_pool_of(const InstanceSpec& s) {
  const BlockPoolContract* pool = s.policy().block_pool();
  if (pool == nullptr)
    throw std::logic_error(fmt::format(
        "the serving engine needs a block pool; policy '{}' has none", s.policy().display_name()));
  return *pool;
}
}  // namespace

ServingEngine::ServingEngine(const InstanceSpec& scenario, RunSink* sink,
                             StepObserverFactory observers)
    : ServingEngine(scenario, sink, observers,
                    std::make_unique<SoloRig>(scenario, SourceOptions{kTurnsCarryHistory})) {}

ServingEngine::ServingEngine(const InstanceSpec& scenario, RunSink* sink,
                             StepObserverFactory observers, std::unique_ptr<SoloRig> rig)
    : ServingEngine(scenario, rig->sim, rig->pump, sink, observers) {
  solo_ = std::move(rig);
}

ServingEngine::ServingEngine(const InstanceSpec& scenario, Simulator& sim, EngineUplink& uplink,
                             RunSink* sink, StepObserverFactory observers)
    : scenario_(scenario),
      pool_(block_pool_of(scenario)),
      shell_("serving", scenario, sim, uplink, sink),
      sim_(sim) {
  sizing_ = pool_.size(scenario.model, scenario.pool_input());
  policy_ = pool_.make(scenario, sizing_);
  if (!scenario.kv_tiers.empty()) {
    // A tier's block is the whole instance's: every rank's share.
    std::unique_ptr<TierChain> chain =
        make_tier_chain(scenario.kv_tiers, sizing_.instance_block_bytes, pool_.block_size());
    chain_ = chain.get();
    // Its ranks move their shares as flows of their own over what a cluster
    // adds past the instance's ports (the node's NIC, the pool's servers).
    chain_->set_ranks(scenario.tp);
    policy_->attach_tiers(std::move(chain));
    make_tier_links();
    // A landed store gives its pinned blocks back: waiting work may fit.
    chain_->set_unpinned([this] { kick(); });
    if (chain_->async_loads())
      loads_ = std::make_unique<AsyncLoads>(*chain_, pool_.block_size(),
                                            scenario.kv_tiers.max_load_tokens_per_step,
                                            [this] { on_loads_woken(); });
  }
  timing_ = std::make_unique<PipelineTiming>(
      scenario.device, scenario.model,
      TimingModel::Params{scenario.tp, scenario.kv.dtype_bytes(), scenario.ep, scenario.expert_skew,
                          scenario.ep_ranks_per_node},
      PipelineParams{scenario.pp, scenario.micro_batches, scenario.pipeline_network_link,
                     sizing_.stage_layers, scenario.pipeline_layers});
  layout_cost_ = KvLayoutHostCost::make(scenario);
  host_work_ = scenario.policy().host_work(scenario);
  if (observers != nullptr) numerics_ = observers(scenario, sizing_);
  per_sequence_pricing_ = has_sliding_layers(scenario.model);
  SchedulerParams sp;
  sp.max_num_seqs = scenario.scheduler.max_num_seqs;
  sp.max_batched_tokens = scenario.scheduler.max_batched_tokens;
  if (const int64_t cap = scenario.policy().step_token_cap(); cap > 0)
    sp.max_batched_tokens = std::min(sp.max_batched_tokens, cap);
  ubatch_ = scenario.policy().micro_batch_tokens();
  sp.chunked_prefill = scenario.scheduler.chunked_prefill;
  sp.swap = pool_.swap_preemption();
  // Decodes in bulk need a step that reads no sequence one by one: no
  // observer of every item, a price from the batch's sums alone, and a
  // policy that counts in-place room.
  // An observer that watches only some sequences (sampled numerics) sees
  // those one by one and the others wherever they start or fill a block.
  const bool observed_in_full = numerics_ && !numerics_->watches_selectively();
  // A layout's host tables are counted over every sequence of the step.
  // A step with drafts is one by one: its decodes compute 1 + K tokens.
  if (scenario.speculative.on) {
    speculation_ = std::make_unique<Speculation>(scenario);
    sp.speculative_tokens = scenario.speculative.num_speculative_tokens;
  }
  bulk_decodes_allowed_ = !observed_in_full && !per_sequence_pricing_ && !layout_cost_ &&
                          !policy_->caps_attention_context() && policy_->counts_in_place_room() &&
                          !speculation_ && ubatch_ == 0;
  sp.bulk_decodes = bulk_decodes_allowed_;
  if (numerics_ && !observed_in_full)
    sp.watched = [observer = numerics_.get()](const Sequence& seq) {
      return observer->watches(seq);
    };
  if (const SessionRetentionConfig& r = scenario.scheduler.session_retention; r.on) {
    retention_ = std::make_unique<SessionRetention>(r, *policy_, sim_, sizing_.num_blocks,
                                                    pool_.block_size(), [this] { kick(); });
    SessionRetention* retention = retention_.get();
    sp.make_room = [retention](uint64_t session) { return retention->make_room(session); };
    sp.admitted = [retention](const Sequence& seq, int64_t hit_tokens) {
      retention->admitted(seq.request.session, seq.slot, hit_tokens);
    };
  }
  if (loads_) {
    sp.load_async = [this](Sequence& seq) {
      seq.parked_at = sim_.now();
      loads_->add(&seq, chain_->take_request_load());
      return true;
    };
  }
  scheduler_ = std::make_unique<Scheduler>(sp, *policy_);
}

// A part of an async load landed: a request whose load is whole goes back
// to the scheduler, and the engine schedules again (at once when idle; a
// step in flight takes it at its end), where the next parts may start.
void ServingEngine::on_loads_woken() {
  loads_landed_.clear();
  loads_->take_ready(loads_landed_);
  for (Sequence* seq : loads_landed_) scheduler_->load_landed(seq);
  kick();
}

void ServingEngine::close_retention_if_done() {
  if (retention_ &&
      scheduler_->num_running() + scheduler_->num_waiting() + scheduler_->num_swapped() == 0 &&
      !step_in_flight_ && shell_.uplink().requests_exhausted())
    retention_->close();
}

ServingEngine::~ServingEngine() = default;

void ServingEngine::set_bulk_decodes(bool on) {
  scheduler_->set_bulk_decodes(on && bulk_decodes_allowed_);
}

RunMetrics ServingEngine::run() {
  if (!solo_)
    throw std::logic_error("ServingEngine::run: the engine is on a shared clock; run that clock");
  return run_engine_alone(*this, solo_->sim, solo_->pump);
}

Sequence* ServingEngine::new_sequence(Request&& request) {
  Sequence* seq;
  if (!free_sequences_.empty()) {
    seq = free_sequences_.back();
    free_sequences_.pop_back();
    // The hash memo keeps its room for the next request (it starts empty);
    // the rest is made anew in place.
    std::vector<BlockHash> memo = std::move(seq->block_hashes);
    memo.clear();
    std::destroy_at(seq);
    // Default-initialised: every member has its initialiser, where
    // std::construct_at's value-initialisation zeroed the whole record
    // first (a `rep stos` of 448 bytes before the same stores).
    ::new (static_cast<void*>(seq)) Sequence;
    seq->block_hashes = std::move(memo);
  } else {
    // Default-initialised for the same reason: make_unique<Sequence[]>
    // zeroed the whole chunk (28 KiB) before constructing its records.
    if (sequences_made_ % kSequenceChunk == 0)
      sequence_chunks_.push_back(std::make_unique_for_overwrite<Sequence[]>(kSequenceChunk));
    seq = &sequence_chunks_.back()[sequences_made_ % kSequenceChunk];
    ++sequences_made_;
  }
  seq->request = std::move(request);
  seq->prompt_tokens = seq->prompt_len();
  seq->output_tokens = seq->output_len();
  return seq;
}

void ServingEngine::recycle(Sequence* seq) {
  free_sequences_.push_back(seq);
}

void ServingEngine::submit(Request request) {
  Sequence* seq = new_sequence(std::move(request));
  shell_.count_arrival();
  // The policy's own context rule may refuse the request or cut its reply
  // (llama_cells as llama-server: sim/cache/llama_cells_pool.hpp).
  if (seq->prompt_len() >= 1 && seq->output_len() >= 1)
    seq->output_tokens = policy_->context_limited_output(seq->prompt_len(), seq->output_len());
  const int64_t total = seq->prompt_len() + seq->output_tokens;
  const int64_t blocks = sizing_.blocks_for_sequence(total, pool_.block_size());
  // A request that can never be served is refused at the door, as vLLM
  // refuses prompts beyond max_model_len or larger than the whole cache.
  if (seq->prompt_len() < 1 || seq->output_tokens < 1 || total > scenario_.max_model_len() ||
      blocks > sizing_.num_blocks) {
    reject(seq);
    return;
  }
  scheduler_->add_waiting(seq);
}

void ServingEngine::kick() {
  if (step_in_flight_ || kick_pending_) return;
  // A step of the data-parallel group is in flight without this rank: it
  // joins the next one.
  if (dp_ != nullptr && dp_->launched()) {
    dp_->defer(dp_rank_);
    return;
  }
  kick_pending_ = true;
  sim_.schedule_at(sim_.now(), kPrioKick, [this] {
    kick_pending_ = false;
    start_step();
  });
}

void ServingEngine::start_step() {
  if (step_in_flight_) return;
  const TimeNs now = sim_.now();
  if (chain_ != nullptr) chain_->seal_writes();  // what earlier steps computed
  scheduler_->schedule(batch_);
  if (loads_) loads_->issue();  // the parts of tier loads this step starts
  // A sequence is first scheduled when it leaves the waiting queue (a
  // request parked for its tier loads too, in a step that may run nothing).
  for (Sequence* seq : batch_.summary.admitted) {
    if (seq->started_at >= 0) continue;
    seq->started_at = now;
    seq->kv_wait_mark = kv_wait_total_;
  }
  if (batch_.empty()) {
    // Nothing runs and nothing can be admitted: the head of the queue can
    // never fit (arrival checks make this unreachable; guard anyway).
    // Pins kept under pressure (on_pressure: keep) hold blocks until their
    // expiry, which kicks the engine again: the head waits for them. So do
    // blocks pinned by stores in flight, which an idle engine sends now.
    if (chain_ != nullptr) chain_->flush_writes({}, false);
    if (scheduler_->num_running() == 0 && scheduler_->num_swapped() == 0 &&
        scheduler_->num_loading() == 0 && scheduler_->num_waiting() > 0 &&
        (!retention_ || retention_->pins() == 0) &&
        (chain_ == nullptr || chain_->pinned_blocks() == 0)) {
      reject(scheduler_->reject_head());
      kick();
    }
    observe(now, 0, 0);
    return;
  }
  // The sums the step's price needs, without a record per sequence; a model
  // with sliding-window layers is priced from each sequence's position.
  // Decodes (one token that samples) are summed as whole numbers and added
  // once: StepTotals' terms are exact sums of whole numbers, so the order
  // and grouping of the additions cannot change them.
  // A request parked for its tier loads waited for KV until now.
  for (Sequence* seq : batch_.summary.resumed) seq->kv_wait_mark -= now - seq->parked_at;
  const bool per_sequence = per_sequence_pricing_;
  work_.totals_given = !per_sequence;
  work_.totals = {};
  work_.seqs.clear();
  if (per_sequence || policy_->caps_attention_context()) {
    int64_t decodes = 0;
    int64_t decode_context = 0;
    for (const ScheduledSeq& item : batch_.items) {
      Sequence* seq = item.seq;
      const SeqWork s{item.tokens, policy_->attention_context(seq->computed),
                      seq->computed + item.tokens == seq->known_tokens()};
      if (per_sequence) {
        work_.seqs.push_back(s);
      } else if (s.query_tokens == 1 && s.samples) {
        ++decodes;
        decode_context += s.context_before;
      } else {
        work_.totals.add(s, work_.fixed_shape);
      }
    }
    if (decodes > 0) work_.totals.add_decodes(decodes, decode_context);
    if (speculation_) draft_batch_ = sampling_batch();
  } else {
    // The scheduler summed the decodes as it built the batch; the other
    // items are added in batch order, as the walk above adds them.
    // A verify pass (speculation) computes its drafts past the known
    // tokens, and takes logits at each of them and at its own token.
    // The same pass counts the sequences that sample (the drafter's batch).
    int64_t sampling = batch_.summary.decodes;
    int64_t sampling_context = batch_.summary.decode_context + batch_.summary.decodes;
    for (const uint32_t i : batch_.summary.others) {
      const ScheduledSeq& item = batch_.items[i];
      const Sequence* seq = item.seq;
      const int64_t drafts = seq->computed + item.tokens - seq->known_tokens();
      if (drafts > 0)
        add_verify(work_.totals, item.tokens, seq->computed);
      else
        work_.totals.add({item.tokens, seq->computed, drafts == 0}, work_.fixed_shape);
      if (drafts >= 0) {
        ++sampling;
        sampling_context += seq->computed + item.tokens;
      }
    }
    if (batch_.summary.decodes > 0)
      work_.totals.add_decodes(batch_.summary.decodes, batch_.summary.decode_context);
    draft_batch_ = {sampling, sampling_context};
  }
  work_.swap_in_bytes = batch_.swap_in_bytes;
  work_.swap_out_bytes = batch_.swap_out_bytes;
  // Swap crosses the host link the tiers' blocks cross (make_tier_links):
  // off the compute's price, onto the link, before the compute.
  step_swap_in_ = step_swap_out_ = 0;
  if (swap_read_ != nullptr) {
    step_swap_in_ = instance_bytes(work_.swap_in_bytes);
    step_swap_out_ = instance_bytes(work_.swap_out_bytes);
    work_.swap_in_bytes = work_.swap_out_bytes = 0;
  }
  work_.kv_copy_bytes = 0;
  if (dp_ != nullptr) {
    // The group prices and launches the step once every rank with work
    // has its batch (sim/serve/data_parallel_group.hpp).
    step_in_flight_ = true;
    dp_->join(dp_rank_);
    return;
  }
  price_step();
  launch_step(now);
}

// The sequences of the batch that sample (their drafts come next) and
// their contexts after the step's tokens, as start_step's sums count them.
DraftBatch ServingEngine::sampling_batch() const {
  DraftBatch b{batch_.summary.decodes, batch_.summary.decode_context + batch_.summary.decodes};
  for (const uint32_t i : batch_.summary.others) {
    const ScheduledSeq& item = batch_.items[i];
    if (item.seq->computed + item.tokens < item.seq->known_tokens()) continue;
    ++b.sequences;
    b.context += item.seq->computed + item.tokens;
  }
  return b;
}

// The step's own price: the target's pass (a pipeline cuts the batch into
// micro-batches of whole sequences), the host's share, the drafter's
// passes and the layout's tables.
void ServingEngine::price_step() {
  if (ubatch_ > 0 && batch_.total_tokens > ubatch_) {
    // llama.cpp computes the batch in ubatches of n_ubatch tokens, one
    // graph after another (sim/serve/micro_batches.hpp); each pays its host
    // share as a whole step would.
    step_latency_ = 0;
    for (const MicroBatch& ub : split_micro_batches(batch_, *policy_, ubatch_, work_.fixed_shape)) {
      TimeNs t = std::max<TimeNs>(timing_->step_latency(ub.work, ub.sequences), 1);
      if (host_work_) t = host_work_->serve_step(ub.work, t);
      step_latency_ += t;
      if (step_recorder_) step_recorder_(ub.work);
    }
  } else {
    // A pipeline cuts the batch into micro-batches of whole sequences.
    step_latency_ = std::max<TimeNs>(timing_->step_latency(work_, batch_.num_seqs()), 1);
    // What llama.cpp's backend leaves to the host CPU runs after the device's
    // part, in the same step (sim/cache/llama_backend_cost.hpp).
    if (host_work_) step_latency_ = host_work_->serve_step(work_, step_latency_);
    if (step_recorder_) step_recorder_(work_);
  }
  if (speculation_) {
    // The drafter proposes the next step's drafts for every sequence that
    // sampled, after the verify (vLLM's propose_draft_token_ids); in a
    // data-parallel group its one-token passes route the group's samplers.
    step_draft_ = speculation_->draft_latency(work_, draft_batch_, group_draft_tokens_);
    step_verify_ = step_latency_;
    step_latency_ += step_draft_;
  }
  // The host builds the layout's tables before the step is launched.
  if (layout_cost_) step_latency_ += layout_cost_->step(batch_, *policy_);
}

void ServingEngine::launch_step(TimeNs now) {
  if (speculation_) speculation_->count_step(step_verify_, step_draft_);
  if (timing_->stages() > 1)
    stage_link_bytes_ += timing_->boundary_bytes(static_cast<double>(batch_.total_tokens)) *
                         static_cast<double>(timing_->stages() - 1);
  // Work the policy ran for this step's admissions (seed 003: missed chunks
  // prefilled alone, chunks copied and re-rotated into the main pool) is a
  // pass of its own ahead of the batch, as the seed's model runner does it.
  if (StepWork pass; policy_->take_pending_work(pass))
    step_latency_ += timing_->price(pass).latency;
  // Tier hits of this step's admissions are read back before or during it;
  // the blocks the last step put into tiers go out in the background.
  const TierLoad load = policy_->take_tier_load();
  step_pure_compute_ = step_latency_;
  step_started_at_ = now;
  step_latency_ += load.lookup;  // the scheduler's round trips, before the launch
  store_gate_ = chain_ != nullptr && chain_->flush_writes([this] { on_store_gate_open(); });
  store_gate_since_ = now;
  step_compute_ = step_latency_;
  // With its links to itself: the swaps, then the loads and the compute.
  step_latency_ = load.step_latency(step_compute_) + start_swaps(step_swap_in_, step_swap_out_);
  load_layerwise_ = load.layerwise;
  load_in_flight_ =
      load.time > 0 && chain_ != nullptr && chain_->read_back([this] { on_load_done(); });
  step_in_flight_ = true;
  ++steps_;
  bulk_decodes_ += batch_.summary.bulk_decodes;
  shell_.step_started(steps_, static_cast<int64_t>(scheduler_->num_running()),
                      static_cast<int64_t>(scheduler_->num_waiting()));
  observe(now, batch_.total_tokens, step_latency_, false, batch_.num_seqs());
  if (shell_.spans_wanted()) span_step(now);
  schedule_step_done();
}

Bytes ServingEngine::instance_bytes(Bytes per_rank) const {
  const std::optional<int64_t> b = checked_mul(per_rank, scenario_.tp);
  if (!b) throw std::overflow_error("swap bytes of all ranks overflow");
  return *b;
}

// vLLM's worker swaps before the forward, in and then out, on the stream
// the forward then runs on (vllm/worker/worker.py, Worker.execute_worker:
// cache_engine.swap_in, swap_out, copy; cudaMemcpyAsync of the blocks);
// here over the host link, each direction its own, where the tiers' loads
// and stores share them. Returns their time with the links to themselves.
TimeNs ServingEngine::start_swaps(Bytes in, Bytes out) {
  if (in <= 0 && out <= 0) return 0;
  swap_in_flight_ = true;
  auto swap_out = [this, out] {
    if (out > 0)
      swap_write_->start(out, [this] { on_swaps_done(); });
    else
      on_swaps_done();
  };
  if (in > 0)
    swap_read_->start(in, swap_out);
  else
    swap_out();  // out > 0: its end comes from the link's event
  return swap_read_->alone_time(in) + swap_write_->alone_time(out);
}

void ServingEngine::on_swaps_done() {
  swap_in_flight_ = false;
  if (store_gate_) return;  // the stores still hold the compute
  open_compute();
}

// Each tier's reads and writes cross a port of its own with the tier's
// figures (what take_load prices), so a lone step costs what it did; a
// cluster appends the links instances share (add_kv_tier_hops).
void ServingEngine::make_tier_links() {
  for (int i = 0; i < chain_->size(); ++i) {
    const KvTierParams& p = chain_->tier(i).params();
    auto read = std::make_unique<SharedLink>(
        sim_, LinkSpec{fmt::format("kv_tiers.{}.read", p.name), p.read_bandwidth, p.latency},
        kPrioStepDone);
    auto write = std::make_unique<SharedLink>(
        sim_, LinkSpec{fmt::format("kv_tiers.{}.write", p.name), p.write_bandwidth, p.latency},
        kPrioStepDone);
    chain_->set_paths(i, {read.get()}, {write.get()});
    if (shell_.spans_wanted()) {
      trace_link(*read);
      trace_link(*write);
    }
    tier_links_.push_back(std::move(read));
    tier_links_.push_back(std::move(write));
  }
  // A tier reached through host DRAM crosses the host link too, and so does
  // a preempted sequence's swap: the dram tier's links when there is one
  // (its blocks cross the same PCIe), else the device file's host link (the
  // scenario checks a via_host tier has one). Each die has a host link of
  // its own (a 910B2's PCIe 4.0 x16, an H100's PCIe 5.0 x16): the port of
  // tensor ranks is one link of their summed bandwidth, each rank's share
  // taking what its die's link takes.
  const int dram = chain_->index_of("dram");
  SharedLink* host_read = nullptr;
  SharedLink* host_write = nullptr;
  auto host_links = [&] {
    if (host_read != nullptr) return;
    if (dram >= 0) {
      host_read = tier_links_[static_cast<size_t>(2 * dram)].get();
      host_write = tier_links_[static_cast<size_t>(2 * dram + 1)].get();
      return;
    }
    const DeviceSpec& d = scenario_.device;
    const std::optional<int64_t> bandwidth = checked_mul(d.host_link_bandwidth, scenario_.tp);
    if (!bandwidth) throw std::overflow_error("host link bandwidth x tensor ranks overflows");
    for (const char* dir : {"read", "write"}) {
      auto link = std::make_unique<SharedLink>(
          sim_, LinkSpec{fmt::format("kv_tiers.host.{}", dir), *bandwidth, d.host_link_latency},
          kPrioStepDone);
      if (shell_.spans_wanted()) trace_link(*link);
      (host_read == nullptr ? host_read : host_write) = link.get();
      tier_links_.push_back(std::move(link));
    }
  };
  for (int i = 0; i < chain_->size(); ++i) {
    if (!chain_->tier(i).params().via_host) continue;
    host_links();
    chain_->set_host_hops(i, {host_read}, {host_write});
  }
  // Swap on the host link wants one stage (a pipeline's stages swap their
  // own layers, priced in each stage's step) and a device that has the
  // link (a phone's NPU has none: it never swaps).
  if (pool_.swap_preemption() && scenario_.pp <= 1 &&
      (dram >= 0 || scenario_.device.host_link_bandwidth > 0)) {
    host_links();
    swap_read_ = host_read;
    swap_write_ = host_write;
  }
}

// Each transfer over the link becomes a span of its own track.
void ServingEngine::trace_link(SharedLink& link) {
  link.set_observer([this, &link](const LinkTransfer& t) {
    SpanRow row{"link", link.name(), 0, -1, t.start, t.end - t.start};
    row.bytes = t.bytes;
    row.delay = t.delay;
    shell_.span(row);
  });
}

bool ServingEngine::add_kv_tier_hops(const std::string& tier, const LinkPath& read,
                                     const LinkPath& write) {
  const int i = chain_ != nullptr ? chain_->index_of(tier) : -1;
  if (i < 0) return false;
  chain_->add_hops(i, read, write);
  return true;
}

// Without reads on links the step's end is known now. With them, a load
// before the step (load_overlap: none) ends where its links say, then the
// compute runs; a layer-wise load overlaps the compute and the step ends
// with the later of the two.
// Stores the step waits for (store_gate_) hold its compute back until they
// land; reads run meanwhile on their own links.
void ServingEngine::schedule_step_done() {
  if (!load_in_flight_ && !compute_held()) {
    sim_.schedule_in(step_latency_, kPrioStepDone, [this] { on_step_done(); });
    return;
  }
  if (compute_held()) return;    // on_store_gate_open / on_swaps_done start the compute
  if (!load_layerwise_) return;  // on_load_done schedules the compute
  start_layerwise_compute();
}

void ServingEngine::start_layerwise_compute() {
  compute_in_flight_ = true;
  sim_.schedule_in(step_compute_, kPrioStepDone, [this] {
    compute_in_flight_ = false;
    if (!load_in_flight_) on_step_done();
  });
}

void ServingEngine::on_load_done() {
  load_in_flight_ = false;
  if (compute_held()) return;  // the compute waits for the stores or swaps still
  if (!load_layerwise_)
    sim_.schedule_in(step_compute_, kPrioStepDone, [this] { on_step_done(); });
  else if (!compute_in_flight_)
    sim_.schedule_in(0, kPrioStepDone, [this] { on_step_done(); });
}

void ServingEngine::on_store_gate_open() {
  store_gate_ = false;
  chain_->note_store_wait(sim_.now() - store_gate_since_);
  if (swap_in_flight_) return;  // on_swaps_done starts the compute
  open_compute();
}

void ServingEngine::open_compute() {
  if (load_in_flight_) {
    // A read before the step: on_load_done runs the compute; a layer-wise
    // one overlaps the compute from now.
    if (load_layerwise_) start_layerwise_compute();
    return;
  }
  sim_.schedule_in(step_compute_, kPrioStepDone, [this] { on_step_done(); });
}

void ServingEngine::on_step_done() {
  const TimeNs now = sim_.now();
  step_in_flight_ = false;
  if (dp_ != nullptr) dp_->finished(dp_rank_);
  // What the step took beyond its compute: its lookups, the loads it did
  // not overlap and the stores it waited for. Every sequence scheduled
  // since kv_wait_total_ was marked was held by it (kv_wait_mark).
  kv_wait_total_ += std::max<TimeNs>(0, now - step_started_at_ - step_pure_compute_);
  scheduler_->step_done(now);
  // Below its horizon a commit would change nothing (most decodes stay
  // inside a block): no entry, no token view. The others are listed and
  // committed in one call (KvCachePolicy::commit_step: all prepared first,
  // blocks hashed and their places in the pool's map loaded, then committed
  // in batch order).
  // A decode below its horizon is settled (computed moved on) in the token
  // loop below instead, unless a numerics observer reads every sequence
  // first.
  // Bulk decodes that fill a block commit too, in batch order among the
  // items (the order matters when two sequences register the same hash).
  if (speculation_) verify_drafts();
  committing_.clear();
  committing_items_.clear();
  const bool settle_all = numerics_ != nullptr;
  auto settle = [&](const ScheduledSeq& item) {
    Sequence* seq = item.seq;
    seq->computed += item.tokens;
    if (seq->computed < seq->commit_horizon) return;
    committing_items_.push_back({committing_.size(), seq});
    // The content known once the step's tokens are in: a verify pass's
    // accepted drafts are output tokens (computed reaches past the prompt
    // and the output known before by them), the token it samples is not.
    const int64_t known_output = std::max(seq->generated, seq->computed - seq->prompt_tokens);
    committing_.push_back({seq->slot, seq->computed, known_output, seq, &content_of_sequence});
  };
  // Their entries are the scheduler's (content from its list, horizon to
  // it): their Sequence is not read. They join the items' in runs, where
  // items come between them in batch order.
  std::vector<StepCommit>& bulk_commits = batch_.summary.bulk_commits;
  size_t next_bulk = 0;
  auto add_bulk_until = [&](size_t end) {
    committing_.insert(committing_.end(), bulk_commits.begin() + static_cast<ptrdiff_t>(next_bulk),
                       bulk_commits.begin() + static_cast<ptrdiff_t>(end));
    next_bulk = end;
  };
  // Most steps of a saturated batch commit bulk decodes only: their list
  // is committed as the scheduler made it, not copied.
  std::span<StepCommit> commits = bulk_commits;
  const std::vector<uint32_t>& at_horizon = batch_.summary.at_horizon;
  if (settle_all || !at_horizon.empty()) {
    if (settle_all) {
      for (const ScheduledSeq& item : batch_.items) settle(item);
    } else {
      for (size_t k = 0; k < at_horizon.size(); ++k) {
        add_bulk_until(batch_.summary.at_horizon_bulk_commits[k]);
        settle(batch_.items[at_horizon[k]]);
      }
    }
    add_bulk_until(bulk_commits.size());
    commits = committing_;
  }
  // (Most steps of a small batch have none.)
  if (!commits.empty()) {
    policy_->commit_step(commits);
    for (const StepCommit& c : commits) scheduler_->committed(c.seq, c.horizon);
    for (const CommittingItem& c : committing_items_)
      c.seq->commit_horizon = committing_[c.entry].horizon;
  }
  if (numerics_) numerics_->on_step_done(batch_, *policy_, now);
  // Inter-token latencies go to the histogram by runs of requests whose
  // previous token came at the same time (in a decode step, nearly all):
  // the same values in the same order as one call per request. Bulk decodes
  // (all of whose previous token came at bulk_last_token_at) join the runs
  // where they stand in batch order; their sequences are settled later.
  const BatchSummary& summary = batch_.summary;
  TimeNs run_last = -1;
  int64_t run_length = 0;
  int64_t bulk_counted = 0;
  auto count_bulk_until = [&](int64_t bulk_before) {
    if (bulk_before == bulk_counted) return;
    if (summary.bulk_last_token_at != run_last) {
      shell_.tokens_emitted_after(run_last, run_length);
      run_last = summary.bulk_last_token_at;
      run_length = 0;
    }
    run_length += bulk_before - bulk_counted;
    bulk_counted = bulk_before;
  };
  const std::vector<uint32_t>& settled = summary.at_horizon;
  size_t next_settled = 0;
  int64_t zero_gaps = 0;        // speculation: tokens after the first of a verify pass
  constexpr size_t kAhead = 8;  // sequences live apart on the heap: load ahead
  for (size_t i = 0; i < batch_.items.size(); ++i) {
    if (i + kAhead < batch_.items.size()) __builtin_prefetch(batch_.items[i + kAhead].seq);
    count_bulk_until(summary.bulk_before[i]);
    const ScheduledSeq& item = batch_.items[i];
    Sequence* seq = item.seq;
    if (next_settled < settled.size() && settled[next_settled] == i)
      ++next_settled;
    else if (!settle_all)
      seq->computed += item.tokens;                     // a decode inside its horizon
    if (seq->computed < seq->known_tokens()) continue;  // prefill chunk, no token yet
    // The step sampled a token, after the drafts it accepted (speculation):
    // computed reaches past the known tokens by those.
    const int64_t accepted = seq->computed - seq->known_tokens();
    seq->generated += 1 + accepted;
    // A verify pass's tokens come together: the ones after the first are
    // 0 apart (counted once for the step, below).
    zero_gaps += accepted;
    if (seq->first_token_at < 0) seq->first_token_at = now;
    if (seq->last_token_at >= 0) {
      if (seq->last_token_at != run_last) {
        shell_.tokens_emitted_after(run_last, run_length);
        run_last = seq->last_token_at;
        run_length = 0;
      }
      ++run_length;
    }
    seq->last_token_at = now;
    if (seq->generated >= seq->output_tokens) complete(seq);
  }
  count_bulk_until(summary.bulk_decodes);
  shell_.tokens_emitted_after(run_last, run_length);
  shell_.tokens_emitted_after(now, zero_gaps);
  if (retention_) close_retention_if_done();
  observe(now, 0, 0);
  kick();
}

// Each item with drafts (computed + tokens past its known tokens) learns
// how many the target accepts; the rejected ones' slots go back before the
// commit, so no block is hashed over them, and the item keeps the tokens
// whose KV stays: its own and the accepted drafts. One pass over the
// step's items at their horizon (every verify pass is one): a verify pass
// that stays below its commit horizon once its drafts are settled leaves
// the list, as a decode inside its block is never in it (its commit would
// change nothing; the token loop settles it).
void ServingEngine::verify_drafts() {
  BatchSummary& summary = batch_.summary;
  std::vector<uint32_t>& at_horizon = summary.at_horizon;
  std::vector<uint32_t>& bulk_before = summary.at_horizon_bulk_commits;
  // The draws first, for every item in one pass (pure: the order of draw
  // and count does not matter), so one sequence's mixing overlaps the
  // next's; then the counts, the rollbacks and the list.
  verdicts_.resize(at_horizon.size());
  constexpr size_t kAhead = 8;  // sequences live apart on the heap: load ahead
  for (size_t k = 0; k < at_horizon.size(); ++k) {
    if (k + kAhead < at_horizon.size())
      __builtin_prefetch(batch_.items[at_horizon[k + kAhead]].seq);
    const ScheduledSeq& item = batch_.items[at_horizon[k]];
    const Sequence* seq = item.seq;
    const int64_t drafts = seq->computed + item.tokens - seq->known_tokens();
    verdicts_[k] = {
        drafts,
        drafts > 0 ? speculation_->accepted_drafts(seq->request.id, seq->generated, drafts) : 0};
  }
  size_t kept = 0;
  for (size_t k = 0; k < at_horizon.size(); ++k) {
    const auto [drafts, accepted] = verdicts_[k];
    if (drafts > 0) {
      ScheduledSeq& item = batch_.items[at_horizon[k]];
      Sequence* seq = item.seq;
      speculation_->count(drafts, accepted);
      if (const int64_t rejected = drafts - accepted; rejected > 0) {
        policy_->rollback(seq->slot, rejected);
        item.tokens -= rejected;
      }
      if (seq->computed + item.tokens < seq->commit_horizon) continue;
    }
    at_horizon[kept] = at_horizon[k];
    bulk_before[kept] = bulk_before[k];
    ++kept;
  }
  at_horizon.resize(kept);
  bulk_before.resize(kept);
}

void ServingEngine::complete(Sequence* seq) {
  // The request's lines its record reads (id and arrival, session and
  // turn) are requested while the scheduler lets the sequence go; its
  // lengths are the engine's copies in the sequence's first line
  // (new_sequence), not the token contents' sizes, two lines more.
  __builtin_prefetch(&seq->request.arrival);
  __builtin_prefetch(&seq->request.session);
  if (numerics_) numerics_->on_release(*seq);
  if (retention_ && retention_->wants(seq->request))
    retention_->pin(seq->request, scheduler_->finish(seq, /*keep_slot=*/true));
  else
    scheduler_->finish(seq);
  seq->finished_at = sim_.now();
  if (seq->preemptions > 0) ++preempted_requests_;
  // llama-bench's clock: from the run's first step (it arrives when the
  // last run completes, on an idle engine) to the end of its last.
  if (const int32_t test = seq->request.bench_test; test >= 0) {
    if (bench_samples_.size() <= static_cast<size_t>(test))
      bench_samples_.resize(static_cast<size_t>(test) + 1);
    bench_samples_[static_cast<size_t>(test)].push_back(seq->finished_at - seq->started_at);
  }
  shell_.complete({seq->request, seq->first_token_at, seq->prompt_tokens, seq->output_tokens,
                   seq->cached_tokens, seq->preemptions, seq->started_at,
                   kv_wait_total_ - seq->kv_wait_mark});
  recycle(seq);
}

void ServingEngine::reject(Sequence* seq) {
  seq->state = SeqState::finished;
  shell_.reject({seq->request, -1, seq->prompt_len(), seq->output_len(), 0, 0});
  recycle(seq);
}

// The step as a span (batch size, tokens), the KV it moves over the host
// link as a transfer beside it, and its loads from each tier, for a trace.
void ServingEngine::span_step(TimeNs now) {
  SpanRow row{"step", "step",        static_cast<uint64_t>(steps_), -1,
              now,    step_latency_, batch_.total_tokens,           batch_.num_seqs()};
  row.bytes = batch_.swap_in_bytes + batch_.swap_out_bytes;
  shell_.span(row);
  if (batch_.swap_out_bytes > 0) {
    SpanRow out{"kv_transfer", "swap out", static_cast<uint64_t>(steps_), -1, now, step_latency_};
    out.bytes = batch_.swap_out_bytes;
    shell_.span(out);
  }
  if (batch_.swap_in_bytes > 0) {
    SpanRow in{"kv_transfer", "swap in", static_cast<uint64_t>(steps_), -1, now, step_latency_};
    in.bytes = batch_.swap_in_bytes;
    shell_.span(in);
  }
  // The tier hits it read back (before it, or layer by layer beside it).
  if (const TierChain* chain = policy_->tiers()) {
    for (int i = 0; i < chain->size(); ++i) {
      if (chain->last_read_bytes(i) == 0) continue;
      SpanRow load{"tier_load", chain->tier(i).name(),   static_cast<uint64_t>(steps_), -1,
                   now,         chain->last_read_time(i)};
      load.bytes = chain->last_read_bytes(i);
      shell_.span(load);
    }
  }
}

void ServingEngine::observe(TimeNs now, int64_t step_tokens, TimeNs step_latency, bool force_row,
                            int64_t step_seqs) {
  // A step ends and the next starts at one instant: the second observation
  // spans no time, and adding zero to the integrals would change nothing.
  const double dt = kv_used_.advance(now);
  if (current_has_blocks_ && dt != 0) {
    frag_integral_ += current_frag_ * dt;
    frag_time_ += dt;
  }
  const CacheAccounting acc = policy_->accounting();
  kv_used_.set(acc.blocks_used * acc.block_bytes);
  current_has_blocks_ = acc.slots_reserved > 0;
  current_frag_ = current_has_blocks_ ? static_cast<double>(acc.slots_reserved - acc.tokens_held) /
                                            static_cast<double>(acc.slots_reserved)
                                      : 0.0;
  // The row is built only when one is written (most observations fall
  // inside the timeline interval).
  if (!shell_.timeline_due(now, step_tokens, step_latency, step_seqs, force_row)) return;
  shell_.write_timeline({now, static_cast<int64_t>(scheduler_->num_running()),
                         static_cast<int64_t>(scheduler_->num_waiting()),
                         static_cast<int64_t>(scheduler_->num_swapped()), acc.blocks_used,
                         kv_used_.current(), acc.tokens_held, 0, 0, 0, 0, acc.prefix_query_tokens,
                         acc.prefix_hit_tokens});
}

}  // namespace kvsim
