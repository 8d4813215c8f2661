#include "workloads/token_content.hpp"

#include <algorithm>
#include <stdexcept>

#include "workloads/rng.hpp"
#include "workloads/stream_ids.hpp"

namespace kvsim {

TokenContent& TokenContent::operator=(std::vector<int32_t> tokens) {
  held_ = std::move(tokens);
  drop_runs();
  return *this;
}

TokenContent::TokenContent(const TokenContent& other)
    : held_(other.held_),
      described_len_(other.described_len_),
      inline_{other.inline_[0], other.inline_[1]},
      modulo_(other.modulo_) {
  if (other.more_) {
    more_ = std::make_unique<TokenRun[]>(other.run_count_);
    std::copy_n(other.more_.get(), other.run_count_, more_.get());
    more_capacity_ = other.run_count_;
  }
  run_count_ = other.run_count_;
}

TokenContent& TokenContent::operator=(const TokenContent& other) {
  if (this != &other) *this = TokenContent(other);
  return *this;
}

void TokenContent::drop_runs() {
  more_.reset();
  forget_runs();
}

void TokenContent::reserve_runs(size_t runs) {
  if (!held_.empty() || runs <= kInlineRuns || runs <= more_capacity_) return;
  std::unique_ptr<TokenRun[]> room = std::make_unique<TokenRun[]>(runs);
  std::copy_n(run_data(), run_count_, room.get());
  more_ = std::move(room);
  more_capacity_ = static_cast<uint32_t>(runs);
}

void TokenContent::push_run(const TokenRun& run) {
  if (run_count_ < kInlineRuns && !more_) {
    inline_[run_count_++] = run;
    return;
  }
  if (!more_ || run_count_ == more_capacity_) {
    // Every run moves to the heap at the first that does not fit inline.
    const uint32_t room = std::max<uint32_t>(2 * run_count_, 4);
    std::unique_ptr<TokenRun[]> grown = std::make_unique<TokenRun[]>(room);
    std::copy_n(run_data(), run_count_, grown.get());
    more_ = std::move(grown);
    more_capacity_ = room;
  }
  if (run_count_ == 0) inline_[0] = run;  // room reserved ahead: the first is kept here too
  more_[run_count_++] = run;
}

void TokenContent::append_stream(uint64_t key, int64_t vocab_size, int64_t count) {
  if (count <= 0) return;
  // The modulo is built only where it is new: a first run, or ids generated.
  if (run_count_ > 0 && vocab_size == this->vocab_size()) {
    append_stream(key, modulo_, count);
    return;
  }
  append_stream(key, FastModulo(static_cast<uint64_t>(vocab_size)), count);
}

void TokenContent::append_stream(uint64_t key, const FastModulo& vocabulary, int64_t count) {
  if (count <= 0) return;
  const bool described_so_far =
      run_count_ == 0 ? held_.empty() : vocabulary.divisor() == modulo_.divisor();
  if (described_so_far) {
    if (held_.capacity() > 0) std::vector<int32_t>().swap(held_);  // regenerated when read
    if (run_count_ == 0) modulo_ = vocabulary;
    push_run({key, described_len_, count});
    described_len_ += count;
    return;
  }
  std::vector<int32_t>& out = held();
  const size_t old_size = out.size();
  out.resize(old_size + static_cast<size_t>(count));
  generate_stream_ids(key, vocabulary, 0, count, out.data() + old_size);
}

const TokenRun& TokenContent::run_at(int64_t i) const {
  // The last run whose start is <= i.
  const TokenRun* first = run_data();
  const TokenRun* it = std::upper_bound(
      first, first + run_count_, i, [](int64_t pos, const TokenRun& r) { return pos < r.start; });
  return *(it - 1);
}

int32_t TokenContent::at(int64_t i) const {
  if (run_count_ == 0 || !held_.empty()) return held_[static_cast<size_t>(i)];
  const TokenRun& r = run_at(i);
  return TokenStream(r.key, modulo_).at(static_cast<uint64_t>(i - r.start));
}

void TokenContent::copy(int64_t begin, int64_t count, int32_t* dst) const {
  if (run_count_ == 0 || !held_.empty()) {
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
  if (run_count_ == 0 || !held_.empty()) return held_;
  std::vector<int32_t> ids(static_cast<size_t>(described_len_));
  copy(0, described_len_, ids.data());
  held_ = std::move(ids);
  return held_;
}

void TokenContent::clear() {
  held_.clear();
  drop_runs();
}

}  // namespace kvsim
