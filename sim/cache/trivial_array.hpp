#pragma once
// A fixed-size array of a trivial type taken from the C allocator, either
// zeroed (calloc: memory the allocator knows is zero, fresh pages, is not
// written again, reused memory is cleared by one memset) or left unwritten
// (malloc), where a std::vector of a type with default member initialisers
// constructs its elements one by one (a block pool's 10^5 states and
// hashes were a loop of stores in every engine's constructor:
// bench/bench_step_cost.cpp). Zeroed: for types whose all-zero bytes are
// their default value. Unwritten: for elements never read before written.
// The elements need no constructor or destructor run (implicit-lifetime
// aggregates).
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

namespace kvsim {

template <class T>
class TrivialArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "elements are created by the C allocator and never destroyed");

 public:
  TrivialArray() = default;
  static TrivialArray zeroed(size_t size) {
    return TrivialArray(size, size == 0 ? nullptr : std::calloc(size, sizeof(T)));
  }
  static TrivialArray unwritten(size_t size) {
    return TrivialArray(size, size == 0 ? nullptr : std::malloc(size * sizeof(T)));
  }

  size_t size() const { return size_; }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  static_assert(alignof(T) <= alignof(std::max_align_t), "the C allocator's alignment");
  TrivialArray(size_t size, void* memory) : data_(static_cast<T*>(memory)), size_(size) {
    if (size != 0 && !data_) throw std::bad_alloc();
  }
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T[], Free> data_;
  size_t size_ = 0;
};

}  // namespace kvsim
