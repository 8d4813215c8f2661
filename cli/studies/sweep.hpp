#pragma once
// `kvsim sweep SWEEP.yaml [--jobs N] [--out DIR] [--resume]` (SPEC 3, 11):
// every variant of a sweep file, on N local worker processes or on the ranks
// of `mpirun -np K` (static sharding by variant index, rank 0 gathers).
//
// DIR holds variants/NNNN/ (one run folder each, NNNN.log its stderr), the
// journal(s) of finished variants, and sweep.csv / sweep.json / sweep.md /
// sweep.html listing variants in variant order, so they are byte-identical
// whatever the number of jobs or ranks and whether the sweep was resumed.
#include <optional>
#include <string>
#include <vector>

#include "cli/studies/sweep_mpi.hpp"
#include "cli/studies/sweep_runner.hpp"
#include "cli/studies/sweep_spec.hpp"

namespace kvsim {

struct SweepOptions {
  std::string out;           // default out/sweep-<name>
  int jobs = 0;              // 0: the machine's cores (split between local ranks)
  bool resume = false;       // keep the journal's finished variants
  bool force = false;        // write into --out even if kvsim did not write it
  bool progress = false;     // progress line on stderr
  bool quiet = false;        // no announcement of a large grid
  std::string kvsim_binary;  // the executable spawned per variant
};

struct SweepResult {
  std::string folder;
  std::vector<SweepVariant> variants;
  std::vector<VariantOutcome> outcomes;                // in variant order (rank 0 only under MPI)
  size_t resumed = 0;                                  // taken from the journal
  size_t ran = 0;                                      // run by this process
  size_t failed_environment = 0, failed_internal = 0;  // outcomes failed, by reason
};

// A digest of every input file read while loading the sweep's variants (the
// base scenario and the device, model and data files it names), not the
// sweep file itself: a journal line written under another digest was a run
// of other inputs, and --resume runs that variant again.
std::string sweep_inputs_digest(const SweepSpec& spec);

// Prints "kvsim sweep NAME: N variants ..." on stderr when the grid is large
// (kAnnouncedSweepVariants), before its variants are loaded.
void announce_large_grid(const SweepSpec& spec, const char* command, bool quiet);

// Loads the base with the file's `set:` and each axis value alone: a base
// or `set:` that does not load, or an axis none of whose values loads (an
// unknown key, a misspelt value) is an error of the sweep file, reported at
// its FILE:LINE:COL. A value that fails only in some combinations (a model
// that does not fit at tensor 1) is a variant's status instead.
void check_sweep_loads(const SweepSpec& spec);

// Whether the variant loads: nullopt with `devices` set, or a "rejected"
// outcome carrying the load error (exit 2 at load: does not fit, ...).
std::optional<VariantOutcome> preload_variant(const std::string& base, size_t index,
                                              const std::string& label,
                                              const std::vector<std::string>& sets,
                                              int64_t* devices);

// "0007": the folder name of a variant under DIR/variants/.
std::string variant_folder_name(size_t index);

SweepResult run_sweep(const SweepSpec& spec, const SweepOptions& options, const MpiWorld& world);

}  // namespace kvsim
