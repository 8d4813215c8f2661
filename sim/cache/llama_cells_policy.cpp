// llama_cells (seed 004): llama.cpp's unified KV cache driven by the dialog
// engine. kv_size = ctx_size cells; the engine's AR-n passes are llama.cpp's
// micro-batches; one sequence (id 0) holds the dialog. `behaviour` picks
// which llama.cpp (LlamaBehaviour, docs/llama-cells.md): seed_2024 as below;
// current scatters each micro-batch into free cells (find_slot with
// cont = false), never defragments, pads n to 256 cells, and by default
// shifts no context: a turn whose conversation reaches n_ctx is refused
// and a reply stops where the cache is full, as llama-server does
// (tools/server/server-context.cpp: "request (%d tokens) exceeds the
// available context size", and process_token's stop at n_ctx).
//
// One update, in llama.cpp's order:
//   n_past 0:     llama_kv_cache_clear; nothing moves.
//   rewind by r:  seq_rm of the r newest positions; nothing moves.
//   forward by a: when used + a > kv_size, a context shift as llama.cpp's
//                 main example does it: keep n_keep, seq_rm the next
//                 n_discard (default half of the rest), seq_add the rest by
//                 -n_discard. Then llama_kv_cache_update: the K-shift
//                 (has_shift) ropes every cell's key in place, the ones
//                 not shifted by 0 (llama_kv_cache::build_graph_shift views
//                 all get_size() x n_stream cells of each layer's K),
//                   kshift_bytes = 2 L kv_size k_cell   (read + write),
//                 then a defragmentation queued by the previous update:
//                   defrag_bytes = moves L (k_cell + v_cell)
//                 Then
//                 find_slot(a) and the copy of the pass's K/V into the cells:
//                   bytes_copied = a L (k_cell + v_cell)
//                 After it, fragmentation 1 - used/n (n >= 128) above
//                 defrag_thold queues a defragmentation (do_defrag).
// With v_trans the V cache is [n_embd_v rows of kv_size]: reading n cells
// reads a segment of n values from each row, counted in whole access
// granules (kAccessGranule bytes) per row; writes and moves count the bytes
// they change. Without v_trans V rows are per cell like K, and n is padded
// to 256 cells instead of 32.
//
// Attention reads n = cell_max padded to 32 cells (256 without v_trans,
// llama.cpp's flash-attention padding), K and V of every layer; the span
// the engine prices is those bytes in columns of the scenario's shape
// (kv_cache.dtype), so quantized types read fewer. Layers kept in host
// memory (n_gpu_layers) run on the host CPU with the ops the backend does
// not take (sim/cache/llama_backend_cost.hpp; host_read_bytes counts their
// KV).
#include "sim/cache/llama_cells_policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "base/checked_math.hpp"
#include "sim/cache/llama_cells_metrics.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {

// Bytes one strided access fetches at least: one HVX vector / L2 line of
// the Hexagon NPU (assumed 128; a transposed V row segment shorter than it
// still costs it).
constexpr Bytes kAccessGranule = 128;
constexpr LlamaSeqId kDialogSeq = 0;

kernels::GgmlType type_of(const std::string& name, const char* key) {
  const auto t = kernels::parse_ggml_type(name);
  if (!t)
    throw std::invalid_argument(fmt::format("llama_cells: {} '{}' is not one of {}", key, name,
                                            fmt::join(kernels::ggml_type_names(), ", ")));
  return *t;
}

struct State {
  LlamaKvCells cells;
  int64_t position = 0;   // logical n_past
  int64_t discarded = 0;  // tokens dropped by shifts: cell pos = position - discarded
  int64_t variant = 1;
  bool do_defrag = false;
};

LlamaBehaviour behaviour_of(const std::string& name) {
  const auto b = parse_llama_behaviour(name);
  if (!b)
    throw std::invalid_argument(fmt::format("llama_cells: behaviour '{}' is not one of {}", name,
                                            fmt::join(llama_behaviour_names(), ", ")));
  return *b;
}

bool context_shift_of(const std::string& name, LlamaBehaviour b) {
  if (name == "on") return true;
  if (name == "off") return false;
  if (name != "auto")
    throw std::invalid_argument(
        fmt::format("llama_cells: context_shift '{}' is not one of auto, on, off", name));
  // llama.cpp main shifted by default; llama-server's --context-shift is off.
  return b == LlamaBehaviour::seed_2024;
}

