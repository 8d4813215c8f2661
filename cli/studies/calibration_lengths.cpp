// A calibration row's prompt and output lengths as a distribution: a
// benchmark that runs a dataset (MLPerf Inference's OpenOrca, CNN/DailyMail,
// ShareGPT in vLLM's and SGLang's tables) sends prompts of many lengths, and
// one input_tokens/output_tokens pair prices another workload. The file
// states each side's histogram and where it comes from:
//
//   # source: <repository, file, commit or page that states the statistics>
//   side,tokens,count
//   input,256,1200
//   output,290,1
//
// The row then runs as `kind: fixed` with both lengths empirical (every
// listed length as likely as its count says), each drawn on its own stream
// of the scenario's seed (workloads/fixed_workload.cpp): deterministic, and
// the two sides independent, as a dataset's statistics publish them.
#include <fmt/format.h>

#include <map>
#include <numeric>
#include <sstream>

#include "base/diagnostics.hpp"
#include "base/input_file.hpp"
#include "cli/studies/calibration.hpp"

namespace kvsim {
namespace {

// A file whose histogram expands to more values than this is refused: the
// run's empirical distribution holds every value (a dataset of 24,576
// prompts fits; counts are first divided by their common divisor).
constexpr int64_t kMaxValues = 1'000'000;
constexpr int64_t kMaxTokens = 10'000'000;

}  // namespace

std::shared_ptr<const LengthDistribution> read_length_distribution(const std::string& path) {
  std::vector<config::Diagnostic> errors;
  auto add = [&](int64_t line, int64_t col, const std::string& key, std::string problem,
                 std::string allowed) {
    config::Diagnostic d;
    d.where.file = path;
    d.where.line = line;
    d.where.col = col;
    d.key_path = key;
    d.problem = std::move(problem);
    d.allowed = std::move(allowed);
    errors.push_back(std::move(d));
  };
  const char* format =
      "'# source: ...' lines, then the header side,tokens,count and rows input|output,TOKENS,COUNT";
  std::string contents;
  std::string problem = input_file_problem(path);
  if (problem.empty()) problem = read_input_file(path, contents);
  if (!problem.empty()) {
    add(1, 1, "lengths", problem, format);
    throw config::ConfigError(std::move(errors));
  }
  auto dist = std::make_shared<LengthDistribution>();
  dist->path = path;
  std::map<int64_t, int64_t> bins[2];  // input, output: tokens -> count
  std::istringstream in(contents);
  std::string line;
  int64_t line_no = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1) strip_utf8_bom(line);
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (line[0] == '#') {
      const std::string tag = "# source:";
      if (line.rfind(tag, 0) == 0) {
        std::string s = line.substr(tag.size());
        s.erase(0, s.find_first_not_of(" \t"));
        if (!s.empty()) dist->source += (dist->source.empty() ? "" : " ") + s;
      }
      continue;
    }
    std::vector<std::string> f;
    std::vector<int64_t> col;
    {
      size_t start = 0;
      for (;;) {
        const size_t comma = line.find(',', start);
        f.push_back(line.substr(start, comma == std::string::npos ? comma : comma - start));
        col.push_back(static_cast<int64_t>(start) + 1);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
    if (!header) {
      if (f != std::vector<std::string>{"side", "tokens", "count"}) {
        add(line_no, 1, "header", fmt::format("'{}' is not the header", line), "side,tokens,count");
        break;
      }
      header = true;
      continue;
    }
    if (f.size() != 3) {
      add(line_no, 1, "row", fmt::format("{} fields, the header has 3", f.size()), format);
      continue;
    }
    int side = -1;
    if (f[0] == "input") side = 0;
    if (f[0] == "output") side = 1;
    if (side < 0) {
      add(line_no, col[0], "side", fmt::format("'{}' is not a side", f[0]), "input or output");
      continue;
    }
    auto number = [&](size_t i, int64_t hi, const char* key) -> std::optional<int64_t> {
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(f[i], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != f[i].size() || f[i].empty() || v < 1 || v > hi) {
        add(line_no, col[i], key, fmt::format("'{}' is not a whole number in [1, {}]", f[i], hi),
            "");
        return std::nullopt;
      }
      return v;
    };
    const std::optional<int64_t> tokens = number(1, kMaxTokens, "tokens");
    const std::optional<int64_t> count = number(2, kMaxValues, "count");
    if (!tokens || !count) continue;
    int64_t& c = bins[side][*tokens];
    if (c > kMaxValues - *count) {
      add(line_no, col[2], "count", "the counts of one length sum past the limit",
          fmt::format("at most {} in all", kMaxValues));
      continue;
    }
    c += *count;
  }
  if (errors.empty()) {
    if (!header) add(line_no + 1, 1, "header", "the file has no header line", "side,tokens,count");
    if (dist->source.empty())
      add(1, 1, "source", "the file states no source",
          "a '# source: ...' line naming where the statistics are published");
    for (int s = 0; s < 2 && header; ++s)
      if (bins[s].empty())
        add(line_no + 1, 1, s == 0 ? "input" : "output", "the file has no row of this side",
            "at least one row per side");
  }
  if (!errors.empty()) throw config::ConfigError(std::move(errors));
  for (int s = 0; s < 2; ++s) {
    int64_t g = 0;
    for (const auto& [t, c] : bins[s]) g = std::gcd(g, c);
    std::vector<std::pair<int64_t, int64_t>>& out = s == 0 ? dist->input : dist->output;
    double sum = 0;
    double n = 0;
    int64_t values = 0;
    for (const auto& [t, c] : bins[s]) {
      out.emplace_back(t, c / g);
      values += c / g;
      sum += static_cast<double>(t) * static_cast<double>(c);
      n += static_cast<double>(c);
    }
    if (values > kMaxValues) {
      add(1, 1, s == 0 ? "input" : "output",
          fmt::format("the histogram expands to {} values", values),
          fmt::format("at most {} after dividing the counts by their common divisor", kMaxValues));
      throw config::ConfigError(std::move(errors));
    }
    (s == 0 ? dist->mean_input : dist->mean_output) = sum / n;
  }
  return dist;
}

std::string empirical_yaml(const std::vector<std::pair<int64_t, int64_t>>& bins) {
  std::string out = "{dist: empirical, values: [";
  bool first = true;
  for (const auto& [tokens, count] : bins)
    for (int64_t i = 0; i < count; ++i) {
      out += first ? "" : ", ";
      out += std::to_string(tokens);
      first = false;
    }
  return out + "]}";
}

}  // namespace kvsim
