// llama.cpp's cell cache (seed 004): the ggml K/V types and the seed's
// sizing numbers, the cell metadata on hand-built states (find_slot,
// seq_*, K-shift deltas, defragmentation, a slot that does not fit) and the
// llama_cells policy's plans (context shift, K-shift and defrag bytes,
// v_trans, n_gpu_layers).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/diagnostics.hpp"
#include "kernels/ggml_kv_type.hpp"
#include "kernels/llama_kv_tensors.hpp"
#include "kernels/rope.hpp"
#include "models/model_spec.hpp"
#include "sim/cache/llama_cells_policy.hpp"
#include "sim/cache/llama_kv_cells.hpp"
#include "sim/cache/llama_kv_sizing.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using kernels::GgmlType;
constexpr Bytes kMiB = 1024 * 1024;

ModelSpec llama2_7b() {
  config::LoadContext ctx;
  return load_model_file(std::string(KVSIM_SOURCE_DIR) + "/configs/models/llama-2-7b.yaml", ctx);
}

TEST(GgmlKvType, BytesPerBlockOf32AreGgmls) {
  const std::vector<std::pair<GgmlType, int64_t>> bytes32 = {
      {GgmlType::f32, 128}, {GgmlType::f16, 64},  {GgmlType::bf16, 64}, {GgmlType::q8_0, 34},
      {GgmlType::q4_0, 18}, {GgmlType::q4_1, 20}, {GgmlType::q5_0, 22}, {GgmlType::q5_1, 24}};
  for (const auto& [t, b] : bytes32) EXPECT_EQ(kernels::ggml_row_bytes(t, 32), b);
  EXPECT_THROW((void)kernels::ggml_row_bytes(GgmlType::q4_0, 48), std::invalid_argument);
  EXPECT_EQ(kernels::parse_ggml_type("q5_1"), GgmlType::q5_1);
  EXPECT_FALSE(kernels::parse_ggml_type("q3_k").has_value());
}

TEST(GgmlKvType, QuantizedRowsRoundTripWithinTheirStep) {
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
  for (GgmlType t : {GgmlType::q8_0, GgmlType::q4_0, GgmlType::q4_1, GgmlType::q5_0, GgmlType::q5_1,
                     GgmlType::f16, GgmlType::bf16, GgmlType::f32}) {
    std::vector<uint8_t> bytes(static_cast<size_t>(kernels::ggml_row_bytes(t, 64)));
    std::vector<float> y(64);
    kernels::ggml_encode_row(t, x.data(), 64, bytes.data());
    kernels::ggml_decode_row(t, bytes.data(), 64, y.data());
    // Bounds over values in [-3, 3]: half a step for the rounded types; a
    // whole step for q4_0 / q5_0, whose scale maps the largest magnitude to
    // -8 (-16) so the other end stops one step short (7d, 15d).
    const double step = t == GgmlType::q8_0   ? 3.0 / 127 / 2 + 3e-3
                        : t == GgmlType::q4_0 ? 3.0 / 8
                        : t == GgmlType::q5_0 ? 3.0 / 16
                        : t == GgmlType::q4_1 ? 6.0 / 15 / 2 + 3e-3
                        : t == GgmlType::q5_1 ? 6.0 / 31 / 2 + 3e-3
                        : t == GgmlType::bf16 ? 3.0 / 256
                                              : 3.0 / 2048;
    double err = 0;
    for (size_t i = 0; i < x.size(); ++i) err = std::max(err, double(std::fabs(x[i] - y[i])));
    EXPECT_LE(err, step) << kernels::ggml_type_traits(t).name;
  }
}

