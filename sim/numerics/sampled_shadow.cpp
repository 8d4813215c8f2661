// The sampled checker's shadow and reference state (sampled_numerics_
// checker.hpp): per block, the record of device writes and content
// addresses, the shadow pool's slots, the synthetic rows of a run of
// tokens, their store into the shadow and their fold into reference
// states, the states kept by content address, and the catch-up of a block
// the shadow lags behind. The per-step driver (which sequences are
// followed, when they are checked, the check itself) is in
// sampled_numerics_checker.cpp.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>

#include "sim/cache/block_hash.hpp"
#include "sim/numerics/sampled_numerics_checker.hpp"
#include "workloads/rng.hpp"

namespace kvsim::numerics {
namespace {

// Tokens whose rows store_and_fold makes and stores at a time: their K and V
// (8 KiB for the default shadow of 2 heads of 16) stay in L1 from the
// hash to the store.
constexpr int64_t kStoreChunk = 32;

// Keeps content addresses apart from the policy's prefix hashes.
constexpr uint64_t kAddressSalt = 0x6b76736e756d6572ULL;

// Whether TokenView::block_hash hashes the block [begin, begin + count)
// from a described run's key and offset, without making its ids.
bool inside_one_run(const TokenView& tokens, int64_t begin, int64_t count) {
  const TokenContent* content = nullptr;
  int64_t local = begin;
  if (begin + count <= tokens.prompt_len) {
    content = tokens.prompt_content;
  } else if (begin >= tokens.prompt_len) {
    content = tokens.output_content;
    local = begin - tokens.prompt_len;
  }
  if (content == nullptr) return false;
  const TokenRun& run = content->run_at(local);
  return local + count <= run.start + run.length;
}

}  // namespace

uint64_t SampledNumericsChecker::content_address(const TokenView& tokens, int64_t index) {
  const int64_t bs = p_.block_size, begin = index * bs;
  if (inside_one_run(tokens, begin, bs)) {
    const BlockHash h = tokens.block_hash(BlockHash{static_cast<uint64_t>(begin), kAddressSalt},
                                          begin, bs, ids_.data());
    return (h.low ^ h.high) | 1;  // never 0, which means "unknown"
  }
  // Ids: one-shot XXH3-64 seeded by the position (a content address names
  // tokens at a place, never a prefix: no chaining, and no 128-bit
  // streaming state, which costs more than the hash of one block), read in
  // place where the view holds them in one array (unfollowed writers' full
  // blocks: one each), else copied out.
  return XXH3_64bits_withSeed(tokens.ids(begin, bs, ids_.data()),
                              static_cast<size_t>(bs) * sizeof(int32_t),
                              kAddressSalt ^ mix64(static_cast<uint64_t>(begin))) |
         1;
}

uint64_t SampledNumericsChecker::address_of(const Sequence& seq, Followed& f, int64_t index) {
  const auto i = static_cast<size_t>(index);
  if (f.address.size() <= i) f.address.resize(i + 1, 0);
  if (f.address[i] == 0) f.address[i] = content_address(seq.tokens(), index);
  return f.address[i];
}

void SampledNumericsChecker::token_rows(int64_t first, int64_t n, bool reference) {
  const SyntheticShape& sh = p_.shape;
  const int64_t d = sh.head_dim, row = sh.kv_heads * d;
  const auto size = static_cast<size_t>(sh.layers * n * row);
  if (k_rows_.size() < size) {
    k_rows_.resize(size);
    v_rows_.resize(size);
    k_ref_.resize(size);
    v_ref_.resize(size);
  }
  for (int64_t l = 0; l < sh.layers; ++l)
    synthetic_kv_rows(sh, ids_.data(), n, first, l, k_rows_.data() + l * n * row,
                      v_rows_.data() + l * n * row, &rope_);
  if (reference) {
    // What storage makes of them: runs of 256 values (round_trip_row's
    // stack buffer) for elementwise dtypes, (token, head) rows for those
    // whose rows carry their own scale.
    const bool per_row = kernels::kv_dtype_has_row_params(p_.dtype);
    const auto total = static_cast<int64_t>(size);
    for (int64_t at = 0, len = 0; at < total; at += len) {
      len = per_row ? d : std::min<int64_t>(256, total - at);
      kernels::round_trip_row(p_.dtype, k_rows_.data() + at, len, k_ref_.data() + at,
                              p_.fp8_tensor_scale);
      kernels::round_trip_row(p_.dtype, v_rows_.data() + at, len, v_ref_.data() + at,
                              p_.fp8_tensor_scale);
    }
  }
  rows_ = n;
}

int32_t SampledNumericsChecker::slot(int32_t block, bool read) {
  int32_t& s = slot_of_[static_cast<size_t>(block)];
  if (s >= 0) return s;
  if (free_slots_.empty()) {
    s = fresh_slots_++;
  } else {
    s = free_slots_.back();
    free_slots_.pop_back();
  }
  // A block read before the shadow holds any rows of it was never written
  // (a lagging one is rewritten whole before it is read): it reads as
  // zeros. One given a slot to be written holds its rows from there on.
  if (read) pool_.clear_block(s);
  return s;
}

void SampledNumericsChecker::release_slot(int32_t block) {
  int32_t& s = slot_of_[static_cast<size_t>(block)];
  if (s < 0) return;
  free_slots_.push_back(s);
  s = -1;
}

void SampledNumericsChecker::store_rows(int32_t block, int64_t row, int64_t from, int64_t n,
                                        bool reference) {
  const int64_t width = p_.shape.kv_heads * p_.shape.head_dim;
  block = slot(block, /*read=*/false);
  for (int64_t l = 0; l < p_.shape.layers; ++l) {
    const int64_t at = (l * rows_ + from) * width;
    if (!reference) {
      pool_.write_rows(block, KvPart::key, l, row, n, k_rows_.data() + at);
      pool_.write_rows(block, KvPart::value, l, row, n, v_rows_.data() + at);
      continue;
    }
    // What storage made of them is the dtype's round trip of the same
    // rows (row by row, as encoded), taken as they are stored instead of
    // encoded a second time.
    pool_.write_rows_stored(block, KvPart::key, l, row, n, k_rows_.data() + at, k_ref_.data() + at);
    pool_.write_rows_stored(block, KvPart::value, l, row, n, v_rows_.data() + at,
                            v_ref_.data() + at);
  }
}

void SampledNumericsChecker::store_and_fold(int32_t block, int64_t row, int64_t first, int64_t n,
                                            double* state) {
  const SyntheticShape& sh = p_.shape;
  const int64_t width = sh.kv_heads * sh.head_dim, per_layer = softmax_[0].state_size();
  const auto chunk = static_cast<size_t>(std::min(n, kStoreChunk) * width);
  const auto whole = static_cast<size_t>(n * width);
  if (k_rows_.size() < chunk) {
    k_rows_.resize(chunk);
    v_rows_.resize(chunk);
  }
  if (k_ref_.size() < whole) {
    k_ref_.resize(whole);
    v_ref_.resize(whole);
  }
  block = slot(block, /*read=*/false);
  for (int64_t l = 0; l < sh.layers; ++l) {
    auto& softmax = softmax_[static_cast<size_t>(l)];
    // Made, rotated, encoded into the slot and decoded back without scratch
    // rows where the rows and the dtype allow it (the same bits).
    if (synthetic_kv_rows_stored(
            sh, ids_.data(), n, first, l, rope_, p_.dtype, pool_.row(block, KvPart::key, l, row, 0),
            pool_.row(block, KvPart::value, l, row, 0), k_ref_.data(), v_ref_.data())) {
      softmax.append(state + l * per_layer, k_ref_.data(), v_ref_.data(), n);
      continue;
    }
    // A chunk's rows are made, rotated and stored while they sit in L1;
    // what storage made of them is kept for the layer's fold.
    for (int64_t c = 0; c < n; c += kStoreChunk) {
      const int64_t m = std::min(kStoreChunk, n - c);
      synthetic_kv_rows(sh, ids_.data() + c, m, first + c, l, k_rows_.data(), v_rows_.data(),
                        &rope_);
      pool_.write_rows_stored(block, KvPart::key, l, row + c, m, k_rows_.data(),
                              k_ref_.data() + c * width);
      pool_.write_rows_stored(block, KvPart::value, l, row + c, m, v_rows_.data(),
                              v_ref_.data() + c * width);
    }
    // One fold of all n rows, as fold() takes them (the same bits).
    softmax.append(state + l * per_layer, k_ref_.data(), v_ref_.data(), n);
  }
  rows_ = 0;  // the scratch rows hold no run of every layer
}

void SampledNumericsChecker::fold(double* state, int64_t from, int64_t n) {
  const SyntheticShape& sh = p_.shape;
  const int64_t width = sh.kv_heads * sh.head_dim;
  const int64_t per_layer = softmax_[0].state_size();
  for (int64_t l = 0; l < sh.layers; ++l) {
    const int64_t at = (l * rows_ + from) * width;
    softmax_[static_cast<size_t>(l)].append(state + l * per_layer, k_ref_.data() + at,
                                            v_ref_.data() + at, n);
  }
}

void SampledNumericsChecker::clear_state(double* state) const {
  const int64_t per_layer = softmax_[0].state_size();
  for (size_t l = 0; l < softmax_.size(); ++l)
    softmax_[l].clear(state + static_cast<int64_t>(l) * per_layer);
}

const double* SampledNumericsChecker::cached_state(uint64_t address) const {
  const auto it = states_.find(address);
  return it == states_.end() ? nullptr : it->second.data();
}

void SampledNumericsChecker::cache_state(uint64_t address, const double* state) {
  if (states_.size() >= max_states_ && !states_.contains(address)) states_.erase(states_.begin());
  states_[address].assign(state, state + state_size_);
}

void SampledNumericsChecker::record_block(const TokenView& tokens, int64_t index, int32_t block,
                                          bool full) {
  if (block < 0 || block >= p_.num_blocks) return;
  const auto b = static_cast<size_t>(block);
  ++device_writes_[b];  // the shadow lags: rewritten whole before it is read
  content_[b] = full ? content_address(tokens, index) : 0;
  release_slot(block);
}

void SampledNumericsChecker::store_other(int32_t block, int64_t index) {
  // Rows of other content: ids derived from the record (or, for content
  // known only to be someone else's, from the block and its write count).
  const auto b = static_cast<size_t>(block);
  const int64_t bs = p_.block_size;
  const uint64_t key = content_[b] != 0 ? content_[b] : mix64(b) ^ device_writes_[b];
  for (int64_t j = 0; j < bs; ++j)
    ids_[static_cast<size_t>(j)] =
        static_cast<int32_t>(mix64(key + static_cast<uint64_t>(j)) >> 33);
  token_rows(index * bs, bs, false);
  store_rows(block, 0, 0, bs, /*reference=*/false);
}

void SampledNumericsChecker::catch_up_block(const Sequence& seq, Followed& f, int64_t index,
                                            int32_t block, double* state) {
  const int64_t bs = p_.block_size;
  const auto b = static_cast<size_t>(block);
  const bool lag = shadow_writes_[b] != device_writes_[b];
  const bool full = (index + 1) * bs <= seq.computed;
  // What the device holds: the reader's own rows if the record's address
  // is that of its tokens here, else rows of other content.
  const bool own = full && content_[b] != 0 && content_[b] == address_of(seq, f, index);
  if (lag && !own) store_other(block, index);
  if ((lag && own) || state) {
    seq.tokens().copy(index * bs, bs, ids_.data());
    token_rows(index * bs, bs, state != nullptr && !(lag && own));
    if (lag && own) store_rows(block, 0, 0, bs, state != nullptr);
    if (state) {
      clear_state(state);
      fold(state, 0, bs);
    }
  }
  shadow_writes_[b] = device_writes_[b];
}

}  // namespace kvsim::numerics
