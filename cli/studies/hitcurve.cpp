#include "cli/studies/hitcurve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "reports/gnuplot_chart.hpp"
#include "reports/html_page.hpp"
#include "reports/output_dir.hpp"
#include "sim/cache/chunk_lru_policy.hpp"

namespace kvsim {

const char* const kHitDefinition =
    "hit rate = tokens served from cache / prompt tokens, over every request replayed in "
    "arrival order through the policy's cache alone (no timing: each request is looked up, "
    "admitted, committed, grown by the tokens its decode writes (every generated token but "
    "the last, as the engine computes them, so a chat's next turn can hit its previous "
    "answer) and released before the next); tokens served from cache are those "
    "the policy reuses at admission (paged: leading full blocks found by chained content "
    "hash, the last prompt token always recomputed, as kv_cache.prefix_hit_rate counts them; "
    "chunk_lru: tokens of the segments found in the chunk pool, as kv_cache.chunk_hit_rate "
    "counts them); "
    "a prompt larger than the whole pool is not cached and counts as a miss";

namespace {

// The policy's pool sizing with its reusable cache set to `blocks` blocks.
PoolSizing sizing_for(const BlockPoolContract& pool, const PoolSizing& base, int64_t blocks) {
  PoolSizing s = base;
  s.host_blocks = 0;  // no preemption in a replay: nothing is swapped
  if (pool.reuses_chunks()) {
    s.chunk_pool_blocks = blocks;
    s.chunk_pool_bytes = blocks * s.block_bytes;
  } else {
    s.num_blocks = blocks;
    s.capacity_tokens = blocks * pool.block_size();
  }
  return s;
}

std::string fraction_text(double v) {
  return fmt::format("{:.6f}", v);
}

}  // namespace

bool HitCurve::monotone() const {
  std::vector<const HitCurvePoint*> sorted;
  for (const auto& p : points) sorted.push_back(&p);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return a->capacity_tokens < b->capacity_tokens;
  });
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i]->replay.hit_tokens < sorted[i - 1]->replay.hit_tokens) return false;
  return true;
}

HitCurve compute_hit_curve(const ScenarioSpec& spec, const std::vector<int64_t>& capacities) {
  HitCurve curve;
  curve.scenario = spec.name;
  const BlockPoolContract* pool = spec.policy().block_pool();
  if (pool == nullptr)
    throw std::invalid_argument(fmt::format(
        "policy '{}' has no block cache to replay (hitcurve takes a policy with a block pool)",
        spec.policy().display_name()));
  curve.policy = std::string(spec.policy().name());
  curve.workload = spec.workload->kind;
  curve.block_size = pool->block_size();
  curve.seed = spec.seed;
  curve.cache_meaning = pool->reuses_chunks()
                            ? "the chunk pool (the main pool keeps the scenario's size)"
                            : "the whole block pool";
  const PoolSizing base = pool->size(spec.model, spec.pool_input());
  for (const int64_t capacity : capacities) {
    if (capacity < 1)
      throw std::invalid_argument(fmt::format("capacity {} tokens: must be >= 1", capacity));
    HitCurvePoint point;
    point.capacity_tokens = capacity;
    point.cache_blocks = capacity / pool->block_size();
    std::unique_ptr<KvCachePolicy> policy =
        pool->make(spec, sizing_for(*pool, base, point.cache_blocks));
    auto source = make_request_source(*spec.workload, spec.seed, spec.model.vocab_size);
    point.replay = replay_through_cache(*policy, *source);
    if (const auto* chunk = dynamic_cast<const ChunkLruPolicy*>(policy.get())) {
      // chunk_lru's admission covers every segment before the question,
      // found or computed at a virtual position (seed 003): what the cache
      // served is the chunk pool's hits, and its evictions are chunks.
      point.replay.hit_tokens = chunk->stats().hit_tokens;
      point.replay.evictions = chunk->chunk_pool().evictions();
    }
    curve.points.push_back(point);
  }
  return curve;
}

std::string hit_curve_csv(const HitCurve& curve) {
  // The definition travels with the numbers: one comment line first (pandas:
  // read_csv(..., comment='#')).
  std::string csv =
      "# hit_rate = hit_tokens / prompt_tokens = tokens served from cache / prompt tokens "
      "(cache-only replay in arrival order; see hitcurve.json hit_definition)\n"
      "capacity_tokens,cache_blocks,block_size,requests,prompt_tokens,hit_tokens,hit_rate,"
      "oversized_requests,evictions\n";
  for (const auto& p : curve.points) {
    const auto& r = p.replay;
    csv += fmt::format("{},{},{},{},{},{},{},{},{}\n", p.capacity_tokens, p.cache_blocks,
                       curve.block_size, r.requests, r.prompt_tokens, r.hit_tokens,
                       fraction_text(r.hit_rate()), r.oversized_requests, r.evictions);
  }
  return csv;
}

