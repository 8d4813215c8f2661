#pragma once
// stories260K with its KV in llama.cpp's cell cache (seed 004): the cell
// metadata of sim/cache/llama_kv_cells decides where each micro-batch goes
// (find_slot), which cells a query sees (position and sequence: llama.cpp's
// KQ mask over the padded n cells), the context shift (seq_rm + seq_add)
// and the defragmentation; the K/V live in real ggml-typed tensors
// (kernels/llama_kv_tensors), V transposed or not. The prompt is decoded in
// micro-batches of 32, then one token at a time.
#include <cstdint>
#include <vector>

#include "cli/generate/llama2_generate.hpp"
#include "kernels/llama_kv_tensors.hpp"
#include "sim/cache/llama_kv_cells.hpp"

namespace kvsim::kernels {

// One sequence (id 0) in a cell cache of kv_size cells with real tensors.
class Llama2CellsRun {
 public:
  // Throws std::invalid_argument for an unknown behaviour or an unknown or
  // unusable K/V type.
  Llama2CellsRun(const Llama2Weights& weights, const GenerateOptions& options, int64_t kv_size);

  // llama_decode of one micro-batch at the next positions: the pending
  // K-shift and defragmentation first, then find_slot, the forward pass
  // (writing the batch's K/V into its cells, reading the n padded cells
  // under the position mask) and the fragmentation test. Returns the last
  // token's logits; throws std::invalid_argument when no slot fits.
  std::vector<float> decode(const int32_t* tokens, int64_t n);
  // llama.cpp main's context shift: seq_rm [n_keep, n_keep + n_discard),
  // seq_add the rest by -n_discard (the K-shift runs at the next decode).
  void context_shift(int64_t n_keep, int64_t n_discard);
  // Queues a defragmentation for the next decode, as do_defrag does.
  void queue_defrag() { do_defrag_ = true; }
  // The tokens in the cache, by position.
  std::vector<int32_t> kept_tokens() const;
  const LlamaKvCells& cells() const { return cells_; }
  int64_t n_past() const { return n_past_; }
  int64_t defrags() const { return defrags_; }

 private:
  void update();

  const Llama2Weights& w_;
  LlamaKvCells cells_;
  LlamaKvTensors kv_;
  std::vector<int32_t> cell_token_;
  int64_t n_past_ = 0;
  LlamaBehaviour behaviour_ = LlamaBehaviour::seed_2024;
  uint32_t pad_ = 32;
  double defrag_thold_ = -1;
  bool do_defrag_ = false;
  int64_t defrags_ = 0;
};

// generate_greedy for policy llama_cells. ctx_size (0: the model's seq_len)
// is kv_size; past it the context shifts (seed_2024) and result.drift says
// by how much the logits moved against a recompute of the kept tokens, or
// (current) the text stops there and a prompt that fills it is refused.
GenerateResult generate_greedy_cells(const Llama2Weights& weights, const Llama2Tokenizer& tokenizer,
                                     const GenerateOptions& options);

// The logits of the last of `tokens`, decoded from an empty cell cache of
// `kv_size` cells in micro-batches of 32 (the recompute reference).
std::vector<float> llama2_cells_logits(const Llama2Weights& weights, const GenerateOptions& options,
                                       const std::vector<int32_t>& tokens, int64_t kv_size);

}  // namespace kvsim::kernels
