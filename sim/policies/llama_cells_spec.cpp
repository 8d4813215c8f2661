// llama_cells (seed 004) as a policy: llama.cpp's unified cell cache with
// ggml K/V types. Under the genie engine one dialog drives it through AR-n
// passes (sim/cache/llama_cells_policy.cpp: context shift, K-shift,
// defragmentation); under the serving engine many sequences share its
// cells as llama-server's parallel slots do (sim/cache/llama_cells_pool.cpp).
#include <fmt/format.h>

#include <algorithm>

#include "kernels/ggml_kv_type.hpp"
#include "sim/cache/genie_buffer_sizing.hpp"
#include "sim/cache/llama_backend.hpp"
#include "sim/cache/llama_backend_cost.hpp"
#include "sim/cache/llama_cells_pool.hpp"
#include "sim/cache/llama_kv_sizing.hpp"
#include "sim/policies/genie_buffer_spec.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {
namespace {

class LlamaCellsSpec final : public PolicySpec,
                             public DeviceBufferContract,
                             public BlockPoolContract {
 public:
  explicit LlamaCellsSpec(const PolicyValues& v) : buffers_(GenieBufferSettings::from(v.values)) {
    set_read(v.values, v.paths);
    llama_.behaviour = v.values.string("behaviour");
    llama_.context_shift = v.values.string("context_shift");
    llama_.type_k = v.values.string("type_k");
    llama_.type_v = v.values.string("type_v");
    llama_.v_trans = v.values.boolean("v_trans");
    llama_.n_keep = v.values.integer("n_keep");
    llama_.n_discard = v.values.integer("n_discard");
    llama_.defrag_thold = v.values.number("defrag_thold");
    llama_.n_gpu_layers = v.values.integer("n_gpu_layers");
    llama_.backend = v.values.string("backend");
    llama_.hexagon_matmul = v.values.string("hexagon_matmul");
    server_.n_parallel = v.values.integer("n_parallel");
    server_.kv_unified = v.values.boolean("kv_unified");
    server_.cache_prompt = v.values.boolean("cache_prompt");
    server_.cache_ram = v.values.integer("cache_ram");
    server_.slot_prompt_similarity = v.values.number("slot_prompt_similarity");
    n_batch_ = v.values.integer("n_batch");
    n_ubatch_ = v.values.integer("n_ubatch");
  }

  // llama-server fills one batch of at most n_batch tokens a step
  // (update_slots), which llama_decode computes in ubatches of n_ubatch,
  // n_ubatch = min(n_batch, n_ubatch) (llama_context's cparams).
  int64_t step_token_cap() const override { return n_batch_; }
  int64_t micro_batch_tokens() const override { return std::min(n_batch_, n_ubatch_); }

  std::string_view name() const override { return "llama_cells"; }
  const DeviceBufferContract* device_buffers() const override { return this; }
  const BlockPoolContract* block_pool() const override { return this; }

  // Its types (a quantized V only untransposed, rows of whole blocks), and
  // per engine: AR-n micro-batches that fit next to n_keep on the dialog
  // engine; one device, llama.cpp's sequence limit and cells that fit the
  // budget on the serving engine. Numerics run in `kvsim generate --policy
  // llama_cells`.
  void check(const InstanceSpec& s, EngineContract engine,
             config::LoadContext& ctx) const override {
    const auto at = [&](const std::string& key) { return ctx.location_of(key); };
    const auto tv = kernels::parse_ggml_type(llama_.type_v);
    if (tv && llama_.v_trans && kernels::ggml_type_traits(*tv).quantized) {
      const std::string key = key_path("type_v");
      ctx.diagnostics.error(at(key), key,
                            fmt::format("a {} V cache cannot be stored transposed: llama.cpp "
                                        "quantizes V only with flash attention",
                                        llama_.type_v),
                            "f16, bf16 or f32, or v_trans: false");
    }
    if (llama_.behaviour == "current" && ctx.locations.count(key_path("defrag_thold")) > 0) {
      const std::string key = key_path("defrag_thold");
      ctx.diagnostics.error(at(key), key,
                            "behaviour current never defragments (llama.cpp removed "
                            "defragmentation with its scattered ggml_set_rows stores)",
                            "no defrag_thold, or behaviour: seed_2024");
    }
    const int64_t row = s.model.head_dim * s.model.num_key_value_heads;
    for (const auto& [k, type] :
         {std::pair{"type_k", llama_.type_k}, std::pair{"type_v", llama_.type_v}}) {
      const auto t = kernels::parse_ggml_type(type);
      if (t && row % kernels::ggml_type_traits(*t).block_values != 0) {
        const std::string key = key_path(k);
        ctx.diagnostics.error(
            at(key), key,
            fmt::format("{} stores blocks of {} values; a row of {} (KV heads x head_dim) is not "
                        "whole blocks",
                        type, kernels::ggml_type_traits(*t).block_values, row),
            "f16, bf16 or f32");
      }
    }
    check_backend(s, ctx);
    if (s.numerics.on())
      ctx.diagnostics.error(at("numerics.mode"), "numerics.mode",
                            fmt::format("'{}' checks Genie's buffers; llama_cells' numerics run "
                                        "in kvsim generate --policy llama_cells",
                                        s.numerics.mode),
                            "off");
    if (engine == EngineContract::device_buffers) {
      check_genie_buffers(buffers_, *this, s, ctx);
      const int64_t largest = buffers_.largest_variant();
      if (llama_.n_keep + largest > buffers_.ctx_size) {
        const std::string key = key_path("n_keep");
        ctx.diagnostics.error(at(key), key,
                              fmt::format("keeping {} tokens leaves no room for an AR-{} "
                                          "micro-batch in ctx_size {}",
                                          llama_.n_keep, largest, buffers_.ctx_size),
                              fmt::format("0..{}", buffers_.ctx_size - largest));
      }
      return;
    }
    if (s.tp != 1)
      ctx.diagnostics.error(at("parallel.tensor"), "parallel.tensor",
                            fmt::format("llama.cpp splits a model by layers, not by heads: "
                                        "tensor parallel {}",
                                        s.tp),
                            "1");
    if (s.pp != 1)
      ctx.diagnostics.error(at("parallel.pipeline"), "parallel.pipeline",
                            "llama.cpp's cell cache runs on one device here", "1");
    // llama-server's slots: each a sequence id with a cell of its own at
    // least (a stream of ctx_size / n_parallel cells without kv_unified).
    if (server_.n_parallel > buffers_.ctx_size) {
      const std::string key = key_path("n_parallel");
      ctx.diagnostics.error(
          at(key), key,
          fmt::format("{} slots, but the cache has {} cells (ctx_size)", server_.n_parallel,
                      buffers_.ctx_size),
          fmt::format("1..{}", std::min<int64_t>(buffers_.ctx_size, kLlamaMaxSeqs)));
    }
    // llama-server decodes a prompt n_batch tokens at a time (update_slots),
    // and every generating slot's token goes in each batch.
    if (!s.scheduler.chunked_prefill)
      ctx.diagnostics.error(at("scheduler.chunked_prefill"), "scheduler.chunked_prefill",
                            "llama-server splits every prompt into batches of n_batch tokens",
                            "true");
    if (n_batch_ < s.scheduler.max_num_seqs) {
      const std::string key = key_path("n_batch");
      ctx.diagnostics.error(
          at(key), key,
          fmt::format("{} tokens a step, below max_num_seqs {}: the running sequences' decodes "
                      "would not fit one batch",
                      n_batch_, s.scheduler.max_num_seqs),
          fmt::format("{}..{}", s.scheduler.max_num_seqs, int64_t{1} << 24));
    }
    // The host prompt cache lives in host memory (--cache-ram): the device
    // file's host_memory, or a CPU's own memory (it has no host link).
    const Bytes host = s.device.host_memory_bytes > 0      ? s.device.host_memory_bytes
                       : s.device.host_link_bandwidth == 0 ? s.device.memory_bytes
                                                           : 0;
    // (The default, llama-server's 8 GiB, is a limit the cache grows to:
    // only a written size is held against the host.)
    if (host > 0 && server_.cache_ram > host && ctx.locations.count(key_path("cache_ram")) > 0) {
      const std::string key = key_path("cache_ram");
      ctx.diagnostics.error(
          at(key), key,
          fmt::format("{} of host prompt cache, but the host of {} has {} of memory",
                      format_bytes(server_.cache_ram), s.device.name, format_bytes(host)),
          fmt::format("at most {}, the host's memory", format_bytes(host)));
    }
    if (ctx.diagnostics.empty()) {
      const PoolSizing sz = size(s.model, s.pool_input());
      const Bytes cells = sz.num_blocks * sz.block_bytes;
      if (cells > sz.kv_budget) {
        const std::string key = key_path("ctx_size");
        ctx.diagnostics.error(
            at(key), key,
            fmt::format("{} cells of {} take {}, but {} x {} = {} for weights {} + activations "
                        "{} leaves {}",
                        sz.num_blocks, format_bytes(sz.block_bytes), format_bytes(cells),
                        format_bytes(s.device.memory_bytes), s.kv.memory_fraction,
                        format_bytes(sz.budget), format_bytes(sz.weights_bytes),
                        format_bytes(sz.activation_reserve), format_bytes(sz.kv_budget)),
            "a smaller ctx_size, a quantized type_k / type_v, or a larger memory_fraction");
      }
    }
  }

  // The backend the device's family offers, and a host CPU for what it
  // leaves there (sim/cache/llama_backend.hpp).
  void check_backend(const InstanceSpec& s, config::LoadContext& ctx) const {
    const auto backend = resolve_llama_backend(llama_.backend, s.device);
    if (!backend) {
      const std::string key = key_path("backend");
      std::vector<std::string> offered = {"auto"};
      for (LlamaBackend b : llama_backends_of(s.device))
        offered.emplace_back(llama_backend_name(b));
      ctx.diagnostics.error(ctx.location_of(key), key,
                            fmt::format("llama.cpp has no {} backend for {} (kind {})",
                                        llama_.backend, s.device.name, s.device.kind),
                            fmt::format("{}", fmt::join(offered, ", ")));
      return;
    }
    if (*backend == LlamaBackend::cpu || s.device.host) return;
    const int64_t L = s.model.num_hidden_layers;
    const bool split = llama_.n_gpu_layers >= 0 && llama_.n_gpu_layers < L;
    const LlamaOpMap map = llama_op_map(*backend, s.device, s.model, llama_);
    if (!split && !map.any()) return;
    const std::string key = key_path(split ? "n_gpu_layers" : "backend");
    ctx.diagnostics.error(
        ctx.location_of(key), key,
        fmt::format(
            "{} leaves {} to the host CPU, but device {} names no `host` (a device "
            "file of kind cpu)",
            llama_backend_name(*backend),
            split ? fmt::format("{} of {} layers", L - llama_.n_gpu_layers, L) : map.why.front(),
            s.device.name),
        "a device file with host: <a cpu device>, or every layer on the device");
  }
  std::unique_ptr<LlamaBackendCost> host_work(const InstanceSpec& s) const override {
    return LlamaBackendCost::make(s.device, s.model, s.kv.dtype_bytes(), llama_);
  }

  // On-device (the dialog engine): Genie's shape with llama.cpp's cells.
  int64_t ctx_size() const override { return buffers_.ctx_size; }
  const std::vector<int64_t>& ar_variants() const override { return buffers_.ar_variants; }
  int64_t update_threads() const override { return buffers_.update_threads; }
  GenieCacheShape shape(const ModelSpec& model, Bytes dtype_bytes) const override {
    GenieCacheShape s = buffers_.shape(model, dtype_bytes);
    s.llama = llama_;
    return s;
  }
  std::unique_ptr<GenieKvPolicy> make(const ModelSpec& model, Bytes dtype_bytes) const override {
    return make_llama_cells_policy(shape(model, dtype_bytes));
  }
  std::string_view buffer_layout() const override { return "llama_cells"; }
  Bytes buffer_bytes(const ModelSpec& model, Bytes dtype_bytes) const override {
    return genie_buffer_bytes(model, buffers_.ctx_size, buffers_.ctx_size, buffers_.ar_variants,
                              dtype_bytes)
        .total();
  }

  // Served (llama-server): kv_size = ctx_size cells of one token each,
  // allocated whole at start as llama_kv_cache_init does.
  int64_t block_size() const override { return 1; }
  PoolSizing size(const ModelSpec& model, PoolSizingInput in) const override {
    in.block_size = 1;
    PoolSizing sz = size_paged_pool(model, in);
    const LlamaKvSizing cells = llama_cells_sizing(shape(model, in.kv_dtype_bytes));
    sz.kv_bytes_per_token = cells.cell_bytes();
    sz.block_bytes = cells.cell_bytes();
    sz.instance_block_bytes = cells.cell_bytes();
    // A stream per slot holds ctx_size / n_parallel cells (llama.cpp's
    // n_ctx_seq, rounded down): the cache is that many times n_parallel.
    const int64_t n_par = std::max<int64_t>(1, server_.n_parallel);
    sz.num_blocks = server_.kv_unified ? cells.kv_size : cells.kv_size / n_par * n_par;
    sz.capacity_tokens = sz.num_blocks;
    sz.host_blocks = 0;
    return sz;
  }
  // `kvsim capacity --policy llama_cells`: ggml types as --kv-dtype
  // (type_k = type_v), one allocation of n_ctx = context cells
  // (llama_kv_cache_init); capacity tokens are the cells the budget left
  // after weights and activations holds, shared by the sequences of a
  // unified cache.
  std::vector<std::string> capacity_dtypes() const override {
    std::vector<std::string> names = kernels::ggml_type_names();
    std::stable_partition(names.begin(), names.end(),
                          [](const std::string& n) { return n == "f16"; });
    return names;
  }
  Bytes capacity_dtype_bytes(const std::string& dtype) const override {
    (void)dtype;  // the cells size themselves (capacity); the pool gives the budget
    return 2;
  }
  std::string capacity_layout_problem(int64_t tp, int64_t pp) const override {
    if (tp != 1) return "llama.cpp splits a model by layers, not by heads";
    if (pp != 1) return "llama.cpp's cell cache runs on one device here";
    return "";
  }
  PoolCapacity capacity(const ModelSpec& model, const std::string& dtype, int64_t context,
                        const PoolSizing& pool) const override {
    const auto type = kernels::parse_ggml_type(dtype);
    if (!type) throw std::invalid_argument(fmt::format("'{}' is not a ggml type", dtype));
    const LlamaKvSizing cells = llama_kv_sizing(model, context, *type, *type);
    PoolCapacity c;
    c.own_row = true;
    c.kv_bytes_per_token = cells.cell_bytes();
    c.kv_bytes_at_context = cells.total_bytes();
    const Bytes left = pool.budget - pool.weights_bytes - pool.activation_reserve;
    c.capacity_tokens = left > 0 ? left / cells.cell_bytes() : 0;
    c.max_concurrent_seqs = c.capacity_tokens / context;
    c.fits = left >= c.kv_bytes_at_context;
    c.shortfall_bytes = c.fits ? 0 : c.kv_bytes_at_context - std::max<Bytes>(left, 0);
    if (c.fits)
      c.note = fmt::format("llama.cpp cells: {} K and V, {} at n_ctx {}", dtype,
                           format_bytes(c.kv_bytes_at_context), context);
    else if (left <= 0)
      c.note = fmt::format("does not fit: weights {} + activations {} already exceed the budget {}",
                           format_bytes(pool.weights_bytes), format_bytes(pool.activation_reserve),
                           format_bytes(pool.budget));
    else
      c.note = fmt::format("does not fit: the {} cache at n_ctx {} is {} beyond the budget", dtype,
                           context, format_bytes(c.shortfall_bytes));
    return c;
  }
  std::string capacity_sizing_text() const override {
    return "llama.cpp's cell cache (seed 004): one allocation of n_ctx = context cells, per "
           "layer k_l and v_l of n_embd_k_gqa x n_ctx values of the ggml type (blocks of 32 "
           "for the quantized types); capacity tokens = cells the budget left after weights "
           "and activations holds.\n\n";
  }

  std::unique_ptr<KvCachePolicy> make(const InstanceSpec& s,
                                      const PoolSizing& sizing) const override {
    (void)sizing;
    LlamaCellsPoolParams p;
    p.sizing = llama_cells_sizing(shape(s.model, s.kv.dtype_bytes()));
    p.behaviour = *parse_llama_behaviour(llama_.behaviour);  // a declared choice
    p.defrag_thold = llama_.defrag_thold;
    p.v_trans = llama_.v_trans;
    p.context_shift = llama_.context_shift == "auto" ? p.behaviour == LlamaBehaviour::seed_2024
                                                     : llama_.context_shift == "on";
    p.n_parallel = server_.n_parallel;
    p.kv_unified = server_.kv_unified;
    p.cache_prompt = server_.cache_prompt;
    p.cache_ram = server_.cache_ram;
    p.slot_prompt_similarity = server_.slot_prompt_similarity;
    p.cache_over_host_link = s.device.host_link_bandwidth > 0;
    p.column_bytes = s.model.kv_bytes_per_token(s.kv.dtype_bytes(), 1);
    return std::make_unique<LlamaCellsPool>(p);
  }

 private:
  GenieBufferSettings buffers_;
  LlamaCellsShape llama_;
  LlamaCellsPoolParams server_;  // the serving engine's llama-server keys
  int64_t n_batch_ = 2048, n_ubatch_ = 512;
};

}  // namespace