nlohmann::ordered_json hit_curve_json(const HitCurve& curve) {
  nlohmann::ordered_json j;
  j["scenario"] = curve.scenario;
  j["seed"] = curve.seed;
  j["policy"] = curve.policy;
  j["workload"] = curve.workload;
  j["block_size"] = curve.block_size;
  j["capacity_sizes"] = curve.cache_meaning;
  j["hit_definition"] = kHitDefinition;
  j["monotone"] = curve.monotone();
  j["points"] = nlohmann::ordered_json::array();
  for (const auto& p : curve.points) {
    const auto& r = p.replay;
    j["points"].push_back({{"capacity_tokens", p.capacity_tokens},
                           {"cache_blocks", p.cache_blocks},
                           {"requests", r.requests},
                           {"prompt_tokens", r.prompt_tokens},
                           {"hit_tokens", r.hit_tokens},
                           {"hit_rate", r.hit_rate()},
                           {"oversized_requests", r.oversized_requests},
                           {"evictions", r.evictions}});
  }
  return j;
}

namespace {

std::vector<std::vector<std::string>> table_rows(const HitCurve& curve) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : curve.points) {
    const auto& r = p.replay;
    rows.push_back({std::to_string(p.capacity_tokens), std::to_string(p.cache_blocks),
                    std::to_string(r.prompt_tokens), std::to_string(r.hit_tokens),
                    fmt::format("{:.4f}", r.hit_rate()), std::to_string(r.oversized_requests),
                    std::to_string(r.evictions)});
  }
  return rows;
}

const std::vector<std::string> kTableHeader = {"capacity (tokens)", "blocks",   "prompt tokens",
                                               "hit tokens",        "hit rate", "prompts > pool",
                                               "evictions"};

std::string intro(const HitCurve& curve) {
  return fmt::format(
      "Scenario `{}` (seed {}), policy `{}` with {}-token blocks, workload `{}`. The capacity "
      "sizes {}. Hit rate never falls as capacity grows: {}.",
      curve.scenario, curve.seed, curve.policy, curve.block_size, curve.workload,
      curve.cache_meaning, curve.monotone() ? "yes" : "NO");
}

}  // namespace

std::string hit_curve_markdown(const HitCurve& curve) {
  return "# Hit rate vs cache capacity\n\n" + intro(curve) + "\n\nDefinition: " + kHitDefinition +
         ".\n\n" + markdown_table(kTableHeader, table_rows(curve));
}

std::string hit_curve_html(const HitCurve& curve) {
  std::string body = "<h1>Hit rate vs cache capacity</h1>\n<p>" + html_escape(intro(curve)) +
                     "</p>\n<p>Definition: " + html_escape(kHitDefinition) + ".</p>\n";
  std::vector<const HitCurvePoint*> sorted;
  for (const auto& p : curve.points) sorted.push_back(&p);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return a->capacity_tokens < b->capacity_tokens;
  });
  ChartSpec chart;
  chart.title = "Prefix-cache hit rate vs capacity";
  chart.x_label = "capacity, log10(tokens)";
  chart.y_label = "hit rate";
  ChartSeries series;
  series.label = curve.policy;
  for (const auto* p : sorted) {
    series.x.push_back(std::log10(static_cast<double>(p->capacity_tokens)));
    series.y.push_back(p->replay.hit_rate());
  }
  chart.series.push_back(std::move(series));
  const auto gnuplot = find_gnuplot();
  const auto svg = gnuplot ? render_chart_svg(chart, *gnuplot) : std::nullopt;
  if (svg) {
    body += html_figure(*svg,
                        "hit rate (tokens served from cache / prompt tokens) against "
                        "log10 of the cache capacity in tokens");
  } else {
    body += html_charts_missing_note();
  }
  body += html_table(kTableHeader, table_rows(curve));
  return html_document("kvsim hit curve: " + curve.scenario, body);
}

void write_hit_curve(const HitCurve& curve, const std::string& out, bool force) {
  OutputDir dir(out, force);
  write_file_atomically(dir.file("hitcurve.csv"), hit_curve_csv(curve));
  write_file_atomically(dir.file("hitcurve.json"), hit_curve_json(curve).dump(2) + "\n");
  write_file_atomically(dir.file("hitcurve.md"), hit_curve_markdown(curve));
  write_file_atomically(dir.file("hitcurve.html"), hit_curve_html(curve));
  dir.commit();
}

}  // namespace kvsim
