// Device files: every shipped file parses, every number carries a labelled
// source, and bad files give located, path-qualified errors (DESIGN 3-4).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "devices/device_family.hpp"
#include "devices/device_spec.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

namespace fs = std::filesystem;

// Key paths of every number a device file must give (relative to its root).
std::vector<std::string> expected_number_keys() {
  std::vector<std::string> keys = {
      "memory",        "memory_bandwidth",      "matrix_fp16",         "matrix_int8",
      "vector_fp16",   "device_link_bandwidth", "device_link_latency", "host_link_bandwidth",
      "kernel_launch", "step_overhead",         "max_tensor_parallel"};
  for (const char* cls : {"gemm", "attention", "elementwise", "transfer", "collective"}) {
    keys.push_back(std::string("efficiency.") + cls + ".compute");
    keys.push_back(std::string("efficiency.") + cls + ".memory");
  }
  return keys;
}

// A small valid device, as text, so tests can break one line at a time.
std::string valid_device_yaml() {
  std::string text =
      "name: test-npu\n"
      "kind: ascend\n"
      "memory: {value: 64GiB, source: \"V: test\"}\n"
      "memory_bandwidth: {value: 1.6TB/s, source: \"3P: test\"}\n"
      "matrix_fp16: {value: 300TFLOPS, source: \"D: test\"}\n"
      "matrix_int8: {value: 600TOPS, source: \"D: test\"}\n"
      "vector_fp16: {value: 10TFLOPS, source: \"A: test\"}\n"
      "device_link_bandwidth: {value: 196GB/s, source: \"3P: test\"}\n"
      "device_link_latency: {value: 20us, source: \"A: test\"}\n"
      "host_link_bandwidth: {value: 31.5GB/s, source: \"3P: test\"}\n"
      "kernel_launch: {value: 5us, source: \"A: test\"}\n"
      "step_overhead: {value: 1ms, source: \"A: test\"}\n"
      "max_tensor_parallel: {value: 8, source: \"V: test\"}\n"
      "efficiency:\n";
  for (const char* cls : {"gemm", "attention", "elementwise", "transfer", "collective"}) {
    text += std::string("  ") + cls +
            ":\n"
            "    compute: {value: 0.5, source: \"A: test\"}\n"
            "    memory: {value: 0.8, source: \"A: test\"}\n";
  }
  return text;
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "test setup: '" << from << "' not in the template";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

struct Parsed {
  DeviceSpec spec;
  std::vector<config::Diagnostic> errors;
};

Parsed parse_text(const std::string& text) {
  config::LoadContext ctx;
  Parsed out;
  out.spec = parse_device(config::Node(YAML::Load(text), "", "bad.yaml", &ctx));
  out.errors = ctx.diagnostics.all();
  return out;
}

std::string all_messages(const std::vector<config::Diagnostic>& errors) {
  std::string s;
  for (const auto& d : errors) s += d.format() + "\n";
  return s;
}

std::vector<fs::path> shipped_device_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(fs::path(KVSIM_CONFIG_DIR) / "devices")) {
    // Alias files ({alias: other}) stand for another file; the scenario
    // tests resolve them (tests/test_scenarios.cpp).
    if (entry.path().extension() == ".yaml" && !YAML::LoadFile(entry.path().string())["alias"]) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(DeviceFiles, EveryShippedFileParsesAndEveryNumberHasALabelledSource) {
  const std::vector<fs::path> files = shipped_device_files();
  ASSERT_GE(files.size(), 5u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    config::LoadContext ctx;
    const DeviceSpec d = load_device_file(file.string(), ctx);
    EXPECT_TRUE(ctx.diagnostics.empty()) << all_messages(ctx.diagnostics.all());
    EXPECT_EQ(d.name, file.stem().string()) << "a device is named after its file";
    // kind: htp files (Snapdragon) have their own key set, checked in
    // tests/test_htp_device.cpp; every source they give is labelled too.
    const bool htp = d.kind == "htp";
    const bool cpu = d.kind == "cpu";
    EXPECT_TRUE(d.kind == "accelerator" || htp || cpu) << d.kind;
    for (const auto& [key, source] : d.sources) {
      EXPECT_FALSE(source_label(source).empty())
          << key << ": source does not start with V:, D:, M:, 3P: or A: -> " << source;
    }
    if (htp) continue;
    if (cpu) {
      // A host CPU has no links: every key its family declares, each sourced.
      size_t declared = 0;
      for (const auto& p : device_family_of(d).info().params) {
        if (p.key == "matrix_tokens_exponent") continue;  // optional
        ++declared;
        EXPECT_EQ(d.sources.count(p.key), 1u) << p.key << " has no source";
      }
      EXPECT_EQ(d.sources.size(), declared);
      continue;
    }
    for (const std::string& key : expected_number_keys()) {
      auto it = d.sources.find(key);
      ASSERT_NE(it, d.sources.end()) << key << " has no source";
      EXPECT_FALSE(source_label(it->second).empty())
          << key << ": source does not start with V:, D:, M:, 3P: or A: -> " << it->second;
    }
    // Optional keys a file may give: the links a cluster moves KV over, the
    // pass-shape exponent, the fp8 / fp4 tensor-core rates of a GPU, and the
    // host's memory bandwidth (ATB block tables) and size (llama-server's
    // host prompt cache).
    size_t optional_keys = 0;
    for (const char* key : {"host_link_latency", "network_link_bandwidth", "network_link_latency",
                            "matrix_tokens_exponent", "matrix_fp8", "matrix_fp4",
                            "host_memory_bandwidth", "host_memory"})
      optional_keys += d.sources.count(key);
    EXPECT_EQ(d.sources.size(), expected_number_keys().size() + optional_keys);
    EXPECT_GT(d.memory_bytes, 0);
    EXPECT_GT(d.memory_bandwidth, 0);
    EXPECT_GT(d.vector_fp16_ops, 0);
    EXPECT_GT(d.kernel_launch, 0);
    // The int8 cube runs at twice the fp16 rate on every Ascend part (a
    // derived figure in each file): check the files agree with themselves.
    EXPECT_NEAR(static_cast<double>(d.matrix_int8_ops) / static_cast<double>(d.matrix_fp16_ops),
                2.0, 0.01);
    for (size_t c = 0; c < kOpClassCount; ++c) {
      EXPECT_GT(d.compute_efficiency[c], 0.0);
      EXPECT_LE(d.compute_efficiency[c], 1.0);
      EXPECT_GT(d.memory_efficiency[c], 0.0);
      EXPECT_LE(d.memory_efficiency[c], 1.0);
    }
  }
}

TEST(DeviceFiles, Ascend910b2CarriesTheGatheredFigures) {
  config::LoadContext ctx;
  const DeviceSpec d =
      load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/ascend-910b2.yaml", ctx);
  ASSERT_TRUE(ctx.diagnostics.empty()) << all_messages(ctx.diagnostics.all());
  // 24 cores x 16x16x16 MAC x 2 FLOP x 1.8 GHz, rounded to 0.1 TFLOPS in the file.
  EXPECT_NEAR(static_cast<double>(d.matrix_fp16_ops), 24.0 * 4096 * 2 * 1.8e9, 0.1e12);
  EXPECT_EQ(d.memory_bytes, int64_t{64} << 30);
  EXPECT_EQ(d.memory_bandwidth, 1'600'000'000'000);
  EXPECT_EQ(d.device_link_bandwidth, 196'000'000'000);
  EXPECT_EQ(d.host_link_bandwidth, 31'500'000'000);
  EXPECT_EQ(d.max_tensor_parallel, 8);
  EXPECT_EQ(source_label(d.sources.at("matrix_fp16")), "D");
  EXPECT_EQ(source_label(d.sources.at("memory_bandwidth")), "3P");
}

TEST(DeviceFiles, Ascend310pIsOneChipOfATwoChipCard) {
  config::LoadContext ctx;
  const DeviceSpec d =
      load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/ascend-310p.yaml", ctx);
  ASSERT_TRUE(ctx.diagnostics.empty()) << all_messages(ctx.diagnostics.all());
  // Two cards (four chips) for tensor parallelism, as vllm-ascend's 310P CI runs Qwen3-32B.
  EXPECT_EQ(d.max_tensor_parallel, 4);
  EXPECT_EQ(d.matrix_int8_ops, 140'000'000'000'000);
  EXPECT_EQ(d.memory_bandwidth, 204'000'000'000);
}

TEST(DeviceParse, ValidTemplateParses) {
  const Parsed p = parse_text(valid_device_yaml());
  EXPECT_TRUE(p.errors.empty()) << all_messages(p.errors);
  EXPECT_EQ(p.spec.memory_bytes, int64_t{64} << 30);
  EXPECT_EQ(p.spec.kernel_launch, 5'000);
  EXPECT_EQ(p.spec.step_overhead, 1'000'000);
  EXPECT_EQ(p.spec.max_tensor_parallel, 8);
  EXPECT_DOUBLE_EQ(p.spec.memory_efficiency[static_cast<size_t>(OpClass::gemm)], 0.8);
  EXPECT_EQ(p.spec.sources.at("efficiency.collective.memory"), "A: test");
}

TEST(DeviceParse, BareNumberWithoutSourceIsALocatedError) {
  const std::string text =
      replace_once(valid_device_yaml(), "memory_bandwidth: {value: 1.6TB/s, source: \"3P: test\"}",
                   "memory_bandwidth: 1.6TB/s");
  const Parsed p = parse_text(text);
  ASSERT_EQ(p.errors.size(), 1u) << all_messages(p.errors);
  const config::Diagnostic& e = p.errors.front();
  EXPECT_EQ(e.key_path, "memory_bandwidth");
  EXPECT_EQ(e.where.file, "bad.yaml");
  EXPECT_EQ(e.where.line, 4);  // the 4th line of the template
  EXPECT_EQ(e.where.col, 19);  // where the bare value starts
  EXPECT_NE(e.problem.find("source"), std::string::npos) << e.problem;
  EXPECT_EQ(e.format().rfind("bad.yaml:4:19: memory_bandwidth: ", 0), 0u) << e.format();
  EXPECT_EQ(p.spec.sources.count("memory_bandwidth"), 0u);
}

TEST(DeviceParse, MisspelledKeyIsReportedWithDidYouMean) {
  const std::string text = replace_once(valid_device_yaml(), "kernel_launch:", "kernel_lunch:");
  const Parsed p = parse_text(text);
  const std::string all = all_messages(p.errors);
  // The misspelling is unknown, and the real key is then missing: both said.
  ASSERT_EQ(p.errors.size(), 2u) << all;
  bool unknown_seen = false, missing_seen = false;
  for (const auto& e : p.errors) {
    if (e.key_path == "kernel_lunch") {
      unknown_seen = true;
      EXPECT_NE(e.problem.find("did you mean 'kernel_launch'"), std::string::npos) << e.problem;
      EXPECT_EQ(e.where.line, 11);
      EXPECT_EQ(e.where.col, 1);
    }
    if (e.key_path == "kernel_launch") {
      missing_seen = true;
      EXPECT_NE(e.problem.find("required"), std::string::npos) << e.problem;
    }
  }
  EXPECT_TRUE(unknown_seen) << all;
  EXPECT_TRUE(missing_seen) << all;
}

TEST(DeviceParse, MisspelledNestedEfficiencyKeyNamesItsFullPath) {
  const std::string text =
      replace_once(valid_device_yaml(), "  attention:\n    compute:", "  attention:\n    compte:");
  const Parsed p = parse_text(text);
  const std::string all = all_messages(p.errors);
  bool seen = false;
  for (const auto& e : p.errors) {
    if (e.key_path == "efficiency.attention.compte") {
      seen = true;
      EXPECT_NE(e.problem.find("did you mean 'compute'"), std::string::npos) << e.problem;
      EXPECT_GT(e.where.line, 14);
    }
  }
  EXPECT_TRUE(seen) << all;
}

TEST(DeviceParse, AllErrorsOfAFileAreThrownTogether) {
  std::string text = replace_once(valid_device_yaml(), "kind: ascend", "kind: ascnd");
  text = replace_once(text, "{value: 8, source: \"V: test\"}", "{value: 0, source: \"V: test\"}");
  config::LoadContext ctx;
  parse_device(config::Node(YAML::Load(text), "", "bad.yaml", &ctx));
  try {
    ctx.diagnostics.throw_if_any();
    FAIL() << "expected a ConfigError";
  } catch (const config::ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 2u) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("bad.yaml:2:7: kind:"), std::string::npos) << what;
    EXPECT_NE(what.find("did you mean 'ascend'"), std::string::npos) << what;
    EXPECT_NE(what.find("max_tensor_parallel"), std::string::npos) << what;
  }
}

TEST(DeviceParse, RangeChecks) {
  struct Case {
    std::string from, to, key_path;
  };
  const std::vector<Case> cases = {
      {"{value: 64GiB,", "{value: 64,", "memory"},  // bytes without a unit: far too small
      {"{value: 1.6TB/s,", "{value: 0TB/s,", "memory_bandwidth"},
      {"{value: 300TFLOPS,", "{value: 300,", "matrix_fp16"},  // no unit
      {"{value: 20us,", "{value: -1us,", "device_link_latency"},
      {"    compute: {value: 0.5,", "    compute: {value: 0,", "efficiency.gemm.compute"},
      {"    memory: {value: 0.8,", "    memory: {value: 1.5,", "efficiency.gemm.memory"},
      {"source: \"V: test\"}\nmemory_bandwidth", "source: \"  \"}\nmemory_bandwidth", "memory"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key_path + ": " + c.to);
    const Parsed p = parse_text(replace_once(valid_device_yaml(), c.from, c.to));
    ASSERT_EQ(p.errors.size(), 1u) << all_messages(p.errors);
    EXPECT_EQ(p.errors.front().key_path, c.key_path);
    EXPECT_GT(p.errors.front().where.line, 0);
  }
}

TEST(DeviceParse, MissingEfficiencyBlockIsOneError) {
  std::string text = valid_device_yaml();
  text = text.substr(0, text.find("efficiency:"));
  const Parsed p = parse_text(text);
  ASSERT_EQ(p.errors.size(), 1u) << all_messages(p.errors);
  EXPECT_EQ(p.errors.front().key_path, "efficiency");
}

TEST(DeviceParse, MissingFileIsADiagnosticNotACrash) {
  config::LoadContext ctx;
  load_device_file("/nonexistent/device.yaml", ctx);
  ASSERT_EQ(ctx.diagnostics.size(), 1u);
  EXPECT_NE(ctx.diagnostics.all().front().problem.find("not found"), std::string::npos);
}

TEST(SourceLabel, RecognisesTheFiveLabels) {
  EXPECT_EQ(source_label("V: datasheet"), "V");
  EXPECT_EQ(source_label("D: 24 x 4096 x 2 x 1.8 GHz"), "D");
  EXPECT_EQ(source_label("M: measured"), "M");
  EXPECT_EQ(source_label("  3P: report"), "3P");
  EXPECT_EQ(source_label("A: assumed"), "A");
  EXPECT_EQ(source_label("datasheet"), "");
  EXPECT_EQ(source_label("Derived: x"), "");
  EXPECT_EQ(source_label("V"), "");
  EXPECT_EQ(source_label(""), "");
}

TEST(SourceKind, NamesTheKindOfSourceALabelledNoteIs) {
  EXPECT_EQ(source_kind("V: LPDDR5X datasheet"), "a datasheet");
  EXPECT_EQ(source_kind("D: 64 bit x 10.6 GT/s"), "a derivation (its formula)");
  EXPECT_EQ(source_kind("M: fitted on rows Q1, Q6"), "a fit on named calibration rows");
  EXPECT_EQ(source_kind("M: nsys trace"), "a measurement");
  EXPECT_EQ(source_kind("3P: a review"), "a third party's figure");
  EXPECT_EQ(source_kind("A: the predecessor's"), "an assumption (why, to be calibrated)");
  EXPECT_EQ(source_kind("datasheet"), "");
}

// Every number a shipped file gives is declared by its family with the
// source it should cite (ParamSpec::cites): the hint the error for a
// missing number shows, so it must carry one of the five labels.
TEST(DeviceFiles, EveryNumberIsDeclaredWithTheSourceItShouldCite) {
  for (const fs::path& file : shipped_device_files()) {
    SCOPED_TRACE(file.string());
    config::LoadContext ctx;
    const DeviceSpec d = load_device_file(file.string(), ctx);
    ASSERT_TRUE(ctx.diagnostics.empty());
    const config::ComponentInfo& info = device_family_of(d).info();
    ASSERT_FALSE(d.sources.empty());
    for (const auto& [key, source] : d.sources) {
      const config::ParamSpec* p = info.find(key);
      ASSERT_NE(p, nullptr) << key << " is not declared by family " << d.kind;
      EXPECT_FALSE(source_kind(p->cites).empty()) << key << " cites '" << p->cites << "'";
    }
  }
}

TEST(DeviceParse, AMissingNumberNamesTheSourceItShouldCite) {
  std::string text = valid_device_yaml();
  const auto at = text.find("memory_bandwidth:");
  text.erase(at, text.find('\n', at) - at + 1);
  config::LoadContext ctx;
  parse_device(config::Node(YAML::Load(text), "", "dev.yaml", &ctx));
  const std::string messages = all_messages(ctx.diagnostics.all());
  EXPECT_NE(messages.find("dev.yaml:1:1: memory_bandwidth: is required but missing (it should "
                          "cite a datasheet: {value: ..., source: \"V: the memory's datasheet "
                          "peak, or D: bus width x transfer rate\"})"),
            std::string::npos)
      << messages;
}

// key path -> (value as written, source) of every `{value, source}` number
// under `node`.
void collect_numbers(const YAML::Node& node, const std::string& prefix,
                     std::map<std::string, std::pair<std::string, std::string>>& out) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = prefix + it->first.Scalar();
    const YAML::Node v = it->second;
    if (!v.IsMap()) continue;
    if (v["source"]) {
      out[key] = {v["value"].Scalar(), v["source"].Scalar()};
    } else {
      collect_numbers(v, key + ".", out);
    }
  }
}

// docs/yaml.md lists the two Snapdragons kvsim predicts without a fit with
// every number and its source; the tables are the files' own text, so a
// number changed in a file and not in the docs (or the reverse) fails here.
TEST(DeviceDocs, TheUnfittedSnapdragonsAreListedWithEveryNumbersSource) {
  std::ifstream in(std::string(KVSIM_SOURCE_DIR) + "/docs/yaml.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string docs = ss.str();
  for (const std::string name : {"snapdragon-8-elite-gen5", "snapdragon-x-elite"}) {
    SCOPED_TRACE(name);
    const std::string open = "<!-- device-sources:" + name + " -->\n";
    const size_t begin = docs.find(open);
    const size_t end = docs.find("<!-- /device-sources:" + name + " -->");
    ASSERT_NE(begin, std::string::npos);
    ASSERT_NE(end, std::string::npos);
    std::map<std::string, std::pair<std::string, std::string>> listed;
    std::istringstream table(docs.substr(begin + open.size(), end - begin - open.size()));
    for (std::string line; std::getline(table, line);) {
      if (line.rfind("| `", 0) != 0) continue;  // the header and its rule
      const size_t key_end = line.find("` | ");
      const size_t value_end = line.find(" | ", key_end + 4);
      ASSERT_NE(value_end, std::string::npos) << line;
      ASSERT_GE(line.size(), value_end + 5) << line;
      listed[line.substr(3, key_end - 3)] = {
          line.substr(key_end + 4, value_end - key_end - 4),
          line.substr(value_end + 3, line.size() - value_end - 5)};
    }
    std::map<std::string, std::pair<std::string, std::string>> in_file;
    collect_numbers(YAML::LoadFile(std::string(KVSIM_CONFIG_DIR) + "/devices/" + name + ".yaml"),
                    "", in_file);
    ASSERT_FALSE(in_file.empty());
    EXPECT_EQ(listed, in_file);
    for (const auto& [key, number] : in_file)
      EXPECT_FALSE(source_label(number.second).empty()) << key;
  }
}

TEST(Engines, EveryOpKindHasTheEngineAndClassOfTheSpecOnTheAcceleratorFamily) {
  struct Row {
    OpKind kind;
    Engine engine;
    OpClass cls;
  };
  const std::vector<Row> rows = {
      {OpKind::qkv_proj, Engine::matrix, OpClass::gemm},
      {OpKind::o_proj, Engine::matrix, OpClass::gemm},
      {OpKind::mlp_gate_up, Engine::matrix, OpClass::gemm},
      {OpKind::mlp_down, Engine::matrix, OpClass::gemm},
      {OpKind::lm_head, Engine::matrix, OpClass::gemm},
      {OpKind::attention, Engine::matrix, OpClass::attention},
      {OpKind::input_norm, Engine::vector, OpClass::elementwise},
      {OpKind::post_norm, Engine::vector, OpClass::elementwise},
      {OpKind::final_norm, Engine::vector, OpClass::elementwise},
      {OpKind::rope, Engine::vector, OpClass::elementwise},
      {OpKind::kv_rerope, Engine::vector, OpClass::elementwise},
      {OpKind::mlp_act, Engine::vector, OpClass::elementwise},
      {OpKind::embedding, Engine::vector, OpClass::elementwise},
      {OpKind::sampling, Engine::vector, OpClass::elementwise},
      {OpKind::kv_store, Engine::dma, OpClass::transfer},
      {OpKind::kv_copy, Engine::dma, OpClass::transfer},
      {OpKind::attn_allreduce, Engine::device_link, OpClass::collective},
      {OpKind::mlp_allreduce, Engine::device_link, OpClass::collective},
      {OpKind::swap_in, Engine::host_link, OpClass::transfer},
      {OpKind::swap_out, Engine::host_link, OpClass::transfer},
      {OpKind::moe_dispatch, Engine::device_link, OpClass::collective},
      {OpKind::moe_combine, Engine::device_link, OpClass::collective},
  };
  ASSERT_EQ(rows.size(), kOpKindCount) << "a new OpKind needs an engine and a class";
  for (const Row& r : rows) {
    EXPECT_EQ(accelerator_family().engine_of(r.kind), r.engine) << static_cast<int>(r.kind);
    EXPECT_EQ(accelerator_family().class_of(r.kind), r.cls) << static_cast<int>(r.kind);
  }
  EXPECT_THROW(accelerator_family().engine_of(OpKind::count), std::invalid_argument);
  EXPECT_EQ(engine_name(Engine::device_link), "device_link");
  EXPECT_EQ(engine_name(Engine::host_link), "host_link");
  EXPECT_EQ(op_class_name(OpClass::elementwise), "elementwise");
  EXPECT_EQ(op_class_name(OpClass::collective), "collective");
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
