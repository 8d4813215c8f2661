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
//
// The runs of a content live in the object while there are at most
// kInlineRuns of them (a synthetic prompt is its group's prefix and its own
// tokens, an output one run): making, moving and dropping a request's
// described content allocates nothing.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
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
  TokenContent(const TokenContent& other);
  TokenContent& operator=(const TokenContent& other);
  // A move leaves `other` empty (a request is moved from its source to
  // the engine's Sequence: these stay inline, a few stores each).
  TokenContent(TokenContent&& other) noexcept
      : held_(std::move(other.held_)),
        described_len_(other.described_len_),
        inline_{other.inline_[0], other.inline_[1]},
        more_(std::move(other.more_)),
        run_count_(other.run_count_),
        more_capacity_(other.more_capacity_),
        modulo_(other.modulo_) {
    other.forget_runs();
  }
  TokenContent& operator=(TokenContent&& other) noexcept {
    if (this == &other) return *this;
    held_ = std::move(other.held_);
    described_len_ = other.described_len_;
    inline_[0] = other.inline_[0];
    inline_[1] = other.inline_[1];
    more_ = std::move(other.more_);
    run_count_ = other.run_count_;
    more_capacity_ = other.more_capacity_;
    modulo_ = other.modulo_;
    other.forget_runs();
    return *this;
  }
  ~TokenContent() = default;

  // Appends positions [0, count) of TokenStream(key, vocab_size): described
  // while the content is empty or described (all runs share one vocabulary),
  // generated at once otherwise. A workload describes content only where no
  // other request holds the same ids generated (a block hash from a run's key
  // and one from the ids differ for the same content).
  void append_stream(uint64_t key, int64_t vocab_size, int64_t count);
  // The same with the vocabulary's modulo already built (building one costs
  // a 128-bit divide; a workload builds it once for all its requests).
  void append_stream(uint64_t key, const FastModulo& vocabulary, int64_t count);
  // Room for `runs` runs in all, where they go past the object's own: one
  // allocation for a prompt described by many (a trace's, one per hash id).
  // Nothing for held ids.
  void reserve_runs(size_t runs);

  bool described() const { return run_count_ > 0; }
  std::span<const TokenRun> runs() const { return {run_data(), run_count_}; }
  int64_t vocab_size() const { return static_cast<int64_t>(modulo_.divisor()); }
  // The run holding position i (precondition: described(), i < size()); an
  // element of runs(), so a caller may walk on to the next runs.
  const TokenRun& run_at(int64_t i) const;
  // The same run, for a caller that reads that run only: the first run (a
  // whole output, a prompt's first part) is read from this object, without
  // a cache miss on a list of runs kept apart.
  const TokenRun& run_holding(int64_t i) const {
    return i < inline_[0].length ? inline_[0] : run_at(i);
  }
  // The token at position i without holding the content.
  int32_t at(int64_t i) const;
  // Copies [begin, begin + count) into dst without holding the content.
  void copy(int64_t begin, int64_t count, int32_t* dst) const;

  size_t size() const {
    return run_count_ == 0 ? held_.size() : static_cast<size_t>(described_len_);
  }
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
    if (run_count_ == 0) held_.reserve(n);
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
    drop_runs();
    return held_;
  }
  static constexpr uint32_t kInlineRuns = 2;
  const TokenRun* run_data() const { return more_ ? more_.get() : inline_; }
  void push_run(const TokenRun& run);
  void drop_runs();
  // drop_runs() of a content whose more_ was moved away.
  void forget_runs() {
    run_count_ = 0;
    more_capacity_ = 0;
    inline_[0] = {};
    described_len_ = 0;
  }

  // Described: held_ is empty or all described_len_ ids, generated.
  mutable std::vector<int32_t> held_;
  int64_t described_len_ = 0;
  // The runs while at most kInlineRuns; past that, all of them in more_
  // (inline_[0] stays the first, for run_holding).
  TokenRun inline_[kInlineRuns];
  std::unique_ptr<TokenRun[]> more_;
  uint32_t run_count_ = 0;
  uint32_t more_capacity_ = 0;
  FastModulo modulo_{1};  // the runs' vocabulary
};

}  // namespace kvsim
