#pragma once
// Many consecutive ids of one counter-based token stream at once: the ids
// TokenStream(key, vocabulary).at(first + i) gives, i in [0, count), bit for
// bit. A block hashed from its ids (one that straddles a prompt and its
// output) needs all of them, and id by id each costs two splitmix64 rounds
// and an exact 64-bit modulo, four multiplies of it 128-bit wide
// (workloads/rng.hpp FastModulo): the reason TokenContent::copy stood out in
// bench/bench_whole_run.cpp.
#include <cstdint>

#include "workloads/rng.hpp"

namespace kvsim {

void generate_stream_ids(uint64_t key, const FastModulo& vocabulary, uint64_t first, int64_t count,
                         int32_t* dst);

}  // namespace kvsim
