#pragma once
// The token ids of a prompt or an output: either held as a vector, or
// described as runs of counter-based token streams (TokenStream key +
// length) and generated only when someone reads them one by one.
//
// A described prompt costs a few words however long it is: a request
// waiting in an overloaded queue holds its (key, length) runs, not its
// tokens, and the serving engine hashes a block that lies inside one run
// from the run's key and the block's offset (TokenView::block_hash), so a
// replayed trace never generates its prompts' tokens at all. Reading the
// content as ids (data(), begin(), operator[]) generates and keeps them
// beside the description; a mutation drops the description. Whether a
// content is described is the workload's choice at construction and never
// changes while the engine serves it, so a block's hash never depends on
// who read the ids first.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "workloads/rng.hpp"

namespace kvsim {

// Positions [0, length) of TokenStream(key, vocab), placed at `start`.
struct TokenRun {
  uint64_t key = 0;
  int64_t start = 0;
  int64_t length = 0;
};

class TokenContent {
 public:
  using value_type = int32_t;
  using iterator = std::vector<int32_t>::iterator;
  using const_iterator = std::vector<int32_t>::const_iterator;

  TokenContent() = default;
  TokenContent(std::initializer_list<int32_t> tokens) : held_(tokens) {}
  TokenContent(std::vector<int32_t> tokens)
      : held_(std::move(tokens)) {}  // NOLINT: a vector is content
  TokenContent& operator=(std::vector<int32_t> tokens);

  // Appends positions [0, count) of TokenStream(key, vocab_size): described
  // while the content is empty or described (all runs share one vocabulary),
  // generated at once otherwise. A workload describes content only where no
  // other request holds the same ids generated (a block hash from a run's key
  // and one from the ids differ for the same content).
  void append_stream(uint64_t key, int64_t vocab_size, int64_t count);

  bool described() const { return !runs_.empty(); }
  const std::vector<TokenRun>& runs() const { return runs_; }
  int64_t vocab_size() const { return static_cast<int64_t>(modulo_.divisor()); }
  // The run holding position i (precondition: described(), i < size()); an
  // element of runs(), so a caller may walk on to the next runs.
  const TokenRun& run_at(int64_t i) const;
  // The same run, for a caller that reads that run only: the first run (a
  // whole output, a prompt's first part) is read from this object, without
  // a cache miss on the list of runs.
  const TokenRun& run_holding(int64_t i) const {
    return i < first_run_.length ? first_run_ : run_at(i);
  }
  // The token at position i without holding the content.
  int32_t at(int64_t i) const;
  // Copies [begin, begin + count) into dst without holding the content.
  void copy(int64_t begin, int64_t count, int32_t* dst) const;

  size_t size() const { return runs_.empty() ? held_.size() : static_cast<size_t>(described_len_); }
  bool empty() const { return size() == 0; }

  // Reading as ids: the ids are generated once and kept.
  const int32_t* data() const { return hold().data(); }
  const_iterator begin() const { return hold().begin(); }
  const_iterator end() const { return hold().end(); }
  int32_t operator[](size_t i) const { return hold()[i]; }
  const std::vector<int32_t>& tokens() const { return hold(); }
  operator const std::vector<int32_t>&() const { return hold(); }  // NOLINT: reads as the ids

  // Vector-style building (drops the description).
  iterator begin() { return held().begin(); }
  iterator end() { return held().end(); }
  void reserve(size_t n) {
    if (runs_.empty()) held_.reserve(n);
  }
  void push_back(int32_t token) { held().push_back(token); }
  std::vector<int32_t>& mutable_ids() { return held(); }
  template <class It>
  iterator insert(iterator pos, It first, It last) {
    return held_.insert(pos, first, last);  // pos came from begin()/end(): already held
  }
  void clear();

  friend bool operator==(const TokenContent& a, const TokenContent& b) {
    return a.tokens() == b.tokens();
  }
  friend bool operator==(const TokenContent& a, const std::vector<int32_t>& b) {
    return a.tokens() == b;
  }

 private:
  const std::vector<int32_t>& hold() const;
  std::vector<int32_t>& held() {
    hold();
    runs_.clear();
    first_run_ = {};
    described_len_ = 0;
    return held_;
  }

  // Described: held_ is empty or all described_len_ ids, generated.
  mutable std::vector<int32_t> held_;
  std::vector<TokenRun> runs_;
  TokenRun first_run_;  // runs_.front() while described, else empty
  int64_t described_len_ = 0;
  FastModulo modulo_{1};  // the runs' vocabulary
};

}  // namespace kvsim
