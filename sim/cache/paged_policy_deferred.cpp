// The paged policy's deferred hashing (sim/cache/pending_hashes.hpp has
// why it is exact): which blocks a commit defers, registering them pending,
// and computing their hashes the moment someone could need them.
#include <algorithm>

#include "sim/cache/paged_policy.hpp"

namespace kvsim {

int64_t PagedPolicy::eager_end(const SeqContent& content, const TokenView& tokens, int64_t full,
                               Guess guess) const {
  if (content.chain != PendingHashes::kNoChain) return content.registered_blocks;
  // Deferred: blocks wholly inside an output described as one run, from the
  // first whose hash nobody computed (start), while nobody hashed that
  // run's content. start is the largest of the registered blocks, the
  // hashed ones and the first block wholly in the output; when it is not
  // below `full` (a prompt's blocks, the block that holds the prompt's end)
  // every block is eager whatever the output is, so that is decided first
  // and without a division: the first in the output, ceil(prompt_len /
  // block_size), is >= n exactly when prompt_len > (n - 1) x block_size.
  const int64_t bs = block_size();
  const int64_t known =
      std::max(content.registered_blocks, static_cast<int64_t>(content.hashes.size()));
  if (known >= full || tokens.prompt_len > (full - 1) * bs) return full;
  const TokenContent* output = tokens.output_content;
  if (output == nullptr || output->runs().size() != 1) return full;
  const int64_t start = tokens.prompt_len > known * bs ? (tokens.prompt_len + bs - 1) / bs : known;
  const uint64_t key = output->runs().front().key;
  if (guess == Guess::unseen) {
    // Without a chain, commit() will start one here unless the key is seen.
    pending_.prefetch_start(key);
    return start;
  }
  if (pending_.seen(key)) return full;  // a chain of its own would be seen too
  return start;
}

void PagedPolicy::defer(SeqSlot s, SeqContent& content, const TokenView& tokens, int64_t full) {
  if (content.chain == PendingHashes::kNoChain) {
    // Anchored on the last block whose hash is known (the eager ones).
    const TokenContent& output = *tokens.output_content;
    const TokenRun& run = output.runs().front();
    const int64_t offset = content.registered_blocks * block_size() - tokens.prompt_len - run.start;
    content.chain =
        pending_.start(run.key, output.vocab_size(), block_size(), offset, content.last, s, pool_);
    content.chain_tag = pending_.tag(content.chain);
  }
  const std::vector<BlockId>& table = seq(s).block_table;
  for (int64_t b = content.registered_blocks; b < full; ++b)
    pending_.append(content.chain_tag, table[static_cast<size_t>(b)], pool_);
  content.registered_blocks = full;
}

void PagedPolicy::touch_runs(const TokenView& tokens, int64_t first, int64_t end,
                             Touch touch) const {
  // No block: no run holds one whole (a prefill's commit finds its prompt
  // hashed at lookup already).
  if (first >= end) return;
  const int64_t bs = block_size();
  // Nor when the range is the one block that straddles the prompt's end
  // (every run lies inside one part): the block that holds the prompt's
  // end and the first outputs, whose commit every request makes.
  if ((first + 1) * bs > tokens.prompt_len && (end - 1) * bs < tokens.prompt_len) return;
  const int64_t lo = first * bs;
  const int64_t hi = end * bs;
  // A part (prompt or output) at absolute position `base`, known up to `part_end`.
  const auto visit = [&](const TokenContent* content, int64_t base, int64_t part_end) {
    if (content == nullptr || lo >= part_end || hi <= base) return;
    for (const TokenRun& run : content->runs()) {
      const int64_t run_lo = std::max(base + run.start, lo);
      const int64_t run_hi = std::min({base + run.start + run.length, part_end, hi});
      if (base + run.start >= hi) break;
      const int64_t block_lo = (run_lo + bs - 1) / bs * bs;
      if (block_lo + bs <= run_hi) touch_key(run.key, touch);
    }
  };
  visit(tokens.prompt_content, 0, tokens.prompt_len);
  visit(tokens.output_content, tokens.prompt_len, tokens.size());
}

void PagedPolicy::prefetch_seen_runs(const TokenView& tokens) const {
  constexpr size_t kRuns = 8;  // a prompt quoting a few turns; more wait in turn
  size_t left = kRuns;
  for (const TokenContent* part : {tokens.prompt_content, tokens.output_content}) {
    if (part == nullptr) continue;
    for (const TokenRun& run : part->runs()) {
      if (left-- == 0) return;
      pending_.prefetch_seen(run.key);
    }
  }
}

void PagedPolicy::touch_key(uint64_t key, Touch touch) const {
  // No chain for a key not seen: a key with one is seen.
  if (touch == Touch::lookup ? !pending_.seen(key) : !pending_.note_seen(key)) return;
  const PendingHashes::ChainId chain = pending_.find(key);
  if (chain != PendingHashes::kNoChain) materialise(chain);
}

void PagedPolicy::materialise(PendingHashes::ChainId chain) const {
  // A held sequence's chain is the end of its table.
  const int32_t owner = pending_.owner(chain);
  const BlockId* blocks = nullptr;
  int64_t count = 0;
  if (owner != PendingHashes::kNoOwner) {
    const SeqContent& held = content_[static_cast<size_t>(owner)];
    const auto first = static_cast<int64_t>(held.hashes.size());
    blocks = seq(owner).block_table.data() + first;
    count = held.registered_blocks - first;
  }
  // Its hashes are in the map from now on: its key may never go pending again.
  pending_.note_seen(pending_.key(chain));
  PendingHashes::Materialised done = pending_.materialise(chain, pool_, blocks, count);
  if (done.owner == PendingHashes::kNoOwner) return;
  // The owner's hashes continue where its eager ones stopped.
  SeqContent& content = content_[static_cast<size_t>(done.owner)];
  content.hashes.insert(content.hashes.end(), done.hashes.begin(), done.hashes.end());
  note_last(content);
  content.chain = PendingHashes::kNoChain;
}

void PagedPolicy::materialise_all() {
  for (const PendingHashes::ChainId chain : pending_.chains()) materialise(chain);
}

const std::vector<BlockHash>& PagedPolicy::content_hashes(SeqSlot s) const {
  const SeqContent& content = content_.at(static_cast<size_t>(s));
  if (content.chain != PendingHashes::kNoChain) materialise(content.chain);
  return content.hashes;
}

void PagedPolicy::release(SeqSlot s) {
  if (!defer_ || static_cast<size_t>(s) >= content_.size() ||
      content_[static_cast<size_t>(s)].chain == PendingHashes::kNoChain) {
    PagedPolicyBase::release(s);
    return;
  }
  SeqContent& content = content_[static_cast<size_t>(s)];
  // The chain's record is loaded while the blocks go back to the pool; the
  // table still lists them after (close_slot clears it).
  pending_.prefetch(content.chain);
  release_blocks(s);
  const auto first = static_cast<int64_t>(content.hashes.size());
  pending_.detach(content.chain, seq(s).block_table.data() + first,
                  content.registered_blocks - first);
  content.chain = PendingHashes::kNoChain;
  close_slot(s);
}

}  // namespace kvsim
