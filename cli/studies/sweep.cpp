#include "cli/studies/sweep.hpp"
#include "reports/output_dir.hpp"

#include <fmt/format.h>

#include <xxhash.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/input_file.hpp"
#include "cli/studies/failure_class.hpp"
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
    o.reason = failure_class_name(FailureClass::invalid_configuration);
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

std::string sweep_inputs_digest(const SweepSpec& spec) {
  std::error_code ec;
  const std::string sweep_file = fs::weakly_canonical(fs::absolute(spec.file, ec), ec).string();
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const std::string& input : input_files_read()) {
    if (input == sweep_file) continue;
    XXH3_64bits_update(state, input.data(), input.size() + 1);
    // Whole contents up to 64 MiB; a larger file (a long trace) by its size
    // and modification time, so a resume does not read gigabytes first.
    const auto size = fs::file_size(input, ec);
    if (!ec && size <= (uint64_t{64} << 20)) {
      std::ifstream in(input, std::ios::binary);
      char buffer[1 << 16];
      while (in.read(buffer, sizeof buffer) || in.gcount() > 0)
        XXH3_64bits_update(state, buffer, static_cast<size_t>(in.gcount()));
    } else {
      const auto stamp = fs::last_write_time(input, ec).time_since_epoch().count();
      const uint64_t parts[2] = {static_cast<uint64_t>(size), static_cast<uint64_t>(stamp)};
      XXH3_64bits_update(state, parts, sizeof parts);
    }
  }
  const uint64_t digest = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return fmt::format("{:016x}", digest);
}

void announce_large_grid(const SweepSpec& spec, const char* command, bool quiet) {
  const size_t n = sweep_variant_count(spec);
  if (quiet || n < kAnnouncedSweepVariants) return;
  std::cerr << fmt::format(
      "kvsim {} {}: {} variants; each is loaded once before any runs (this takes a while)\n",
      command, spec.name, n);
}

SweepResult run_sweep(const SweepSpec& spec, const SweepOptions& options, const MpiWorld& world) {
  SweepResult result;
  result.folder = options.out.empty() ? "out/sweep-" + safe_path_component(spec.name) : options.out;
  announce_large_grid(spec, "sweep", options.quiet || world.rank != 0);
  result.variants = expand_sweep(spec);
  check_sweep_loads(spec);
  // After check_sweep_loads, which loads the base with every axis value
  // alone on every rank alike: the same files, the same digest everywhere.
  const std::string digest = sweep_inputs_digest(spec);
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
  std::vector<VariantOutcome> mine;
  std::vector<std::pair<const SweepVariant*, int64_t>> runnable;
  for (const auto& v : result.variants) {
    if (static_cast<int>(v.index % world.size) != world.rank) continue;
    int64_t devices = 0;
    if (auto rejected = preload_variant(spec.base, v.index, v.label, v.sets, &devices)) {
      mine.push_back(std::move(*rejected));
      continue;
    }
    runnable.emplace_back(&v, devices);
  }
  for (auto& o : mine) o.inputs_digest = digest;
  if (options.resume) {
    for (auto& [index, o] : read_journals(result.folder)) {
      // A journal line counts only for the same variant (the file may have
      // changed since): same index, same assignments, the same input files
      // (an edited base is another scenario), and a verdict that stands (a
      // variant the environment failed runs again).
      if (index < result.variants.size() && o.sets == result.variants[index].sets &&
          o.inputs_digest == digest && outcome_is_final(o))
        done.emplace(index, std::move(o));
    }
  }
  result.resumed = done.size();
  const SweepJournal journal(result.folder + (world.active
                                                  ? fmt::format("/journal-{:04}.jsonl", world.rank)
                                                  : std::string("/journal.jsonl")));
  std::erase_if(mine, [&](const VariantOutcome& o) { return done.count(o.index) > 0; });
  for (const auto& o : mine) journal.append(o);
  std::deque<VariantTask> tasks;
  for (const auto& [v, devices] : runnable) {
    if (done.count(v->index)) continue;
    tasks.push_back(
        {v->index, v->label, v->sets, variants_dir + "/" + variant_folder_name(v->index), devices});
  }
  SweepProgress progress(result.variants.size(), done.size() + mine.size(),
                         options.progress && world.rank == 0);
  const size_t task_count = tasks.size();
  SweepSource source(std::move(tasks));
  PoolOptions pool;
  pool.kvsim_binary = options.kvsim_binary;
  pool.base = spec.base;
  pool.jobs = jobs_for(options, world);
  pool.on_outcome = [&](const VariantOutcome& o) {
    VariantOutcome recorded = o;
    recorded.inputs_digest = digest;
    journal.append(recorded);
    progress.tick(o);
  };
  run_variant_pool(source, pool, task_count);
  result.ran = source.outcomes.size();
  for (auto& o : source.outcomes) {
    o.inputs_digest = digest;
    mine.push_back(std::move(o));
  }

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
    const VariantOutcome& o = result.outcomes.back();
    if (o.status == "failed") {
      if (o.reason == failure_class_name(FailureClass::internal))
        ++result.failed_internal;
      else
        ++result.failed_environment;
    }
  }
  write_sweep_files(spec, result);
  return result;
}

}  // namespace kvsim
