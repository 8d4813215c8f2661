#pragma once
// llama2.c's BPE tokenizer (`tok512.bin`): encode adds BOS and a leading
// space, maps UTF-8 code points to ids (byte fallback +3 when absent), then
// merges the best-scoring adjacent pair until none is in the vocabulary;
// decode strips the space after BOS and turns `<0xXX>` back into the byte.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace kvsim::kernels {

constexpr int32_t kLlama2Bos = 1;
constexpr int32_t kLlama2Eos = 2;

class Llama2Tokenizer {
 public:
  // Throws std::runtime_error naming the file.
  Llama2Tokenizer(const std::string& path, int32_t vocab_size);

  std::vector<int32_t> encode(const std::string& text, bool bos) const;
  // The text a token prints after `prev` (llama2.c decode + safe_printf).
  std::string piece(int32_t prev, int32_t token) const;
  int32_t vocab_size() const { return static_cast<int32_t>(vocab_.size()); }

 private:
  std::vector<std::string> vocab_;
  std::vector<float> scores_;
  std::unordered_map<std::string, int32_t> ids_;
};

}  // namespace kvsim::kernels
