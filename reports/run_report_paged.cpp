// The serving engine's parts of a run's reports: the paged pool (blocks,
// prefix hits, fragmentation, swap) and the memory plan that sized it.
#include <fmt/format.h>

#include "reports/genie_report.hpp"
#include "reports/html_page.hpp"
#include "reports/run_report_sections.hpp"
#include "sim/cache/chunk_lru_metrics.hpp"
#include "sim/core/llama_bench_metrics.hpp"
#include "sim/serve/serving_metrics.hpp"
#include "sim/serve/session_retention_metrics.hpp"

namespace kvsim {
namespace {

// The scenario's policy's block size (a run the serving engine recorded is
// of a policy with a block pool; none: 0).
int64_t block_size_of(const ScenarioSpec& s) {
  const BlockPoolContract* pool = s.policy().block_pool();
  return pool != nullptr ? pool->block_size() : 0;
}

std::string summary_geometry(const ScenarioSpec& s) {
  return fmt::format("block {}", block_size_of(s));
}

std::string html_geometry(const ScenarioSpec& s) {
  return fmt::format("in blocks of {} tokens", block_size_of(s));
}

std::string summary_lines(const ScenarioSpec& s, const RunMetrics& m) {
  (void)s;
  const ServingPoolMetrics& pool = m.parts.get_or_zero<ServingPoolMetrics>();
  std::string out =
      fmt::format("KV cache: {} blocks x {} = {} ({} tokens); peak used {} ({:.1f}%), mean {}\n",
                  pool.num_blocks, format_bytes(pool.block_bytes), format_bytes(m.memory.kv_bytes),
                  m.kv_cache.capacity_tokens, format_bytes(m.kv_cache.peak_used_bytes),
                  m.memory.kv_bytes > 0 ? 100.0 * static_cast<double>(m.kv_cache.peak_used_bytes) /
                                              static_cast<double>(m.memory.kv_bytes)
                                        : 0.0,
                  format_bytes(static_cast<Bytes>(m.kv_cache.mean_used_bytes)));
  out += fmt::format(
      "          prefix hit rate {:.3f}, fragmentation {:.3f}, evictions {}, swapped {}\n",
      pool.prefix_hit_rate, pool.fragmentation, pool.evictions, format_bytes(pool.swapped_bytes));
  out += fmt::format("memory per device: {} total, weights {}, activations {}, KV {}\n",
                     format_bytes(m.memory.device_bytes), format_bytes(m.memory.weights_bytes),
                     format_bytes(pool.activation_reserve_bytes), format_bytes(m.memory.kv_bytes));
  out += session_retention_summary(m);
  // kind: llama_bench on llama_cells: llama-bench's table, as on the phone.
  if (const auto* bench = m.parts.find<LlamaBenchMetrics>(); bench && !bench->tests.empty())
    out += llama_bench_table(s, m, *bench);
  return out;
}

std::string markdown(const ScenarioSpec& s, const RunMetrics& m, const PoolSizing& sizing) {
  (void)s;
  return fmt::format("| KV pool ({} blocks x {}) | {} | {} |\n\n", sizing.num_blocks,
                     sizing.block_bytes, m.memory.kv_bytes, format_bytes(m.memory.kv_bytes));
}

std::vector<std::string> bytes_row(const std::string& name, Bytes b) {
  return {name, std::to_string(b), format_bytes(b)};
}

std::string html_tables(const ScenarioSpec& s, const RunMetrics& m, const PoolSizing& sizing) {
  const ServingPoolMetrics& pool = m.parts.get_or_zero<ServingPoolMetrics>();
  const ChunkLruMetrics& chunks = m.parts.get_or_zero<ChunkLruMetrics>();
  std::string body = "<h2>KV cache</h2>\n";
  body += html_table({"metric", "value"},
                     {{"blocks", std::to_string(pool.num_blocks)},
                      {"block bytes", format_bytes(pool.block_bytes)},
                      {"capacity tokens", std::to_string(m.kv_cache.capacity_tokens)},
                      {"peak used", format_bytes(m.kv_cache.peak_used_bytes)},
                      {"mean used", format_bytes(static_cast<Bytes>(m.kv_cache.mean_used_bytes))},
                      {"prefix hit rate", fmt::format("{:.3f}", pool.prefix_hit_rate)},
                      {"chunk hit rate", fmt::format("{:.3f}", chunks.chunk_hit_rate)},
                      {"fragmentation", fmt::format("{:.3f}", pool.fragmentation)},
                      {"evictions", std::to_string(pool.evictions)},
                      {"bytes moved", format_bytes(m.kv_cache.bytes_moved)},
                      {"swapped", format_bytes(pool.swapped_bytes)}});
  body += "<h2>Memory plan (per device)</h2>\n";
  std::vector<std::vector<std::string>> rows = {
      bytes_row("device memory", m.memory.device_bytes),
      bytes_row(fmt::format("budget (x {})", s.kv.memory_fraction), sizing.budget),
      bytes_row("weights", sizing.weights_bytes),
      bytes_row("activation reserve", sizing.activation_reserve),
      bytes_row(fmt::format("KV pool ({} blocks x {})", sizing.num_blocks, sizing.block_bytes),
                m.memory.kv_bytes)};
  if (chunks.chunk_pool_bytes > 0) rows.push_back(bytes_row("chunk pool", chunks.chunk_pool_bytes));
  body += html_table({"item", "bytes", ""}, rows);
  return body;
}

// A server's pool against its capacity, its queue, the batch it formed and
// the tokens per step over time, then what its caches found.
std::vector<CaptionedChart> charts(const RunMetrics& m, const LabelledSeries& run) {
  const std::vector<LabelledSeries> runs = {run};
  std::vector<CaptionedChart> out = {
      {kv_memory_chart(runs, static_cast<double>(m.memory.kv_bytes)),
       "KV memory in use (peak within each interval) against the pool's capacity"},
      {queue_chart(runs), "Running / waiting requests"},
      {batch_size_chart(runs), "Sequences per step"},
      {tokens_per_step_chart(runs), "Tokens computed per step (prefill chunks and decodes)"}};
  const ServingPoolMetrics& pool = m.parts.get_or_zero<ServingPoolMetrics>();
  const ChunkLruMetrics& chunks = m.parts.get_or_zero<ChunkLruMetrics>();
  if (pool.prefix_hit_rate > 0)
    out.push_back({prefix_hit_rate_chart(runs), "Prefix-cache hits over time"});
  if (chunks.chunk_hits + chunks.chunk_misses > 0)
    out.push_back({bar_chart("Cache hit rates", "hit rate",
                             {{"chunk", chunks.chunk_hit_rate}, {"prefix", pool.prefix_hit_rate}}),
                   fmt::format("Chunks found {} of {} asked; prefix tokens found",
                               chunks.chunk_hits, chunks.chunk_hits + chunks.chunk_misses)});
  if (enough_for_cdf(runs)) {
    out.push_back({ttft_cdf_chart(runs), "TTFT of completed requests"});
    out.push_back({tpot_cdf_chart(runs), "TPOT of completed requests"});
  } else if (run.series->completed() > 0) {
    out.push_back({per_request_latency_chart(*run.series),
                   "TTFT and end-to-end latency of each "
                   "request"});
  }
  return out;
}

}  // namespace

EngineReport serving_engine_report() {
  return {"serving",     "steps",  summary_geometry, html_geometry,
          summary_lines, markdown, html_tables,      charts};
}

}  // namespace kvsim
