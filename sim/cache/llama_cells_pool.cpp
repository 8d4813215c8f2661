// llama-server's slots on llama.cpp's cells (see llama_cells_pool.hpp). The
// slot choice, the host prompt cache's save and restore, and the kept
// prefix follow tools/server/server-context.cpp (ggml-org/llama.cpp
// fb402660): get_available_slot, prompt_save / prompt_load, and
// update_slots' cache_prompt branch.
#include "sim/cache/llama_cells_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "sim/cache/llama_cells_metrics.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {

LlamaCellsPool::LlamaCellsPool(const LlamaCellsPoolParams& params) : p_(params) {
  if (p_.n_parallel < 1 || p_.n_parallel > kLlamaMaxSeqs)
    throw std::invalid_argument(fmt::format("llama_cells: {} slots, llama.cpp's cells take 1..{}",
                                            p_.n_parallel, kLlamaMaxSeqs));
  const int64_t kv = p_.sizing.kv_size;
  const int64_t n_streams = p_.kv_unified ? 1 : p_.n_parallel;
  stream_size_ = kv / n_streams;
  if (stream_size_ < 1)
    throw std::invalid_argument(
        fmt::format("llama_cells: {} slots in {} cells leave a slot no cell", p_.n_parallel, kv));
  for (int64_t s = 0; s < n_streams; ++s)
    streams_.emplace_back(static_cast<uint32_t>(stream_size_));
  slots_.resize(static_cast<size_t>(p_.n_parallel));
  total_cells_ = stream_size_ * n_streams;
  // llama-server passes n_ctx, the whole context, as the token limit.
  if (p_.cache_ram > 0)
    prompt_cache_ = std::make_unique<LlamaPromptCache>(p_.cache_ram, kv, p_.sizing.cell_bytes());
}

std::vector<int32_t> LlamaCellsPool::ids_of(const TokenView& tokens) {
  std::vector<int32_t> ids(static_cast<size_t>(tokens.size()));
  if (!ids.empty()) tokens.copy(0, tokens.size(), ids.data());
  return ids;
}

LlamaCellsPool::Choice LlamaCellsPool::choose(const std::vector<int32_t>& prompt, int32_t id_slot,
                                              bool clear) const {
  Choice c;
  // The least recently used idle slot, the last of equals (`<=`), as
  // get_available_slot falls back to.
  const auto least_recently_used_idle = [&] {
    SeqSlot slot = kNoSeq;
    int64_t t_last = -1;
    for (size_t s = 0; s < slots_.size(); ++s) {
      if (slots_[s].processing) continue;
      if (slot == kNoSeq || slots_[s].last_used <= t_last) {
        t_last = slots_[s].last_used;
        slot = static_cast<SeqSlot>(s);
      }
    }
    return slot;
  };
  // llama-bench's run clears the memory first (llama_memory_clear): the
  // least recently used idle slot, keeping nothing, consulting no cache.
  if (clear) {
    c.slot = least_recently_used_idle();
    return c;
  }
  bool update_cache = false;
  // A request naming its slot gets that one (process_single_task:
  // get_slot_by_id), deferred while it is processing; the prompt cache is
  // consulted only by get_available_slot, so nothing is saved or restored.
  if (id_slot >= 0) {
    if (id_slot >= static_cast<int32_t>(slots_.size()))
      throw std::invalid_argument(
          fmt::format("llama_cells: id_slot {} is not a slot (0..{})", id_slot, slots_.size() - 1));
    if (slots_[static_cast<size_t>(id_slot)].processing) return c;
    c.slot = static_cast<SeqSlot>(id_slot);
    c.by_id = true;
    if (p_.cache_prompt) {
      c.n_past = llama_common_prefix(slots_[static_cast<size_t>(id_slot)].tokens, prompt);
      if (c.n_past == static_cast<int64_t>(prompt.size()) && c.n_past > 0) --c.n_past;
    }
    return c;
  }
  // The idle slot whose cached tokens are most similar (LCP over the
  // prompt's length) past the threshold; the first of equals.
  if (p_.slot_prompt_similarity != 0 && !prompt.empty()) {
    double best = 0;
    for (size_t s = 0; s < slots_.size(); ++s) {
      const Slot& sl = slots_[s];
      if (sl.processing || sl.tokens.empty()) continue;
      const double sim = double(llama_common_prefix(sl.tokens, prompt)) / double(prompt.size());
      if (sim > best && sim > p_.slot_prompt_similarity) {
        best = sim;
        c.slot = static_cast<SeqSlot>(s);
      }
    }
    if (c.slot != kNoSeq) {
      c.by_similarity = true;
      const Slot& sl = slots_[static_cast<size_t>(c.slot)];
      // About to lose most of its context: saved first.
      const double keep = best * double(prompt.size()) / double(sl.tokens.size());
      update_cache = keep < 0.5;
    }
  }
  // Else the least recently used.
  if (c.slot == kNoSeq) {
    c.slot = least_recently_used_idle();
    update_cache = true;
  }
  if (c.slot == kNoSeq) return c;
  const Slot& sl = slots_[static_cast<size_t>(c.slot)];
  const std::vector<int32_t>* kept = &sl.tokens;
  if (update_cache && prompt_cache_ && !sl.tokens.empty() && !prompt.empty()) {
    c.save = true;
    // The entry the slot saves never beats the slot itself, nor does one it
    // holds whole (the save drops those): best() is the same before the save.
    if (const auto idx = prompt_cache_->best(sl.tokens, prompt)) {
      const std::vector<int32_t>& entry = prompt_cache_->entry(*idx);
      c.restore_tokens = static_cast<int64_t>(entry.size());
      // llama_state_seq_set_data clears the slot and needs the entry's cells
      // in its stream; failing, the server clears the slot.
      const int64_t room =
          static_cast<int64_t>(streams_[static_cast<size_t>(stream_of(c.slot))].size() -
                               streams_[static_cast<size_t>(stream_of(c.slot))].used()) +
          exclusive_cells(c.slot, 0);
      if (c.restore_tokens <= room) {
        c.restore = static_cast<int64_t>(*idx);
        kept = &entry;
      } else {
        c.restore_fails = true;
      }
    }
  }
  if (p_.cache_prompt && !c.restore_fails) {
    c.n_past = llama_common_prefix(*kept, prompt);
    // At least one token is computed, for its logits.
    if (c.n_past == static_cast<int64_t>(prompt.size()) && c.n_past > 0) --c.n_past;
  }
  return c;
}

