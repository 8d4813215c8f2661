#include "sim/cluster/cluster_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/cache/tiers/tier_chain.hpp"
#include "sim/cluster/routing_registry.hpp"

namespace kvsim {

namespace {

int64_t request_tokens(const Request& r) {
  return static_cast<int64_t>(r.prompt.size() + r.output.size());
}

}  // namespace

struct ClusterRun::Handoff {
  Request request;  // the whole request, KV ready for its prompt
  size_t from = 0, decode = 0;
  Bytes bytes = 0;            // the KV it carries
  TimeNs sent = 0;            // when the prefill instance sent it
  int64_t cached_tokens = 0;  // the prefill instance's prefix hit
  int32_t preemptions = 0;    // at the prefill instance
  TimeNs kv_wait = 0;         // at the prefill instance, then on the way
  bool delivered = false;
};

class ClusterRun::InstanceUplink final : public EngineUplink {
 public:
  InstanceUplink(ClusterRun& run, Instance& instance) : run_(run), instance_(instance) {}
  void request_done(const Request& request, TimeNs now) override;
  bool requests_exhausted() const override {
    return run_.pump_.requests_exhausted() && run_.handoffs_.empty();
  }
  void engine_stopped() override {}

 private:
  ClusterRun& run_;
  Instance& instance_;
};

ClusterRun::Instance::~Instance() = default;

const InferenceEngine& ClusterRun::engine(size_t i) const {
  return *instances_[i]->engine;
}

void ClusterRun::InstanceUplink::request_done(const Request& request, TimeNs) {
  run_.on_left(instance_, request, instance_.tap.last);
}

ClusterRun::ClusterRun(const InstanceSpec& scenario, const ClusterSpec& cluster,
                       MakeEngine make_engine, RunSink* sink)
    : scenario_(scenario),
      cluster_(cluster),
      sink_(sink),
      // Its instances serve each request alone: a dialog's turns carry
      // their conversation.
      source_(make_request_source(*scenario.workload, scenario.seed, scenario.model.vocab_size,
                                  SourceOptions{true})),
      pump_(sim_, *source_),
      shell_("serving", scenario, sim_, pump_, sink) {
  // The deliveries keep the priority they had as events of their own.
  links_ = std::make_unique<ClusterLinks>(sim_, cluster_, kArrivalPriority);
  for (const InstanceGroup& group : cluster_.groups) {
    // A group of parallel.data ranks runs `data` engines per instance; a
    // MoE model's ranks step together (sim/serve/data_parallel_group.hpp),
    // a dense model's are independent replicas behind the router.
    const int64_t dp = std::max<int64_t>(group.spec->dp, 1);
    const bool lockstep = dp > 1 && group.spec->ep > 1;
    for (int64_t k = 0; k < group.count * dp; ++k) {
      if (lockstep && k % dp == 0)
        dp_groups_.push_back(std::make_unique<DataParallelGroup>(sim_, dp));
      auto inst = std::make_unique<Instance>();
      inst->index = instances_.size();
      inst->group = &group;
      inst->uplink = std::make_unique<InstanceUplink>(*this, *inst);
      inst->tap.run = this;
      inst->tap.index = inst->index;
      inst->tap.spans = sink_ != nullptr && sink_->wants_spans();
      inst->engine = make_engine(*group.spec, sim_, *inst->uplink, &inst->tap);
      inst->engine->mirror_itl(shell_.itl_histogram());
      if (lockstep &&
          !inst->engine->join_data_parallel(dp_groups_.back().get(), static_cast<size_t>(k % dp)))
        throw std::logic_error(fmt::format("instance {} ({}) cannot be a data-parallel rank",
                                           instances_.size(), group.name));
      if (const BlockPoolContract* pool = group.spec->policy().block_pool()) {
        inst->block_size = pool->block_size();
        inst->num_blocks = inst->engine->memory_plan().num_blocks;
      }
      (group.role == InstanceRole::decode ? decode_ : front_).push_back(inst->index);
      if (group.role == InstanceRole::prefill) {
        // Every device of the instance (tp x pp) sends its own layers' KV
        // over its own link in parallel: one port of their summed bandwidth
        // carries the instance's bytes in the time each device takes.
        const InstanceSpec& spec = *group.spec;
        const KvLink link = kv_link_of(spec.device, cluster_.transfer.link).value();
        const int64_t ranks = spec.tp * std::max<int64_t>(spec.pp, 1);
        inst->port = std::make_unique<SharedLink>(
            sim_,
            LinkSpec{fmt::format("{}{}.{}.tx", group.name, k, link.name), link.bandwidth * ranks,
                     link.latency},
            kArrivalPriority);
      }
      instances_.push_back(std::move(inst));
    }
  }
  if (sink_ != nullptr && sink_->wants_spans()) trace_links();
  if (cluster_.global_pool.enabled()) {
    pool_ = std::make_shared<KvTier>(cluster_.global_pool.tier, cluster_.global_pool.block_bytes);
    for (size_t i : front_) {
      if (!instances_[i]->engine->share_kv_tier(pool_))
        throw std::logic_error(fmt::format("instance {} ({}) has no global tier to share", i,
                                           instances_[i]->group->name));
      const LinkPath read = links_->pool_read_hops(i), write = links_->pool_write_hops(i);
      if ((!read.empty() || !write.empty()) &&
          !instances_[i]->engine->add_kv_tier_hops("global", read, write))
        throw std::logic_error(fmt::format("instance {} ({}) has no global tier to route", i,
                                           instances_[i]->group->name));
    }
  }
  front_router_ = make_routing_policy(cluster_.router.policy, cluster_.router.params,
                                      cluster_.router.index, scenario_.seed);
  decode_router_ = make_routing_policy(cluster_.decode_router.policy, cluster_.decode_router.params,
                                       cluster_.decode_router.index, scenario_.seed);
  attach_index(*front_router_, front_);
  attach_index(*decode_router_, decode_);
  pump_.connect([this](Request r) { submit(std::move(r)); }, [this] { arrivals_done(); });
  if (sink_ != nullptr) build_timeline();
}

ClusterRun::~ClusterRun() = default;

// Each transfer over a link becomes a span of the link's own track: an
// instance's port in its process, a link instances share in the cluster's.
void ClusterRun::trace_links() {
  auto trace = [this](SharedLink& link, int32_t instance) {
    link.set_observer([this, &link, instance](const LinkTransfer& t) {
      SpanRow row{"link", link.name(), 0, -1, t.start, t.end - t.start};
      row.bytes = t.bytes;
      row.delay = t.delay;
      if (instance < 0)
        sink_->span(row);
      else
        sink_->instance_span(instance, row);
    });
  };
  for (const auto& inst : instances_)
    if (inst->port) trace(*inst->port, static_cast<int32_t>(inst->index));
  for (const auto& [name, link] : links_->links()) trace(*link, -1);
}

// The sink hears of the instances, then of their rows: one state per
// instance, rows written as the clock leaves each interval.
void ClusterRun::build_timeline() {
  std::vector<ClusterInstanceInfo> infos;
  std::vector<ClusterTimeline::Instance> shapes;
  for (const auto& inst : instances_) {
    const InstanceSpec& spec = *inst->group->spec;
    const PoolSizing plan = inst->engine->memory_plan();
    const int64_t pp = std::max<int64_t>(spec.pp, 1);
    infos.push_back({inst->group->name, std::string(instance_role_name(inst->group->role)), spec.tp,
                     pp, plan.num_blocks * plan.instance_block_bytes});
    shapes.push_back(
        {spec.tp * pp, plan.instance_block_bytes, inst->group->role != InstanceRole::decode});
  }
  sink_->cluster_started(infos);
  auto tiers = [this](size_t i) -> int64_t {
    const KvCachePolicy* cache = instances_[i]->engine->cache_policy();
    const TierChain* chain = cache != nullptr ? cache->tiers() : nullptr;
    int64_t blocks = 0;
    if (chain != nullptr)
      for (int t = 0; t < chain->size(); ++t)
        if (!chain->shared(t)) blocks += chain->tier(t).blocks_held();
    return blocks;
  };
  auto pool = [this]() -> int64_t { return pool_ ? pool_->blocks_held() : -1; };
  timeline_ = std::make_unique<ClusterTimeline>(scenario_.output.timeline_interval,
                                                std::move(shapes), *sink_, tiers, pool);
}

void ClusterRun::set_progress(std::function<void(const RunProgress&)> callback) {
  progress_ = std::move(callback);
  for (const auto& inst : instances_) {
    Instance* at = inst.get();
    at->engine->set_progress(
        progress_ ? std::function<void(const RunProgress&)>([this, at](const RunProgress& p) {
          at->running = p.running;
          at->waiting = p.waiting;
          report_progress();
        })
                  : std::function<void(const RunProgress&)>());
  }
}

void ClusterRun::report_progress() {
  RunProgress p;
  p.arrived = shell_.arrived();
  p.completed = shell_.completed();
  p.rejected = shell_.rejected();
  for (const auto& inst : instances_) {
    p.running += inst->running;
    p.waiting += inst->waiting;
  }
  p.simulated = sim_.now();
  p.instances = static_cast<int64_t>(instances_.size());
  progress_(p);
}

PoolSizing ClusterRun::memory_plan() const {
  return instances_.front()->engine->memory_plan();
}

void ClusterRun::attach_index(RoutingPolicy& router, const std::vector<size_t>& members) {
  PrefixIndex* index = router.prefix_index();
  if (index == nullptr || members.empty()) return;
  index->attach(members.size(), instances_[members.front()]->block_size);
  if (!index->wants_events()) return;
  for (size_t m = 0; m < members.size(); ++m) {
    Instance& inst = *instances_[members[m]];
    inst.events.index = index;
    inst.events.sim = &sim_;
    inst.events.member = m;
    // The reader refuses a group whose cache publishes no events.
    if (!inst.engine->publish_kv_events(&inst.events))
      throw std::logic_error(
          fmt::format("instance {} ({}) publishes no KV events", inst.index, inst.group->name));
  }
}

int64_t ClusterRun::request_blocks(const Instance& inst, const Request& request) const {
  if (inst.block_size <= 0) return 0;
  return (request_tokens(request) + inst.block_size - 1) / inst.block_size;
}

size_t ClusterRun::route(RoutingPolicy& router, const std::vector<size_t>& members,
                         const Request& request) {
  if (PrefixIndex* index = router.prefix_index()) index->advance_to(sim_.now());
  views_.clear();
  for (size_t i : members) {
    const Instance& inst = *instances_[i];
    InstanceView v{inst.outstanding_requests, inst.outstanding_tokens, inst.engine->cache_policy()};
    v.block_size = inst.block_size;
    v.outstanding_blocks = inst.outstanding_blocks;
    if (v.cache != nullptr && inst.num_blocks > 0)
      v.kv_utilization =
          1.0 - static_cast<double>(v.cache->free_blocks()) / static_cast<double>(inst.num_blocks);
    views_.push_back(v);
  }
  const size_t pick = router.pick(request, views_);
  if (pick >= members.size())
    throw std::logic_error(
        fmt::format("router '{}' picked instance {} of {}", router.name(), pick, members.size()));
  return members[pick];
}

void ClusterRun::submit(Request request) {
  shell_.count_arrival();
  Instance& inst = *instances_[route(*front_router_, front_, request)];
  if (inst.group->role == InstanceRole::prefill && request.output.size() > 1) {
    // The prefill instance computes the prompt and samples one token; the
    // decode instance generates the output (its first token included).
    std::vector<int32_t> first(request.output.begin(), request.output.begin() + 1);
    outputs_[request.id] = std::exchange(request.output, std::move(first));
  }
  ++inst.outstanding_requests;
  inst.outstanding_tokens += request_tokens(request);
  inst.outstanding_blocks += request_blocks(inst, request);
  inst.touched = true;
  inst.engine->submit(std::move(request));
}

void ClusterRun::arrivals_done() {
  for (const auto& inst : instances_) {
    if (!inst->touched) continue;
    inst->touched = false;
    inst->engine->arrivals_done();
  }
}

void ClusterRun::on_left(Instance& from, const Request& request, const RequestRow& row) {
  --from.outstanding_requests;
  from.outstanding_tokens -= request_tokens(request);
  from.outstanding_blocks -= request_blocks(from, request);
  const bool completed = row.status == "completed";
  const InstanceRole role = from.group->role;
  if (role == InstanceRole::prefill && completed) {
    start_transfer(from, request, row);
    return;
  }
  int64_t cached = row.cached_tokens;
  int32_t preemptions = row.preemptions;
  TimeNs kv_wait = row.kv_wait;
  if (role == InstanceRole::prefill) outputs_.erase(request.id);  // refused at the prefill side
  if (role == InstanceRole::decode) {
    const auto it = handoffs_.find(request.id);
    if (it == handoffs_.end())
      throw std::logic_error(
          fmt::format("request {} left a decode instance it never reached", request.id));
    cached = it->second.cached_tokens;
    preemptions += it->second.preemptions;
    kv_wait += it->second.kv_wait;
    handoffs_.erase(it);
  }
  const LeavingRequest leaving{
      request, row.first_token, row.prompt_tokens, row.output_tokens, cached, preemptions,
      -1,      kv_wait};
  if (completed)
    shell_.complete(leaving);
  else
    shell_.reject(leaving);
}

void ClusterRun::start_transfer(Instance& from, const Request& request, const RequestRow& row) {
  Handoff h;
  h.request = request;
  if (auto it = outputs_.find(request.id); it != outputs_.end()) {
    h.request.output = std::move(it->second);
    outputs_.erase(it);
  }
  h.request.kv_ready_tokens = static_cast<int64_t>(request.prompt.size());
  h.cached_tokens = row.cached_tokens;
  h.preemptions = row.preemptions;
  h.kv_wait = row.kv_wait;
  h.from = from.index;
  h.decode = route(*decode_router_, decode_, h.request);
  Instance& to = *instances_[h.decode];
  ++to.outstanding_requests;
  to.outstanding_tokens += request_tokens(h.request);
  to.outstanding_blocks += request_blocks(to, h.request);

  const InstanceSpec& spec = *from.group->spec;
  // Every device of the prefill instance (tp x pp) sends its own layers'
  // KV; the stage holding the most layers (the one the plan describes)
  // finishes last, and the bytes are the whole instance's. Layer-wise,
  // only the last layer's share is left to send (price_kv_transfer).
  const PoolSizing plan = from.engine->memory_plan();
  const int64_t ranks = spec.tp * std::max<int64_t>(spec.pp, 1);
  const Bytes wire_bytes = h.request.kv_ready_tokens * plan.kv_bytes_per_token * ranks;
  const int64_t divisor =
      cluster_.transfer.layerwise ? std::max<int64_t>(spec.model.num_hidden_layers, 1) : 1;
  h.bytes = h.request.kv_ready_tokens *
            (plan.instance_block_bytes / spec.policy().block_pool()->block_size());
  const TimeNs now = sim_.now();
  h.sent = now;
  ++transfers_;
  transfer_bytes_ += h.bytes;
  if (timeline_) timeline_->transfer_started(h.from, h.decode, h.bytes, now);
  LinkPath path{from.port.get()};
  const LinkPath hops = links_->transfer_hops(h.from, h.decode);
  path.insert(path.end(), hops.begin(), hops.end());
  const uint64_t id = request.id;
  handoffs_.emplace(id, std::move(h));
  // Past the port each device's share is a flow of its own on the links
  // its node shares (link_path.hpp's RankSplit).
  transfer_over(
      path, wire_bytes, [this, id] { deliver(id); }, divisor, RankSplit{1, ranks});
}

void ClusterRun::deliver(uint64_t id) {
  Handoff& h = handoffs_.at(id);
  h.delivered = true;
  const TimeNs now = sim_.now();
  transfer_time_ += now - h.sent;
  h.kv_wait += now - h.sent;  // its decode waits for the KV to arrive
  transfer_max_ = std::max(transfer_max_, now - h.sent);
  const Instance& from = *instances_[h.from];
  if (from.tap.spans) {
    // On the sending instance's track, from the end of its prefill to the
    // KV's arrival (sharing its links with the transfers beside it).
    SpanRow span{
        "kv_transfer", "PD transfer", id, -1, h.sent, now - h.sent, h.request.kv_ready_tokens};
    span.bytes = h.bytes;
    span.seqs = static_cast<int64_t>(h.decode);  // the receiving instance
    sink_->instance_span(static_cast<int32_t>(from.index), span);
  }
  if (timeline_) timeline_->transfer_arrived(h.from, h.decode, h.bytes, sim_.now());
  Instance& to = *instances_[h.decode];
  to.engine->submit(std::move(h.request));
  to.engine->arrivals_done();
}

RunMetrics ClusterRun::run() {
  shell_.start();
  for (const auto& inst : instances_) inst->engine->start();
  pump_.arm();
  sim_.run();
  if (timeline_) timeline_->finish();
  if (!handoffs_.empty() || !outputs_.empty())
    throw std::logic_error(fmt::format("the cluster run ended with {} requests between instances",
                                       handoffs_.size() + outputs_.size()));
  std::vector<RunMetrics> per_instance;
  for (const auto& inst : instances_) {
    if (inst->outstanding_requests != 0)
      throw std::logic_error(fmt::format("instance {} ended with {} requests outstanding",
                                         inst->index, inst->outstanding_requests));
    per_instance.push_back(inst->engine->finish());
  }
  check_conserved();
  return collect(std::move(per_instance));
}

// Every instance's blocks are back in its own pool: none held, none lost,
// none moved to another instance's count (a transfer copies KV into blocks
// the decode instance allocated itself).
void ClusterRun::check_conserved() const {
  int64_t expected = 0, free = 0;
  for (const auto& inst : instances_) {
    const KvCachePolicy* cache = inst->engine->cache_policy();
    if (cache == nullptr) continue;
    const CacheAccounting acc = cache->accounting();
    expected += inst->engine->memory_plan().num_blocks;
    free += cache->free_blocks();
    if (acc.blocks_used != 0 || cache->free_blocks() != acc.num_blocks)
      throw std::logic_error(
          fmt::format("instance {} ({}) ended with {} blocks in use and {} of {} free", inst->index,
                      inst->group->name, acc.blocks_used, cache->free_blocks(), acc.num_blocks));
  }
  if (free != expected)
    throw std::logic_error(
        fmt::format("the cluster's pools hold {} free blocks, {} were allocated", free, expected));
  // Each instance's own tiers are balanced by its engine's finish(); the
  // shared pool holds what all of them put, minus its evictions.
  if (pool_) {
    std::vector<const TierChain*> chains;
    for (const auto& inst : instances_)
      if (const KvCachePolicy* cache = inst->engine->cache_policy())
        chains.push_back(cache->tiers());
    check_shared_tier_conserved(*pool_, chains);
  }
}

}  // namespace kvsim
