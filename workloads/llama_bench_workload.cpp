// `kind: llama_bench`: llama.cpp's llama-bench as a workload of the dialog
// engine (the engine of `kv_cache.policy: llama_cells`). What llama-bench
// runs and times is read from tools/llama-bench/llama-bench.cpp
// (ggml-org/llama.cpp, stored version 0104b151c5):
//
// - a test is `pp N` (n_prompt N, n_gen 0), `tg N` (n_prompt 0, n_gen N) or
//   `pp N + tg M` (`-pg N,M`), each at a depth `-d` (n_depth, default 0);
// - every repetition (`-r`, default 5) first clears the cache
//   (llama_memory_clear), then fills the depth with test_prompt(n_depth)
//   before the clock starts (later repetitions restore that state instead;
//   either way the depth is not timed);
// - the clock then covers test_prompt(n_prompt): the prompt in batches,
//   then test_gen(n_gen): n_gen decodes of one token each, synchronized;
// - t/s of a repetition is (n_prompt + n_gen) / its time; the table shows
//   the mean and the sample standard deviation over the repetitions.
//
// As dialog turns (one turn at a time, the next when the last completes):
// a depth run is a turn of n_depth prompt tokens whose prefill is all it
// does (reply 1: the prefill's last pass emits the first token); `pp N` is
// such a turn of N tokens; `tg N` is a turn of 1 token and a reply of N,
// which the engine runs as N AR-1 passes; `pp N + tg M` a turn of N tokens
// and a reply of M + 1 (the prefill, then M AR-1 passes). No sampled token
// is carried into the next run, as llama-bench decodes none.
//
// Before the repetitions, as llama-bench does unless --no-warmup, one
// untimed warmup: test_prompt(n_prompt) when the test has a prompt, then
// test_gen(1) when it generates. On the dialog engine it leaves the graph
// variant the timed runs use in place, so the first repetition pays no
// variant switch the others do not. The runs are deterministic, so every
// repetition of a test then takes the same time and the std is 0.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "workloads/distribution_impl.hpp"
#include "workloads/workload_kinds.hpp"
#include "workloads/workload_params.hpp"

namespace kvsim::detail {
namespace {

constexpr int64_t kMaxRepetitions = 1000;
constexpr int64_t kMaxTests = 1000;

const DialogWorkloadSpec& bench_dialog_of(const WorkloadSpec& spec) {
  return std::get<DialogWorkloadSpec>(spec.body);
}

// One run of the engine: a depth fill or a test's timed run.
struct BenchRun {
  int64_t prompt = 0, reply = 0;
  bool clear = false;
  int32_t test = -1;  // the test timed, -1 for a depth fill
};

// The dialog turns of every test, repetition by repetition.
std::vector<BenchRun> bench_runs(const LlamaBenchSpec& b) {
  std::vector<BenchRun> runs;
  for (size_t i = 0; i < b.tests.size(); ++i) {
    const LlamaBenchTest& t = b.tests[i];
    if (b.warmup) {
      if (t.n_prompt > 0) runs.push_back({t.n_prompt, 1, true, -1});
      if (t.n_gen > 0) runs.push_back({1, 1, t.n_prompt == 0, -1});
    }
    for (int64_t r = 0; r < b.repetitions; ++r) {
      if (t.n_depth > 0) runs.push_back({t.n_depth, 1, true, -1});
      BenchRun run{t.n_prompt, t.n_gen + 1, t.n_depth == 0, static_cast<int32_t>(i)};
      if (t.n_prompt == 0) run = {1, t.n_gen, t.n_depth == 0, static_cast<int32_t>(i)};
      if (t.n_gen == 0) run.reply = 1;
      runs.push_back(run);
    }
  }
  return runs;
}

class LlamaBenchSource final : public WorkloadSource {
 public:
  LlamaBenchSource(const LlamaBenchSpec& spec, uint64_t seed, int64_t vocab_size)
      : runs_(bench_runs(spec)), seed_(seed), vocabulary_(static_cast<uint64_t>(vocab_size)) {
    next_arrival_ = 0;
  }