class LlamaCellsPolicy final : public GenieKvPolicy, public LlamaCellsView {
 public:
  explicit LlamaCellsPolicy(const GenieCacheShape& shape)
      : shape_(shape),
        sizing_(llama_cells_sizing(shape)),
        behaviour_(behaviour_of(shape.llama.behaviour)),
        context_shift_(context_shift_of(shape.llama.context_shift, behaviour_)),
        state_{LlamaKvCells(static_cast<uint32_t>(shape.ctx_size))} {
    if (shape_.ar_variants.empty()) shape_.ar_variants = {1};
    state_.variant = *std::min_element(shape_.ar_variants.begin(), shape_.ar_variants.end());
  }

  std::string_view name() const override { return "llama_cells"; }

  KvUpdatePlan plan_update(const KvUpdateRequest& r) const override {
    // Genie's keep-mask (seed 002) is not llama.cpp's; the scenario checks
    // refuse tree drafts here before a run.
    if (!r.selected.empty())
      throw std::invalid_argument("llama_cells: no dispatchUpdate keep-mask (selected)");
    State s = state_;
    return step(s, r);
  }

  void apply_update(const KvUpdatePlan& plan) override {
    if (plan.n_past_before != state_.position || plan.tokens_held_before != state_.cells.used())
      throw std::logic_error("llama_cells: the update was planned against another cache state");
    State s = state_;
    LlamaCellsCounters c = counters_;
    const KvUpdatePlan again = step(s, {plan.n_past_after, plan.variant_after}, &c);
    if (again.bytes_moved() != plan.bytes_moved())
      throw std::logic_error("llama_cells: the update differs from its plan");
    state_ = std::move(s);
    counters_ = c;
    acc_.bytes_moved += plan.bytes_moved();
    acc_.variant_switches += plan.variant_before != plan.variant_after ? 1 : 0;
    acc_.rewinds += plan.dispatch == KvDispatch::rewind ? 1 : 0;
    acc_.window_evicted_tokens += plan.evicted_tokens;
  }

  AttentionSpan attention_span() const override {
    const int64_t n = attention_n();
    const Bytes per_layer = n * sizing_.k_cell_bytes() + v_read_bytes(n);
    AttentionSpan span;
    // Every layer's read, in columns of the pass's shape: the layers an
    // n_gpu_layers split keeps on the host are the engine's host work
    // (sim/cache/llama_backend_cost.hpp), which prices them on the CPU.
    const Bytes all = sizing_.n_layer * per_layer;
    const Bytes column = shape_.column_bytes();
    span.read = (all + column - 1) / column;
    span.useful = state_.cells.used();
    span.host_read_bytes = sizing_.host_layers() * per_layer;
    counters_.max_n = std::max<int64_t>(counters_.max_n, n);
    counters_.host_read_bytes += span.host_read_bytes;
    return span;
  }
  int64_t n_past() const override { return state_.position; }
  int64_t tokens_held() const override { return state_.cells.used(); }
  int64_t variant() const override { return state_.variant; }
  int64_t capacity_tokens(int64_t) const override { return shape_.ctx_size; }
  int64_t view_offset() const override { return 0; }
  Bytes saved_bytes() const override { return state_.cells.used() * sizing_.cell_bytes(); }
  GenieAccounting accounting() const override {
    GenieAccounting a = acc_;
    a.buffer_bytes = sizing_.total_bytes();
    return a;
  }
  bool makes_room() const override { return context_shift_; }
  // Context shift off, as llama-server: a conversation of position + input
  // tokens at n_ctx or beyond is refused; otherwise the reply stops where
  // the cache is full (its last token is never decoded into a cell).
  int64_t overflow_reply_tokens(int64_t position, int64_t input, int64_t reply) const override {
    if (context_shift_) return -1;
    const int64_t prompt = position + input;
    if (prompt >= shape_.ctx_size) {
      ++counters_.requests_refused;
      return 0;
    }
    const int64_t allowed = std::min(reply, shape_.ctx_size - prompt);
    if (allowed < reply) ++counters_.replies_truncated;
    return allowed;
  }
  Bytes held_bytes(Bytes) const override { return state_.cells.used() * sizing_.cell_bytes(); }
  void report(RunMetrics& m) const override;

  const LlamaKvCells& cells() const override { return state_.cells; }
  const LlamaKvSizing& sizing() const override { return sizing_; }
  const LlamaCellsCounters& counters() const override { return counters_; }
  bool do_defrag() const override { return state_.do_defrag; }
  LlamaBehaviour behaviour() const override { return behaviour_; }
  bool context_shift() const override { return context_shift_; }
  uint32_t attention_n() const override { return state_.cells.padded_n(pad()); }

