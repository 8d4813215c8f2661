#pragma once
// llama.cpp's KV cell metadata (seed 004: `llama_kv_cache` with `cells`,
// `head`, `size`, `used`, `n`, `has_shift`, `do_defrag`): a ring of `size`
// cells, one per token slot, each with a position, the positional delta a
// K-shift still owes it, and the set of sequence ids that use it. Only
// metadata: the K/V tensors live apart (the policy prices their bytes, the
// generator's LlamaKvTensors hold real values), as llama.cpp keeps cells
// apart from k_l / v_l (DESIGN practice 9).
//
// Plan, then apply: find_slot() and plan_defrag() are const and return
// plans; apply_slot() / apply_defrag() and the seq_* edits are the mutators.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvsim {

// Which llama.cpp the cells follow (docs/llama-cells.md has the version
// ranges):
//   seed_2024: seed 004's cache: find_slot takes a contiguous run first,
//              defragmentation past defrag_thold, context shift on (main).
//   current:   llama.cpp since the ggml_set_rows KV stores (mid 2025):
//              find_slot scatters a ubatch into free cells one by one
//              (llama_kv_cache::find_slot with cont = false), no
//              defragmentation, n_kv padded to at least 256 cells
//              (get_n_kv), context shift off (llama-server's default).
enum class LlamaBehaviour : uint8_t { seed_2024, current };
std::optional<LlamaBehaviour> parse_llama_behaviour(std::string_view name);
std::vector<std::string> llama_behaviour_names();
std::string_view llama_behaviour_name(LlamaBehaviour b);

using LlamaSeqId = int32_t;                   // 0 .. kLlamaMaxSeqs - 1; -1 means every sequence
inline constexpr int32_t kLlamaMaxSeqs = 64;  // one bit each in a cell's set
inline constexpr int64_t kLlamaPosMax = INT64_MAX;

struct LlamaKvCell {
  int64_t pos = -1;   // -1: empty
  int64_t delta = 0;  // position change not yet applied to the cached K (the K-shift)
  uint64_t seqs = 0;  // bit s: sequence s uses the cell
  bool empty() const { return seqs == 0; }
  bool has(LlamaSeqId s) const { return (seqs >> s) & 1u; }
};

// Cells for one micro-batch: a contiguous run when one exists (llama.cpp
// searches from `head` for n consecutive empty cells, wrapping once), else
// any empty cells in ring order from head; fits is false when fewer than n
// cells are empty. contiguous says the cells are one run, however found.
struct LlamaSlotPlan {
  bool fits = false;
  bool contiguous = false;
  std::vector<uint32_t> cells;
};

// One defragmentation: each move copies one cell's K and V rows of every
// layer from `src` to `dst` (a hole below `used`), as llama.cpp's defrag
// graph does.
struct LlamaCellMove {
  uint32_t src = 0, dst = 0;
};
struct LlamaDefragPlan {
  std::vector<LlamaCellMove> moves;
};

class LlamaKvCells {
 public:
  explicit LlamaKvCells(uint32_t size);

  uint32_t size() const { return static_cast<uint32_t>(cells_.size()); }
  uint32_t head() const { return head_; }
  uint32_t used() const { return used_; }
  bool has_shift() const { return has_shift_; }
  const LlamaKvCell& cell(uint32_t i) const { return cells_[i]; }

  // Slots for n tokens (const). llama_decode first resets the search to
  // cell 0 when head is past used + 2 n (the cache emptied behind it).
  // cont (seed_2024): a contiguous run first; !cont (current llama.cpp,
  // whose ggml_set_rows stores take any cell indices): the first n empty
  // cells in ring order from there, one at a time.
  LlamaSlotPlan find_slot(int64_t n, bool cont = true) const;
  // Fills the planned cells with positions pos[i] for the sequences of
  // `seqs` (a bit set); head moves past the last cell. Throws
  // std::logic_error when a planned cell is no longer empty.
  void apply_slot(const LlamaSlotPlan& plan, std::span<const int64_t> pos, uint64_t seqs);

  // llama_kv_cache_seq_*: positions in [p0, p1) (p0 < 0 means 0, p1 < 0 the
  // end). seq_rm with seq -1 clears the range for every sequence.
  void seq_rm(LlamaSeqId seq, int64_t p0, int64_t p1);
  void seq_cp(LlamaSeqId src, LlamaSeqId dst, int64_t p0, int64_t p1);
  // seq_cp across streams (llama_kv_cache::seq_cp when the two sequences'
  // streams differ, ggml-org/llama.cpp src/llama-kv-cache.cpp 3514e9f6):
  // this stream is reset, then holds `dst` in every cell where `src`'s
  // stream holds `src`, at the same index, position and pending shift, and
  // takes its head. Its K/V buffer is copied whole (the caller prices it).
  void copy_seq_from(const LlamaKvCells& src_stream, LlamaSeqId src, LlamaSeqId dst);
  void seq_keep(LlamaSeqId seq);
  // Shifts positions by `delta`; a cell pushed below 0 is freed. Sets
  // has_shift: the cached keys owe a RoPE re-rotation by each cell's delta.
  void seq_add(LlamaSeqId seq, int64_t p0, int64_t p1, int64_t delta);
  void seq_div(LlamaSeqId seq, int64_t p0, int64_t p1, int64_t d);
  void clear();
  int64_t seq_pos_max(LlamaSeqId seq) const;  // -1 when the sequence holds nothing

  // The K-shift ran: every cell's delta is applied, has_shift clears.
  // Returns the cells it re-rotated.
  std::vector<uint32_t> apply_shift();

  // One past the last used cell (llama_kv_cache_cell_max).
  uint32_t cell_max() const;
  // The attention span of the next graph: cell_max padded to `pad` cells
  // (llama.cpp: 32, or 256 with flash attention), at least pad, at most size.
  uint32_t padded_n(uint32_t pad) const;
  // 1 - used / n once n >= 128 cells, else 0 (llama_decode's test against
  // defrag_thold).
  double fragmentation(uint32_t n) const;

  // Moves the last used cells into the holes below `used` (const).
  LlamaDefragPlan plan_defrag() const;
  void apply_defrag(const LlamaDefragPlan& plan);

 private:
  void free_cell(uint32_t i, uint32_t& new_head);

  std::vector<LlamaKvCell> cells_;
  uint32_t head_ = 0;
  uint32_t used_ = 0;
  bool has_shift_ = false;
};

}  // namespace kvsim