// Seed 004: llama-2-7b, n_ctx 1024, F16 K and V: 1024 cells, k_l of
// n_embd_k_gqa x kv_size = 4096 x 1024 elements, 512 MiB in all.
TEST(LlamaKvSizing, Llama2_7bAtNCtx1024PinsTheSeedsNumbers) {
  const ModelSpec m = llama2_7b();
  const LlamaKvSizing f16 = llama_kv_sizing(m, 1024, GgmlType::f16, GgmlType::f16);
  EXPECT_EQ(f16.kv_size, 1024);
  EXPECT_EQ(f16.n_embd_k_gqa, 4096);
  EXPECT_EQ(f16.k_l_elements(), 4096 * 1024);
  EXPECT_EQ(f16.k_l_bytes(), 8388608);  // the seed's nb[1] of cache_k_l0
  EXPECT_EQ(f16.total_bytes(), 512 * kMiB);
  // q8_0: 34 bytes per 32 values; q4_0: 18.
  const LlamaKvSizing q8 = llama_kv_sizing(m, 1024, GgmlType::q8_0, GgmlType::q8_0);
  EXPECT_EQ(q8.k_l_bytes(), 4096 * 1024 / 32 * 34);
  EXPECT_EQ(q8.total_bytes(), 272 * kMiB);
  const LlamaKvSizing q4 = llama_kv_sizing(m, 1024, GgmlType::q4_0, GgmlType::q4_0);
  EXPECT_EQ(q4.total_bytes(), 144 * kMiB);
  // An n_gpu_layers split: the last 20 layers on the accelerator.
  const LlamaKvSizing split = llama_kv_sizing(m, 1024, GgmlType::f16, GgmlType::f16, 20);
  EXPECT_EQ(split.device_bytes(), 320 * kMiB);
  EXPECT_EQ(split.host_bytes(), 192 * kMiB);
  EXPECT_FALSE(split.on_device(11));
  EXPECT_TRUE(split.on_device(12));
}

// ---------------------------------------------------------------------------
// Cells on hand-built states

void fill(LlamaKvCells& c, int64_t n, int64_t pos0, LlamaSeqId seq = 0) {
  const LlamaSlotPlan p = c.find_slot(n);
  ASSERT_TRUE(p.fits);
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < n; ++i) pos.push_back(pos0 + i);
  c.apply_slot(p, pos, uint64_t{1} << seq);
}

