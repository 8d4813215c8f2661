// The bad-input catalogue's second table: inputs and faults a review found
// to end in a wrong answer with exit 0, a crash, an internal error (exit 3)
// or a touched file. Each row writes its files into a fresh folder, runs one
// command there and checks the exit code, what the output must and must not
// say, and (for a refusal) that the folder is exactly as it was: no output,
// no temporary leftovers, every file untouched.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <regex>

#include "report_test_helpers.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;

using Files = std::map<std::string, std::string>;  // name -> text ({dir} replaced)

struct FaultRow {
  const char* name;
  Files files;       // written before the command
  std::string args;  // after `kvsim`; {dir} is the row's folder
  int exit_code = 2;
  std::vector<std::string> says;  // each must be in the output
  std::vector<std::string> not_says = {"internal error"};
  bool unchanged = true;     // the folder as it was (a refusal)
  std::string shell_prefix;  // run before kvsim in the same shell (ulimit, trap)
  bool under_asan = true;    // false: needs a memory limit ASan cannot run under
};

std::string device_file(const std::string& name = "ascend-910b2") {
  std::ifstream in(std::string(KVSIM_SOURCE_DIR) + "/configs/devices/" + name + ".yaml");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `text` without its line that starts with `key` (after the indent).
std::string without_line(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return text;
  const size_t begin = text.rfind('\n', at) + 1;
  const size_t end = text.find('\n', at);
  return text.substr(0, begin) + (end == std::string::npos ? "" : text.substr(end + 1));
}

// Built by concatenation: g++ 12's -Wrestrict misreads std::string::replace.
std::string replaced(const std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos) return text;
  return text.substr(0, at) + to + text.substr(at + from.size());
}

std::string all_replaced(std::string text, const std::regex& re, const std::string& to) {
  return std::regex_replace(text, re, to);
}

const std::string kBase = testing::small_scenario("faults", 6);

std::string with_device(const std::string& device) {
  return replaced(kBase, "device: ascend-910b2", "device: " + device);
}

std::string csv_header() {
  return "id,device,model,weights,kv_dtype,context,batch,input_tokens,output_tokens,metric,"
         "value,unit,software,source\n";
}
std::string ttft_row(const std::string& value_and_unit) {
  return "Q1t,snapdragon-8-elite,Llama-3.2-3B-Instruct,w4a16,,4096,1,128,,ttft_one_ar128_pass," +
         value_and_unit + ",Qualcomm Genie (AI Hub),test row\n";
}

std::string comma_values(int from, int to) {
  std::string out;
  for (int i = from; i <= to; ++i) {
    if (i > from) out += ',';
    out += std::to_string(i);
  }
  return out;
}
std::string values(int from, int to) {
  std::string out = "[";
  out += comma_values(from, to);
  out += ']';
  return out;
}

// A model too big for any real device, and a device at the slowest compute
// the device file accepts: one op of a 131072-token prompt takes past what
// int64 nanoseconds hold.
constexpr const char* kHugeModel = R"(name: huge
hidden_size: 65536
num_hidden_layers: 1
num_attention_heads: 512
num_key_value_heads: 8
intermediate_size: 1048576
vocab_size: 32000
max_position_embeddings: 131072
)";

