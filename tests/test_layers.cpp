// The floors of the house (SPEC 1, DESIGN "the flow of one run"): every
// project include points down or sideways within its own folder, never up,
// and no header includes itself back through a chain. Read from the source
// tree, so a new file that breaks a layer fails here, not in a review.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;

// Top-level folder -> floor. A file may include its own folder and any
// folder on a lower floor.
const std::map<std::string, int> kFloors = {
    {"base", 0},                       // units, diagnostics, the strict reader, params
    {"kernels", 1}, {"models", 1},     // numerics on real buffers; model shapes and step ops
    {"devices", 2}, {"workloads", 2},  // timing; request generators and trace readers
    {"sim", 3},                        // clock, engines, cache policies, metrics, scenario
    {"reports", 4},                    // writers
    {"cli", 5},                        // commands, studies, the stories260K generator
    {"python", 6},                     // the Python module: an interface over the CLI's studies
};

struct SourceFile {
  std::string path;                   // relative to the source tree
  std::vector<std::string> includes;  // project includes that exist
};

std::vector<SourceFile> read_tree() {
  const fs::path root(KVSIM_SOURCE_DIR);
  const std::regex include_re(R"re(^\s*#\s*include\s+"([^"]+)")re");
  std::vector<SourceFile> files;
  for (const auto& [folder, floor] : kFloors) {
    (void)floor;
    for (const auto& e : fs::recursive_directory_iterator(root / folder)) {
      const auto ext = e.path().extension();
      if (ext != ".cpp" && ext != ".hpp") continue;
      SourceFile f;
      f.path = fs::relative(e.path(), root).generic_string();
      std::ifstream in(e.path());
      std::string line;
      std::smatch m;
      while (std::getline(in, line)) {
        if (std::regex_search(line, m, include_re) && fs::exists(root / m[1].str()))
          f.includes.push_back(m[1].str());
      }
      files.push_back(std::move(f));
    }
  }
  return files;
}

std::string top_folder(const std::string& path) {
  return path.substr(0, path.find('/'));
}

TEST(Layers, NoIncludeRunsUpAFloor) {
  std::vector<std::string> up;
  for (const SourceFile& f : read_tree()) {
    const std::string from = top_folder(f.path);
    for (const std::string& inc : f.includes) {
      const std::string to = top_folder(inc);
      if (to == from || kFloors.count(to) == 0) continue;
      if (kFloors.at(to) >= kFloors.at(from)) up.push_back(f.path + " -> " + inc);
    }
  }
  std::string list;
  for (const auto& u : up) list += "\n  " + u;
  EXPECT_TRUE(up.empty()) << "includes that run up or sideways between floors:" << list;
}

TEST(Layers, KernelsIncludeOnlyKernels) {
  for (const SourceFile& f : read_tree()) {
    if (top_folder(f.path) != "kernels") continue;
    for (const std::string& inc : f.includes)
      EXPECT_TRUE(top_folder(inc) == "kernels" || top_folder(inc) == "base")
          << f.path << " includes " << inc;
  }
}

TEST(Layers, NoIncludeCycles) {
  std::map<std::string, std::vector<std::string>> graph;
  for (const SourceFile& f : read_tree()) graph[f.path] = f.includes;
  std::map<std::string, int> state;  // 0 new, 1 on the stack, 2 done
  std::vector<std::string> stack, cycle;
  std::function<void(const std::string&)> visit = [&](const std::string& u) {
    state[u] = 1;
    stack.push_back(u);
    for (const std::string& v : graph[u]) {
      if (!cycle.empty()) break;
      if (state[v] == 1) {
        cycle.assign(std::find(stack.begin(), stack.end(), v), stack.end());
        cycle.push_back(v);
      } else if (state[v] == 0) {
        visit(v);
      }
    }
    stack.pop_back();
    state[u] = 2;
  };
  for (const auto& [file, includes] : graph) {
    (void)includes;
    if (state[file] == 0 && cycle.empty()) visit(file);
  }
  std::string text;
  for (const auto& c : cycle) text += (text.empty() ? "" : " -> ") + c;
  EXPECT_TRUE(cycle.empty()) << "include cycle: " << text;
}

// The sub-floors inside sim/ (SPEC 12, DESIGN "floors inside sim/"): the
// clock and metrics at the bottom, the cache mechanisms, the scenario tree's
// typed specs, then the policies' specs and the engines' shared parts, the
// engines, their numerics observers, clusters, and the assembly on top that
// reads the tree and builds engines from it. Rooms on one floor do not
// include each other; every file of sim/ is in a room.
const std::map<std::string, int> kSimFloors = {
    {"sim/core", 0},                         // clock, event queues, histograms, metrics parts
    {"sim/cache", 1},                        // block pools, Genie buffers, cells, chunks, tiers
    {"sim/spec", 2},                         // the tree's node types: instance, kv_cache, contracts
    {"sim/policies", 3}, {"sim/engine", 3},  // each policy's spec; what engines share
    {"sim/serve", 4},    {"sim/genie", 4},   // the engines
    {"sim/numerics", 5},                     // observers of the engines' steps and passes
    {"sim/cluster", 6},                      // instances behind routers
    {"sim/scenario", 7},                     // the assembly: reader, registries of engines, runner
};

std::string sim_room(const std::string& path) {
  const size_t second = path.find('/', 4);  // after "sim/"
  return second == std::string::npos ? path : path.substr(0, second);
}

TEST(Layers, EveryFileOfSimIsInARoomOfItsFloors) {
  std::vector<std::string> loose;
  for (const SourceFile& f : read_tree())
    if (top_folder(f.path) == "sim" && kSimFloors.count(sim_room(f.path)) == 0)
      loose.push_back(f.path);
  std::string list;
  for (const auto& l : loose) list += "\n  " + l;
  EXPECT_TRUE(loose.empty()) << "files of sim/ outside its rooms:" << list;
}

TEST(Layers, NoIncludeRunsUpOrSidewaysBetweenTheRoomsOfSim) {
  std::vector<std::string> up;
  std::set<std::pair<std::string, std::string>> arrows;
  for (const SourceFile& f : read_tree()) {
    if (top_folder(f.path) != "sim") continue;
    const std::string from = sim_room(f.path);
    for (const std::string& inc : f.includes) {
      if (top_folder(inc) != "sim") continue;
      const std::string to = sim_room(inc);
      if (to == from) continue;
      arrows.insert({from, to});
      const auto a = kSimFloors.find(from), b = kSimFloors.find(to);
      if (a == kSimFloors.end() || b == kSimFloors.end() || b->second >= a->second)
        up.push_back(f.path + " -> " + inc);
    }
  }
  std::string list;
  for (const auto& u : up) list += "\n  " + u;
  EXPECT_TRUE(up.empty()) << "includes that run up or sideways inside sim/:" << list;
  // The floors are used, not only declared: the assembly reaches every room.
  EXPECT_TRUE(arrows.count({"sim/scenario", "sim/serve"}) > 0);
  EXPECT_TRUE(arrows.count({"sim/spec", "sim/cache"}) > 0);
}

TEST(Layers, TheTreeWasRead) {
  // A wrong source path would make the tests above pass on nothing.
  EXPECT_GT(read_tree().size(), 200u);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
