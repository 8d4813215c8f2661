// llama.cpp's cell bookkeeping (seed 004), written from its documented
// behaviour: find_slot's search from head, the seq_* edits of
// llama_kv_cache_seq_*, the K-shift deltas and the defragmentation that
// fills holes from the end.
#include "sim/cache/llama_kv_cells.hpp"

#include <algorithm>
#include <stdexcept>

namespace kvsim {
namespace {

bool in_range(int64_t pos, int64_t p0, int64_t p1) {
  return pos >= p0 && pos < p1;
}
void normalise(int64_t& p0, int64_t& p1) {
  if (p0 < 0) p0 = 0;
  if (p1 < 0) p1 = kLlamaPosMax;
}
uint64_t bit(LlamaSeqId s) {
  if (s < 0 || s >= kLlamaMaxSeqs)
    throw std::invalid_argument("llama cells: sequence id out of range");
  return uint64_t{1} << s;
}

bool one_run(const std::vector<uint32_t>& cells) {
  for (size_t i = 1; i < cells.size(); ++i)
    if (cells[i] != cells[i - 1] + 1) return false;
  return true;
}

}  // namespace

std::optional<LlamaBehaviour> parse_llama_behaviour(std::string_view name) {
  if (name == "seed_2024") return LlamaBehaviour::seed_2024;
  if (name == "current") return LlamaBehaviour::current;
  return std::nullopt;
}

std::vector<std::string> llama_behaviour_names() {
  return {"seed_2024", "current"};
}

std::string_view llama_behaviour_name(LlamaBehaviour b) {
  return b == LlamaBehaviour::seed_2024 ? "seed_2024" : "current";
}

LlamaKvCells::LlamaKvCells(uint32_t size) : cells_(size) {
  if (size == 0) throw std::invalid_argument("llama cells: a cache of 0 cells");
}

LlamaSlotPlan LlamaKvCells::find_slot(int64_t n, bool cont) const {
  LlamaSlotPlan plan;
  const int64_t size = cells_.size();
  if (n <= 0 || n > size || n > size - used_) return plan;
  int64_t head = head_;
  if (head > static_cast<int64_t>(used_) + 2 * n) head = 0;
  if (!cont) {
    // Scattered: every empty cell from head on, wrapping, until n are found
    // (fewer than n empty cells was refused above).
    for (int64_t k = 0; k < size && static_cast<int64_t>(plan.cells.size()) < n; ++k) {
      const auto c = static_cast<uint32_t>((head + k) % size);
      if (cells_[c].empty()) plan.cells.push_back(c);
    }
    plan.fits = true;
    plan.contiguous = one_run(plan.cells);
    return plan;
  }
  // A contiguous run first, scanning from head and wrapping once.
  int64_t tested = 0;
  while (tested < size) {
    if (head + n > size) {
      tested += size - head;
      head = 0;
      continue;
    }
    int64_t i = 0;
    while (i < n && cells_[static_cast<size_t>(head + i)].empty()) ++i;
    if (i == n) {
      plan.fits = plan.contiguous = true;
      for (int64_t k = 0; k < n; ++k) plan.cells.push_back(static_cast<uint32_t>(head + k));
      return plan;
    }
    head += i + 1;
    tested += i + 1;
    if (head >= size) head = 0;
  }
  // No run: any empty cells in ring order from head (used < size - n + 1 here).
  for (int64_t k = 0; k < size && static_cast<int64_t>(plan.cells.size()) < n; ++k) {
    const auto c = static_cast<uint32_t>((head_ + k) % size);
    if (cells_[c].empty()) plan.cells.push_back(c);
  }
  plan.fits = static_cast<int64_t>(plan.cells.size()) == n;
  if (!plan.fits) plan.cells.clear();
  return plan;
}

void LlamaKvCells::apply_slot(const LlamaSlotPlan& plan, std::span<const int64_t> pos,
                              uint64_t seqs) {
  if (!plan.fits || plan.cells.size() != pos.size() || seqs == 0)
    throw std::logic_error("llama cells: apply_slot with a plan that does not fit its batch");
  for (size_t i = 0; i < pos.size(); ++i) {
    LlamaKvCell& c = cells_[plan.cells[i]];
    if (!c.empty()) throw std::logic_error("llama cells: the planned cell is no longer empty");
    c.pos = pos[i];
    c.delta = 0;
    c.seqs = seqs;
  }
  used_ += static_cast<uint32_t>(pos.size());
  head_ = (plan.cells.back() + 1) % size();
}

void LlamaKvCells::free_cell(uint32_t i, uint32_t& new_head) {
  LlamaKvCell& c = cells_[i];
  if (!c.empty()) --used_;
  c = LlamaKvCell{};
  new_head = std::min(new_head, i);
}

void LlamaKvCells::seq_rm(LlamaSeqId seq, int64_t p0, int64_t p1) {
  normalise(p0, p1);
  uint32_t new_head = size();
  for (uint32_t i = 0; i < size(); ++i) {
    LlamaKvCell& c = cells_[i];
    if (c.empty() || !in_range(c.pos, p0, p1)) continue;
    if (seq < 0) {
      free_cell(i, new_head);
    } else if (c.has(seq)) {
      const uint64_t rest = c.seqs & ~bit(seq);
      if (rest == 0)
        free_cell(i, new_head);
      else
        c.seqs = rest;
    }
  }
  // Searching can start at the first freed cell.
  if (new_head != size() && new_head < head_) head_ = new_head;
}

void LlamaKvCells::seq_cp(LlamaSeqId src, LlamaSeqId dst, int64_t p0, int64_t p1) {
  if (src == dst) return;
  normalise(p0, p1);
  const uint64_t d = bit(dst);
  for (LlamaKvCell& c : cells_)
    if (c.has(src) && in_range(c.pos, p0, p1)) c.seqs |= d;
}

void LlamaKvCells::copy_seq_from(const LlamaKvCells& src_stream, LlamaSeqId src, LlamaSeqId dst) {
  if (src_stream.size() != size())
    throw std::logic_error("llama cells: a stream copy between streams of different sizes");
  const uint64_t d = bit(dst);
  (void)bit(src);
  clear();
  for (uint32_t i = 0; i < size(); ++i) {
    const LlamaKvCell& from = src_stream.cells_[i];
    if (!from.has(src)) continue;
    cells_[i] = LlamaKvCell{from.pos, from.delta, d};
    ++used_;
    has_shift_ = has_shift_ || from.delta != 0;
  }
  head_ = src_stream.head_;
}

void LlamaKvCells::seq_keep(LlamaSeqId seq) {
  const uint64_t keep = bit(seq);
  uint32_t new_head = size();
  for (uint32_t i = 0; i < size(); ++i) {
    LlamaKvCell& c = cells_[i];
    if (c.empty()) continue;
    if (c.has(seq))
      c.seqs = keep;
    else
      free_cell(i, new_head);
  }
  if (new_head != size() && new_head < head_) head_ = new_head;
}

void LlamaKvCells::seq_add(LlamaSeqId seq, int64_t p0, int64_t p1, int64_t delta) {
  if (delta == 0) return;
  normalise(p0, p1);
  uint32_t new_head = size();
  for (uint32_t i = 0; i < size(); ++i) {
    LlamaKvCell& c = cells_[i];
    if (c.empty() || !in_range(c.pos, p0, p1) || (seq >= 0 && !c.has(seq))) continue;
    has_shift_ = true;
    c.pos += delta;
    c.delta += delta;
    if (c.pos < 0) free_cell(i, new_head);
  }
  // A freed slot is where searching starts; otherwise from the beginning.
  head_ = new_head != size() ? new_head : 0;
}

void LlamaKvCells::seq_div(LlamaSeqId seq, int64_t p0, int64_t p1, int64_t d) {
  if (d == 1) return;
  if (d < 1) throw std::invalid_argument("llama cells: seq_div by less than 1");
  normalise(p0, p1);
  for (LlamaKvCell& c : cells_) {
    if (c.empty() || !in_range(c.pos, p0, p1) || (seq >= 0 && !c.has(seq))) continue;
    has_shift_ = true;
    const int64_t before = c.pos;
    c.pos /= d;
    c.delta += c.pos - before;
  }
}

void LlamaKvCells::clear() {
  std::fill(cells_.begin(), cells_.end(), LlamaKvCell{});
  head_ = used_ = 0;
  has_shift_ = false;
}

int64_t LlamaKvCells::seq_pos_max(LlamaSeqId seq) const {
  int64_t m = -1;
  for (const LlamaKvCell& c : cells_)
    if (c.has(seq)) m = std::max(m, c.pos);
  return m;
}

std::vector<uint32_t> LlamaKvCells::apply_shift() {
  std::vector<uint32_t> shifted;
  for (uint32_t i = 0; i < size(); ++i) {
    if (cells_[i].delta != 0 && !cells_[i].empty()) shifted.push_back(i);
    cells_[i].delta = 0;
  }
  has_shift_ = false;
  return shifted;
}

uint32_t LlamaKvCells::cell_max() const {
  for (uint32_t i = size(); i > 0; --i)
    if (!cells_[i - 1].empty()) return i;
  return 0;
}

uint32_t LlamaKvCells::padded_n(uint32_t pad) const {
  const uint32_t m = (cell_max() + pad - 1) / pad * pad;
  return std::min(size(), std::max(pad, m));
}

double LlamaKvCells::fragmentation(uint32_t n) const {
  return n >= 128 ? 1.0 - static_cast<double>(used_) / static_cast<double>(n) : 0.0;
}

LlamaDefragPlan LlamaKvCells::plan_defrag() const {
  LlamaDefragPlan plan;
  const uint32_t n_used = used_;
  // Every hole below n_used takes the last used cell at or past n_used.
  uint32_t src = cell_max();
  for (uint32_t dst = 0; dst < n_used; ++dst) {
    if (!cells_[dst].empty()) continue;
    do {
      --src;
    } while (cells_[src].empty());
    plan.moves.push_back({src, dst});
  }
  return plan;
}

void LlamaKvCells::apply_defrag(const LlamaDefragPlan& plan) {
  for (const LlamaCellMove& m : plan.moves) {
    if (cells_[m.src].empty() || !cells_[m.dst].empty())
      throw std::logic_error("llama cells: a defrag move against another state");
    cells_[m.dst] = cells_[m.src];
    cells_[m.src] = LlamaKvCell{};
  }
  if (!plan.moves.empty()) head_ = used_;
}

}  // namespace kvsim
