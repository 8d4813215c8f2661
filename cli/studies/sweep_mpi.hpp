#pragma once
// MPI for `mpirun -np K kvsim sweep ...` (SPEC 11 "Studies"). Built when
// CMake finds MPI (option KVSIM_MPI); without it the functions describe one
// rank and a launch under mpirun is refused rather than run K times over.
// MPI is initialised only when the process was started by a launcher
// (mpirun, srun), never for a plain `kvsim sweep`.
#include <string>
#include <vector>

namespace kvsim {

struct MpiWorld {
  int rank = 0, size = 1;
  int local_size = 1;  // ranks on this host (to split its cores)
  bool active = false;
};

// Whether a launcher's environment names more than one rank.
bool launched_by_mpi();

// Initialises MPI when launched_by_mpi(); throws config::ConfigError (exit
// 2) when launched so but built without MPI.
MpiWorld mpi_start();
void mpi_barrier(const MpiWorld& world);
// Rank 0 receives every rank's text in rank order; others receive nothing.
std::vector<std::string> mpi_gather(const MpiWorld& world, const std::string& text);
void mpi_stop(const MpiWorld& world);

// Stops (or aborts, on an exception) MPI when leaving the command.
class MpiSession {
 public:
  MpiSession() : world_(mpi_start()) {}
  ~MpiSession();
  const MpiWorld& world() const { return world_; }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  MpiWorld world_;
};

}  // namespace kvsim