 private:
  bool seed_2024() const { return behaviour_ == LlamaBehaviour::seed_2024; }
  // seed 004: 32 cells, 256 with flash attention; current llama.cpp pads
  // n_kv to at least 256 either way (llama_kv_cache::get_n_kv).
  uint32_t pad() const { return seed_2024() && shape_.llama.v_trans ? 32u : 256u; }
  // V bytes of one layer as read for n cells.
  Bytes v_read_bytes(int64_t n) const {
    if (!shape_.llama.v_trans) return n * sizing_.v_cell_bytes();
    const Bytes value = kernels::ggml_row_bytes(sizing_.type_v, 1);
    return sizing_.n_embd_v_gqa * round_up(n * value, kAccessGranule);
  }
  // Writes are exact in either layout: consecutive tokens fill the same
  // lines of a transposed row, so no granule is paid per token.
  Bytes v_write_bytes(int64_t t) const { return t * sizing_.v_cell_bytes(); }

  // Runs request `r` on `s`; counts into `c` when given.
  KvUpdatePlan step(State& s, const KvUpdateRequest& r, LlamaCellsCounters* c = nullptr) const {
    if (r.n_past < 0) throw std::invalid_argument("llama_cells: negative n_past");
    KvUpdatePlan plan;
    plan.n_past_before = s.position;
    plan.n_past_after = r.n_past;
    plan.n_update = r.n_past - s.position;
    plan.variant_before = s.variant;
    plan.variant_after = r.variant;
    plan.tokens_held_before = s.cells.used();
    const int64_t L = sizing_.n_layer;
    if (r.n_past == 0) {
      plan.dispatch = KvDispatch::clear_cache;
      s.cells.clear();
      s.discarded = 0;
      s.do_defrag = false;
    } else if (r.n_past == s.position) {
      plan.dispatch = KvDispatch::set_variant;
    } else if (r.n_past < s.position) {
      plan.dispatch = KvDispatch::rewind;
      const int64_t from = std::max<int64_t>(0, r.n_past - s.discarded);
      const int64_t before = s.cells.used();
      s.cells.seq_rm(kDialogSeq, from, -1);
      plan.rewound_tokens = before - s.cells.used();
    } else {
      plan.dispatch = KvDispatch::update_and_set;
      const int64_t a = r.n_past - s.position;
      if (a > shape_.ctx_size - shape_.llama.n_keep)
        throw std::invalid_argument(
            fmt::format("llama_cells: a micro-batch of {} tokens exceeds n_ctx {} less n_keep {}",
                        a, shape_.ctx_size, shape_.llama.n_keep));
      if (!context_shift_ && static_cast<int64_t>(s.cells.used()) + a > shape_.ctx_size)
        throw std::logic_error(fmt::format(
            "llama_cells: {} tokens past {} cells with context shift off", a, s.cells.used()));
      // The application's context shift (llama.cpp main), then the cache update.
      while (static_cast<int64_t>(s.cells.used()) + a > shape_.ctx_size) {
        const int64_t keep = std::min<int64_t>(shape_.llama.n_keep, s.cells.used());
        const int64_t left = s.cells.used() - keep;
        const int64_t discard =
            shape_.llama.n_discard > 0 ? std::min(shape_.llama.n_discard, left) : left / 2;
        if (discard <= 0)
          throw std::invalid_argument("llama_cells: a context shift has nothing to discard");
        s.cells.seq_rm(kDialogSeq, keep, keep + discard);
        s.cells.seq_add(kDialogSeq, keep + discard, -1, -discard);
        s.discarded += discard;
        plan.evicted_tokens += discard;
        if (c) {
          ++c->context_shifts;
          c->discarded_tokens += discard;
        }
      }
      if (s.cells.has_shift()) {
        (void)s.cells.apply_shift();
        const int64_t shifted = s.cells.size();  // the graph ropes every cell
        plan.shifted_cells = shifted;
        plan.kshift_bytes = 2 * L * shifted * sizing_.k_cell_bytes();
        if (c) {
          ++c->kshift_passes;
          c->kshift_cells += shifted;
          c->kshift_bytes += plan.kshift_bytes;
        }
      }
      if (s.do_defrag) {
        const LlamaDefragPlan d = s.cells.plan_defrag();
        s.cells.apply_defrag(d);
        s.do_defrag = false;
        const auto moves = static_cast<int64_t>(d.moves.size());
        plan.defrag_moves = moves;
        plan.defrag_bytes = L * moves * sizing_.k_cell_bytes() + L * moves * v_write_bytes(1);
        if (c && moves > 0) {
          ++c->defrags;
          c->defrag_moves += moves;
          c->defrag_bytes += plan.defrag_bytes;
        }
      }
      const LlamaSlotPlan slot = s.cells.find_slot(a, seed_2024());
      if (!slot.fits) throw std::logic_error(fmt::format("llama_cells: no slot for {} tokens", a));
      std::vector<int64_t> pos(static_cast<size_t>(a));
      std::iota(pos.begin(), pos.end(), s.position - s.discarded);
      s.cells.apply_slot(slot, pos, uint64_t{1} << kDialogSeq);
      if (c) ++(slot.contiguous ? c->slots_contiguous : c->slots_scattered);
      plan.appended_tokens = a;
      plan.bytes_copied = L * (a * sizing_.k_cell_bytes() + v_write_bytes(a));
      // llama_decode: queue a defragmentation for the next update (seed
      // 004; llama.cpp has since removed it).
      const double thold = shape_.llama.defrag_thold;
      if (seed_2024() && thold >= 0 && s.cells.fragmentation(s.cells.padded_n(pad())) > thold)
        s.do_defrag = true;
    }
    s.position = r.n_past;
    s.variant = r.variant;
    plan.tokens_held_after = s.cells.used();
    return plan;
  }

