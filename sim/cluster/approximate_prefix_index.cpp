// approximate: the router's own record of where it sent which prompt, as
// the prefix-cache scorer of the Gateway API Inference Extension (the one
// llm-d's inference scheduler runs by default; kubernetes-sigs/
// gateway-api-inference-extension pkg/epp/scheduling/framework/plugins/
// multi/prefix/plugin.go and indexer.go) keeps it:
// - the prompt is cut into chunks of `block_size` (hashBlockSize, there 64
//   characters of text, "vLLM's block of 16 tokens at about 4 characters a
//   token"; here tokens, since prompts are token ids), the last partial
//   chunk dropped, at most `max_blocks` of them (maxPrefixBlocksToMatch,
//   256); each chunk's hash is chained on the one before, so a hash stands
//   for its whole prefix;
// - after routing, every chunk hash of the prompt is recorded for the
//   chosen instance in that instance's LRU of `capacity` entries
//   (lruCapacityPerServer, 31,250: a 64 GB H100 cache of Llama 3 8B in
//   16-token blocks); a hash it pushes out is forgotten for that instance;
// - an instance's overlap is the number of leading chunks of the prompt
//   recorded for it, times block_size.
// It never hears of evictions, so it believes an instance holds what the
// instance may have dropped long ago; and it never reports more than the
// prompt shares with the prompts it sent there. (The scorer there counts,
// for each server, the leading chunks held by any server that it holds
// too; counting only an instance's own leading run, as here, is what its
// cache could reuse.)
#include <algorithm>
#include <bit>
#include <list>
#include <unordered_map>

#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cluster/prefix_index.hpp"
#include "sim/cluster/routing_policy.hpp"

namespace kvsim {
namespace {

class ApproximatePrefixIndex final : public PrefixIndex {
 public:
  ApproximatePrefixIndex(int64_t block_size, int64_t max_blocks, int64_t capacity)
      : block_size_(block_size), max_blocks_(max_blocks), capacity_(capacity) {
    scratch_.resize(static_cast<size_t>(block_size));
  }
  std::string_view kind() const override { return "approximate"; }

  void attach(size_t instances, int64_t) override { grow(instances); }

  void overlaps(const Request& request, std::span<const InstanceView> instances,
                std::vector<PrefixOverlap>& out, const std::vector<uint8_t>*) override {
    grow(instances.size());
    out.assign(instances.size(), PrefixOverlap{});
    hash_prompt(request);
    const size_t words = words_of(instances.size());
    alive_.assign(words, ~uint64_t{0});
    size_t k = 0;
    for (; k < hashes_.size(); ++k) {
      const auto it = holders_.find(hashes_[k]);
      if (it == holders_.end()) break;
      bool any = false;
      for (size_t w = 0; w < words; ++w) {
        const uint64_t held = alive_[w] & (w < it->second.size() ? it->second[w] : 0);
        settle(alive_[w] & ~held, w, k, out);
        alive_[w] = held;
        any = any || held != 0;
      }
      if (!any) return;
    }
    for (size_t w = 0; w < words; ++w) settle(alive_[w], w, k, out);
  }

  void routed(const Request& request, size_t pick) override {
    (void)request;  // hashes_ are its prompt's (overlaps() came first)
    grow(pick + 1);
    Lru& lru = lrus_[pick];
    const size_t word = pick / 64;
    const uint64_t bit = uint64_t{1} << (pick % 64);
    for (const BlockHash& h : hashes_) {
      if (const auto at = lru.where.find(h); at != lru.where.end()) {
        lru.order.splice(lru.order.begin(), lru.order, at->second);  // most recent
        continue;
      }
      lru.order.push_front(h);
      lru.where.emplace(h, lru.order.begin());
      std::vector<uint64_t>& bits = holders_[h];
      if (bits.size() <= word) bits.resize(word + 1, 0);
      bits[word] |= bit;
      if (static_cast<int64_t>(lru.order.size()) > capacity_) forget(lru, pick);
    }
  }

 private:
  struct Lru {
    std::list<BlockHash> order;  // most recent first
    std::unordered_map<BlockHash, std::list<BlockHash>::iterator, BlockHashHasher> where;
  };

  static size_t words_of(size_t instances) { return std::max<size_t>(1, (instances + 63) / 64); }
  void grow(size_t instances) {
    if (lrus_.size() < instances) lrus_.resize(instances);
  }

  void hash_prompt(const Request& request) {
    const TokenView tokens = TokenView::of(request.prompt, request.output, 0);
    const int64_t chunks = std::min(tokens.prompt_len / block_size_, max_blocks_);
    hashes_.clear();
    tokens.extend_block_hashes(hashes_, chunks, block_size_, scratch_.data());
  }

  // The least recent entry of instance `i`'s LRU goes: its hash no longer
  // names instance i.
  void forget(Lru& lru, size_t i) {
    const BlockHash h = lru.order.back();
    lru.order.pop_back();
    lru.where.erase(h);
    const auto it = holders_.find(h);
    std::vector<uint64_t>& bits = it->second;
    bits[i / 64] &= ~(uint64_t{1} << (i % 64));
    if (std::all_of(bits.begin(), bits.end(), [](uint64_t b) { return b == 0; }))
      holders_.erase(it);
  }

  void settle(uint64_t ended, size_t word, size_t chunks, std::vector<PrefixOverlap>& out) const {
    while (ended != 0) {
      const size_t i = word * 64 + static_cast<size_t>(std::countr_zero(ended));
      ended &= ended - 1;
      if (i < out.size()) out[i].device = static_cast<int64_t>(chunks) * block_size_;
    }
  }

  int64_t block_size_, max_blocks_, capacity_;
  std::vector<Lru> lrus_;  // by instance
  std::unordered_map<BlockHash, std::vector<uint64_t>, BlockHashHasher> holders_;
  std::vector<BlockHash> hashes_;  // of the request last hashed
  std::vector<uint64_t> alive_;
  std::vector<int32_t> scratch_;
};

}  // namespace

config::ComponentInfo approximate_prefix_index_info() {
  using namespace config;
  return {
      "prefix index",
      "approximate",
      "the router's record of the prompts it sent each instance: chained chunk hashes in a "
      "bounded LRU per instance (llm-d / Gateway API Inference Extension prefix-cache scorer)",
      {int_param("block_size", 16, 1, 65536, "tokens",
                 "tokens per hashed chunk (hashBlockSize: 64 characters, ~16 tokens)"),
       int_param("max_blocks", 256, 1, 1 << 20, "chunks",
                 "leading chunks of a prompt hashed, the rest ignored (maxPrefixBlocksToMatch)"),
       int_param("capacity", 31250, 1, 1LL << 32, "entries",
                 "chunk hashes remembered per instance, least recently routed dropped first "
                 "(lruCapacityPerServer)")}};
}

std::unique_ptr<PrefixIndex> make_approximate_prefix_index(const config::ParamValues& params) {
  return std::make_unique<ApproximatePrefixIndex>(
      params.integer("block_size"), params.integer("max_blocks"), params.integer("capacity"));
}

}  // namespace kvsim
