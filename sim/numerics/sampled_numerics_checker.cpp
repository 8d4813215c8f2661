#include "sim/numerics/sampled_numerics_checker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/attention.hpp"
#include "sim/cache/block_hash.hpp"

namespace kvsim::numerics {
namespace {

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Keeps content addresses apart from the policy's prefix hashes.
constexpr uint64_t kAddressSalt = 0x6b76736e756d6572ULL;

// The probe query's token: any fixed function of the request.
int32_t probe_token(const Sequence& seq) {
  return static_cast<int32_t>(mix(seq.request.id) >> 33);
}

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
  const auto blocks = static_cast<size_t>(p_.num_blocks);
  device_writes_.assign(blocks, 0);
  shadow_writes_.assign(blocks, 0);
  content_.assign(blocks, 0);
  const auto rows = static_cast<size_t>(p_.shape.layers * p_.shape.kv_heads * p_.shape.head_dim);
  k_rows_.resize(rows);
  v_rows_.resize(rows);
  k_ref_.resize(rows);
  v_ref_.resize(rows);
  const auto q = static_cast<size_t>(p_.shape.q_heads * p_.shape.head_dim);
  probe_.resize(q);
  out_.resize(q);
  ref_out_.resize(q);
  ids_.resize(static_cast<size_t>(p_.block_size));
}

std::span<const int32_t> SampledNumericsChecker::block_table_of(const Sequence& seq,
                                                                const KvCachePolicy& policy,
                                                                std::vector<int32_t>&) const {
  const std::vector<BlockId>& t = policy.block_table(seq.slot);
  return {t.data(), t.size()};
}

uint64_t SampledNumericsChecker::content_address(const TokenView& tokens, int64_t index) {
  const int64_t bs = p_.block_size;
  if (static_cast<int64_t>(ids_.size()) < bs) ids_.resize(static_cast<size_t>(bs));
  const BlockHash h = tokens.block_hash(BlockHash{static_cast<uint64_t>(index * bs), kAddressSalt},
                                        index * bs, bs, ids_.data());
  return (h.low ^ h.high) | 1;  // never 0, which means "unknown"
}

void SampledNumericsChecker::token_rows(int32_t token, int64_t position) {
  const SyntheticShape& sh = p_.shape;
  const int64_t row = sh.kv_heads * sh.head_dim;
  for (int64_t l = 0; l < sh.layers; ++l) {
    synthetic_rows(sh, Tensor::key, token, position, l, k_rows_.data() + l * row, &rope_);
    synthetic_rows(sh, Tensor::value, token, position, l, v_rows_.data() + l * row, &rope_);
  }
}

void SampledNumericsChecker::store_token(int32_t block, int64_t row_in_block) {
  const SyntheticShape& sh = p_.shape;
  const int64_t d = sh.head_dim, row = sh.kv_heads * d;
  for (int64_t l = 0; l < sh.layers; ++l) {
    for (int64_t h = 0; h < sh.kv_heads; ++h) {
      pool_.write_row(block, KvPart::key, l, row_in_block, h, k_rows_.data() + l * row + h * d);
      pool_.write_row(block, KvPart::value, l, row_in_block, h, v_rows_.data() + l * row + h * d);
    }
  }
}

void SampledNumericsChecker::record_block(const TokenView& tokens, int64_t index, int32_t block,
                                          bool full) {
  if (block < 0 || block >= p_.num_blocks) return;
  const auto b = static_cast<size_t>(block);
  ++device_writes_[b];
  content_[b] = full ? content_address(tokens, index) : 0;
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

bool SampledNumericsChecker::holds_own(const Sequence& seq, int32_t block, int64_t index) {
  const auto b = static_cast<size_t>(block);
  const bool full = (index + 1) * p_.block_size <= seq.computed;
  return content_[b] != 0 && full && content_[b] == content_address(seq.tokens(), index);
}

void SampledNumericsChecker::store_other(int32_t block, int64_t index) {
  // Rows of other content: ids derived from the record (or, for content
  // known only to be someone else's, from the block and its write count).
  const auto b = static_cast<size_t>(block);
  const int64_t bs = p_.block_size;
  const uint64_t key = content_[b] != 0 ? content_[b] : mix(b) ^ device_writes_[b];
  for (int64_t j = 0; j < bs; ++j) {
    token_rows(static_cast<int32_t>(mix(key + static_cast<uint64_t>(j)) >> 33), index * bs + j);
    store_token(block, j);
  }
}

void SampledNumericsChecker::catch_up(const Sequence& seq, std::span<const int32_t> table,
                                      int64_t blocks) {
  const int64_t bs = p_.block_size;
  blocks = std::min<int64_t>(blocks, static_cast<int64_t>(table.size()));
  for (int64_t i = 0; i < blocks; ++i) {
    const int32_t block = table[static_cast<size_t>(i)];
    if (block < 0 || block >= p_.num_blocks) continue;
    const auto b = static_cast<size_t>(block);
    if (shadow_writes_[b] == device_writes_[b]) continue;
    // What the device holds: the reader's own rows if the record's address
    // is that of its tokens here, else rows of other content.
    if (holds_own(seq, block, i)) {
      seq.tokens().copy(i * bs, bs, ids_.data());
      for (int64_t j = 0; j < bs; ++j) {
        token_rows(ids_[static_cast<size_t>(j)], i * bs + j);
        store_token(block, j);
      }
    } else {
      store_other(block, i);
    }
    shadow_writes_[b] = device_writes_[b];
  }
}

void SampledNumericsChecker::follow(const Sequence& seq, Followed& f) {
  const SyntheticShape& sh = p_.shape;
  const float scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
  f.reference.resize(static_cast<size_t>(sh.layers));
  for (int64_t l = 0; l < sh.layers; ++l) {
    synthetic_rows(sh, Tensor::query, probe_token(seq), 0, l, probe_.data(), &rope_);
    f.reference[static_cast<size_t>(l)].reset(probe_.data(), sh.q_heads, sh.kv_heads, sh.head_dim,
                                              scale);
  }
}

void SampledNumericsChecker::write_tokens(const Sequence& seq, Followed& f,
                                          std::span<const int32_t> table, int64_t first,
                                          int64_t n) {
  const SyntheticShape& sh = p_.shape;
  const int64_t d = sh.head_dim, row = sh.kv_heads * d;
  const int64_t bs = p_.block_size;
  const int64_t known = f.reference.empty() ? 0 : f.reference[0].keys();
  const TokenView tokens = seq.tokens();
  // The reference takes the positions it lacks, [known, first + n), a block
  // at a time: this step's own, which also go to the shadow, and those it
  // reads but did not write (prefix hits), whose blocks are brought up to
  // what the device holds on the way (one generation of the rows serves
  // both when the device holds this sequence's content).
  for (int64_t from = known; from < first + n; from += bs) {
    const int64_t count = std::min(bs - from % bs, first + n - from);
    const auto index = static_cast<int64_t>(block_.quotient(static_cast<uint64_t>(from)));
    const int32_t block =
        index < static_cast<int64_t>(table.size()) ? table[static_cast<size_t>(index)] : -1;
    const bool stored = block >= 0 && block < p_.num_blocks;
    bool own_rows = false;  // rows before `first` go to the shadow too
    if (stored && from < first &&
        shadow_writes_[static_cast<size_t>(block)] != device_writes_[static_cast<size_t>(block)]) {
      own_rows = from % bs == 0 && holds_own(seq, block, index);
      if (!own_rows) store_other(block, index);
      shadow_writes_[static_cast<size_t>(block)] = device_writes_[static_cast<size_t>(block)];
    }
    tokens.copy(from, count, ids_.data());
    for (int64_t j = 0; j < count; ++j) {
      const int64_t pos = from + j;
      token_rows(ids_[static_cast<size_t>(j)], pos);
      if (stored && (pos >= first || own_rows)) store_token(block, pos - index * bs);
      if (stored && pos >= first) {
        // The block it continues was caught up before; a block it starts
        // holds its rows from here on (the rest is never read).
        const auto b = static_cast<size_t>(block);
        shadow_writes_[b] = ++device_writes_[b];
        content_[b] = 0;
      }
      for (int64_t l = 0; l < sh.layers; ++l) {
        float* kr = k_ref_.data() + l * row;
        float* vr = v_ref_.data() + l * row;
        for (int64_t h = 0; h < sh.kv_heads; ++h) {
          kernels::round_trip_row(p_.dtype, k_rows_.data() + l * row + h * d, d, kr + h * d,
                                  p_.fp8_tensor_scale);
          kernels::round_trip_row(p_.dtype, v_rows_.data() + l * row + h * d, d, vr + h * d,
                                  p_.fp8_tensor_scale);
        }
        f.reference[static_cast<size_t>(l)].append(kr, vr, 1);
      }
    }
  }
}

void SampledNumericsChecker::check(const Sequence& seq, Followed& f,
                                   std::span<const int32_t> table) {
  const SyntheticShape& sh = p_.shape;
  const int64_t k_len = seq.computed;
  const float scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
  catch_up(seq, table, (k_len + p_.block_size - 1) / p_.block_size);
  const std::span<const int32_t> tables[1] = {table};
  const int32_t seqlen[1] = {static_cast<int32_t>(k_len)};
  for (int64_t l = 0; l < sh.layers; ++l) {
    synthetic_rows(sh, Tensor::query, probe_token(seq), 0, l, probe_.data(), &rope_);
    kernels::paged_decode_attention(pool_, l, probe_.data(), seqlen, tables, sh.q_heads, scale,
                                    out_.data());
    f.reference[static_cast<size_t>(l)].output(ref_out_.data());
    double err = 0.0;
    for (size_t i = 0; i < out_.size(); ++i)
      err = std::max(err, static_cast<double>(std::fabs(out_[i] - ref_out_[i])));
    if (!(err <= p_.tolerance)) {
      throw CheckFailed(fmt::format(
          "numerics check failed: request {} at step {}: layer {}, a probe query over {} cached "
          "tokens: max abs error {:.3g} against the incremental reference exceeds tolerance {:.3g}",
          seq.request.id, step_, l, k_len, err, p_.tolerance));
    }
    max_abs_err_ = std::max(max_abs_err_, err);
  }
  ++checks_;
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
    catch_up(*seq, f.table, static_cast<int64_t>(f.table.size()));
    f.host_bytes.resize(f.table.size());
    f.host_params.resize(f.table.size());
    for (size_t b = 0; b < f.table.size(); ++b)
      if (f.table[b] >= 0) pool_.copy_block_out(f.table[b], f.host_bytes[b], f.host_params[b]);
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
      pool_.copy_block_in(block, f.host_bytes[b], f.host_params[b]);
      const auto i = static_cast<size_t>(block);
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
      follow(seq, f);  // write_tokens brings what it reads but did not write
    } else if (first % bs != 0) {
      // The block it continues: someone else may have written it since.
      catch_up(seq, table, first / bs + 1);
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