// Rows leave the fields they do not need at their defaults.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
std::vector<FaultRow> catalogue() {
  const std::string dev = device_file();
  const std::regex any_compute(R"(compute: \{value: [0-9.]+,)");
  const std::string slow_device =
      replaced(replaced(all_replaced(dev, any_compute, "compute: {value: 0.001,"),
                        "value: 353.9TFLOPS", "value: 1GFLOPS"),
               "memory: {value: 64GiB", "memory: {value: 2TiB");
  std::vector<FaultRow> rows = {
      // ---- 1. --trace never writes over what kvsim did not write
      {"TraceOverAUsersFile",
       {{"base.yaml", kBase}, {"notes.txt", "my notes\n"}},
       "run base.yaml --quiet --out {dir}/out --trace notes.txt",
       2,
       {"--trace", "notes.txt", "not a file kvsim wrote"}},
      {"TraceOverTheScenarioFileEvenWithForce",
       {{"base.yaml", kBase}},
       "run base.yaml --quiet --force --out {dir}/out --trace base.yaml",
       2,
       {"--trace", "an input of this run"}},
      {"TraceInsideTheOutputFolder",
       {{"base.yaml", kBase}},
       "run base.yaml --quiet --out {dir}/out --trace {dir}/out/t.json",
       2,
       {"--trace", "inside --out"}},
      // ---- 2. a tiny efficiency, and a duration past int64 nanoseconds
      {"EfficiencyFarBelowAnyKernel",
       {{"base.yaml", with_device("./dev.yaml")},
        {"dev.yaml", replaced(dev, "compute: {value: 0.7,", "compute: {value: 1.0e-300,")}},
       "run base.yaml --quiet --out {dir}/out",
       2,
       {"dev.yaml:27:", "efficiency.gemm.compute", "[0.001, 1]"}},
      {"OpDurationPastInt64Nanoseconds",
       {{"base.yaml",
         "name: slow\nseed: 1\ndevice: ./dev.yaml\nmodel: ./huge.yaml\n"
         "scheduler: {max_num_seqs: 1, max_batched_tokens: 131072}\n"
         "workload:\n  kind: synthetic\n  requests: 1\n  arrival: {process: poisson, rate_per_s: "
         "1}\n"
         "  input_tokens: {dist: constant, value: 131000}\n"
         "  output_tokens: {dist: constant, value: 2}\n"},
        {"dev.yaml", slow_device},
        {"huge.yaml", kHugeModel}},
       "run base.yaml --quiet --out {dir}/out",
       2,
       {"would take", "ns"}},
      // ---- a device file's `host` (the CPU llama.cpp leaves work to) naming
      // no file: exit 2 at the key's line, naming the key and what was asked
      {"DeviceHostNamingNoDevice",
       {{"base.yaml", with_device("./dev.yaml")},
        {"dev.yaml", replaced(dev, "host: kunpeng-920-6426", "host: kunpeng-9999")}},
       "run base.yaml --quiet --out {dir}/out",
       2,
       {"dev.yaml:48:7:", "host:", "no device named 'kunpeng-9999'", "kunpeng-920-6426"}},
      {"DeviceHostNamingAMissingFile",
       {{"base.yaml", with_device("./dev.yaml")},
        {"dev.yaml", replaced(dev, "host: kunpeng-920-6426", "host: ./missing-cpu.yaml")}},
       "run base.yaml --quiet --out {dir}/out",
       2,
       {"dev.yaml:48:7:", "host:", "no device file './missing-cpu.yaml'"}},
      // ---- 4. alias cycles
      {"DeviceAliasCycle",
       {{"base.yaml", with_device("{dir}/a.yaml")},
        {"a.yaml", "alias: {dir}/b.yaml\n"},
        {"b.yaml", "alias: {dir}/a.yaml\n"}},
       "run base.yaml --quiet --out {dir}/out",
       2,
       {"alias", "cycle"}},
      {"ModelAliasCycle",
       {{"base.yaml", replaced(kBase, "model: llama-3.2-1b", "model: {dir}/a.yaml")},
        {"a.yaml", "alias: {dir}/b.yaml\n"},
        {"b.yaml", "alias: {dir}/a.yaml\n"}},
       "run base.yaml --quiet --out {dir}/out",
       2,
       {"alias", "cycle"}},
      // ---- 5. a folder of files with kvsim's names is not kvsim's
      {"OutOverAHandWrittenReport",
       {{"base.yaml", kBase}, {"out/report.md", "# mine\n"}},
       "run base.yaml --quiet --out {dir}/out",
       2,
       {"--out", "no .kvsim marker"}},
      {"OutOverACompareLookalike",
       {{"base.yaml", kBase},
        {"out/compare.csv", "mine\n"},
        {"out/01-baseline/metrics.json", "{}"}},
       "compare base.yaml --vary seed=1,2 --quiet --out {dir}/out",
       2,
       {"--out", "no .kvsim marker"}},
      // ---- 7, 8. more jobs than the machine gives threads; grids past the bound
      {"SweepJobsBeyondThreadsUnderAMemoryLimit",
       {{"base.yaml", kBase},
        {"s.yaml",
         "name: s\nbase: base.yaml\ngrid:\n  seed: [1, 2]\nmetrics: [requests.completed]\n"}},
       "sweep s.yaml --jobs 1000 --quiet --out {dir}/out",
       0,
       {},
       {"internal error", "terminate", "Aborted"},
       false,
       "ulimit -v 4000000;",
       false},
      {"SweepOfABillionVariants",
       {{"base.yaml", kBase},
        {"s.yaml", "name: s\nbase: base.yaml\ngrid:\n  seed: " + values(1, 1000) +
                       "\n  workload.requests: " + values(1, 1000) +
                       "\n  scheduler.max_num_seqs: " + values(1, 1000) +
                       "\nmetrics: [requests.completed]\n"}},
       "sweep s.yaml --quiet --out {dir}/out",
       2,
       {"s.yaml:4:3: grid", "1000000000 variants", "at most 100000"},
       {"internal error", "bad_alloc"},
       true,
       "ulimit -v 4000000; ulimit -t 60;",
       false},
      // A large grid is announced before its variants are loaded (here the
      // load then fails at the axis none of whose values loads).
      {"SweepAnnouncesALargeGrid",
       {{"base.yaml", kBase},
        {"s.yaml", "name: s\nbase: base.yaml\ngrid:\n  seed: " + values(1, 1000) +
                       "\n  parallel.tensor: [3]\nmetrics: [requests.completed]\n"}},
       "sweep s.yaml --out {dir}/out",
       2,
       {"kvsim sweep s: 1000 variants; each is loaded once", "parallel.tensor"}},
      {"CompareOfABillionVariants",
       {{"base.yaml", kBase}},
       "compare base.yaml --quiet --out {dir}/out --vary seed=" + comma_values(1, 1000) +
           " --vary workload.requests=" + comma_values(1, 1000) +
           " --vary scheduler.max_num_seqs=" + comma_values(1, 1000),
       2,
       {"--vary", "1000000000 variants"},
       {"internal error", "bad_alloc"},
       true,
       "ulimit -v 4000000; ulimit -t 60;",
       false},
      // ---- 9. calibrate reads the unit column
      {"CalibrateTtftInSecondsIsConverted",
       {{"cal.csv", csv_header() + ttft_row("88.2,s")}},
       "calibrate cal.csv --out {dir}/out",
       0,
       {"88200", "-99.9", " ms"},
       {"internal error", "+1.8"},
       false},
      {"CalibrateUnknownUnit",
       {{"cal.csv", csv_header() + ttft_row("88.2,furlongs")}},
       "calibrate cal.csv --out {dir}/out",
       2,
       {"cal.csv:2:", "unit", "furlongs", "ms, s, us"}},
      {"CalibrateRateUnitForALatency",
       {{"cal.csv", csv_header() + ttft_row("88.2,tokens/min")}},
       "calibrate cal.csv --out {dir}/out",
       2,
       {"cal.csv:2:", "unit", "tokens/min"}},
      // ---- 10. check's tolerances are finite
      {"CheckAbsTolNan",
       {{"a.json", "{\"a\": 1}"}, {"b.json", "{\"a\": 100}"}},
       "check a.json --baseline b.json --abs-tol nan",
       2,
       {"--abs-tol", "finite"}},
      {"CheckRelTolNan",
       {{"a.json", "{\"a\": 1}"}, {"b.json", "{\"a\": 100}"}},
       "check a.json --baseline b.json --rel-tol nan",
       2,
       {"--rel-tol", "finite"}},
      {"CheckAbsTolInfinite",
       {{"a.json", "{\"a\": 1}"}, {"b.json", "{\"a\": 100}"}},
       "check a.json --baseline b.json --abs-tol inf",
       2,
       {"--abs-tol", "finite"}},
      // The same NaN through another flag's range (found while fixing the above).
      {"CapacityMemoryFractionNan",
       {},
       "capacity --device ascend-910b2 --model llama-3.2-1b --context 1024 --out {dir}/out "
       "--memory-fraction nan",
       2,
       {"--memory-fraction", "finite"}},
      {"GenerateDefragThresholdNan",
       {},
       "generate --defrag-thold nan",
       2,
       {"--defrag-thold", "finite"}},
      // ---- 11. --trace failures are exit 2 and leave nothing
      // Found by fuzz_trace_writer_path: a path written as a folder's was
      // written as a file beside it (exit 3 before the rule).
      {"TraceEndsInASlash",
       {{"base.yaml", kBase}},
       "run base.yaml --quiet --out {dir}/out --trace {dir}/new/",
       2,
       {"--trace", "ends in '/'"}},
      {"TraceIsAFolder",
       {{"base.yaml", kBase}, {"tdir/keep.txt", "x"}},
       "run base.yaml --quiet --out {dir}/out --trace tdir",
       2,
       {"--trace", "is a folder"}},
      {"TraceOnAFullDisk",
       {{"base.yaml", testing::small_scenario("faults", 400)}},
       "run base.yaml --quiet --out {dir}/out --trace {dir}/t.json",
       2,
       {"kvsim: error:", "t.json: File too large"},
       {"internal error"},
       true,
       // 100 KiB: room for the run's CSVs (about 40 KiB), not for its trace (1 MiB).
       "trap '' XFSZ; ulimit -f 100;"},
      // Found by fuzz_sweep_yaml: a base name too long for the filesystem
      // was a filesystem error without the sweep file's line.
      {"SweepBaseNameTooLongForTheFilesystem",
       {{"s.yaml", "name: s\nbase: " + std::string(300, 'x') + "\ngrid:\n  seed: [1, 2]\n"}},
       "sweep s.yaml --quiet --out {dir}/out",
       2,
       {"s.yaml:2:7: base", "no scenario"}},
      // ---- 13. an input that cannot be read
      {"RunScenarioCannotBeRead",
       {},
       "run /proc/self/mem --out {dir}/out",
       2,
       {"/proc/self/mem", "cannot be read"}},
      {"ValidateCannotBeRead",
       {},
       "validate /proc/self/mem",
       2,
       {"/proc/self/mem", "cannot be read"}},
      {"SweepFileCannotBeRead",
       {},
       "sweep /proc/self/mem --out {dir}/out",
       2,
       {"/proc/self/mem", "cannot be read"}},
      {"CheckFileCannotBeRead",
       {{"b.json", "{\"a\": 1}"}},
       "check /proc/self/mem --baseline b.json",
       2,
       {"/proc/self/mem", "cannot read the file"}},
      {"CalibrateFileCannotBeRead",
       {},
       "calibrate /proc/self/mem --out {dir}/out",
       2,
       {"/proc/self/mem", "cannot be read"}},
      // ---- 14. a full disk while the output folder is made leaves nothing
      {"OutputFolderOnAFullDisk",
       {{"base.yaml", kBase}},
       "run base.yaml --quiet --out {dir}/out",
       2,
       {"kvsim: error:", "File too large"},
       {"internal error"},
       true,
       "trap '' XFSZ; ulimit -f 0;"},
      // ---- 15. no completed request has no latency
      {"NoRequestCompletedFailsALatencyBound",
       {{"base.yaml", kBase + "expect:\n  latency_ms.ttft.p99: {max: 1}\n"}},
       "run base.yaml --out {dir}/out --set scheduler.max_model_len=32",
       1,
       {"0 completed", "none", "expect.latency_ms.ttft.p99", "no request completed"},
       {"internal error", "checks passed"},
       false},
      // ---- 17. the smaller ones
      {"CompareVariesOneKeyTwice",
       {{"base.yaml", kBase}},
       "compare base.yaml --quiet --out {dir}/out --vary kv_cache.block_size=64,128 "
       "--vary kv_cache.block_size=16",
       2,
       {"--vary", "kv_cache.block_size", "varied twice"}},
      {"ASecondYamlDocument",
       {{"base.yaml", kBase + "---\nname: second\n"}},
       "run base.yaml --quiet --out {dir}/out",
       2,
       {"base.yaml:1", "second YAML document"}},
      // Found by fuzz_sweep_yaml: counting documents with yaml-cpp's LoadAll
      // never ended on this text; the count is now two parser steps at most.
      {"ValidateTextThatLoopedTheDocumentCount",
       {{"bad.yaml", ", e "}},
       "validate bad.yaml",
       2,
       {"bad.yaml:1:"},
       {"internal error"},
       true,
       "ulimit -t 20;"},
      {"ValidateASecondYamlDocument",
       {{"base.yaml", kBase + "---\nname: second\n"}},
       "validate base.yaml",
       2,
       {"base.yaml:1", "second YAML document"}},
      {"DeviceSourceWithoutItsLabel",
       {{"base.yaml", with_device("./dev.yaml")},
        {"dev.yaml", replaced(dev, "source: \"A: large fp16 GEMMs", "source: \"large fp16 GEMMs")}},
       "run base.yaml --quiet --out {dir}/out",
       2,
       {"dev.yaml:27:", "efficiency.gemm.compute", "no label", "V: (datasheet)"}},
      // A number the family needs, left out: named with the kind of source
      // it should cite (the UFS part's datasheet here).
      {"DeviceFileMissingANumberItsFamilyNeeds",
       {{"base.yaml", with_device("./dev.yaml")},
        {"dev.yaml", without_line(device_file("snapdragon-8-elite"), "  storage_bandwidth:")}},
       "run base.yaml --quiet --out {dir}/out",
       2,
       {"dev.yaml:", "htp.storage_bandwidth: is required but missing", "it should cite a datasheet",
        "source: \"V: the storage part's (UFS)"}},
      {"ExpectMinAboveMax",
       {{"base.yaml", kBase + "expect:\n  requests.completed: {min: 10, max: 5}\n"}},
       "run base.yaml --quiet --out {dir}/out",
       2,
       {"base.yaml:", "expect.requests.completed", "min 10 is above max 5"}},
      {"SetRequiredKeyToNull",
       {{"base.yaml", kBase}},
       "run base.yaml --quiet --out {dir}/out --set device=null",
       2,
       {"--set device:1:1: device: is required but missing"},
       {"internal error", ":0:0:"}},
      {"SetRequiredNestedKeyToNull",
       {{"base.yaml", kBase}},
       "run base.yaml --quiet --out {dir}/out --set workload.arrival=null",
       2,
       {"--set workload.arrival:1:1: workload.arrival: is required but missing"}},
      {"CalibrationHeaderWithAByteOrderMark",
       {{"cal.csv", "\xEF\xBB\xBF" + csv_header() + ttft_row("88.2,ms")}},
       "calibrate cal.csv --out {dir}/out",
       0,
       {"1 of 1 rows predicted"},
       {"internal error", "no such column"},
       false},
      {"TraceHeaderWithAByteOrderMark",
       {{"base.yaml",
         "name: bom\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
         "workload:\n  trace: {format: prefill_decode_csv, path: t.csv}\n"},
        {"t.csv",
         "\xEF\xBB\xBF"
         "arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,2\n0.5,20,2\n"}},
       "run base.yaml --quiet --out {dir}/out",
       0,
       {},
       {"internal error", "error"},
       false},
      {"CapacitySloMetAtEveryRate",
       {{"base.yaml", kBase}},
       "capacity --device ascend-910b2 --model llama-3.2-1b --context 1024 --out {dir}/out "
       "--slo ttft_p99_ms=1e12,tpot_p99_ms=1e12 --workload base.yaml",
       0,
       {"not reached"},
       {"internal error", "--set workload.arrival.rate_per_s", "out of range"},
       false},
  };
  return rows;
}
#pragma GCC diagnostic pop

