#include "cli/studies/sweep_mpi.hpp"

#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "reports/input_error.hpp"

#if KVSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace kvsim {
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

}  // namespace

bool launched_by_mpi() {
  // Open MPI's mpirun, PMI launchers (MPICH's hydra, srun --mpi=pmi2), and
  // a Slurm job step (srun --mpi=pmix sets no PMI size before MPI_Init).
  for (const char* size : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"})
    if (env_int(size, 1) > 1) return true;
  return false;
}

#if KVSIM_HAVE_MPI

MpiWorld mpi_start() {
  MpiWorld w;
  if (!launched_by_mpi()) return w;
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &w.local_size);
  MPI_Comm_free(&local);
  w.active = true;
  return w;
}

void mpi_barrier(const MpiWorld& w) {
  if (w.active) MPI_Barrier(MPI_COMM_WORLD);
}

std::vector<std::string> mpi_gather(const MpiWorld& w, const std::string& text) {
  if (!w.active) return {text};
  int n = static_cast<int>(text.size());
  std::vector<int> sizes(w.rank == 0 ? w.size : 0), offsets(sizes.size());
  MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (w.rank == 0) {
    int total = 0;
    for (int r = 0; r < w.size; ++r) {
      offsets[r] = total;
      total += sizes[r];
    }
    all.resize(static_cast<size_t>(total));
  }
  MPI_Gatherv(text.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; w.rank == 0 && r < w.size; ++r) out.push_back(all.substr(offsets[r], sizes[r]));
  return out;
}

void mpi_stop(const MpiWorld& w) {
  if (w.active) MPI_Finalize();
}

#else

MpiWorld mpi_start() {
  if (launched_by_mpi())
    throw_input_error(
        "mpirun", "mpirun", "this kvsim was built without MPI, so its ranks cannot share a sweep",
        "install an MPI (openmpi-bin libopenmpi-dev) and rebuild with -DKVSIM_MPI=ON, "
        "or run `kvsim sweep --jobs N` on one machine");
  return {};
}
void mpi_barrier(const MpiWorld&) {}
std::vector<std::string> mpi_gather(const MpiWorld&, const std::string& text) {
  return {text};
}
void mpi_stop(const MpiWorld&) {}

#endif

MpiSession::~MpiSession() {
  // Leaving by an exception while other ranks may wait in a collective:
  // no MPI_Finalize (it could wait for them too). main prints the error and
  // exits non-zero, and the launcher then stops every rank.
  if (std::uncaught_exceptions() > 0 && world_.size > 1) return;
  mpi_stop(world_);
}

}  // namespace kvsim