PrefixHit LlamaCellsPool::lookup_prefix(const TokenView& tokens, std::vector<BlockHash>&) const {
  PrefixHit hit;
  hit.tokens_queried = tokens.size();
  hit.content = tokens;
  hit.cached_tokens = choose(ids_of(tokens), tokens.id_slot, tokens.clear_context).n_past;
  return hit;
}

uint64_t LlamaCellsPool::running_seqs() const {
  uint64_t m = 0;
  for (size_t s = 0; s < slots_.size(); ++s)
    if (slots_[s].processing) m |= uint64_t{1} << s;
  return m;
}

int64_t LlamaCellsPool::exclusive_cells(SeqSlot s, int64_t from) const {
  const Slot& sl = slots_[static_cast<size_t>(s)];
  const auto n = static_cast<int64_t>(sl.cells.size());
  if (from >= n) return 0;
  if (!any_shared_) return n - from;
  const LlamaKvCells& cells = streams_[static_cast<size_t>(stream_of(s))];
  const uint64_t own = uint64_t{1} << s;
  int64_t k = 0;
  for (int64_t i = from; i < n; ++i)
    if (cells.cell(static_cast<uint32_t>(sl.cells[static_cast<size_t>(i)] % stream_size_)).seqs ==
        own)
      ++k;
  return k;
}

int64_t LlamaCellsPool::purgeable(SeqSlot except) const {
  if (!kv_unified()) return 0;
  int64_t n = 0;
  if (!any_shared_) {
    for (size_t s = 0; s < slots_.size(); ++s)
      if (static_cast<SeqSlot>(s) != except && !slots_[s].processing)
        n += static_cast<int64_t>(slots_[s].cells.size());
    return n;
  }
  // A cell an idle slot shares with a running one (or `except`) stays.
  const uint64_t kept = running_seqs() | (except == kNoSeq ? 0 : uint64_t{1} << except);
  const LlamaKvCells& cells = streams_[0];
  for (uint32_t c = 0; c < cells.size(); ++c)
    if (!cells.cell(c).empty() && (cells.cell(c).seqs & kept) == 0) ++n;
  return n;
}

AdmitPlan LlamaCellsPool::plan_admit(PrefixHit hit, int64_t new_tokens) const {
  const Choice c = choose(ids_of(hit.content), hit.content.id_slot, hit.content.clear_context);
  AdmitPlan plan;
  plan.hit = std::move(hit);
  plan.tokens = new_tokens;
  plan.new_blocks = new_tokens;
  if (c.slot == kNoSeq) return plan;
  const LlamaKvCells& st = streams_[static_cast<size_t>(stream_of(c.slot))];
  // Free once the slot keeps its n_past (a restore is trimmed to it too).
  const int64_t left =
      static_cast<int64_t>(st.size() - st.used()) + exclusive_cells(c.slot, c.n_past);
  plan.fits = left + purgeable(c.slot) >= new_tokens;
  return plan;
}