TEST(LlamaKvCells, FindSlotTakesAContiguousRunFromHeadAndPlanningChangesNothing) {
  LlamaKvCells c(16);
  const LlamaSlotPlan p = c.find_slot(4);
  EXPECT_TRUE(p.fits && p.contiguous);
  EXPECT_EQ(p.cells, (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(c.used(), 0u);  // const
  fill(c, 4, 0);
  EXPECT_EQ(c.head(), 4u);
  EXPECT_EQ(c.used(), 4u);
  EXPECT_EQ(c.cell(2).pos, 2);
  EXPECT_EQ(c.cell_max(), 4u);
  EXPECT_EQ(c.padded_n(32), 16u);  // at most size
}

TEST(LlamaKvCells, AHoleTooSmallIsSkippedThenCellsAreScatteredWhenNoRunFits) {
  LlamaKvCells c(8);
  fill(c, 8, 0);
  c.seq_rm(0, 1, 3);  // holes at cells 1, 2
  c.seq_rm(0, 5, 6);  // and 5
  EXPECT_EQ(c.used(), 5u);
  EXPECT_EQ(c.head(), 0u);  // the search had wrapped to 0, before the holes
  LlamaSlotPlan two = c.find_slot(2);
  EXPECT_TRUE(two.contiguous);
  EXPECT_EQ(two.cells, (std::vector<uint32_t>{1, 2}));
  LlamaSlotPlan three = c.find_slot(3);  // no run of 3: scattered in ring order
  EXPECT_TRUE(three.fits);
  EXPECT_FALSE(three.contiguous);
  EXPECT_EQ(three.cells, (std::vector<uint32_t>{1, 2, 5}));
  // More than the free cells: no slot.
  EXPECT_FALSE(c.find_slot(4).fits);
  EXPECT_TRUE(c.find_slot(4).cells.empty());
  fill(c, 3, 8);
  EXPECT_FALSE(c.find_slot(1).fits);  // full
  EXPECT_FALSE(LlamaKvCells(4).find_slot(5).fits);
}

TEST(LlamaKvCells, SeqCpSharesCellsSeqKeepDropsTheOthers) {
  LlamaKvCells c(16);
  fill(c, 6, 0, 0);  // a shared prompt of 6 tokens
  for (LlamaSeqId s = 1; s < 4; ++s) c.seq_cp(0, s, -1, -1);
  EXPECT_EQ(c.used(), 6u);  // N sequences, the prompt's cells once
  for (LlamaSeqId s = 1; s < 4; ++s) fill(c, 2, 6, s);
  EXPECT_EQ(c.used(), 12u);
  EXPECT_EQ(c.seq_pos_max(2), 7);
  c.seq_rm(1, -1, -1);  // sequence 1 leaves: its 2 own cells free, the shared ones stay
  EXPECT_EQ(c.used(), 10u);
  EXPECT_TRUE(c.cell(0).has(2));
  EXPECT_FALSE(c.cell(0).has(1));
  c.seq_keep(3);
  EXPECT_EQ(c.used(), 8u);  // the prompt and sequence 3's two
  EXPECT_EQ(c.cell(0).seqs, uint64_t{1} << 3);
  c.seq_rm(-1, -1, -1);
  EXPECT_EQ(c.used(), 0u);
}

TEST(LlamaKvCells, SeqAddShiftsPositionsOwesAKShiftAndFreesCellsBelowZero) {
  LlamaKvCells c(16);
  fill(c, 10, 0);
  // llama.cpp main's context shift: keep 2, discard 4, shift the rest by -4.
  c.seq_rm(0, 2, 6);
  c.seq_add(0, 6, -1, -4);
  EXPECT_TRUE(c.has_shift());
  EXPECT_EQ(c.used(), 6u);
  EXPECT_EQ(c.cell(6).pos, 2);
  EXPECT_EQ(c.cell(6).delta, -4);
  EXPECT_EQ(c.cell(0).delta, 0);
  EXPECT_EQ(c.seq_pos_max(0), 5);
  EXPECT_EQ(c.head(), 0u);  // nothing freed by the add: search from the start
  const std::vector<uint32_t> shifted = c.apply_shift();
  EXPECT_EQ(shifted, (std::vector<uint32_t>{6, 7, 8, 9}));
  EXPECT_FALSE(c.has_shift());
  EXPECT_EQ(c.cell(6).delta, 0);
  // A shift past position 0 frees the cell.
  c.seq_add(0, 0, 1, -1);
  EXPECT_EQ(c.used(), 5u);
  EXPECT_EQ(c.head(), 0u);
  // seq_div halves positions (self-extend), the delta records the change.
  c.seq_div(0, -1, -1, 2);
  EXPECT_EQ(c.cell(9).pos, 2);  // was 5
  EXPECT_EQ(c.cell(9).delta, -3);
}

TEST(LlamaKvCells, DefragMovesTheLastCellsIntoTheHolesAndFragmentationFollowsN) {
  LlamaKvCells c(256);
  fill(c, 200, 0);
  c.seq_rm(0, 10, 50);  // a hole of 40 cells
  EXPECT_EQ(c.used(), 160u);
  EXPECT_EQ(c.padded_n(32), 224u);
  EXPECT_NEAR(c.fragmentation(c.padded_n(32)), 1.0 - 160.0 / 224.0, 1e-12);
  EXPECT_EQ(c.fragmentation(96), 0.0);  // n below 128 cells: never
  const LlamaDefragPlan plan = c.plan_defrag();
  ASSERT_EQ(plan.moves.size(), 40u);
  EXPECT_EQ(plan.moves.front().src, 199u);
  EXPECT_EQ(plan.moves.front().dst, 10u);
  EXPECT_EQ(c.cell(10).pos, -1);  // const
  c.apply_defrag(plan);
  EXPECT_EQ(c.cell_max(), 160u);
  EXPECT_EQ(c.cell(10).pos, 199);
  EXPECT_EQ(c.used(), 160u);
  EXPECT_TRUE(c.plan_defrag().moves.empty());
  EXPECT_THROW(c.apply_defrag(plan), std::logic_error);  // planned against another state
}

// ---------------------------------------------------------------------------
// The policy

GenieCacheShape small_shape() {
  GenieCacheShape s;
  s.layers = 2;
  s.kv_heads = 2;
  s.head_dim = 32;  // n_embd_k_gqa 64: two blocks of 32
  s.dtype_bytes = 2;
  s.ctx_size = 256;
  s.ar_variants = {1, 32};
  return s;
}

KvUpdatePlan dispatch(GenieKvPolicy& p, int64_t n_past, int64_t variant) {
  const KvUpdatePlan plan = p.plan_update({n_past, variant});
  p.apply_update(plan);
  return plan;
}

TEST(LlamaCellsPolicy, AppendsPriceTheCopyAndTheSpanIsNPaddedTo32) {
  auto p = make_llama_cells_policy(small_shape());
  const auto& view = dynamic_cast<const LlamaCellsView&>(*p);
  const KvUpdatePlan plan = dispatch(*p, 40, 32);
  EXPECT_EQ(plan.appended_tokens, 40);
  // K and V: 40 cells x 128 B in each of 2 layers.
  EXPECT_EQ(plan.bytes_copied, 2 * (40 * 128 + 40 * 128));
  EXPECT_EQ(view.attention_n(), 64u);
  EXPECT_EQ(p->attention_span().useful, 40);
  EXPECT_EQ(p->tokens_held(), 40);
  EXPECT_TRUE(p->makes_room());
  EXPECT_EQ(p->accounting().buffer_bytes, 2 * 2 * 256 * 128);
}

TEST(LlamaCellsPolicy, VTransChangesTheBytesOfAVReadAndThePadding) {
  GenieCacheShape s = small_shape();
  auto trans = make_llama_cells_policy(s);
  s.llama.v_trans = false;
  auto flat = make_llama_cells_policy(s);
  dispatch(*trans, 1, 1);
  dispatch(*flat, 1, 1);
  // Writes are the same bytes; a read differs. Transposed, n = 32 cells:
  // K 32 x 128 B, V 64 rows x a 64-byte segment read as one 128-byte
  // granule, per layer: 2 x 12288 B = 48 columns of 512 B. Untransposed,
  // n = 256 (flash attention's padding): 2 x 65536 B = 256 columns.
  EXPECT_EQ(trans->plan_update({2, 1}).bytes_copied, flat->plan_update({2, 1}).bytes_copied);
  EXPECT_EQ(trans->attention_span().read, 48);
  EXPECT_EQ(flat->attention_span().read, 256);
  EXPECT_EQ(dynamic_cast<const LlamaCellsView&>(*flat).attention_n(), 256u);  // pad 256
  EXPECT_EQ(dynamic_cast<const LlamaCellsView&>(*trans).attention_n(), 32u);
  dispatch(*trans, 64, 1);  // n = 64: a segment of 128 B is one granule
  EXPECT_EQ(trans->attention_span().read, 64);
  // A quantized V needs v_trans off.
  s.llama.v_trans = true;
  s.llama.type_v = "q8_0";
  EXPECT_THROW(make_llama_cells_policy(s), std::invalid_argument);
  s.llama.v_trans = false;
  EXPECT_NO_THROW(make_llama_cells_policy(s));
}

TEST(LlamaCellsPolicy, OutgrowingNCtxShiftsTheContextAndPricesTheKShiftThenDefrags) {
  auto p = make_llama_cells_policy(small_shape());  // n_keep 0, n_discard half, thold 0.1
  const auto& view = dynamic_cast<const LlamaCellsView&>(*p);
  for (int64_t n = 32; n <= 256; n += 32) dispatch(*p, n, 32);
  EXPECT_EQ(p->tokens_held(), 256);
  // The next micro-batch does not fit: discard 128, shift 128 down.
  const KvUpdatePlan shift = dispatch(*p, 288, 32);
  EXPECT_EQ(shift.evicted_tokens, 128);
  // The shift graph ropes all 256 cells' keys (llama.cpp build_graph_shift).
  EXPECT_EQ(shift.shifted_cells, 256);
  EXPECT_EQ(shift.kshift_bytes, 2 * 2 * 256 * 128);  // read + write K, 2 layers
  EXPECT_EQ(p->tokens_held(), 160);
  EXPECT_EQ(p->n_past(), 288);               // the engine's logical position keeps growing
  EXPECT_EQ(view.cells().cell(0).pos, 128);  // the batch went into the freed cells
  EXPECT_EQ(view.counters().context_shifts, 1);
  // 160 used of n = 256: fragmentation 0.375 > 0.1 queues a defrag ...
  EXPECT_TRUE(view.do_defrag());
  const KvUpdatePlan next = dispatch(*p, 289, 1);
  EXPECT_EQ(next.defrag_moves, 96);  // cells 160..255 into the holes 32..127
  EXPECT_EQ(next.defrag_bytes, 2 * 96 * (128 + 128));
  EXPECT_EQ(view.cells().cell_max(), 161u);
  EXPECT_EQ(view.counters().defrags, 1);
  EXPECT_EQ(next.bytes_moved(), next.bytes_copied + next.defrag_bytes);
  // Rewind drops the newest positions; clear empties everything.
  const KvUpdatePlan rewind = dispatch(*p, 280, 1);
  EXPECT_EQ(rewind.dispatch, KvDispatch::rewind);
  EXPECT_EQ(p->tokens_held(), 152);
  EXPECT_EQ(dispatch(*p, 0, 32).dispatch, KvDispatch::clear_cache);
  EXPECT_EQ(p->tokens_held(), 0);
}

TEST(LlamaCellsPolicy, NoDefragBelowZeroThresholdAndNKeepStaysPut) {
  GenieCacheShape s = small_shape();
  s.llama.defrag_thold = -1;
  s.llama.n_keep = 10;
  s.llama.n_discard = 50;
  auto p = make_llama_cells_policy(s);
  const auto& view = dynamic_cast<const LlamaCellsView&>(*p);
  for (int64_t n = 32; n <= 256; n += 32) dispatch(*p, n, 32);
  const KvUpdatePlan shift = dispatch(*p, 288, 32);
  EXPECT_EQ(shift.evicted_tokens, 50);
  EXPECT_EQ(view.cells().cell(9).pos, 9);    // kept
  EXPECT_EQ(view.cells().cell(60).pos, 10);  // shifted by -50
  EXPECT_FALSE(view.do_defrag());
  EXPECT_EQ(dispatch(*p, 289, 1).defrag_bytes, 0);
}

TEST(LlamaCellsPolicy, HostLayersAreReadApartAndQuantizedTypesReadFewerColumns) {
  GenieCacheShape s = small_shape();
  s.llama.n_gpu_layers = 1;
  s.llama.v_trans = false;
  auto split = make_llama_cells_policy(s);
  dispatch(*split, 256, 32);
  const AttentionSpan a = split->attention_span();
  EXPECT_EQ(a.host_read_bytes, 256 * 2 * 128);  // one layer, K and V
  s.llama.n_gpu_layers = -1;
  auto all = make_llama_cells_policy(s);
  dispatch(*all, 256, 32);
  EXPECT_EQ(all->attention_span().read, 256);  // f16 reads f16 columns
  EXPECT_EQ(all->attention_span().host_read_bytes, 0);
  s.llama.type_k = s.llama.type_v = "q4_0";
  auto q4 = make_llama_cells_policy(s);
  dispatch(*q4, 256, 32);
  EXPECT_EQ(q4->attention_span().read, 256 * 36 / 128);  // 2 x 36 B per cell vs 2 x 128
  EXPECT_EQ(q4->held_bytes(0), 256 * 2 * 2 * 36);
}

// ---------------------------------------------------------------------------
// Tensors: K-shift is RoPE at the new position; defrag moves preserve values.

TEST(LlamaKvTensors, KShiftEqualsRopeAtTheNewPosition) {
  kernels::LlamaKvTensorShape shape;
  shape.n_layer = 2;
  shape.kv_size = 8;
  shape.n_embd_k = shape.n_embd_v = 64;
  shape.type_k = GgmlType::f32;
  shape.type_v = GgmlType::f32;
  kernels::LlamaKvTensors kv(shape);
  std::vector<float> raw(64), at_p(64), at_q(64), got(64);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = std::cos(0.11f * static_cast<float>(i));
  for (auto style : {kernels::RopeStyle::adjacent_pairs, kernels::RopeStyle::rotate_half}) {
    at_p = raw;
    kernels::apply_rope(at_p.data(), 2, 32, 300, 10000.0f, style);
    at_q = raw;
    kernels::apply_rope(at_q.data(), 2, 32, 100, 10000.0f, style);
    for (int64_t l = 0; l < 2; ++l) kv.write_k(l, 5, at_p.data());
    kv.shift_k(5, -200, 2, 10000.0f, style);
    for (int64_t l = 0; l < 2; ++l) {
      kv.read_k(l, 5, got.data());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], at_q[i], 2e-4) << i;
    }
  }
}

TEST(LlamaKvTensors, MovesKeepKAndVBitForBitWithAndWithoutVTrans) {
  for (bool v_trans : {true, false}) {
    kernels::LlamaKvTensorShape shape;
    shape.n_layer = 2;
    shape.kv_size = 16;
    shape.n_embd_k = shape.n_embd_v = 32;
    shape.v_trans = v_trans;
    if (!v_trans) shape.type_v = GgmlType::q8_0;
    kernels::LlamaKvTensors kv(shape);
    std::vector<float> k(32), v(32), k2(32), v2(32), k3(32), v3(32);
    for (size_t i = 0; i < 32; ++i) {
      k[i] = 0.1f * static_cast<float>(i);
      v[i] = -0.05f * static_cast<float>(i);
    }
    kv.write_k(1, 12, k.data());
    kv.write_v(1, 12, v.data());
    kv.read_k(1, 12, k2.data());
    kv.read_v(1, 12, v2.data());
    kv.move_cell(12, 3);
    kv.read_k(1, 3, k3.data());
    kv.read_v(1, 3, v3.data());
    EXPECT_EQ(k2, k3);
    EXPECT_EQ(v2, v3);
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
