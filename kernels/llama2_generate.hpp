#pragma once
// Greedy generation with a llama2.c model whose KV lives in a real cache
// policy's blocks: the policy (from the registry, by name) admits the
// sequence, grows it a token at a time and commits what each step computed;
// the forward pass writes and reads K/V only through that policy's block
// table on a real KvPool of the chosen storage type.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/kv_dtype.hpp"
#include "kernels/llama2_model.hpp"
#include "kernels/llama2_tokenizer.hpp"

namespace kvsim::kernels {

struct GenerateOptions {
  std::string prompt;
  int64_t steps = 256;  // positions run, as llama2.c's -n
  std::string policy = "paged";
  KvDtype kv_dtype = KvDtype::fp32;
  int64_t block_size = 16;
  // Genie modes (shift_concat, pointer_shift, smart_mask): tokens per KV
  // buffer, 0 meaning the model's seq_len.
  int64_t ctx_size = 0;
  // When set, these tokens are fed instead of the argmax (teacher forcing:
  // compares storage types on the same context).
  std::optional<std::vector<int32_t>> forced;
  bool keep_logits = false;
};

struct GenerateResult {
  std::string text;                        // what llama2.c prints
  std::vector<int32_t> tokens;             // BOS, prompt, then the chosen tokens
  std::vector<std::vector<float>> logits;  // per position, when keep_logits
};

// Throws std::invalid_argument for an unknown policy or bad sizes.
GenerateResult generate_greedy(const Llama2Weights& weights, const Llama2Tokenizer& tokenizer,
                               const GenerateOptions& options);

}  // namespace kvsim::kernels
