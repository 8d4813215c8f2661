#include "workloads/token_content.hpp"

#include <algorithm>
#include <stdexcept>

#include "workloads/rng.hpp"
#include "workloads/stream_ids.hpp"

namespace kvsim {

TokenContent& TokenContent::operator=(std::vector<int32_t> tokens) {
  held_ = std::move(tokens);
  runs_.clear();
  first_run_ = {};
  described_len_ = 0;
  return *this;
}

void TokenContent::append_stream(uint64_t key, int64_t vocab_size, int64_t count) {
  if (count <= 0) return;
  const bool described_so_far = runs_.empty() ? held_.empty() : vocab_size == this->vocab_size();
  if (described_so_far) {
    if (held_.capacity() > 0) std::vector<int32_t>().swap(held_);  // regenerated when read
    if (runs_.empty()) modulo_ = FastModulo(static_cast<uint64_t>(vocab_size));
    runs_.push_back({key, described_len_, count});
    first_run_ = runs_.front();
    described_len_ += count;
    return;
  }
  std::vector<int32_t>& out = held();
  const size_t old_size = out.size();
  out.resize(old_size + static_cast<size_t>(count));
  generate_stream_ids(key, FastModulo(static_cast<uint64_t>(vocab_size)), 0, count,
                      out.data() + old_size);
}

const TokenRun& TokenContent::run_at(int64_t i) const {
  // The last run whose start is <= i.
  auto it = std::upper_bound(runs_.begin(), runs_.end(), i,
                             [](int64_t pos, const TokenRun& r) { return pos < r.start; });
  return *(it - 1);
}

int32_t TokenContent::at(int64_t i) const {
  if (runs_.empty() || !held_.empty()) return held_[static_cast<size_t>(i)];
  const TokenRun& r = run_at(i);
  return TokenStream(r.key, modulo_).at(static_cast<uint64_t>(i - r.start));
}

void TokenContent::copy(int64_t begin, int64_t count, int32_t* dst) const {
  if (runs_.empty() || !held_.empty()) {
    std::copy_n(held_.begin() + begin, count, dst);
    return;
  }
  const TokenRun* r = &run_at(begin);
  for (int64_t i = begin; i < begin + count;) {
    while (i >= r->start + r->length) ++r;
    const int64_t stop = std::min(begin + count, r->start + r->length);
    generate_stream_ids(r->key, modulo_, static_cast<uint64_t>(i - r->start), stop - i, dst);
    dst += stop - i;
    i = stop;
  }
}

const std::vector<int32_t>& TokenContent::hold() const {
  if (runs_.empty() || !held_.empty()) return held_;
  std::vector<int32_t> ids(static_cast<size_t>(described_len_));
  copy(0, described_len_, ids.data());
  held_ = std::move(ids);
  return held_;
}

void TokenContent::clear() {
  held_.clear();
  runs_.clear();
  first_run_ = {};
  described_len_ = 0;
}

}  // namespace kvsim