void LlamaCellsPool::trim(SeqSlot s, int64_t from) {
  Slot& sl = slots_[static_cast<size_t>(s)];
  if (from >= static_cast<int64_t>(sl.cells.size())) return;
  streams_[static_cast<size_t>(stream_of(s))].seq_rm(s, from, -1);
  sl.cells.resize(static_cast<size_t>(from));
}

void LlamaCellsPool::place(SeqSlot s, int64_t n) {
  if (n <= 0) return;
  Slot& sl = slots_[static_cast<size_t>(s)];
  const int64_t st = stream_of(s);
  LlamaKvCells& cells = streams_[static_cast<size_t>(st)];
  const LlamaSlotPlan slot = cells.find_slot(n, seed_2024());
  if (!slot.fits) throw std::logic_error("llama_cells: placed past the free cells");
  std::vector<int64_t> pos(slot.cells.size());
  std::iota(pos.begin(), pos.end(), static_cast<int64_t>(sl.cells.size()));
  cells.apply_slot(slot, pos, uint64_t{1} << s);
  for (uint32_t c : slot.cells) {
    sl.cells.push_back(static_cast<BlockId>(st * stream_size_ + c));
  }
  ++(slot.contiguous ? counters_.slots_contiguous : counters_.slots_scattered);
}

void LlamaCellsPool::purge_until(int64_t need, SeqSlot except) {
  // try_clear_idle_slots: one idle slot at a time, in slot order.
  LlamaKvCells& cells = streams_[0];
  for (size_t s = 0; s < slots_.size(); ++s) {
    if (static_cast<int64_t>(cells.size() - cells.used()) >= need) return;
    Slot& sl = slots_[s];
    if (static_cast<SeqSlot>(s) == except || sl.processing || sl.cells.empty()) continue;
    trim(static_cast<SeqSlot>(s), 0);
    sl.tokens.clear();
    ++server_.idle_slots_purged;
  }
}

SeqSlot LlamaCellsPool::apply_admit(const AdmitPlan& plan) {
  if (!plan.fits) throw std::logic_error("llama_cells: apply_admit with a plan that does not fit");
  const std::vector<int32_t> prompt = ids_of(plan.hit.content);
  const Choice c = choose(prompt, plan.hit.content.id_slot, plan.hit.content.clear_context);
  if (c.slot == kNoSeq || c.n_past != plan.hit.cached_tokens)
    throw std::logic_error("llama_cells: the admission was planned against another state");
  // llama_memory_clear: every idle slot's cells go (a running one keeps
  // its own; llama-bench runs one sequence at a time).
  if (plan.hit.content.clear_context) {
    for (size_t s = 0; s < slots_.size(); ++s) {
      if (slots_[s].processing) continue;
      trim(static_cast<SeqSlot>(s), 0);
      slots_[s].tokens.clear();
    }
  }
  Slot& sl = slots_[static_cast<size_t>(c.slot)];
  ++(c.by_id           ? server_.slots_by_id
     : c.by_similarity ? server_.slots_by_similarity
                       : server_.slots_by_lru);
  const Bytes cell = p_.sizing.cell_bytes();
  if (c.save && prompt_cache_->save(sl.tokens)) {
    ++server_.cache_saves;
    server_.cache_saved_bytes += static_cast<Bytes>(sl.tokens.size()) * cell;
    pending_out_ += static_cast<Bytes>(sl.tokens.size()) * cell;
  }
  if (c.restore_fails) {
    trim(c.slot, 0);
    sl.tokens.clear();
  } else if (c.restore >= 0) {
    const auto idx = prompt_cache_->best(sl.tokens, prompt);
    if (!idx) throw std::logic_error("llama_cells: the prompt cache entry went");
    sl.tokens = prompt_cache_->take(*idx);
    trim(c.slot, 0);
    place(c.slot, static_cast<int64_t>(sl.tokens.size()));
    ++server_.cache_restores;
    server_.cache_restored_tokens += static_cast<int64_t>(sl.tokens.size());
    server_.cache_restored_bytes += static_cast<Bytes>(sl.tokens.size()) * cell;
    pending_in_ += static_cast<Bytes>(sl.tokens.size()) * cell;
  }
  if (c.save) prompt_cache_->update();
  trim(c.slot, c.n_past);
  sl.tokens.resize(
      static_cast<size_t>(std::min<int64_t>(c.n_past, static_cast<int64_t>(sl.tokens.size()))));
  server_.prompt_reused_tokens += c.n_past;
  if (kv_unified()) purge_until(plan.tokens, c.slot);
  place(c.slot, plan.tokens);
  sl.processing = true;
  (plan.hit.readmission ? recompute_queried_ : queried_) += plan.hit.tokens_queried;
  (plan.hit.readmission ? recompute_hits_ : hit_tokens_) += c.n_past;
  return c.slot;
}

