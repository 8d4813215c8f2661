// The sampled checker's per-step driver (sampled_numerics_checker.hpp):
// which sequences are followed, what each step writes for them and records
// for the others, swaps, and the checks. The shadow and reference state it
// drives is in sampled_shadow.cpp.
#include "sim/numerics/sampled_numerics_checker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/attention.hpp"

namespace kvsim::numerics {
namespace {

// The probe query's token: any fixed id.
constexpr int32_t kProbeToken = 0x2f6b7673;

// Never the write count of a block: a block not confirmed since it was made.
constexpr uint32_t kNeverConfirmed = UINT32_MAX;

// Never the write count of a block either: the shadow dropped the block's
// rows, which its record (a full block's content address) determines.
constexpr uint32_t kDropped = UINT32_MAX;

// Reference states kept by content address, at most this many bytes.
constexpr size_t kStateCacheBytes = size_t{32} << 20;

// Tokens the batch computes for `seq` in this step (0 when it only swaps in).
int64_t item_tokens(const ScheduledBatch& batch, const Sequence* seq) {
  for (const ScheduledSeq& item : batch.items)
    if (item.seq == seq) return item.tokens;
  return 0;
}

}  // namespace

SampledNumericsChecker::SampledNumericsChecker(const CheckerParams& params)
    : p_(params),
      pool_(params.num_blocks, params.shape.layers, params.block_size, params.shape.kv_heads,
            params.shape.head_dim, params.dtype, params.fp8_tensor_scale),
      rope_(params.shape.head_dim, params.shape.rope_theta, params.shape.rope_style),
      every_(static_cast<uint64_t>(params.sample_every)),
      block_(static_cast<uint64_t>(params.block_size)) {
  pool_.prefer_huge_pages();  // slots are handed out densely from 0
  const auto blocks = static_cast<size_t>(p_.num_blocks);
  device_writes_.assign(blocks, 0);
  shadow_writes_.assign(blocks, 0);
  confirmed_.assign(blocks, kNeverConfirmed);
  content_.assign(blocks, 0);
  slot_of_.assign(blocks, -1);
  const SyntheticShape& sh = p_.shape;
  const int64_t q = sh.q_heads * sh.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
  probe_.resize(static_cast<size_t>(sh.layers * q));
  softmax_.resize(static_cast<size_t>(sh.layers));
  for (int64_t l = 0; l < sh.layers; ++l) {
    float* probe = probe_.data() + l * q;
    synthetic_rows(sh, Tensor::query, kProbeToken, 0, l, probe, &rope_);
    softmax_[static_cast<size_t>(l)].reset(probe, sh.q_heads, sh.kv_heads, sh.head_dim, scale);
  }
  state_size_ = sh.layers * softmax_[0].state_size();
  max_states_ =
      std::max<size_t>(64, kStateCacheBytes / (static_cast<size_t>(state_size_) * sizeof(double)));
  merged_.resize(static_cast<size_t>(state_size_));
  scratch_state_.resize(static_cast<size_t>(state_size_));
  out_.resize(static_cast<size_t>(q));
  ref_out_.resize(static_cast<size_t>(q));
  ids_.resize(static_cast<size_t>(p_.block_size));
}

std::span<const int32_t> SampledNumericsChecker::block_table_of(const Sequence& seq,
                                                                const KvCachePolicy& policy,
                                                                std::vector<int32_t>&) const {
  const std::vector<BlockId>& t = policy.block_table(seq.slot);
  return {t.data(), t.size()};
}

void SampledNumericsChecker::record_writes(const Sequence& seq, const KvCachePolicy& policy,
                                           int64_t first, int64_t computed) {
  if (computed <= first) return;
  const auto bs = static_cast<uint64_t>(p_.block_size);
  const uint64_t b0 = block_.quotient(static_cast<uint64_t>(first));
  const uint64_t b1 = block_.quotient(static_cast<uint64_t>(computed - 1));
  // Most steps write inside one block, neither starting nor filling it.
  if (b0 == b1 && b0 * bs != static_cast<uint64_t>(first) &&
      (b1 + 1) * bs != static_cast<uint64_t>(computed))
    return;
  const std::span<const int32_t> table = block_table_of(seq, policy, table_scratch_);
  const TokenView tokens = seq.tokens();
  for (uint64_t i = b0; i <= b1 && i < table.size(); ++i) {
    const bool started = i * bs >= static_cast<uint64_t>(first);
    const bool full = (i + 1) * bs <= static_cast<uint64_t>(computed);
    if (started || full) record_block(tokens, static_cast<int64_t>(i), table[i], full);
  }
}

void SampledNumericsChecker::write_tokens(const Sequence& seq, Followed& f,
                                          std::span<const int32_t> table, int64_t first,
                                          int64_t n) {
  const int64_t bs = p_.block_size;
  for (int64_t from = first; from < first + n;) {
    const auto index = static_cast<int64_t>(block_.quotient(static_cast<uint64_t>(from)));
    const int64_t end = std::min(first + n, (index + 1) * bs);
    const int32_t block =
        index < static_cast<int64_t>(table.size()) ? table[static_cast<size_t>(index)] : -1;
    // Rows that went elsewhere first go there first.
    if (f.pending_to > f.pending_from &&
        (index != f.pending_index || block != f.pending_block || from != f.pending_to))
      flush(seq, f);
    if (f.pending_to == f.pending_from) {
      f.pending_from = from;
      f.pending_index = index;
      f.pending_block = block;
      f.pending_writes =
          block >= 0 && block < p_.num_blocks ? device_writes_[static_cast<size_t>(block)] : 0;
    }
    f.pending_to = end;
    if (end == (index + 1) * bs) flush(seq, f);  // full: its content is addressable
    from = end;
  }
}

void SampledNumericsChecker::flush(const Sequence& seq, Followed& f) {
  const int64_t from = f.pending_from, end = f.pending_to;
  if (end <= from) return;
  f.pending_from = f.pending_to = 0;
  const int64_t bs = p_.block_size, index = f.pending_index, start = index * bs;
  const int32_t block = f.pending_block;
  const TokenView tokens = seq.tokens();
  // The reference state of the block's rows before `from` (its own
  // tokens: a block it continues holds them, or the check rejects it).
  if (from == start || f.tail_rows != from - start) {
    clear_state(f.tail.data());
    if (from > start) {
      tokens.copy(start, from - start, ids_.data());
      token_rows(start, from - start, true);
      fold(f.tail.data(), 0, from - start);
    }
  }
  tokens.copy(from, end - from, ids_.data());
  if (block >= 0 && block < p_.num_blocks) {
    // The block it continues was caught up before; a block it starts
    // holds its rows from here on (the rest is never read). A block written
    // by someone else after these rows still lags behind that write.
    store_and_fold(block, from - start, from, end - from, f.tail.data());
    const auto b = static_cast<size_t>(block);
    const bool overwritten = device_writes_[b] != f.pending_writes;
    ++device_writes_[b];
    if (!overwritten) shadow_writes_[b] = device_writes_[b];
    content_[b] = 0;
  } else {
    token_rows(from, end - from, true);
    fold(f.tail.data(), 0, end - from);
  }
  f.tail_rows = end - start;
  if (end == start + bs) {
    // Full: its content is addressable, its state kept for later readers.
    const uint64_t address = address_of(seq, f, index);
    if (block >= 0 && block < p_.num_blocks) content_[static_cast<size_t>(block)] = address;
    cache_state(address, f.tail.data());
    f.tail_rows = 0;
  }
}

void SampledNumericsChecker::check(const Sequence& seq, Followed& f,
                                   std::span<const int32_t> table) {
  const SyntheticShape& sh = p_.shape;
  const int64_t bs = p_.block_size, k_len = seq.computed;
  const int64_t blocks = (k_len + bs - 1) / bs;
  const float scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
  const int64_t per_layer = softmax_[0].state_size();
  if (static_cast<int64_t>(table.size()) < blocks)
    throw CheckFailed(fmt::format(
        "numerics check failed: request {} at step {}: its block table has {} entries for {} "
        "cached tokens in blocks of {}",
        seq.request.id, step_, table.size(), k_len, bs));
  flush(seq, f);
  // The blocks to read: every one not confirmed since its last write to
  // hold this sequence's content there, and the partly filled last one.
  check_table_.clear();
  check_blocks_.clear();
  check_index_.clear();
  clear_state(merged_.data());
  int64_t tokens = 0;
  for (int64_t i = 0; i < blocks; ++i) {
    const int32_t block = table[static_cast<size_t>(i)];
    if (block < 0 || block >= p_.num_blocks)
      throw CheckFailed(fmt::format(
          "numerics check failed: request {} at step {}: block table entry {} is block {}, "
          "outside the pool of {} blocks",
          seq.request.id, step_, i, block, p_.num_blocks));
    const auto b = static_cast<size_t>(block);
    const double* state = nullptr;
    int64_t rows = bs;
    if ((i + 1) * bs <= k_len) {
      const uint64_t address = address_of(seq, f, i);
      if (confirmed_[b] == device_writes_[b] && content_[b] == address) continue;
      state = cached_state(address);
      if (state) {
        catch_up_block(seq, f, i, block, nullptr);
      } else {
        catch_up_block(seq, f, i, block, scratch_state_.data());
        cache_state(address, scratch_state_.data());
        state = scratch_state_.data();
      }
    } else {
      catch_up_block(seq, f, i, block, nullptr);
      rows = k_len - i * bs;
      if (f.tail_rows != rows) {  // not written by this sequence: its own tokens expected
        seq.tokens().copy(i * bs, rows, ids_.data());
        token_rows(i * bs, rows, true);
        clear_state(f.tail.data());
        fold(f.tail.data(), 0, rows);
        f.tail_rows = rows;
      }
      state = f.tail.data();
    }
    for (int64_t l = 0; l < sh.layers; ++l)
      softmax_[static_cast<size_t>(l)].merge(merged_.data() + l * per_layer, state + l * per_layer);
    check_table_.push_back(
        slot(block, /*read=*/true));  // the shadow's own numbering of the same blocks
    check_blocks_.push_back(block);
    check_index_.push_back(i);
    tokens += rows;
  }
  ++checks_;
  if (check_table_.empty()) return;
  const std::span<const int32_t> tables[1] = {check_table_};
  const int32_t seqlen[1] = {static_cast<int32_t>(tokens)};
  const int64_t q = sh.q_heads * sh.head_dim;
  for (int64_t l = 0; l < sh.layers; ++l) {
    kernels::paged_decode_attention_fast_exp(pool_, l, probe_.data() + l * q, seqlen, tables,
                                             sh.q_heads, scale, out_.data());
    softmax_[static_cast<size_t>(l)].output(merged_.data() + l * per_layer, ref_out_.data());
    double err = 0.0;
    for (size_t i = 0; i < out_.size(); ++i)
      err = std::max(err, static_cast<double>(std::fabs(out_[i] - ref_out_[i])));
    if (!(err <= p_.tolerance)) {
      throw CheckFailed(fmt::format(
          "numerics check failed: request {} at step {}: layer {}, a probe query over {} of its "
          "{} cached tokens (the blocks not confirmed since their last write): max abs error "
          "{:.3g} against the incremental reference exceeds tolerance {:.3g}",
          seq.request.id, step_, l, tokens, k_len, err, p_.tolerance));
    }
    max_abs_err_ = std::max(max_abs_err_, err);
  }
  checked_tokens_ += static_cast<uint64_t>(tokens);
  // What the kernel read is now confirmed: each full block holds this
  // sequence's content there, as of its current write.
  for (size_t j = 0; j < check_index_.size(); ++j) {
    const int64_t i = check_index_[j];
    if ((i + 1) * bs > k_len) continue;
    const auto b = static_cast<size_t>(check_blocks_[j]);
    content_[b] = address_of(seq, f, i);
    confirmed_[b] = device_writes_[b];
    // Its rows follow from the record now (catch_up_block rebuilds them if
    // the block is ever read again): its slot goes back, so the shadow
    // holds the blocks being written and checked, not every block a
    // followed sequence ever filled, and its memory is touched once.
    release_slot(check_blocks_[j]);
    shadow_writes_[b] = kDropped;
  }
}

void SampledNumericsChecker::on_step_done(const ScheduledBatch& batch, const KvCachePolicy& policy,
                                          TimeNs) {
  ++step_;
  const int64_t bs = p_.block_size;
  // KV that left the device before this step: a followed sequence's swapped
  // blocks go to the host with what the device holds in them.
  for (const Sequence* seq : batch.preempted) {
    auto it = followed_.find(seq->request.id);
    if (it == followed_.end()) continue;
    if (seq->state != SeqState::swapped) {
      followed_.erase(it);  // recompute: followed afresh when it runs again
      continue;
    }
    Followed& f = it->second;
    flush(*seq, f);
    f.host_bytes.resize(f.table.size());
    f.host_params.resize(f.table.size());
    for (size_t b = 0; b < f.table.size(); ++b) {
      const int32_t block = f.table[b];
      if (block < 0 || block >= p_.num_blocks) continue;
      catch_up_block(*seq, f, static_cast<int64_t>(b), block, nullptr);
      pool_.copy_block_out(slot(block, /*read=*/true), f.host_bytes[b], f.host_params[b]);
    }
  }
  for (const Sequence* seq : batch.swapped_in) {
    const int64_t before = seq->computed - item_tokens(batch, seq);
    auto it = followed_.find(seq->request.id);
    if (it == followed_.end()) {
      // Unfollowed: its blocks hold its own content again.
      const std::vector<BlockId>& table = policy.block_table(seq->slot);
      const TokenView tokens = seq->tokens();
      for (int64_t i = 0; i * bs < before && i < static_cast<int64_t>(table.size()); ++i)
        record_block(tokens, i, table[static_cast<size_t>(i)], (i + 1) * bs <= before);
      continue;
    }
    Followed& f = it->second;
    const std::span<const int32_t> table = block_table_of(*seq, policy, table_scratch_);
    for (size_t b = 0; b < f.host_bytes.size() && b < table.size(); ++b) {
      const int32_t block = table[b];
      if (block < 0 || block >= p_.num_blocks || !swap_copy_arrives(*seq, b)) continue;
      const auto i = static_cast<size_t>(block);
      pool_.copy_block_in(slot(block, /*read=*/false), f.host_bytes[b], f.host_params[b]);
      shadow_writes_[i] = ++device_writes_[i];
      content_[i] = 0;
    }
    f.host_bytes.clear();
    f.host_params.clear();
    f.table.assign(table.begin(), table.end());
    f.check_due = true;  // the first read of what came back
  }
  for (const ScheduledSeq& item : batch.items) {
    const Sequence& seq = *item.seq;
    const int64_t first = seq.computed - item.tokens;
    if (!follows(seq)) {
      record_writes(seq, policy, first, seq.computed);
      continue;
    }
    const std::span<const int32_t> table = block_table_of(seq, policy, table_scratch_);
    auto [it, admitted] = followed_.try_emplace(seq.request.id);
    Followed& f = it->second;
    if (admitted) {
      f.tail.resize(static_cast<size_t>(state_size_));
      clear_state(f.tail.data());
    }
    // The block it continues: someone else may have written it since.
    const int64_t continued = first / bs;
    if (first % bs != 0 && continued < static_cast<int64_t>(table.size())) {
      const int32_t block = table[static_cast<size_t>(continued)];
      if (block >= 0 && block < p_.num_blocks &&
          shadow_writes_[static_cast<size_t>(block)] !=
              device_writes_[static_cast<size_t>(block)]) {
        flush(seq, f);  // its rows came before that write, if any came after them
        catch_up_block(seq, f, continued, block, nullptr);
      }
    }
    write_tokens(seq, f, table, first, item.tokens);
    // Checked where a fault would first show: its first step (which reads
    // its prefix hits), the first after a swap-in, whenever a block fills
    // (a wrong table entry is read at every later check), and its last step.
    const bool due = admitted || f.check_due || seq.computed / bs > first / bs ||
                     (seq.computed == seq.num_tokens() && seq.generated + 1 >= seq.output_len());
    if (due && item.tokens > 0) {
      check(seq, f, table);
      f.check_due = false;
    }
    f.table.assign(table.begin(), table.end());
  }
}

void SampledNumericsChecker::on_release(const Sequence& seq) {
  followed_.erase(seq.request.id);
}

void SampledNumericsChecker::report(RunMetrics& m) const {
  m.numerics.checks = static_cast<int64_t>(checks_);
  m.numerics.max_abs_err = max_abs_err_;
}

}  // namespace kvsim::numerics
