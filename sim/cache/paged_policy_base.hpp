#pragma once
// What `paged` and `sliding_window` over paged share: one pool of fixed-size
// blocks, a block table per held sequence, swap of whole sequences to a
// bounded host pool, and the slot and byte counters behind their accounting
// and drain check. Each derived policy adds only what differs: prefix caching
// by chained block hashes (PagedPolicy), or freeing the blocks that leave the
// window (PagedWindowPolicy).
//
// A block table may begin with released entries (kNoBlock): the sliding
// window frees leading blocks mid-sequence and keeps their positions. Under
// `paged` there are none, so every count below reduces to the whole table.
#include <memory>
#include <vector>

#include "sim/cache/block_pool.hpp"
#include "sim/cache/kv_cache_policy.hpp"

namespace kvsim {

class PagedPolicyBase : public KvCachePolicy {
 public:
  GrowPlan plan_grow(SeqSlot seq, int64_t new_tokens) const override;
  void apply_grow(SeqSlot seq, const GrowPlan& plan, int64_t new_tokens) override;
  bool grow_in_place(SeqSlot seq, int64_t new_tokens) override;
  // Loads the sequence's record (its room, all that settle_in_place,
  // in_place_room, grow_in_place and plan_grow read, and its table, what
  // apply_grow and release read next): one line.
  void prefetch(SeqSlot seq) const override {
    __builtin_prefetch(&seqs_[static_cast<size_t>(seq)]);
  }
  // The free slots of the sequence's last block.
  int64_t in_place_room(SeqSlot seq) const override;
  bool counts_in_place_room() const override { return true; }
  void grow_in_place_bulk(int64_t tokens) override { tokens_held_ += tokens; }
  // Inline: a bulk decode's commit calls it (Scheduler::bulk_loop_for).
  void settle_in_place(SeqSlot s, int64_t tokens) override {
    // tokens_held_ counted them already (grow_in_place_bulk).
    SeqRoom& r = room(s);
    if (r.tokens + tokens > r.capacity) throw_settle_beyond_room();
    r.tokens += tokens;
  }
  // The four calls from one look at the room record (and the table record
  // only when a block is added).
  SettledGrowth settle_and_grow(SeqSlot seq, int64_t settled, int64_t new_tokens) override;
  void release(SeqSlot seq) override;
  // The tail's slots back, and its blocks left empty to the pool.
  void rollback(SeqSlot seq, int64_t tokens) override;
  // Copies out every block the sequence still holds.
  SwapPlan plan_swap_out(SeqSlot seq) const override;
  HostSlot apply_swap_out(SeqSlot seq, const SwapPlan& plan) override;
  // Copies every block back into freshly allocated ones; PagedPolicy
  // overrides both to revive blocks whose content is still on device.
  SwapPlan plan_swap_in(HostSlot host) const override;
  SeqSlot apply_swap_in(HostSlot host, const SwapPlan& plan) override;
  // Released leading blocks read kNoBlock.
  const std::vector<BlockId>& block_table(SeqSlot seq) const override;
  int64_t free_blocks() const override { return pool_.num_free(); }
  // The pool, slot and swap fields; derived policies add their own counters.
  CacheAccounting accounting() const override;
  void check_drained() const override;

  // Blocks of a held sequence that are still allocated.
  int64_t live_blocks(SeqSlot seq) const;
  const BlockPool& pool() const { return pool_; }

 protected:
  // The pool (its size and eviction order), then the table and swap shape.
  PagedPolicyBase(const BlockPoolParams& pool, int64_t block_size, Bytes block_bytes,
                  int64_t host_blocks);
  // Over a pool other policies draw from too (the KV cache groups of a
  // hybrid model, hybrid_paged_policy.hpp): each keeps its own tables and
  // counters, the pool's blocks and hashes are shared.
  PagedPolicyBase(std::shared_ptr<BlockPool> shared_pool, int64_t block_size, Bytes block_bytes,
                  int64_t host_blocks);

  // What a derived policy reads of a held sequence: its table and its
  // token count (SeqTable, SeqRoom), viewed together here.
  struct SeqBlocks {
    const std::vector<BlockId>& block_table;
    int64_t tokens;        // token slots in use (computed or scheduled), released ones included
    int64_t freed_blocks;  // leading entries released (kNoBlock)
  };
  struct HostSeq {
    int64_t blocks = 0;  // live blocks copied out
    int64_t freed_blocks = 0;
    int64_t tokens = 0;
    bool live = false;
  };

  int64_t block_size() const { return block_size_; }
  Bytes block_bytes() const { return block_bytes_; }
  int64_t blocks_for(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }
  SeqBlocks seq(SeqSlot s) const {
    const SeqTable& t = seqs_.at(static_cast<size_t>(s));
    return {t.block_table, t.room.tokens, t.freed_blocks};
  }
  const HostSeq& host(HostSlot h) const { return host_.at(static_cast<size_t>(h)); }