GrowPlan LlamaCellsPool::plan_grow(SeqSlot seq, int64_t new_tokens) const {
  const LlamaKvCells& st = streams_[static_cast<size_t>(stream_of(seq))];
  const int64_t free = static_cast<int64_t>(st.size() - st.used()) + purgeable(seq);
  return {new_tokens <= free, new_tokens};
}

void LlamaCellsPool::apply_grow(SeqSlot seq, const GrowPlan& plan, int64_t new_tokens) {
  if (!plan.fits) throw std::logic_error("llama_cells: apply_grow with a plan that does not fit");
  if (new_tokens <= 0) return;
  if (kv_unified()) purge_until(new_tokens, seq);
  place(seq, new_tokens);
}

void LlamaCellsPool::commit(SeqSlot seq, const TokenView& tokens, int64_t computed_tokens) {
  // The slot's cached tokens (slot.prompt.tokens): what its cells hold.
  Slot& sl = slots_.at(static_cast<size_t>(seq));
  const int64_t upto = std::min<int64_t>(computed_tokens, static_cast<int64_t>(sl.cells.size()));
  for (auto i = static_cast<int64_t>(sl.tokens.size()); i < upto; ++i)
    sl.tokens.push_back(tokens.at(i));
}

void LlamaCellsPool::release(SeqSlot seq) {
  Slot& sl = slots_.at(static_cast<size_t>(seq));
  if (!sl.processing) throw std::logic_error("llama_cells: release of a slot it does not run");
  sl.processing = false;
  sl.last_used = ++clock_;
  // The slot keeps what it computed; cells planned past that go back.
  trim(seq, static_cast<int64_t>(sl.tokens.size()));
  maybe_defragment(stream_of(seq));
}

SeqSlot LlamaCellsPool::admit_child(const TokenView& prompt) {
  // The child's task goes through get_available_slot like any other; it
  // computes nothing (SLOT_STATE_WAIT_OTHER) and its old cells stay until
  // copy_state_to's seq_rm. The prompt cache is not consulted for it here.
  const Choice c = choose(ids_of(prompt), -1, false);
  if (c.slot == kNoSeq) return kNoSeq;
  ++(c.by_similarity ? server_.slots_by_similarity : server_.slots_by_lru);
  slots_[static_cast<size_t>(c.slot)].processing = true;
  return c.slot;
}

void LlamaCellsPool::copy_state(SeqSlot parent, SeqSlot child) {
  if (parent == child || parent < 0 || child < 0 || parent >= static_cast<SeqSlot>(slots_.size()) ||
      child >= static_cast<SeqSlot>(slots_.size()) ||
      !slots_[static_cast<size_t>(parent)].processing ||
      !slots_[static_cast<size_t>(child)].processing)
    throw std::logic_error("llama_cells: copy_state between slots that are not both running");
  const Slot& from = slots_[static_cast<size_t>(parent)];
  Slot& to = slots_[static_cast<size_t>(child)];
  // copy_state_to: llama_memory_seq_rm(child, 0, -1), then
  // llama_memory_seq_cp(parent, child, 0, -1).
  trim(child, 0);
  if (kv_unified()) {
    // One stream: the parent's cells gain the child's id; no data moves.
    streams_[0].seq_cp(parent, child, 0, -1);
    to.cells = from.cells;
    any_shared_ = any_shared_ || !from.cells.empty();
    server_.cells_shared += static_cast<int64_t>(from.cells.size());
  } else {
    // Streams: the child's stream takes the parent's cells at the same
    // indices, and its K/V buffer is overwritten by the parent's whole
    // (every cell of the stream, every layer's K and V).
    streams_[static_cast<size_t>(child)].copy_seq_from(streams_[static_cast<size_t>(parent)],
                                                       parent, child);
    to.cells.clear();
    for (BlockId g : from.cells)
      to.cells.push_back(static_cast<BlockId>(child * stream_size_ + g % stream_size_));
    const Bytes bytes = static_cast<Bytes>(stream_size_) * p_.sizing.cell_bytes();
    server_.stream_copy_bytes += bytes;
    bytes_moved_ += bytes;
    pending_copy_ += bytes;
  }
  to.tokens = from.tokens;
  ++server_.state_copies;
}

}  // namespace kvsim