class FaultCatalogue : public testing::TempFolderTest,
                       public ::testing::WithParamInterface<FaultRow> {
 protected:
  std::string expand(const std::string& s) const {
    std::string out;
    size_t from = 0;
    for (size_t at = s.find("{dir}"); at != std::string::npos; at = s.find("{dir}", from)) {
      out += s.substr(from, at - from) + dir_.string();
      from = at + 5;
    }
    return out + s.substr(from);
  }
  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      const std::string rel = fs::relative(e.path(), dir_).string();
      files[rel] = e.is_regular_file() ? read(e.path().string()) : std::string("<dir>");
    }
    return files;
  }
};

TEST_P(FaultCatalogue, ExitsAsItShouldSayingWhyAndTouchesNothing) {
  const FaultRow& c = GetParam();
#if defined(__SANITIZE_ADDRESS__)
  if (!c.under_asan)
    GTEST_SKIP() << "needs a memory limit (ulimit -v) AddressSanitizer cannot run under";
#endif
  for (const auto& [name, text] : c.files) {
    fs::create_directories((dir_ / name).parent_path());
    write(name, expand(text));
  }
  const std::string command = "cd " + dir_.string() + " && " + c.shell_prefix + " " +
                              std::string(KVSIM_BINARY) + " " + expand(c.args);
  write("command.sh", command + "\n");
  const auto before = snapshot();
  const auto r = testing::run_command("bash " + path("command.sh") + " < /dev/null");
  EXPECT_EQ(r.exit_code, c.exit_code) << command << "\n" << r.output;
  for (const auto& s : c.says)
    EXPECT_NE(r.output.find(expand(s)), std::string::npos) << "'" << s << "' in\n" << r.output;
  for (const auto& s : c.not_says)
    EXPECT_EQ(r.output.find(s), std::string::npos) << "not '" << s << "' in\n" << r.output;
  if (c.unchanged) {
    EXPECT_EQ(snapshot(), before) << "the folder changed: " << command;
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, FaultCatalogue, ::testing::ValuesIn(catalogue()),
                         [](const ::testing::TestParamInfo<FaultRow>& row) {
                           return std::string(row.param.name);
                         });

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
