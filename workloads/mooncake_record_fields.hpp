#pragma once
// The fields a Mooncake-style JSONL record carries (input_length,
// output_length, hash_ids), read with one set of checks and messages by
// every reader of that shape (trace_mooncake.cpp, trace_agentic.cpp).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvsim::detail {

// A token count field as the shared CSV rule checks it (>= 1, bounded):
// what is wrong, or empty.
std::string read_count(const nlohmann::json& object, const char* field, const char* kind,
                       int64_t& out);
// `hash_ids`: whole numbers >= 0, one per 512-token block of `input_tokens`;
// what is wrong, or empty.
std::string read_hash_ids(const nlohmann::json& object, int64_t input_tokens,
                          std::vector<int64_t>& ids);

}  // namespace kvsim::detail