  GenieCacheShape shape_;
  LlamaKvSizing sizing_;
  LlamaBehaviour behaviour_;
  bool context_shift_;
  State state_;
  GenieAccounting acc_;
  // attention_span() is const for the engine but records what it priced.
  mutable LlamaCellsCounters counters_;
};

void LlamaCellsPolicy::report(RunMetrics& m) const {
  LlamaCellsMetrics& o = m.part<LlamaCellsMetrics>();
  o.type_k = shape_.llama.type_k;
  o.type_v = shape_.llama.type_v;
  o.v_trans = shape_.llama.v_trans;
  o.set_sizing(sizing_);
  o.context_shifts = counters_.context_shifts;
  o.discarded_tokens = counters_.discarded_tokens;
  o.kshift_passes = counters_.kshift_passes;
  o.kshift_cells = counters_.kshift_cells;
  o.kshift_bytes = counters_.kshift_bytes;
  o.defrags = counters_.defrags;
  o.defrag_moves = counters_.defrag_moves;
  o.defrag_bytes = counters_.defrag_bytes;
  o.slots_contiguous = counters_.slots_contiguous;
  o.slots_scattered = counters_.slots_scattered;
  o.max_n = counters_.max_n;
  o.host_read_bytes = counters_.host_read_bytes;
  o.behaviour = shape_.llama.behaviour;
  o.context_shift = context_shift_;
  o.requests_refused = counters_.requests_refused;
  o.replies_truncated = counters_.replies_truncated;
}

}  // namespace

LlamaKvSizing llama_cells_sizing(const GenieCacheShape& shape) {
  const kernels::GgmlType tk = type_of(shape.llama.type_k, "type_k");
  const kernels::GgmlType tv = type_of(shape.llama.type_v, "type_v");
  if (shape.llama.v_trans && kernels::ggml_type_traits(tv).quantized)
    throw std::invalid_argument(fmt::format(
        "llama_cells: a {} V cache cannot be stored transposed (llama.cpp quantizes V only with "
        "flash attention: v_trans false)",
        shape.llama.type_v));
  (void)behaviour_of(shape.llama.behaviour);
  LlamaKvSizing s;
  s.kv_size = shape.ctx_size;
  s.n_layer = shape.layers;
  s.n_embd_k_gqa = shape.kv_heads * shape.head_dim;
  s.n_embd_v_gqa = s.n_embd_k_gqa;
  s.type_k = tk;
  s.type_v = tv;
  s.n_gpu_layers = shape.llama.n_gpu_layers;
  (void)s.k_cell_bytes();
  (void)s.v_cell_bytes();
  return s;
}

std::unique_ptr<GenieKvPolicy> make_llama_cells_policy(const GenieCacheShape& shape) {
  return std::make_unique<LlamaCellsPolicy>(shape);
}

}  // namespace kvsim
