#pragma once
// Deterministic random numbers for workload generation.
//
// std:: distributions are implementation-defined (libstdc++ and libc++ give
// different normal or gamma draws for the same engine), so kvsim carries its
// own generator and its own sampling algorithms: a run is reproducible from
// its seed on any standard library.
//
// Every random quantity of a workload is counter-based: the generator for
// "the output length of request 17" is seeded from (run seed, stream, 17), not
// taken from a shared sequence. Changing one quantity's distribution therefore
// never shifts another (arrivals stay put when output lengths change), and a
// chat session's content does not depend on the order in which the engine
// completes other sessions' turns (so `kvsim compare` variants see the same
// requests even though their completion times differ).
#include <cstdint>

namespace kvsim {

// One independent random stream per quantity. The values are part of the
// reproducibility contract: renumbering them changes every generated workload.
enum class RandomStream : uint64_t {
  arrival = 1,         // inter-arrival gaps (requests or chat session starts)
  input_length = 2,    // synthetic unique prompt length
  output_length = 3,   // output length (synthetic request, chat turn)
  prefix_group = 4,    // which shared-prefix group a synthetic request uses
  prefix_tokens = 5,   // token ids of a shared-prefix group
  prompt_tokens = 6,   // token ids of a synthetic request's unique tail
  output_tokens = 7,   // token ids a request "generates"
  session_turns = 8,   // number of turns of a chat session
  user_length = 9,     // a chat turn's new user tokens
  think_time = 10,     // gap between a turn's completion and the next turn
  system_tokens = 11,  // token ids of the chat system prompt
  user_tokens = 12,    // token ids of a chat turn's user message
  // kind: agentic (agentic_workload.cpp)
  tool_length = 13,     // a call's tool output length
  tool_time = 14,       // from a call's completion to the next call
  tool_tokens = 15,     // token ids of a call's tool output
  fanout = 16,          // whether a call spawns sub-agents, and how many
  subagent_calls = 17,  // calls of a sub-agent session
  summary_length = 18,  // a sub-agent's result appended to its parent
  summary_tokens = 19,  // token ids of that result
  // The serving engine's speculative decoding (sim/serve/speculation.hpp):
  // the drafts a verify pass accepts, keyed by request and position.
  speculative_acceptance = 20,
  // Benchmark clients (SPEC 5 closed arrivals), numbered apart from the others:
  client_think = 801,         // a closed-loop client's think time after a completion
  fixed_prefix_tokens = 802,  // token ids of a `kind: fixed` prefix group
};

// splitmix64's output function (Steele, Lea, Flood 2014): a bijective mixer
// with full avalanche, used to derive seeds and counter-based values.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A 64-bit key for (seed, stream, a, b): the seed of one counter-based draw.
uint64_t stream_key(uint64_t seed, RandomStream stream, uint64_t a, uint64_t b = 0);

// stream_key(seed, stream, a, b) for many (a, b) of one (seed, stream), the
// same keys with the mixing of the fixed fields done once (a trace prompt
// keys one run per hash id).
class StreamKeys {
 public:
  StreamKeys() = default;
  // Chained mixing: each field passes through the bijective mixer before
  // the next is folded in, so (a, b) and (b, a) give unrelated keys.
  StreamKeys(uint64_t seed, RandomStream stream)
      : fixed_(mix64(mix64(seed) ^ static_cast<uint64_t>(stream))) {}
  uint64_t operator()(uint64_t a, uint64_t b = 0) const { return mix64(mix64(fixed_ ^ a) ^ b); }

 private:
  uint64_t fixed_ = 0;
};

// xoshiro256** 1.0 (Blackman and Vigna 2018) seeded through splitmix64, with
// the few sampling algorithms the workloads need.
// The generator and its draws are defined here, not in rng.cpp: a request
// draws through a few fresh generators (its lengths, its next arrival), and
// inlined, seeding one is four multiply rounds without a call or a loop.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    // splitmix64 sequence as recommended by the xoshiro authors: never all zero.
    uint64_t x = seed;
    for (auto& word : s_) {
      word = mix64(x);
      x += 0x9e3779b97f4a7c15ULL;
    }
  }
  // The generator of one counter-based draw, e.g. Rng::keyed(seed,
  // RandomStream::output_length, request_index).
  static Rng keyed(uint64_t seed, RandomStream stream, uint64_t a, uint64_t b = 0) {
    return Rng(stream_key(seed, stream, a, b));
  }

  uint64_t next_u64() {
    auto rotl = [](uint64_t v, int k) { return (v << k) | (v >> (64 - k)); };
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1]: safe to take the logarithm of.
  double uniform_open0() { return static_cast<double>((next_u64() >> 11) + 1) * 0x1.0p-53; }
  // Uniform integer in [lo, hi], unbiased (Lemire's multiply-and-reject).
  int64_t uniform_int(int64_t lo, int64_t hi);
  // Standard normal by Box-Muller (one pair per call, the second discarded so
  // that every call consumes the same number of draws).
  double standard_normal();
  // Exponential with the given mean, by inversion.
  double exponential(double mean);
  // Gamma(shape, scale) by Marsaglia and Tsang (2000); shape < 1 through the
  // boost Gamma(shape + 1) * U^(1/shape).
  double gamma(double shape, double scale);

 private:
  uint64_t s_[4];
};

// n % d for a divisor fixed in advance, without a divide instruction: Lemire,
// Kaser and Kurz, "Faster remainder by direct computation" (Software: Practice
// and Experience 49(6), 2019), with F = 128 fractional bits, exact for every
// 64-bit n and every divisor below 2^64. A 64-bit divide is ~40 cycles; a
// prompt of 12K tokens draws 12K of them.
class FastModulo {
  __extension__ typedef unsigned __int128 U128;  // GCC and Clang; not ISO C++

 public:
  explicit FastModulo(uint64_t divisor)
      : divisor_(divisor), magic_(~static_cast<U128>(0) / divisor + 1) {}
  uint64_t operator()(uint64_t n) const {
    const U128 low = magic_ * n;  // the fraction n/d, 128 bits, mod 1
    const auto lo = static_cast<uint64_t>(low);
    const auto hi = static_cast<uint64_t>(low >> 64);
    // floor(low * d / 2^128) from two 64x64 products.
    const U128 carry = (static_cast<U128>(lo) * divisor_) >> 64;
    return static_cast<uint64_t>((static_cast<U128>(hi) * divisor_ + carry) >> 64);
  }
  uint64_t divisor() const { return divisor_; }

 private:
  uint64_t divisor_;
  U128 magic_;  // ceil(2^128 / d); 0 (wrapped) when d = 1, which gives 0
};

// Token ids that are a pure function of their key and position: the content
// of a prompt is "real" (block hashes are computed on it), identical exactly
// where the workload means it (same key), different elsewhere.
class TokenStream {
 public:
  TokenStream(uint64_t key, int64_t vocab_size)
      : key_(key), modulo_(static_cast<uint64_t>(vocab_size)) {}
  // With the vocabulary's modulo already built (it costs a 128-bit divide).
  TokenStream(uint64_t key, const FastModulo& modulo) : key_(key), modulo_(modulo) {}
  int32_t at(uint64_t position) const {
    return static_cast<int32_t>(modulo_(mix64(key_ ^ mix64(position))));
  }
  uint64_t key() const { return key_; }
  int64_t vocab_size() const { return static_cast<int64_t>(modulo_.divisor()); }
  const FastModulo& modulo() const { return modulo_; }

 private:
  uint64_t key_;
  FastModulo modulo_;
};

}  // namespace kvsim
