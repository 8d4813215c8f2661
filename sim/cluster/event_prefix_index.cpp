// events: the router's view of each instance's device pool built from its
// KV events, as vLLM's KV events publisher sends them (BlockStored when a
// full block's hash becomes findable, BlockRemoved when the block is reused
// for other content: vllm/distributed/kv_events.py) and as llm-d's precise
// prefix-cache scorer (llm-d-kv-cache-manager's kvevents pool) and NVIDIA
// Dynamo's KV router (lib/kv-router: its KvIndexer's radix tree) consume
// them. An event reaches the index `lag` after it happened (the publisher's
// batching, the transport, the indexer's queue): until then the router
// routes by what it knew before, so it may send a request to an instance
// that has since evicted the prefix, or miss one that just computed it.
//
// The index is a map from block hash to the set of instances holding it (a
// bitset). Block hashes are chained on their parents (block_hash.hpp), so a
// hash stands for its whole prefix and a flat map answers what Dynamo's
// radix tree answers: an instance's overlap is the run of the prompt's
// leading blocks whose hashes list it. Routing one request costs one map
// lookup per leading block held anywhere (a word per 64 instances each),
// never a walk over a cache; an event costs one map update.
//
// Only device pools publish (tiers below them do not, as vLLM's publisher
// covers its GPU blocks): every overlap this index reports is `device`.
#include <algorithm>
#include <bit>
#include <deque>
#include <unordered_map>

#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cluster/prefix_index.hpp"
#include "sim/cluster/routing_policy.hpp"

namespace kvsim {
namespace {

class EventPrefixIndex final : public PrefixIndex {
 public:
  explicit EventPrefixIndex(TimeNs lag) : lag_(lag) {}
  std::string_view kind() const override { return "events"; }
  bool wants_events() const override { return true; }

  void attach(size_t instances, int64_t block_size) override {
    words_ = std::max<size_t>(1, (instances + 63) / 64);
    block_size_ = block_size;
    scratch_.resize(static_cast<size_t>(std::max<int64_t>(block_size, 1)));
  }

  void on_event(size_t instance, KvEventKind kind, const BlockHash& hash, TimeNs at) override {
    queue_.push_back({at, static_cast<uint32_t>(instance), kind, hash});
  }

  void advance_to(TimeNs now) override {
    while (!queue_.empty() && queue_.front().at + lag_ <= now) {
      apply(queue_.front());
      queue_.pop_front();
    }
  }

  void overlaps(const Request& request, std::span<const InstanceView> instances,
                std::vector<PrefixOverlap>& out, const std::vector<uint8_t>*) override {
    out.assign(instances.size(), PrefixOverlap{});
    if (block_size_ <= 0 || slot_of_.empty()) return;
    const TokenView tokens = TokenView::of(request.prompt, request.output, 0);
    // The last token is always computed (the engine's lookup never reuses
    // it: vLLM v1), so at most (n - 1) / block_size blocks can be reused.
    const int64_t max_blocks = std::max<int64_t>(tokens.prompt_len - 1, 0) / block_size_;
    hashes_.clear();
    alive_.assign(words_, ~uint64_t{0});
    int64_t k = 0;
    for (; k < max_blocks; ++k) {
      // Hashed as far as the search may go, doubling: most prompts stop
      // after a few blocks, a shared one goes on.
      if (k >= static_cast<int64_t>(hashes_.size()))
        tokens.extend_block_hashes(hashes_, std::min(max_blocks, std::max<int64_t>(8, 2 * k)),
                                   block_size_, scratch_.data());
      const auto it = slot_of_.find(hashes_[static_cast<size_t>(k)]);
      if (it == slot_of_.end()) break;
      const uint64_t* bits = &bits_[static_cast<size_t>(it->second) * words_];
      bool any = false;
      for (size_t w = 0; w < words_; ++w) {
        const uint64_t held = alive_[w] & bits[w];
        settle(alive_[w] & ~held, w, k, out);  // their run ends before block k
        alive_[w] = held;
        any = any || held != 0;
      }
      if (!any) return;
    }
    for (size_t w = 0; w < words_; ++w) settle(alive_[w], w, k, out);
  }

 private:
  struct Event {
    TimeNs at;
    uint32_t instance;
    KvEventKind kind;
    BlockHash hash;
  };

  void settle(uint64_t ended, size_t word, int64_t blocks, std::vector<PrefixOverlap>& out) const {
    while (ended != 0) {
      const size_t i = word * 64 + static_cast<size_t>(std::countr_zero(ended));
      ended &= ended - 1;
      if (i < out.size()) out[i].device = blocks * block_size_;
    }
  }

  void apply(const Event& e) {
    const size_t word = e.instance / 64;
    const uint64_t bit = uint64_t{1} << (e.instance % 64);
    if (word >= words_) return;  // an instance the router does not route among
    if (e.kind == KvEventKind::stored) {
      auto [it, fresh] = slot_of_.try_emplace(e.hash, 0);
      if (fresh) it->second = new_slot();
      bits_[static_cast<size_t>(it->second) * words_ + word] |= bit;
      return;
    }
    const auto it = slot_of_.find(e.hash);
    if (it == slot_of_.end()) return;
    uint64_t* bits = &bits_[static_cast<size_t>(it->second) * words_];
    bits[word] &= ~bit;
    if (std::all_of(bits, bits + words_, [](uint64_t b) { return b == 0; })) {
      free_.push_back(it->second);
      slot_of_.erase(it);
    }
  }

  uint32_t new_slot() {
    if (!free_.empty()) {
      const uint32_t s = free_.back();
      free_.pop_back();
      return s;  // its words are all zero (freed only when they were)
    }
    const auto s = static_cast<uint32_t>(bits_.size() / words_);
    bits_.resize(bits_.size() + words_, 0);
    return s;
  }

  TimeNs lag_;
  size_t words_ = 1;
  int64_t block_size_ = 0;
  std::deque<Event> queue_;  // not yet applied, oldest first
  std::unordered_map<BlockHash, uint32_t, BlockHashHasher> slot_of_;
  std::vector<uint64_t> bits_;  // words_ per slot: the instances holding its hash
  std::vector<uint32_t> free_;
  std::vector<BlockHash> hashes_;
  std::vector<uint64_t> alive_;
  std::vector<int32_t> scratch_;
};

}  // namespace

config::ComponentInfo event_prefix_index_info() {
  using namespace config;
  return {"prefix index",
          "events",
          "KV events (block stored / removed) of each instance's device pool, applied `lag` after "
          "they happened (vLLM's KV events as llm-d's precise scorer and Dynamo's KV router use "
          "them)",
          {duration_param("lag", 0, 0, 3600LL * 1'000'000'000LL,
                          "how long after a block is stored or removed the router learns of it "
                          "(publisher batching + transport + indexer); 0s: at once")}};
}

std::unique_ptr<PrefixIndex> make_event_prefix_index(const config::ParamValues& params) {
  return std::make_unique<EventPrefixIndex>(params.integer("lag"));
}

}  // namespace kvsim
