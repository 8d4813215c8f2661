#include "kernels/kv_pool.hpp"

#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace kvsim::kernels {

KvPool::KvPool(int64_t num_blocks, int64_t layers, int64_t block_tokens, int64_t kv_heads,
               int64_t head_dim, KvDtype dtype, float fp8_tensor_scale)
    : dtype_(dtype), fp8_tensor_scale_(fp8_tensor_scale), num_blocks_(num_blocks) {
  if (num_blocks <= 0 || layers <= 0 || block_tokens <= 0 || kv_heads <= 0 || head_dim <= 0)
    throw std::invalid_argument("KvPool: every dimension must be positive");
  g_ = {layers, block_tokens, kv_heads, head_dim, kv_dtype_bytes(dtype)};
  bytes_ = num_blocks * g_.block_bytes();
  data_.reset(static_cast<uint8_t*>(std::calloc(static_cast<size_t>(bytes_), 1)));
  if (!data_) throw std::bad_alloc();
  if (kv_dtype_has_row_params(dtype))
    params_.resize(static_cast<size_t>(num_blocks * rows_per_block()));
}

uint8_t* KvPool::row(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t head) {
  return const_cast<uint8_t*>(std::as_const(*this).row(block, part, layer, token, head));
}

const uint8_t* KvPool::row(int64_t block, KvPart part, int64_t layer, int64_t token,
                           int64_t head) const {
  // Seed 000 Ksana: block base, then K or V, then layer, then [token, head, dim].
  const int64_t off = ksana_block_base(g_, block) +
                      (static_cast<int64_t>(part) * g_.layers + layer) * g_.slab_bytes() +
                      (token * g_.kv_heads + head) * g_.head_dim * g_.dtype_bytes;
  return data_.get() + off;
}

int64_t KvPool::atb_slab(KvPart part, int64_t atb_block) const {
  // atb_vcache_base is `layers` slabs: the vcache id b * layers * 2 + l
  // lands on block b's V slab of layer l (seed 000).
  const int64_t slab = atb_block + (part == KvPart::value ? g_.layers : 0);
  if (atb_block < 0 || slab >= num_blocks_ * 2 * g_.layers)
    throw std::out_of_range("KvPool: ATB block id outside the kcache/vcache view");
  return slab;
}

const uint8_t* KvPool::atb_row(KvPart part, int64_t atb_block, int64_t token, int64_t head) const {
  (void)atb_slab(part, atb_block);
  // atb_view_offset includes the kcache/vcache base of the view.
  return data_.get() + atb_view_offset(g_, part, atb_block, token, head, 0);
}

uint8_t* KvPool::atb_row(KvPart part, int64_t atb_block, int64_t token, int64_t head) {
  return const_cast<uint8_t*>(std::as_const(*this).atb_row(part, atb_block, token, head));
}

void KvPool::atb_write_row(KvPart part, int64_t atb_block, int64_t token, int64_t head,
                           const float* src) {
  uint8_t* dst = atb_row(part, atb_block, token, head);
  const Int8Params p = encode_row(dtype_, src, g_.head_dim, dst, fp8_tensor_scale_);
  // The side table is indexed like the rows, slab by slab: the view's slab
  // number is the row's (block * 2 + part) * layers + layer.
  if (kv_dtype_has_row_params(dtype_))
    params_[static_cast<size_t>(
        (atb_slab(part, atb_block) * g_.block_tokens + token) * g_.kv_heads + head)] = p;
}

void KvPool::atb_read_row(KvPart part, int64_t atb_block, int64_t token, int64_t head,
                          float* dst) const {
  const uint8_t* src = atb_row(part, atb_block, token, head);
  const Int8Params p =
      kv_dtype_has_row_params(dtype_)
          ? params_[static_cast<size_t>(
                (atb_slab(part, atb_block) * g_.block_tokens + token) * g_.kv_heads + head)]
          : Int8Params{};
  decode_row(dtype_, src, g_.head_dim, p, dst);
}

