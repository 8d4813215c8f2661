#include "cli/studies/capacity_chunk_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "reports/html_page.hpp"

namespace kvsim {

std::string capacity_chunk_pool_markdown(const CapacityQuery& q,
                                         const std::vector<CapacityRow>& rows) {
  // Rows of a policy with a second pool (seed 003's chunk pool) only.
  if (std::none_of(rows.begin(), rows.end(),
                   [](const CapacityRow& r) { return r.chunk_pool_bytes > 0; }))
    return "";
  std::vector<std::vector<std::string>> cells;
  const CapacityRow* last = nullptr;
  for (const auto& r : rows) {
    // The split does not depend on the context: one line per pool.
    if (last && last->device == r.device && last->model == r.model &&
        last->kv_dtype == r.kv_dtype && last->tp == r.tp)
      continue;
    last = &r;
    const auto chunk_budget =
        static_cast<Bytes>(std::floor(static_cast<double>(r.device_bytes) * q.chunk_pool_fraction));
    const Bytes reserve = r.device_bytes - r.budget_bytes - chunk_budget;
    cells.push_back(
        {r.device, r.model, r.kv_dtype, std::to_string(r.tp), format_bytes(r.device_bytes),
         fmt::format("{} ({:g})", format_bytes(r.budget_bytes), q.main_pool_fraction),
         format_bytes(r.main_pool_bytes), std::to_string(r.capacity_tokens),
         fmt::format("{} ({:g})", format_bytes(r.chunk_pool_bytes), q.chunk_pool_fraction),
         std::to_string(r.chunk_pool_blocks), std::to_string(r.chunk_pool_tokens),
         format_bytes(reserve)});
  }
  return "\n## chunk_lru dual pool (seed 003)\n\nMain pool = weights + activations + main KV "
         "(main_pool_fraction of memory); chunk pool = cached chunks only "
         "(chunk_pool_fraction); the rest stays in reserve. One block holds block_size tokens "
         "of every layer's K and V.\n\n" +
         markdown_table({"device", "model", "kv", "tp", "memory", "main pool", "main KV",
                         "main KV tokens", "chunk pool", "chunk blocks", "chunk tokens", "reserve"},
                        cells);
}

}  // namespace kvsim
