// kvsim search SEARCH.yaml [--jobs N] [--out DIR] [--quiet]
// The cheapest configuration meeting an SLO, with the reasoning (SPEC 11).
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/studies/search.hpp"
#include "cli/studies/worker_executable.hpp"
#include "reports/input_error.hpp"

namespace kvsim::cli {
namespace {

struct SearchCommandOptions {
  bool force = false;
  std::string file, out;
  int jobs = 0;
  bool quiet = false;
};

int run_search_command(const SearchCommandOptions& o) {
  const SweepSpec spec = load_sweep(o.file, /*allow_search=*/true);
  if (!spec.search) {
    throw_input_error(o.file, "search", "a search file needs a `search:` section",
                      "search: {rates: [..], slo: {ttft_p99_ms: ..}}; or run `kvsim sweep` on it");
  }
  SweepOptions options;
  options.out = o.out;
  options.jobs = o.jobs;
  options.force = o.force;
  options.progress = !o.quiet && isatty(STDERR_FILENO);
  options.quiet = o.quiet;
  options.kvsim_binary = worker_executable();
  const SearchResult r = run_search(spec, options);
  const int exit_code = r.failed_environment > 0 ? kExitBadInput
                        : r.failed_internal > 0  ? kExitInternal
                                                 : kExitOk;
  if (exit_code != kExitOk)
    std::cerr << fmt::format(
        "kvsim: error: search {}: {} probes failed ({} environment, {} internal; search.md "
        "says why): no configuration is chosen or ruled out\n",
        spec.name, r.failed_environment + r.failed_internal, r.failed_environment,
        r.failed_internal);
  if (o.quiet) return exit_code;
  for (size_t c = 0; c < r.candidates.size(); ++c)
    std::cout << fmt::format("{:>3} {}: {}\n", c, r.candidates[c].variant.label,
                             r.candidates[c].reason);
  for (const auto& p : r.per_device)
    std::cout << fmt::format("fewest on {}: {}\n", p.device, per_device_text(r, p));
  if (r.chosen)
    std::cout << "chosen: " << r.candidates[*r.chosen].variant.label << "\n";
  else if (r.undetermined())
    std::cout << "chosen: undetermined (probes failed; see above)\n";
  else
    std::cout << "chosen: none (no configuration meets the SLO)\n";
  std::cout << "report: " << r.folder
            << "/ (search.md, search.html, search.json, search.csv, probes/)\n";
  return exit_code;
}

}  // namespace

Command add_search_command(CLI::App& app) {
  auto o = std::make_shared<SearchCommandOptions>();
  auto* cmd = app.add_subcommand("search", "find the cheapest configuration meeting an SLO");
  cmd->add_option("search", o->file, "search YAML file (configs/sweeps/, with `search:`)")
      ->required();
  cmd->add_option("--jobs,-j", o->jobs, "worker processes (default: the machine's cores)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--out", o->out, "output folder (default out/search-<name>)");
  cmd->add_flag("--quiet", o->quiet, "print nothing but errors");
  cmd->add_flag("--force", o->force, "write into --out even if kvsim did not write it");
  return {cmd, [o] { return run_search_command(*o); }};
}

}  // namespace kvsim::cli
