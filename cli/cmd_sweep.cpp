// kvsim sweep SWEEP.yaml [--jobs N] [--out DIR] [--resume] [--quiet]
// Runs every variant of a sweep file on N local worker processes, or on the
// ranks of `mpirun -np K kvsim sweep ...` (SPEC 3, 11 "Studies").
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "cli/studies/sweep.hpp"
#include "cli/studies/worker_executable.hpp"

namespace kvsim::cli {
namespace {

struct SweepCommandOptions {
  bool force = false;
  std::string file, out;
  int jobs = 0;
  bool resume = false, quiet = false;
};

int run_sweep_command(const SweepCommandOptions& o) {
  MpiSession mpi;
  const SweepSpec spec = load_sweep(o.file, /*allow_search=*/false);
  SweepOptions options;
  options.out = o.out;
  options.jobs = o.jobs;
  options.force = o.force;
  options.resume = o.resume;
  options.progress = !o.quiet && isatty(STDERR_FILENO);
  options.quiet = o.quiet;
  options.kvsim_binary = worker_executable();
  const SweepResult r = run_sweep(spec, options, mpi.world());
  if (mpi.world().rank != 0) return kExitOk;
  // A variant the environment or kvsim failed is no verdict on its
  // configuration: the sweep is incomplete, which is not success.
  const int exit_code = r.failed_environment > 0 ? kExitBadInput
                        : r.failed_internal > 0  ? kExitInternal
                                                 : kExitOk;
  if (exit_code != kExitOk) {
    std::cerr << fmt::format(
        "kvsim: error: sweep {}: {} variants failed ({} environment, {} internal; sweep.csv "
        "says why): `kvsim sweep {} --resume` runs them again\n",
        spec.name, r.failed_environment + r.failed_internal, r.failed_environment,
        r.failed_internal, o.file);
  }
  if (o.quiet) return exit_code;
  std::map<std::string, size_t> counts;
  for (const auto& out : r.outcomes) ++counts[out.status];
  std::cout << fmt::format("sweep {}: {} variants", spec.name, r.variants.size());
  for (const auto& [status, n] : counts) std::cout << fmt::format(", {} {}", n, status);
  if (r.resumed > 0) std::cout << fmt::format(" ({} taken from the journal)", r.resumed);
  std::cout << "\nreport: " << r.folder
            << "/ (sweep.csv, sweep.json, sweep.md, sweep.html, variants/NNNN)\n";
  return exit_code;
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepCommandOptions>();
  auto* cmd = app.add_subcommand("sweep", "run every variant of a sweep file, in parallel");
  cmd->add_option("sweep", o->file, "sweep YAML file (configs/sweeps/)")->required();
  cmd->add_option("--jobs,-j", o->jobs, "worker processes (default: the machine's cores)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--out", o->out, "output folder (default out/sweep-<name>)");
  cmd->add_flag("--resume", o->resume, "keep the variants the journal says finished");
  cmd->add_flag("--quiet", o->quiet, "print nothing but errors");
  cmd->add_flag("--force", o->force, "write into --out even if kvsim did not write it");
  return {cmd, [o] { return run_sweep_command(*o); }};
}

}  // namespace kvsim::cli
