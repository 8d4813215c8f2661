#include "cli/studies/sweep.hpp"
#include "reports/output_dir.hpp"

#include <fmt/format.h>

#include <deque>
#include <filesystem>

#include "cli/studies/sweep_report.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// Hands out this rank's pending variants in index order.
class SweepSource : public TaskSource {
 public:
  explicit SweepSource(std::deque<VariantTask> tasks) : tasks_(std::move(tasks)) {}
  std::optional<VariantTask> next() override {
    if (tasks_.empty()) return std::nullopt;
    VariantTask t = std::move(tasks_.front());
    tasks_.pop_front();
    return t;
  }
  void done(const VariantOutcome& o) override { outcomes.push_back(o); }
  std::vector<VariantOutcome> outcomes;

 private:
  std::deque<VariantTask> tasks_;
};

int jobs_for(const SweepOptions& o, const MpiWorld& world) {
  if (o.jobs > 0) return o.jobs;
  return std::max(1, default_jobs() / std::max(1, world.local_size));
}

}  // namespace

std::string variant_folder_name(size_t index) {
  return fmt::format("{:04}", index);
}

std::optional<VariantOutcome> preload_variant(const std::string& base, size_t index,
                                              const std::string& label,
                                              const std::vector<std::string>& sets,
                                              int64_t* devices) {
  try {
    const ScenarioSpec s = load_scenario(base, sets);
    *devices = s.tp;
    return std::nullopt;
  } catch (const config::ConfigError& e) {
    VariantOutcome o;
    o.index = index;
    o.label = label;
    o.sets = sets;
    o.status = "rejected";
    o.exit_code = 2;
    const auto& d = e.diagnostics();
    o.message = d.empty() ? e.what() : d.front().key_path + ": " + d.front().problem;
    return o;
  }
}

void check_sweep_loads(const SweepSpec& spec) {
  try {
    load_scenario(spec.base, spec.sets);
  } catch (const config::ConfigError& e) {
    throw relocate_to_sweep(spec, e);
  }
  for (const auto& axis : spec.grid) {
    std::optional<config::ConfigError> first;
    bool any = false;
    for (const auto& v : axis.values) {
      auto sets = spec.sets;
      sets.push_back(axis.key + "=" + v);
      try {
        load_scenario(spec.base, sets);
        any = true;
        break;
      } catch (const config::ConfigError& e) {
        if (!first) first = relocate_to_sweep(spec, e);
      }
    }
    if (!any && first) throw *first;
  }
}

SweepResult run_sweep(const SweepSpec& spec, const SweepOptions& options, const MpiWorld& world) {
  SweepResult result;
  result.folder = options.out.empty() ? "out/sweep-" + safe_path_component(spec.name) : options.out;
  result.variants = expand_sweep(spec);
  check_sweep_loads(spec);
  const std::string variants_dir = result.folder + "/variants";
  if (world.rank == 0) {
    // A folder kvsim did not write is refused before anything is removed.
    claim_output_folder(result.folder, options.force);
    if (!options.resume) {
      // Only what a sweep writes is removed: never the folder itself.
      remove_journals(result.folder);
      fs::remove_all(variants_dir);
    }
    fs::create_directories(variants_dir);
  }
  mpi_barrier(world);

  std::map<size_t, VariantOutcome> done;
  if (options.resume) {
    for (auto& [index, o] : read_journals(result.folder)) {
      // A journal line counts only for the same variant (the file may have
      // changed since): same index, same assignments.
      if (index < result.variants.size() && o.sets == result.variants[index].sets)
        done.emplace(index, std::move(o));
    }
  }
  result.resumed = done.size();
  const SweepJournal journal(result.folder + (world.active
                                                  ? fmt::format("/journal-{:04}.jsonl", world.rank)
                                                  : std::string("/journal.jsonl")));
  std::deque<VariantTask> tasks;
  std::vector<VariantOutcome> mine;
  for (const auto& v : result.variants) {
    if (done.count(v.index) || static_cast<int>(v.index % world.size) != world.rank) continue;
    int64_t devices = 0;
    if (auto rejected = preload_variant(spec.base, v.index, v.label, v.sets, &devices)) {
      journal.append(*rejected);
      mine.push_back(std::move(*rejected));
      continue;
    }
    tasks.push_back(
        {v.index, v.label, v.sets, variants_dir + "/" + variant_folder_name(v.index), devices});
  }
  SweepProgress progress(result.variants.size(), done.size() + mine.size(),
                         options.progress && world.rank == 0);
  SweepSource source(std::move(tasks));
  PoolOptions pool;
  pool.kvsim_binary = options.kvsim_binary;
  pool.base = spec.base;
  pool.jobs = jobs_for(options, world);
  pool.on_outcome = [&](const VariantOutcome& o) {
    journal.append(o);
    progress.tick(o);
  };
  run_variant_pool(source, pool);
  result.ran = source.outcomes.size();
  for (auto& o : source.outcomes) mine.push_back(std::move(o));

  // Rank 0 gathers every rank's outcomes (their journals may sit on another
  // host's disk) and writes the files.
  Json mine_json = Json::array();
  for (const auto& o : mine) mine_json.push_back(outcome_to_json(o));
  for (const std::string& text : mpi_gather(world, mine_json.dump())) {
    for (const auto& j : Json::parse(text)) {
      VariantOutcome o = outcome_from_json(j);
      done[o.index] = std::move(o);
    }
  }
  if (world.rank != 0) return result;
  for (const auto& v : result.variants) {
    if (!done.count(v.index))
      throw std::logic_error(fmt::format("sweep: variant {} has no outcome", v.index));
    result.outcomes.push_back(done.at(v.index));
  }
  write_sweep_files(spec, result);
  return result;
}

}  // namespace kvsim
