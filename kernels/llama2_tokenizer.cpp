#include "kernels/llama2_tokenizer.hpp"

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <stdexcept>

#include "base/input_file.hpp"

namespace kvsim::kernels {

Llama2Tokenizer::Llama2Tokenizer(const std::string& path, int32_t vocab_size) {
  // /dev/zero would read as a vocabulary of empty tokens: only regular files.
  if (const std::string problem = input_file_problem(path); !problem.empty())
    throw std::runtime_error(fmt::format("{}: {}", path, problem));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open the tokenizer", path));
  int32_t max_len = 0;
  in.read(reinterpret_cast<char*>(&max_len), 4);
  vocab_.resize(static_cast<size_t>(vocab_size));
  scores_.resize(static_cast<size_t>(vocab_size));
  for (int32_t i = 0; i < vocab_size; ++i) {
    int32_t len = 0;
    in.read(reinterpret_cast<char*>(&scores_[static_cast<size_t>(i)]), 4);
    in.read(reinterpret_cast<char*>(&len), 4);
    if (!in || len < 0 || len > 4096)
      throw std::runtime_error(fmt::format("{}: truncated or corrupt at token {}", path, i));
    std::string s(static_cast<size_t>(len), '\0');
    in.read(s.data(), len);
    if (!in) throw std::runtime_error(fmt::format("{}: truncated at token {}", path, i));
    ids_.emplace(s, i);  // first id wins on duplicates, as llama2.c's sorted lookup
    vocab_[static_cast<size_t>(i)] = std::move(s);
  }
}

std::vector<int32_t> Llama2Tokenizer::encode(const std::string& text, bool bos) const {
  std::vector<int32_t> tokens;
  if (bos) tokens.push_back(kLlama2Bos);
  if (!text.empty()) {
    const auto it = ids_.find(" ");
    if (it != ids_.end()) tokens.push_back(it->second);  // the dummy prefix
  }
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;  // one UTF-8 code point: a lead byte and its continuation bytes
    while (i + len < text.size() && len < 4 &&
           (static_cast<unsigned char>(text[i + len]) & 0xC0) == 0x80)
      ++len;
    const std::string cp = text.substr(i, len);
    const auto it = ids_.find(cp);
    if (it != ids_.end()) {
      tokens.push_back(it->second);
    } else {
      for (unsigned char b : cp) tokens.push_back(static_cast<int32_t>(b) + 3);  // byte fallback
    }
    i += len;
  }
  for (;;) {
    float best = -1e10f;
    int32_t best_id = -1;
    size_t best_at = 0;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      const auto it = ids_.find(vocab_[static_cast<size_t>(tokens[i])] +
                                vocab_[static_cast<size_t>(tokens[i + 1])]);
      if (it != ids_.end() && scores_[static_cast<size_t>(it->second)] > best) {
        best = scores_[static_cast<size_t>(it->second)];
        best_id = it->second;
        best_at = i;
      }
    }
    if (best_id < 0) break;
    tokens[best_at] = best_id;
    tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(best_at) + 1);
  }
  return tokens;
}

std::string Llama2Tokenizer::piece(int32_t prev, int32_t token) const {
  std::string p = vocab_.at(static_cast<size_t>(token));
  if (prev == kLlama2Bos && !p.empty() && p[0] == ' ') p.erase(0, 1);
  unsigned int byte = 0;
  if (p.size() == 6 && std::sscanf(p.c_str(), "<0x%02X>", &byte) == 1)
    p = std::string(1, static_cast<char>(byte));
  // safe_printf: a lone non-printable, non-space byte is not printed.
  if (p.size() == 1) {
    const auto c = static_cast<unsigned char>(p[0]);
    if (!(std::isprint(c) || std::isspace(c))) return {};
  }
  return p;
}

}  // namespace kvsim::kernels