  std::optional<TimeNs> next_arrival() const override { return next_arrival_; }

  Request take() override {
    if (!next_arrival_) throw std::logic_error("take() on a llama_bench source with no arrival");
    const BenchRun& run = runs_[taken_];
    Request request;
    request.id = taken_;
    request.arrival = *next_arrival_;
    request.session = 1;
    request.turn = static_cast<int32_t>(taken_);
    request.bench = true;
    request.clear_context = run.clear;
    request.bench_test = run.test;
    // llama-bench feeds random token ids (std::rand() % n_vocab); any
    // deterministic ids do, as timing does not depend on them.
    append_tokens(request.prompt, tokens(RandomStream::user_tokens), run.prompt);
    append_tokens(request.output, tokens(RandomStream::output_tokens), run.reply);
    ++taken_;
    next_arrival_.reset();
    in_flight_ = true;
    return request;
  }

  void on_complete(const Request& request, TimeNs now) override {
    if (!in_flight_ || request.id + 1 != taken_)
      throw std::invalid_argument(
          fmt::format("on_complete: llama_bench run {} completed, but run {} is in flight",
                      request.id, static_cast<int64_t>(taken_) - 1));
    in_flight_ = false;
    if (taken_ < runs_.size()) next_arrival_ = now;
  }

  bool exhausted() const override {
    return !in_flight_ && !next_arrival_ && taken_ >= runs_.size();
  }
  size_t held_entries() const override { return 0; }
  uint64_t taken() const override { return taken_; }

 private:
  TokenStream tokens(RandomStream stream) const {
    return TokenStream(stream_key(seed_, stream, 0, taken_), vocabulary_);
  }

  std::vector<BenchRun> runs_;
  uint64_t seed_;
  FastModulo vocabulary_;
  uint64_t taken_ = 0;
  bool in_flight_ = false;
  std::optional<TimeNs> next_arrival_;
};

// "pp 512", "tg 128", "pp 512 + tg 128" (spaces optional: "pp512+tg128").
// Returns false with `why` set when `text` is none of them.
bool parse_test(const std::string& text, int64_t& n_prompt, int64_t& n_gen, std::string& why) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += static_cast<char>(std::tolower(c));
  n_prompt = n_gen = -1;
  size_t at = 0;
  const auto read_part = [&](const char* tag, int64_t& out) {
    if (s.compare(at, 2, tag) != 0) return false;
    at += 2;
    const size_t digits = at;
    int64_t v = 0;
    while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]))) {
      v = v * 10 + (s[at++] - '0');
      if (v > kMaxTokensPerValue) return false;
    }
    if (at == digits) return false;
    out = v;
    return true;
  };
  bool ok = false;
  if (read_part("pp", n_prompt)) {
    ok = at == s.size() || (s[at] == '+' && (++at, read_part("tg", n_gen)) && at == s.size());
  } else {
    at = 0;
    ok = read_part("tg", n_gen) && at == s.size();
  }
  if (!ok) {
    why = fmt::format("'{}' is not a llama-bench test", text);
    return false;
  }
  if (n_prompt == 0 || n_gen == 0) {
    why = fmt::format("'{}' has a part of 0 tokens", text);
    return false;
  }
  if (n_prompt < 0) n_prompt = 0;
  if (n_gen < 0) n_gen = 0;
  return true;
}

std::string test_name(int64_t n_prompt, int64_t n_gen) {
  if (n_gen == 0) return fmt::format("pp{}", n_prompt);
  if (n_prompt == 0) return fmt::format("tg{}", n_gen);
  return fmt::format("pp{}+tg{}", n_prompt, n_gen);
}

}  // namespace

