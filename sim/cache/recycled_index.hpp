#pragma once
// Handles that are indices into a vector of entries: a released handle's
// index goes on a free list and the next one taken reuses it, so handles
// stay small and stable (a slot of a policy's tables, a chain of pending
// hashes, a chunk of the chunk pool) and the entries vector grows only to
// the most ever held at once.
#include <cstddef>
#include <vector>

namespace kvsim {

// The most recently freed index of `entries` if there is one (its entry
// keeps whatever it held: the caller resets it), else the index of a new
// default-constructed entry at the end.
template <class Index, class Entry>
Index take_recycled_index(std::vector<Entry>& entries, std::vector<Index>& free_indices) {
  if (free_indices.empty()) {
    entries.emplace_back();
    return static_cast<Index>(entries.size() - 1);
  }
  const Index index = free_indices.back();
  free_indices.pop_back();
  return index;
}

}  // namespace kvsim