int64_t KvPool::param_index(int64_t block, KvPart part, int64_t layer, int64_t token,
                            int64_t head) const {
  return (((block * 2 + static_cast<int64_t>(part)) * g_.layers + layer) * g_.block_tokens +
          token) *
             g_.kv_heads +
         head;
}

Int8Params& KvPool::params(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t head) {
  return params_[static_cast<size_t>(param_index(block, part, layer, token, head))];
}

const Int8Params& KvPool::params(int64_t block, KvPart part, int64_t layer, int64_t token,
                                 int64_t head) const {
  static const Int8Params unit;
  if (!kv_dtype_has_row_params(dtype_)) return unit;
  return params_[static_cast<size_t>(param_index(block, part, layer, token, head))];
}

void KvPool::write_row(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t head,
                       const float* src) {
  const Int8Params p =
      encode_row(dtype_, src, g_.head_dim, row(block, part, layer, token, head), fp8_tensor_scale_);
  if (kv_dtype_has_row_params(dtype_)) params(block, part, layer, token, head) = p;
}

void KvPool::write_rows(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t n,
                        const float* src) {
  const int64_t d = g_.head_dim, heads = g_.kv_heads;
  if (!kv_dtype_has_row_params(dtype_)) {
    encode_row(dtype_, src, n * heads * d, row(block, part, layer, token, 0), fp8_tensor_scale_);
    return;
  }
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < heads; ++h)
      write_row(block, part, layer, token + t, h, src + (t * heads + h) * d);
}

void KvPool::write_rows_stored(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t n,
                               const float* src, float* stored) {
  if (kv_dtype_has_row_params(dtype_)) {
    write_rows(block, part, layer, token, n, src);
    read_rows(block, part, layer, token, n, stored);
    return;
  }
  encode_row_stored(dtype_, src, n * g_.kv_heads * g_.head_dim, row(block, part, layer, token, 0),
                    stored, fp8_tensor_scale_);
}

void KvPool::read_rows(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t n,
                       float* dst) const {
  const int64_t d = g_.head_dim, heads = g_.kv_heads;
  if (!kv_dtype_has_row_params(dtype_)) {
    decode_row(dtype_, row(block, part, layer, token, 0), n * heads * d, Int8Params{}, dst);
    return;
  }
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < heads; ++h)
      read_row(block, part, layer, token + t, h, dst + (t * heads + h) * d);
}

void KvPool::read_row(int64_t block, KvPart part, int64_t layer, int64_t token, int64_t head,
                      float* dst) const {
  decode_row(dtype_, row(block, part, layer, token, head), g_.head_dim,
             params(block, part, layer, token, head), dst);
}

void KvPool::copy_block_out(int64_t block, std::vector<uint8_t>& bytes,
                            std::vector<Int8Params>& params) const {
  const auto* base = data_.get() + ksana_block_base(g_, block);
  bytes.assign(base, base + g_.block_bytes());
  params.clear();
  if (kv_dtype_has_row_params(dtype_)) {
    const auto first = params_.begin() + block * rows_per_block();
    params.assign(first, first + rows_per_block());
  }
}

void KvPool::copy_block_in(int64_t block, const std::vector<uint8_t>& bytes,
                           const std::vector<Int8Params>& params) {
  std::memcpy(data_.get() + ksana_block_base(g_, block), bytes.data(), bytes.size());
  if (kv_dtype_has_row_params(dtype_))
    std::copy(params.begin(), params.end(), params_.begin() + block * rows_per_block());
}

void KvPool::prefer_huge_pages() {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // madvise takes whole pages: the page-aligned part of the buffer.
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data_.get()) + page - 1) & ~(page - 1);
  const auto end =
      (reinterpret_cast<uintptr_t>(data_.get()) + static_cast<uintptr_t>(bytes_)) & ~(page - 1);
  if (end > begin)
    (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // a hint only
#endif
}

void KvPool::clear_block(int64_t block) {
  std::memset(data_.get() + ksana_block_base(g_, block), 0, static_cast<size_t>(g_.block_bytes()));
  if (kv_dtype_has_row_params(dtype_))
    std::fill_n(params_.begin() + block * rows_per_block(), rows_per_block(), Int8Params{});
}

}  // namespace kvsim::kernels