config::ComponentInfo llama_bench_workload_info() {
  using namespace config;
  return {
      "workload",
      "llama_bench",
      "llama.cpp's llama-bench tests (pp, tg, pp + tg at a depth) on the dialog engine",
      {section_param("tests", true, "a list such as [\"pp 512\", \"tg 128\", \"pp 512 + tg 128\"]",
                     "llama-bench's -p / -n / -pg: `pp N` prompt processing of N tokens, `tg "
                     "N` generation of N tokens, `pp N + tg M` both, timed together"),
       int_list_param("depth", std::vector<int64_t>{0}, 0, kMaxTokensPerValue, "tokens",
                      "llama-bench's -d: tokens already in the cache before each test (not "
                      "timed); every test runs at every depth"),
       int_param("repetitions", 5, 1, kMaxRepetitions, "runs",
                 "llama-bench's -r: runs of each test (deterministic: the std is 0)"),
       bool_param("warmup", true,
                  "an untimed warmup run of each test first (false: llama-bench's --no-warmup)")}};
}

void parse_llama_bench_workload(config::MapReader& reader, WorkloadSpec& spec) {
  auto& diagnostics = reader.node().context().diagnostics;
  const size_t errors_before = diagnostics.size();
  const config::ParamValues values = config::read_params(reader, llama_bench_workload_info());
  LlamaBenchSpec bench;
  bench.repetitions = values.integer("repetitions");
  bench.warmup = values.boolean("warmup");
  const std::vector<int64_t>& depths = values.int_list("depth");
  const config::Node tests = reader.child("tests");
  if (!tests.defined()) {
    reader.node().context().diagnostics.error(reader.node().location(), tests.path(),
                                              "is required but missing",
                                              "a list such as [\"pp 512\", \"tg 128\"]");
    return;
  }
  const std::vector<config::Node> items = tests.items();
  if (tests.is_sequence() && (items.empty() || static_cast<int64_t>(items.size()) > kMaxTests))
    tests.error(fmt::format("has {} tests", items.size()), fmt::format("1..{} tests", kMaxTests));
  for (const config::Node& item : items) {
    const std::optional<std::string> text = item.as_string();
    if (!text) continue;
    int64_t n_prompt = 0, n_gen = 0;
    std::string why;
    if (!parse_test(*text, n_prompt, n_gen, why)) {
      item.error(why,
                 fmt::format("pp N, tg N or pp N + tg M with N, M in 1..{}", kMaxTokensPerValue));
      continue;
    }
    for (int64_t d : depths) {
      LlamaBenchTest t{test_name(n_prompt, n_gen), test_name(n_prompt, n_gen), n_prompt, n_gen, d};
      if (d > 0) {
        t.name += fmt::format(" @ d{}", d);
        t.key += fmt::format("@d{}", d);
      }
      bench.tests.push_back(std::move(t));
    }
  }
  if (diagnostics.size() != errors_before) return;
  DialogWorkloadSpec dialog;
  int64_t longest_prompt = 1, longest_reply = 1;
  for (const LlamaBenchTest& t : bench.tests) {
    longest_prompt = std::max({longest_prompt, t.n_depth, t.n_prompt});
    longest_reply = std::max(longest_reply, t.n_gen + 1);
  }
  const auto runs = bench_runs(bench);
  dialog.turns = static_cast<int64_t>(runs.size());
  // The longest turn, for the bounds and the engine's context checks.
  const auto constant = [](int64_t v) {
    return std::make_shared<const ClampedDistribution>(
        std::shared_ptr<const Distribution>(make_constant(static_cast<double>(v))), v, v);
  };
  dialog.prompt_tokens = constant(longest_prompt);
  dialog.reply_tokens = constant(longest_reply);
  dialog.bench = std::move(bench);
  spec.body = std::move(dialog);
}

std::unique_ptr<WorkloadSource> make_llama_bench_source(const WorkloadSpec& spec, uint64_t seed,
                                                        int64_t vocab_size) {
  return std::make_unique<LlamaBenchSource>(*bench_dialog_of(spec).bench, seed, vocab_size);
}

WorkloadBounds llama_bench_bounds(const WorkloadSpec& spec) {
  const DialogWorkloadSpec& d = bench_dialog_of(spec);
  return {d.prompt_tokens->upper_bound(), d.reply_tokens->upper_bound()};
}

}  // namespace kvsim::detail