  // Holds a new sequence of `tokens` tokens whose table is `freed_blocks`
  // released entries, then the `reused` blocks (a reference is added to
  // each), then `new_blocks` allocated ones.
  SeqSlot open_seq(const std::vector<BlockId>& reused, int64_t new_blocks, int64_t tokens,
                   int64_t freed_blocks = 0);
  // Brings a swapped-out sequence back: `on_device` are its leading blocks
  // whose content never left the device, the rest are allocated and copied
  // in. The host slot is freed.
  SeqSlot restore_from_host(HostSlot h, const SwapPlan& plan,
                            const std::vector<BlockId>& on_device);
  // settle_and_grow(), calling on_blocks(table) when blocks were added to
  // the sequence's table: a derived policy notes its new tail there. Here,
  // so that the derived policy's override compiles it in place (it runs for
  // most of a step's new blocks).
  template <typename OnBlocks>
  SettledGrowth settle_then_grow(SeqSlot s, int64_t settled, int64_t new_tokens,
                                 OnBlocks&& on_blocks);
  // Starts loading, for writing, where the sequence's next block goes in
  // its table (a hint: nothing changes).
  void prefetch_table_end(SeqSlot s) const {
    const std::vector<BlockId>& table = seqs_[static_cast<size_t>(s)].block_table;
    __builtin_prefetch(table.data() + table.size(), 1);
  }
  // release() in two halves, for a derived policy that reads the table in
  // between: the blocks go back to the pool (the table still lists them),
  // then the slot is closed.
  void release_blocks(SeqSlot s);
  void close_slot(SeqSlot s);
  // Releases the table's blocks before index `end` (clamped to the table)
  // that are still held; returns how many it released now.
  int64_t free_leading_blocks(SeqSlot s, int64_t end);

  std::shared_ptr<BlockPool> pool_owner_;  // declared before pool_: it is built first

 protected:
  BlockPool& pool_;

 private:
  // A held sequence's record by slot: its room, which the questions asked
  // of a bulk decode at each of its events read (settle_in_place,
  // in_place_room, plan_grow), beside its table, which a new block and the
  // end read. One cache line each: a batch of 1,024 runs into a block
  // event in about one sequence in eight per step, a new block (room and
  // table) or a fill (room, and the table's end for the next block), so
  // one line per event, where a room record apart was a second miss.
  struct SeqRoom {
    int64_t tokens = 0;    // token slots in use (computed or scheduled), released ones included
    int64_t capacity = 0;  // token slots of the table: its entries (released ones too) x block_size
  };
  static_assert(sizeof(SeqRoom) == 16);
  struct alignas(64) SeqTable {
    std::vector<BlockId> block_table;
    // Leading entries released (kNoBlock); 32 bits, as a table never
    // holds 2^31 entries (a context of 2^31 tokens even at block size 1).
    int32_t freed_blocks = 0;
    bool live = false;
    SeqRoom room;
  };
  static_assert(sizeof(SeqTable) == 64);
  [[noreturn]] static void throw_settle_beyond_room();
  SeqRoom& room(SeqSlot s) { return seqs_[static_cast<size_t>(s)].room; }
  const SeqRoom& room(SeqSlot s) const { return seqs_[static_cast<size_t>(s)].room; }

  int64_t block_size_;
  Bytes block_bytes_;
  int64_t host_blocks_;  // swap space in blocks
  std::vector<SeqTable> seqs_;
  std::vector<SeqSlot> free_seq_slots_;
  std::vector<HostSeq> host_;
  std::vector<HostSlot> free_host_slots_;
  int64_t live_seqs_ = 0;
  int64_t slots_reserved_ = 0;
  int64_t tokens_held_ = 0;  // tokens in live blocks
  int64_t host_blocks_used_ = 0;
  Bytes bytes_moved_ = 0;
  Bytes swapped_bytes_ = 0;
};

template <typename OnBlocks>
SettledGrowth PagedPolicyBase::settle_then_grow(SeqSlot s, int64_t settled, int64_t new_tokens,
                                                OnBlocks&& on_blocks) {
  // settle_in_place, plan_grow, apply_grow and in_place_room (see the
  // .cpp), on one look at the room record.
  SeqRoom& r = room(s);
  if (r.tokens + settled > r.capacity) throw_settle_beyond_room();
  r.tokens += settled;
  if (const int64_t beyond = r.tokens + new_tokens - r.capacity; beyond > 0) {
    const int64_t new_blocks = beyond <= block_size_ ? 1 : blocks_for(beyond);
    if (new_blocks > pool_.num_free()) return {};
    std::vector<BlockId>& table = seqs_[static_cast<size_t>(s)].block_table;
    pool_.allocate_into(new_blocks, table);
    slots_reserved_ += new_blocks * block_size_;
    r.capacity += new_blocks * block_size_;
    on_blocks(table);
  }
  r.tokens += new_tokens;
  tokens_held_ += new_tokens;
  return {true, r.capacity - r.tokens};
}

}  // namespace kvsim