PolicyEntry llama_cells_policy_entry() {
  using namespace config;
  ComponentInfo info{"policy", "llama_cells",
                     "llama.cpp's unified cell cache: find_slot, context shift with K-shift, "
                     "defragmentation, ggml K/V types (seed 004)",
                     genie_buffer_params()};
  const std::vector<std::string> types = kernels::ggml_type_names();
  info.params.push_back(choice_param(
      "behaviour", std::string("seed_2024"), llama_behaviour_names(),
      "which llama.cpp: seed_2024 (seed 004, up to mid 2025: contiguous slots, defrag_thold, "
      "context shift on) or current (scattered slots, no defragmentation, n padded to 256, "
      "context shift off as llama-server); docs/llama-cells.md"));
  info.params.push_back(choice_param(
      "context_shift", std::string("auto"), {"auto", "on", "off"},
      "shift the context when the cells are full (llama.cpp --context-shift); auto: on for "
      "seed_2024, off for current (llama-server refuses a conversation at n_ctx and stops a "
      "reply there); the serving engine shifts no slot: there on refuses what would need one"));
  info.params.push_back(choice_param("type_k", std::string("f16"), types,
                                     "ggml type of the cached keys (llama.cpp --cache-type-k)"));
  info.params.push_back(choice_param(
      "type_v", std::string("f16"), types,
      "ggml type of the cached values (llama.cpp --cache-type-v; quantized needs v_trans false)"));
  info.params.push_back(bool_param(
      "v_trans", true,
      "values stored transposed, as llama.cpp does without flash attention (n padded to 32 "
      "cells; false: flash attention, n padded to 256)"));
  info.params.push_back(int_param("n_keep", 0, 0, 1 << 22, "tokens",
                                  "tokens a context shift keeps at the start (llama.cpp --keep)"));
  info.params.push_back(int_param(
      "n_discard", 0, 0, 1 << 22, "tokens",
      "tokens a context shift drops after n_keep (0: half of the rest, as llama.cpp main)"));
  info.params.push_back(number_param(
      "defrag_thold", 0.1, -1.0, 1.0, "fraction",
      "defragment when 1 - used/n exceeds it (n >= 128 cells); below 0 never (llama.cpp "
      "--defrag-thold)"));
  info.params.push_back(int_param(
      "n_gpu_layers", -1, -1, 1 << 16, "layers",
      "layers on the accelerator, the last ones (llama.cpp -ngl); the rest, weights and KV in "
      "host memory, run on the device's host CPU (its device file's `host`); -1 all"));
  info.params.push_back(choice_param(
      "backend", std::string("auto"), llama_backend_choices(),
      "llama.cpp's backend for the device (auto: its family's: cpu for kind cpu, cann for an "
      "Ascend, cuda for a GPU, hexagon for an HTP); the ops it does not take run on the host "
      "CPU (docs/llama-cells.md)"));
  info.params.push_back(choice_param(
      "hexagon_matmul", std::string("hvx"), {"hvx", "hmx"},
      "the Hexagon backend's matmul kernels: hvx, HVX int8/fp16 dot products "
      "(ggml-hexagon's htp/matmul-ops.c, its default build), or hmx, the HMX tile engine (a "
      "build with GGML_HEXAGON_USE_HMX=1, ggml-org/llama.cpp PR #20693); other backends ignore "
      "it"));
  // llama-server (the serving engine only): defaults as llama-server sets
  // them (tools/server/server.cpp aa6192d3: n_parallel 4 with kv_unified;
  // common/common.h de93b991: cache_ram_mib 8192, slot_prompt_similarity
  // 0.1; server-task.h 0c0d0fdc: cache_prompt true).
  info.params.push_back(int_param(
      "n_parallel", 4, 1, kLlamaMaxSeqs, "slots",
      "llama-server's parallel slots (-np), each a sequence id; the serving engine only"));
  info.params.push_back(bool_param(
      "kv_unified", true,
      "one cell cache shared by every slot (-kvu), each slot's context up to ctx_size; false: "
      "a stream of ctx_size / n_parallel cells per slot"));
  info.params.push_back(
      bool_param("cache_prompt", true,
                 "a slot keeps the tokens its cells share with the next prompt (llama-server's "
                 "cache_prompt)"));
  info.params.push_back(bytes_param(
      "cache_ram", Bytes{8192} << 20, 0, Bytes{1} << 50,
      "host prompt cache (--cache-ram): a slot's state saved there when the slot is handed "
      "over, restored by longest common prefix, over the host link; 0 off"));
  // common/common.h (common_params: n_batch 2048 "logical batch size",
  // n_ubatch 512 "physical batch size"), common/arg.cpp -b / -ub.
  info.params.push_back(int_param(
      "n_batch", 2048, 1, 1 << 24, "tokens",
      "llama-server's logical batch (-b): at most this many tokens a step, the slots' decodes "
      "and prompt chunks together (with scheduler.max_batched_tokens, the smaller); the "
      "serving engine only"));
  info.params.push_back(int_param(
      "n_ubatch", 512, 1, 1 << 24, "tokens",
      "llama.cpp's physical batch (-ub): a step's batch computed in ubatches of this many "
      "tokens (at most n_batch), one graph after another, each priced as a pass (weights "
      "read again); the serving engine only"));
  info.params.push_back(number_param(
      "slot_prompt_similarity", 0.1, 0.0, 1.0, "fraction",
      "an idle slot is picked for a prompt when more than this share of the prompt is its "
      "cached prefix (--slot-prompt-similarity); 0: least recently used only"));
  return {info, "", [](const PolicyValues& v) -> std::shared_ptr<PolicySpec> {
            return std::make_shared<LlamaCellsSpec>(v);
          }};
}

}  // namespace kvsim
