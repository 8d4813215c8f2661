// A catalogue of bad inputs across every command, as a hostile new user
// would type them: each must end in exit 2 (SPEC 3) with a location (a
// FILE:LINE:COL, a `--set KEY` or the flag) and the key at fault, and leave
// the folder it ran in exactly as it was (no output folder, no temporary
// leftovers, a user's file untouched). One table row per input, each its
// own test.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "report_test_helpers.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;

struct BadInput {
  const char* name;                // test name
  const char* args;                // after `kvsim`; {dir} {base} {bad} {aux} {out} are replaced
  const char* where;               // expected in the output: a location
  const char* key;                 // expected in the output: the key or flag at fault
  const char* bad_text = nullptr;  // written to {bad} (bad.yaml) when set
  const char* aux_text = nullptr;  // written to {aux} (aux.txt) when set
  int exit_code = 2;
  size_t aux_size = 0;  // bytes of aux_text when it holds NULs (a binary header)
};

// A small valid scenario (line numbers matter to the rows that patch it).
constexpr const char* kBase = R"(name: cat
seed: 5
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 64}
scheduler: {max_num_seqs: 16, max_batched_tokens: 2048}
workload:
  kind: synthetic
  requests: 6
  arrival: {process: poisson, rate_per_s: 20}
  input_tokens: {dist: uniform, min: 64, max: 256}
  output_tokens: {dist: uniform, min: 8, max: 32}
)";

// A scenario replaying {aux} as a trace of the given format.
#define TRACE_SCENARIO(format, extra)                              \
  "name: tr\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n" \
  "kv_cache: {policy: paged, block_size: 64}\n"                    \
  "scheduler: {max_num_seqs: 16, max_batched_tokens: 4096}\n"      \
  "workload:\n  kind: trace\n  trace: {format: " format ", path: aux.txt" extra "}\n"

// A scenario whose model is {aux} (a Hugging Face config.json or a model YAML).
#define MODEL_SCENARIO(model_file)                                                              \
  "name: m\nseed: 1\ndevice: ascend-910b2\nmodel: " model_file                                  \
  "\n"                                                                                          \
  "workload:\n  kind: synthetic\n  requests: 2\n  arrival: {process: poisson, rate_per_s: 1}\n" \
  "  input_tokens: {dist: constant, value: 16}\n  output_tokens: {dist: constant, value: 4}\n"

// kBase with `scheduler.session_retention:` given `body` (line 6).
#define RETENTION_SCENARIO(body)                                                     \
  "name: ret\nseed: 5\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"                  \
  "kv_cache: {policy: paged, block_size: 64}\n"                                      \
  "scheduler: {max_num_seqs: 16, max_batched_tokens: 2048, session_retention: " body \
  "}\n"                                                                              \
  "workload:\n  kind: synthetic\n  requests: 6\n"                                    \
  "  arrival: {process: poisson, rate_per_s: 20}\n"                                  \
  "  input_tokens: {dist: uniform, min: 64, max: 256}\n"                             \
  "  output_tokens: {dist: uniform, min: 8, max: 32}\n"

// A scenario with `parallel:` given `layout` (line 5) on `device`, a MoE model.
#define DP_SCENARIO(device, layout)                                                             \
  "name: dp\nseed: 1\ndevice: " device "\nmodel: qwen3-30b-a3b\nparallel: " layout              \
  "\nkv_cache: {policy: paged, block_size: 128}\n"                                              \
  "workload:\n  kind: synthetic\n  requests: 2\n  arrival: {process: poisson, rate_per_s: 1}\n" \
  "  input_tokens: {dist: constant, value: 16}\n  output_tokens: {dist: constant, value: 4}\n"

// A scenario on the ATB layout (line 5) of `device`, `model` and `block`.
#define ATB_SCENARIO(device, model, block)                                                      \
  "name: atb\nseed: 1\ndevice: " device "\nmodel: " model                                       \
  "\nkv_cache: {policy: paged, layout: atb, block_size: " block                                 \
  "}\n"                                                                                         \
  "workload:\n  kind: synthetic\n  requests: 2\n  arrival: {process: poisson, rate_per_s: 1}\n" \
  "  input_tokens: {dist: constant, value: 16}\n  output_tokens: {dist: constant, value: 4}\n"

constexpr const char* kHugeHfConfig =
    R"({"hidden_size": 1048576, "num_hidden_layers": 65536, "num_attention_heads": 1024,
"num_key_value_heads": 1024, "intermediate_size": 16777216, "vocab_size": 16777216,
"max_position_embeddings": 8192})";

const BadInput kCatalogue[] = {
    // ---- the command line itself
    {"UnknownCommand", "frobnicate", "unknown command", "frobnicate"},
    {"UnknownFlag", "run {base} --frobnicate", "error", "--frobnicate"},
    {"RunWithoutScenario", "run --out {out}", "error", "scenario"},
    // ---- run: --set on a valid scenario
    {"SetBlockSizeZero", "run {base} --out {out} --set kv_cache.block_size=0",
     "--set kv_cache.block_size", "kv_cache.block_size"},
    {"SetBlockSizeText", "run {base} --out {out} --set kv_cache.block_size=abc",
     "--set kv_cache.block_size", "kv_cache.block_size"},
    {"SetBlockSizeHuge", "run {base} --out {out} --set kv_cache.block_size=1e99",
     "--set kv_cache.block_size", "kv_cache.block_size"},
    {"SetBlockSizeList", "run {base} --out {out} --set kv_cache.block_size=[1,2]",
     "--set kv_cache.block_size", "kv_cache.block_size"},
    {"SetPolicyUnknown", "run {base} --out {out} --set kv_cache.policy=nope",
     "--set kv_cache.policy", "kv_cache.policy"},
    {"SetMemoryFraction", "run {base} --out {out} --set kv_cache.memory_fraction=2",
     "--set kv_cache.memory_fraction", "kv_cache.memory_fraction"},
    {"SetKvDtype", "run {base} --out {out} --set kv_cache.dtype=fp7", "--set kv_cache.dtype",
     "kv_cache.dtype"},
    {"SetSeedNegative", "run {base} --out {out} --set seed=-1", "--set seed", "seed"},
    {"SetSeedIntoMap", "run {base} --out {out} --set seed.x=1", "--set seed.x", "seed"},
    {"SetDeviceUnknown", "run {base} --out {out} --set device=no-such-device", "--set device",
     "device"},
    {"SetModelUnknown", "run {base} --out {out} --set model=no-such-model", "--set model", "model"},
    {"SetWorkloadKind", "run {base} --out {out} --set workload.kind=nope", "--set workload.kind",
     "workload.kind"},
    {"SetRequestsZero", "run {base} --out {out} --set workload.requests=0",
     "--set workload.requests", "workload.requests"},
    {"SetRequestsNegative", "run {base} --out {out} --set workload.requests=-5",
     "--set workload.requests", "workload.requests"},
    {"SetArrivalProcess", "run {base} --out {out} --set workload.arrival.process=nope",
     "--set workload.arrival.process", "workload.arrival.process"},
    {"SetRateZero", "run {base} --out {out} --set workload.arrival.rate_per_s=0",
     "--set workload.arrival.rate_per_s", "workload.arrival.rate_per_s"},
    {"SetRateNegative", "run {base} --out {out} --set workload.arrival.rate_per_s=-1",
     "--set workload.arrival.rate_per_s", "workload.arrival.rate_per_s"},
    {"SetRateTooLow", "run {base} --out {out} --set workload.arrival.rate_per_s=1e-9",
     "--set workload.arrival.rate_per_s", "workload.arrival.rate_per_s"},
    {"SetForeignArrivalKey", "run {base} --out {out} --set workload.arrival.cv=2",
     "--set workload.arrival.cv", "workload.arrival.cv"},
    {"SetDistUnknown", "run {base} --out {out} --set workload.input_tokens.dist=nope",
     "--set workload.input_tokens.dist", "workload.input_tokens.dist"},
    {"SetDistMinNegative", "run {base} --out {out} --set workload.input_tokens.min=-1",
     "--set workload.input_tokens.min", "workload.input_tokens.min"},
    {"SetMaxNumSeqsZero", "run {base} --out {out} --set scheduler.max_num_seqs=0",
     "--set scheduler.max_num_seqs", "scheduler.max_num_seqs"},
    {"SetMaxBatchedZero", "run {base} --out {out} --set scheduler.max_batched_tokens=0",
     "--set scheduler.max_batched_tokens", "scheduler.max_batched_tokens"},
    // ---- run: scheduler.session_retention
    {"SetRetentionTtlZero", "run {base} --out {out} --set scheduler.session_retention.ttl=0s",
     "--set scheduler.session_retention.ttl", "scheduler.session_retention.ttl"},
    {"RetentionTtlZero", "run {bad} --out {out}", "bad.yaml:6:", "scheduler.session_retention.ttl",
     RETENTION_SCENARIO("{ttl: 0s}")},
    {"RetentionTtlNegative", "run {bad} --out {out}",
     "bad.yaml:6:", "scheduler.session_retention.ttl", RETENTION_SCENARIO("{ttl: -5s}")},
    {"RetentionTtlMissing", "run {bad} --out {out}",
     "bad.yaml:6:", "scheduler.session_retention.ttl", RETENTION_SCENARIO("{on_pressure: keep}")},
    {"RetentionFractionZero", "run {bad} --out {out}",
     "bad.yaml:6:", "scheduler.session_retention.max_pinned_fraction",
     RETENTION_SCENARIO("{ttl: 30s, max_pinned_fraction: 0}")},
    {"RetentionFractionAboveOne", "run {bad} --out {out}",
     "bad.yaml:6:", "scheduler.session_retention.max_pinned_fraction",
     RETENTION_SCENARIO("{ttl: 30s, max_pinned_fraction: 1.5}")},
    {"RetentionOnPressureUnknown", "run {bad} --out {out}",
     "bad.yaml:6:", "scheduler.session_retention.on_pressure",
     RETENTION_SCENARIO("{ttl: 30s, on_pressure: drop}")},
    {"RetentionUnknownKey", "run {bad} --out {out}", "bad.yaml:6:", "tll",
     RETENTION_SCENARIO("{ttl: 30s, tll: 5s}")},
    {"SetEmptyKeyPart", "run {base} --out {out} --set kv_cache..block_size=64", "--set",
     "kv_cache..block_size"},
    {"SetNoValue", "run {base} --out {out} --set kv_cache.block_size=", "--set kv_cache.block_size",
     "kv_cache.block_size"},
    {"SetNoEquals", "run {base} --out {out} --set kv_cache.block_size", "--set",
     "kv_cache.block_size"},
    {"SetUnknownKey", "run {base} --out {out} --set nosuchkey=1", "--set nosuchkey", "nosuchkey"},
    {"SetUnknownNestedKey", "run {base} --out {out} --set kv_cache.nosuch=1",
     "--set kv_cache.nosuch", "kv_cache.nosuch"},
    {"SetRemoveMissingKey", "run {base} --out {out} --set kv_cache.nosuch=null", "--set",
     "kv_cache.nosuch"},
    {"SetTensorParallelZero", "run {base} --out {out} --set parallel.tensor=0",
     "--set parallel.tensor", "parallel.tensor"},
    {"SetTensorParallelIndivisible", "run {base} --out {out} --set parallel.tensor=3",
     "--set parallel.tensor", "parallel.tensor"},
    {"SetNonUtf8", "run {base} --out {out} --set $'name=caf\\xe9'", "--set name", "name"},
    {"SetDescriptionList", "run {base} --out {out} --set description=[a]", "--set description",
     "description"},
    {"SetMaxConcurrencyZero", "run {base} --out {out} --set workload.max_concurrency=0",
     "--set workload.max_concurrency", "workload.max_concurrency"},
    {"SetExpectUnknownMetric", "run {base} --out {out} --set expect.no.such.metric.max=1",
     "--set expect", "expect"},
    // ---- run: a scenario file with a mistake at a known line
    {"DuplicateKey", "run {bad} --out {out}", "bad.yaml:3:1", "seed",
     "name: d\nseed: 1\nseed: 2\n"},
    {"DuplicateNestedKey", "run {bad} --out {out}", "bad.yaml:4:3", "block_size",
     "name: d\nkv_cache:\n  block_size: 16\n  block_size: 32\n"},
    {"InvalidYamlBracket", "run {bad} --out {out}", "bad.yaml:", "invalid YAML",
     "name: x\nkv_cache: {policy: paged\n"},
    {"InvalidYamlTab", "run {bad} --out {out}", "bad.yaml:", "invalid YAML",
     "name: x\nkv_cache:\n\tpolicy: paged\n"},
    {"NonUtf8Name", "run {bad} --out {out}", "bad.yaml:1:7", "name", "name: caf\xe9\n"},
    {"NonUtf8Description", "run {bad} --out {out}", "bad.yaml:2:14", "description",
     "name: x\ndescription: \xff\xfe\n"},
    {"NonUtf8Key", "run {bad} --out {out}", "bad.yaml:2:1", "\xe9", "name: x\n\xe9: 1\n"},
    {"UnknownTopLevelKey", "run {bad} --out {out}", "bad.yaml:13:1", "kv_cach", nullptr},
    {"EmptyScenario", "run {bad} --out {out}", "bad.yaml", "device", ""},
    {"ScenarioIsAList", "run {bad} --out {out}", "bad.yaml:1:1", "", "- a\n- b\n"},
    {"ScenarioIsADirectory", "run {dir}/adir --out {out}", "adir", "not a regular file"},
    {"ScenarioIsDevZero", "run /dev/zero --out {out}", "/dev/zero", "not a regular file"},
    {"ScenarioMissing", "run {dir}/missing.yaml --out {out}", "missing.yaml", "not found"},
    {"ModelLineNotAName", "run {bad} --out {out}", "bad.yaml:4:8", "model",
     MODEL_SCENARIO("[1, 2]")},
    // ---- run: models a scenario names
    {"HfConfigHugeDimensions", "run {bad} --out {out}", "aux.json:1:", "num_hidden_layers",
     MODEL_SCENARIO("aux.json"), kHugeHfConfig},
    {"ModelNonUtf8Name", "run {bad} --out {out}", "aux.yaml:1:7", "name",
     MODEL_SCENARIO("aux.yaml"),
     "name: ll\xe9\nhidden_size: 2048\nnum_hidden_layers: 16\nnum_attention_heads: 32\n"
     "num_key_value_heads: 8\nintermediate_size: 8192\nvocab_size: 128256\n"
     "max_position_embeddings: 8192\n"},
    {"ModelDuplicateKey", "run {bad} --out {out}", "aux.yaml:3:1", "hidden_size",
     MODEL_SCENARIO("aux.yaml"), "name: l\nhidden_size: 2048\nhidden_size: 4096\n"},
    {"ModelHeadsIndivisible", "run {bad} --out {out}", "aux.yaml:5:", "num_key_value_heads",
     MODEL_SCENARIO("aux.yaml"),
     "name: l\nhidden_size: 2048\nnum_hidden_layers: 16\nnum_attention_heads: 32\n"
     "num_key_value_heads: 7\nintermediate_size: 8192\nvocab_size: 128256\n"
     "max_position_embeddings: 8192\n"},
    {"ModelLongContextKvOverflow", "run {bad} --out {out}", "aux.yaml:", "max_position_embeddings",
     MODEL_SCENARIO("aux.yaml"),
     "name: l\nhidden_size: 1048576\nnum_hidden_layers: 1024\nnum_attention_heads: 8192\n"
     "num_key_value_heads: 8192\nhead_dim: 128\nintermediate_size: 1024\nvocab_size: 16\n"
     "max_position_embeddings: 1073741824\n"},
    // ---- run: kv_cache.layout atb, shapes ATB PagedAttention refuses (seed 000)
    {"AtbBlockSizeNotMultipleOf16", "run {bad} --out {out}", "bad.yaml:5:", "kv_cache.block_size",
     ATB_SCENARIO("ascend-910b2", "llama-3.2-1b", "40")},
    {"AtbBlockSizeTimesHeadDimTooLarge", "run {bad} --out {out}",
     "bad.yaml:5:", "kv_cache.block_size", ATB_SCENARIO("ascend-910b2", "llama-3.2-1b", "512")},
    {"AtbHeadDimAbove256", "run {bad} --out {out}", "bad.yaml:5:", "kv_cache.layout",
     ATB_SCENARIO("ascend-910b2", "aux.yaml", "16"),
     "name: l\nhidden_size: 2560\nnum_hidden_layers: 4\nnum_attention_heads: 8\n"
     "num_key_value_heads: 8\nhead_dim: 320\nintermediate_size: 8192\nvocab_size: 128256\n"
     "max_position_embeddings: 8192\n"},
    {"AtbOnDeviceWithoutHostMemoryBandwidth", "run {bad} --out {out}",
     "bad.yaml:5:", "kv_cache.layout", ATB_SCENARIO("ascend-910c", "llama-3.2-1b", "128")},
    // ---- run: parallel.data, data-parallel attention ranks
    {"DataParallelNotDividingTheDevices", "run {bad} --out {out}", "bad.yaml:5:", "parallel.data",
     DP_SCENARIO("ascend-910c", "{devices: 32, data: 3}")},
    {"DataParallelTimesTensorNotTheDevices", "run {bad} --out {out}", "bad.yaml:5:",
     "parallel.tensor", DP_SCENARIO("ascend-910c", "{devices: 32, data: 4, tensor: 4}")},
    {"ExpertGroupNotDataTimesTensor", "run {bad} --out {out}", "bad.yaml:5:", "parallel.expert",
     DP_SCENARIO("ascend-910c", "{data: 4, tensor: 2, expert: 4}")},
    {"DataParallelAcrossNodesWithoutNetworkLink", "run {bad} --out {out}",
     "bad.yaml:5:", "parallel.data", DP_SCENARIO("ascend-910b3", "{data: 16, tensor: 1}")},
    // ---- run: trace workloads
    {"TraceIsADirectory", "run {bad} --out {out}", "bad.yaml:9:", "workload.trace.path",
     "name: tr\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 4096}\n"
     "workload:\n  kind: trace\n  trace: {format: mooncake, path: adir}\n"},
    {"TraceIsDevZero", "run {bad} --out {out}", "bad.yaml:9:", "workload.trace.path",
     "name: tr\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 4096}\n"
     "workload:\n  kind: trace\n  trace: {format: mooncake, path: /dev/zero}\n"},
    {"TraceMissing", "run {bad} --out {out}", "bad.yaml:9:", "workload.trace.path",
     TRACE_SCENARIO("mooncake", "")},
    {"MooncakeDuplicateField", "run {bad} --out {out}", "aux.txt:1:", "workload.trace",
     TRACE_SCENARIO("mooncake", ""),
     "{\"timestamp\": 0, \"input_length\": 10, \"input_length\": 20, \"output_length\": 3, "
     "\"hash_ids\": [1]}\n"},
    // A fuzzer finding: a run of digits past int64_t's range (a signed
    // overflow in the direct line reader, which now leaves it to the parser).
    {"MooncakeDigitsPastInt64", "run {bad} --out {out}", "aux.txt:1:", "workload.trace",
     TRACE_SCENARIO("mooncake", ""),
     "{\"timestamp\": 0, \"input_length\": 92233720368547758070, \"output_length\": 3, "
     "\"hash_ids\": [1]}\n"},
    {"MooncakeNotJson", "run {bad} --out {out}", "aux.txt:2:", "workload.trace",
     TRACE_SCENARIO("mooncake", ""),
     "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 3, \"hash_ids\": [1]}\n{oops\n"},
    {"MooncakeDeepNesting", "run {bad} --out {out}", "aux.txt:1:", "workload.trace",
     TRACE_SCENARIO("mooncake", ""),
     "{\"timestamp\": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]], \"input_length\": 1}\n"},
    {"MooncakeNegativeTimestamp", "run {bad} --out {out}", "aux.txt:1:", "workload.trace",
     TRACE_SCENARIO("mooncake", ""),
     "{\"timestamp\": -5, \"input_length\": 10, \"output_length\": 3, \"hash_ids\": [1]}\n"},
    {"MooncakeHashIdsShort", "run {bad} --out {out}", "aux.txt:1:", "workload.trace",
     TRACE_SCENARIO("mooncake", ""),
     "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 3, \"hash_ids\": [1]}\n"},
    {"MooncakeTimeGoesBack", "run {bad} --out {out}", "aux.txt:2:", "workload.trace",
     TRACE_SCENARIO("mooncake", ""),
     "{\"timestamp\": 10, \"input_length\": 10, \"output_length\": 3, \"hash_ids\": [1]}\n"
     "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 3, \"hash_ids\": [1]}\n"},
    // Agentic traces: the session graph is checked whole before the run.
    {"AgenticSessionGraphCycle", "run {bad} --out {out}", "aux.txt:2:", "workload.trace",
     TRACE_SCENARIO("agentic", ""),
     "{\"session_id\": \"r\", \"timestamp\": 0, \"input_length\": 10, \"output_length\": 3, "
     "\"hash_ids\": [1]}\n"
     "{\"session_id\": \"a\", \"parent_session_id\": \"b\", \"branch_call\": 0, \"delay\": 0, "
     "\"input_length\": 10, \"output_length\": 3, \"hash_ids\": [1]}\n"
     "{\"session_id\": \"b\", \"parent_session_id\": \"a\", \"branch_call\": 0, \"delay\": 0, "
     "\"input_length\": 10, \"output_length\": 3, \"hash_ids\": [1]}\n"},
    {"AgenticParentNeverAppears", "run {bad} --out {out}", "aux.txt:2:", "workload.trace",
     TRACE_SCENARIO("agentic", ""),
     "{\"session_id\": \"r\", \"timestamp\": 0, \"input_length\": 10, \"output_length\": 3, "
     "\"hash_ids\": [1]}\n"
     "{\"session_id\": \"c\", \"parent_session_id\": \"ghost\", \"branch_call\": 0, "
     "\"delay\": 0, \"input_length\": 10, \"output_length\": 3, \"hash_ids\": [1]}\n"},
    {"AgenticNegativeToolGap", "run {bad} --out {out}", "aux.txt:2:", "workload.trace",
     TRACE_SCENARIO("agentic", ""),
     "{\"session_id\": \"r\", \"timestamp\": 0, \"input_length\": 10, \"output_length\": 3, "
     "\"hash_ids\": [1]}\n"
     "{\"session_id\": \"r\", \"delay\": -5, \"input_length\": 10, \"output_length\": 3, "
     "\"hash_ids\": [1]}\n"},
    {"AzureFebruary31", "run {bad} --out {out}", "aux.txt:3:", "workload.trace",
     TRACE_SCENARIO("azure", ""),
     "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-28 00:00:00.0,10,2\n"
     "2023-02-31 00:00:00.0,10,2\n"},
    {"AzureYearBeforeClock", "run {bad} --out {out}", "aux.txt:2:", "workload.trace",
     TRACE_SCENARIO("azure", ""),
     "TIMESTAMP,ContextTokens,GeneratedTokens\n1500-01-01 00:00:00.0,10,2\n"},
    {"AzureYearAfterClock", "run {bad} --out {out}", "aux.txt:2:", "workload.trace",
     TRACE_SCENARIO("azure", ""),
     "TIMESTAMP,ContextTokens,GeneratedTokens\n9999-12-31 23:59:59.0,10,2\n"},
    {"AzureRecordsCenturiesApart", "run {bad} --out {out}", "aux.txt:3:", "workload.trace",
     TRACE_SCENARIO("azure", ""),
     "TIMESTAMP,ContextTokens,GeneratedTokens\n1700-01-01 00:00:00.0,10,2\n"
     "2250-01-01 00:00:00.0,10,2\n"},
    // Found by fuzz_trace_azure: the gap of a record centuries before its
    // predecessor, for the message, overflowed int64_t nanoseconds.
    {"AzureRecordsCenturiesBackwards", "run {bad} --out {out}", "aux.txt:3:", "workload.trace",
     TRACE_SCENARIO("azure", ""),
     "TIMESTAMP,ContextTokens,GeneratedTokens\n2250-01-01 00:00:00.0,10,2\n"
     "1700-01-01 00:00:00.0,10,2\n"},
    {"AzureMissingColumn", "run {bad} --out {out}", "aux.txt:1:", "workload.trace",
     TRACE_SCENARIO("azure", ""), "TIMESTAMP,ContextTokens\n2023-01-01 00:00:00,1\n"},
    {"AzureZeroTokens", "run {bad} --out {out}", "aux.txt:2:", "workload.trace",
     TRACE_SCENARIO("azure", ""),
     "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-01-01 00:00:00.0,0,2\n"},
    {"PrefillDecodeTimeScaleWraps", "run {bad} --out {out}", "aux.txt:3:",
     "workload.trace.time_scale", TRACE_SCENARIO("prefill_decode_csv", ", time_scale: 1e6"),
     "arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,2\n1e8,10,2\n"},
    {"PrefillDecodeLoopWraps", "run {bad} --out {out}", "aux.txt:", "workload.trace.loop",
     TRACE_SCENARIO("prefill_decode_csv", ", loop: 1000000"),
     "arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,2\n9e8,10,2\n"},
    {"PrefillDecodeNotANumber", "run {bad} --out {out}", "aux.txt:2:", "workload.trace",
     TRACE_SCENARIO("prefill_decode_csv", ""),
     "arrived_at,num_prefill_tokens,num_decode_tokens\nsoon,10,2\n"},
    {"PrefillDecodeNegativeTime", "run {bad} --out {out}", "aux.txt:2:", "workload.trace",
     TRACE_SCENARIO("prefill_decode_csv", ""),
     "arrived_at,num_prefill_tokens,num_decode_tokens\n-1,10,2\n"},
    {"PrefillDecodeTooManyFields", "run {bad} --out {out}", "aux.txt:2:", "workload.trace",
     TRACE_SCENARIO("prefill_decode_csv", ""),
     "arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,2,9\n"},
    {"TraceNoHeader", "run {bad} --out {out}", "aux.txt:2:1", "workload.trace",
     TRACE_SCENARIO("prefill_decode_csv", ""), "\n\n"},
    {"TraceTimeScaleZero", "run {bad} --out {out}", "bad.yaml:9:", "workload.trace.time_scale",
     TRACE_SCENARIO("prefill_decode_csv", ", time_scale: 0"),
     "arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,1\n"},
    {"TraceFormatUnknown", "run {bad} --out {out}", "bad.yaml:9:", "workload.trace.format",
     TRACE_SCENARIO("sharegpt", ""), "x\n"},
    // ---- run: an empirical distribution file
    {"EmpiricalIsADirectory",
     "run {base} --out {out} --set 'workload.input_tokens={dist: empirical, path: adir}'",
     "workload.input_tokens.path", "adir' is not a regular file"},
    {"EmpiricalIsDevZero",
     "run {base} --out {out} --set 'workload.input_tokens={dist: empirical, path: /dev/zero}'",
     "--set workload.input_tokens",
     "workload.input_tokens.path: '/dev/zero' is not a regular file"},
    {"EmpiricalFileIsDevZeroInYaml", "run {bad} --out {out}",
     "bad.yaml:9:", "workload.input_tokens.path: '/dev/zero' is not a regular file",
     "name: e\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "workload:\n  kind: synthetic\n  requests: 2\n  arrival: {process: poisson, rate_per_s: 1}\n"
     "  input_tokens: {dist: empirical, path: /dev/zero}\n"
     "  output_tokens: {dist: constant, value: 4}\n"},
    {"AzureTraceIsDevZero", "run {bad} --out {out}", "bad.yaml:9:", "workload.trace.path",
     "name: tr\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 4096}\n"
     "workload:\n  kind: trace\n  trace: {format: azure, path: /dev/zero}\n"},
    {"PrefillDecodeTraceIsADirectory", "run {bad} --out {out}",
     "bad.yaml:9:", "workload.trace.path",
     "name: tr\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 4096}\n"
     "workload:\n  kind: trace\n  trace: {format: prefill_decode_csv, path: adir}\n"},
    // ---- run: model and device files that are not files
    {"ModelIsDevZero", "run {base} --out {out} --set model=/dev/zero", "--set model", "model"},
    {"ModelIsADirectory", "run {base} --out {out} --set model=./adir", "--set model", "model"},
    {"DeviceIsDevZero", "run {base} --out {out} --set device=/dev/zero", "--set device", "device"},
    {"DeviceIsADirectory", "run {base} --out {out} --set device=./adir", "--set device", "device"},
    {"HfConfigDuplicateKey", "run {bad} --out {out}", "aux.json:2:", "hidden_size",
     MODEL_SCENARIO("aux.json"), "{\"hidden_size\": 2048,\n\"hidden_size\": 4096}"},
    // ---- run --from: a metrics.json or scenario.resolved.yaml
    {"RunFromIsADirectory", "run --from {dir}/adir --out {out}", "adir", "not a regular file"},
    {"RunFromIsDevZero", "run --from /dev/zero --out {out}", "/dev/zero", "not a regular file"},
    {"RunFromMissing", "run --from {dir}/missing.json --out {out}", "missing.json", ""},
    // ---- output folders
    {"OutIsAFile", "run {base} --out {dir}/notes/keep.txt", "notes/keep.txt", "--out"},
    {"OutIsAUsersFolder", "run {base} --out {dir}/notes", "notes", ".kvsim"},
    // ---- compare
    {"CompareVaryNoEquals", "compare {base} --out {out} --vary kv_cache.block_size", "--vary",
     "vary"},
    {"CompareVaryBadValue", "compare {base} --out {out} --vary kv_cache.block_size=0,64",
     "kv_cache.block_size", "kv_cache.block_size"},
    {"CompareVaryUnknownKey", "compare {base} --out {out} --vary kv_cache.nosuch=1,2",
     "kv_cache.nosuch", "kv_cache.nosuch"},
    {"CompareSetBad", "compare {base} --out {out} --vary kv_cache.block_size=16,32 --set seed=x",
     "--set seed", "seed"},
    {"CompareMissingScenario", "compare {dir}/missing.yaml --out {out} --vary seed=1,2",
     "missing.yaml", "not found"},
    {"CompareNonUtf8Name", "compare {bad} --out {out} --vary seed=1,2", "bad.yaml:1:7", "name",
     "name: caf\xe9\n"},
    {"CompareNothingToVary", "compare {base} --out {out}", "--vary", "--variant"},
    {"CompareVariantNoLabel", "compare {base} --out {out} --variant 'kv_cache.block_size=32'",
     "--variant", "LABEL"},
    {"CompareVariantNotAnAssignment", "compare {base} --out {out} --variant 'a: block_size'",
     "--variant", "KEY=VALUE"},
    {"CompareVariantLabelTwice",
     "compare {base} --out {out} --variant 'a: seed=1' --variant 'a: seed=2'", "--variant",
     "twice"},
    {"CompareVariantBadValue", "compare {base} --out {out} --variant 'a: kv_cache.block_size=0'",
     "--set kv_cache.block_size", "kv_cache.block_size"},
    {"SetBothNamesOfOneKey",
     "run {base} --out {out} --set block_size=32 --set kv_cache.block_size=64", "--set block_size",
     "kv_cache.block_size"},
    // ---- chunk_lru's options (seed 003, CacheBlend)
    {"SetChunkAttentionUnknown",
     "run {base} --out {out} --set kv_cache.policy=chunk_lru --set kv_cache.chunk_attention=all",
     "--set kv_cache.chunk_attention", "system_prompt"},
    {"SetRecomputeRatioAboveOne",
     "run {base} --out {out} --set kv_cache.policy=chunk_lru --set kv_cache.recompute_ratio=1.5",
     "--set kv_cache.recompute_ratio", "[0, 1]"},
    {"SetRecomputeRatioOnPaged", "run {base} --out {out} --set kv_cache.recompute_ratio=0.1",
     "--set kv_cache.recompute_ratio", "chunk_lru"},
    {"SampledNumericsUnderAtb",
     "run {base} --out {out} --set kv_cache.layout=atb --set numerics.mode=sampled",
     "--set numerics.mode", "full"},
    // ---- numerics.reuse_quality
    {"ReuseQualityMissingCheckpoint",
     "run {base} --out {out} --set numerics.reuse_quality.checkpoint_path=nosuch.bin",
     "--set numerics.reuse_quality.checkpoint_path", "llama2.c checkpoint"},
    {"ReuseQualityWithoutCheckpoint",
     "run {base} --out {out} --set numerics.reuse_quality.requests=4", "numerics.reuse_quality",
     "checkpoint_path"},
    {"ReuseQualityRequestsZero",
     "run {base} --out {out} --set numerics.reuse_quality.checkpoint_path={aux} "
     "--set numerics.reuse_quality.requests=0",
     "--set numerics.reuse_quality.requests", "[1, 4096]", nullptr, "not a checkpoint"},
    {"ReuseQualityInACluster",
     "run {base} --out {out} --set cluster.groups.a.count=2 "
     "--set numerics.reuse_quality.checkpoint_path={aux}",
     "--set numerics.reuse_quality.checkpoint_path", "cluster", nullptr, "not a checkpoint"},
    // ---- cluster routers and their prefix indexes
    {"RouterWeightOutOfRange",
     "run {base} --out {out} --set cluster.groups.a.count=2 --set cluster.router.policy=weighted "
     "--set cluster.router.prefix_weight=500",
     "--set cluster.router.prefix_weight", "prefix_weight"},
    {"RouterIndexUnknownKind",
     "run {base} --out {out} --set cluster.groups.a.count=2 --set cluster.router.policy=kv_cost "
     "--set cluster.router.index.kind=oracle",
     "--set cluster.router.index.kind", "approximate, events, exact"},
    {"RouterIndexNegativeLag",
     "run {base} --out {out} --set cluster.groups.a.count=2 --set cluster.router.policy=kv_cost "
     "--set cluster.router.index.kind=events --set cluster.router.index.lag=-1ms",
     "--set cluster.router.index.lag", "lag"},
    // ---- connector presets (kv_tiers.preset): the known names, the preset's keys
    {"ConnectorPresetUnknown", "run {base} --out {out} --set kv_tiers.preset=lmcash",
     "--set kv_tiers.preset", "mooncake_store"},
    {"ConnectorPresetKeyMisspelledInFile", "run {bad} --out {out}", "bad.yaml:15",
     "tiers.dram.capacity",
     "name: cat\nseed: 5\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 2048}\n"
     "workload:\n  kind: synthetic\n  requests: 6\n  arrival: {process: poisson, rate_per_s: 20}\n"
     "  input_tokens: {dist: uniform, min: 64, max: 256}\n"
     "  output_tokens: {dist: uniform, min: 8, max: 32}\n"
     "kv_tiers:\n  preset: lmcache\n  tiers: {dram: {capcity: 1GB}}\n"},
    // The same for a cluster's pool preset: the misspelled key's line, the preset's keys.
    {"PoolPresetKeyMisspelledInFile", "run {bad} --out {out}", "bad.yaml:15",
     "staging_buffer, lookup_block_latency",
     "name: cat\nseed: 5\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64, prefix_caching: true}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 2048}\n"
     "workload:\n  kind: synthetic\n  requests: 6\n  arrival: {process: poisson, rate_per_s: 20}\n"
     "  input_tokens: {dist: uniform, min: 64, max: 256}\n"
     "  output_tokens: {dist: uniform, min: 8, max: 32}\n"
     "cluster:\n  groups: {a: {count: 2}}\n"
     "  global_pool: {preset: ascend_store, capacity: 1TB, stagin_buffer: 1GiB}\n"},
    // ---- links instances share (cluster.links, the via of a movement)
    {"LinkBandwidthZero",
     "run {base} --out {out} --set cluster.groups.a.count=2 "
     "--set cluster.links.node_nic.bandwidth=0",
     "--set cluster.links.node_nic.bandwidth", "bandwidth"},
    {"LinkBandwidthNegative",
     "run {base} --out {out} --set cluster.groups.a.count=2 "
     "--set cluster.links.pool_servers.bandwidth=-5GB/s",
     "--set cluster.links.pool_servers.bandwidth", "bandwidth"},
    {"LinkKindUnknownInFile", "run {bad} --out {out}", "bad.yaml:15", "node_nics",
     "name: cat\nseed: 5\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 2048}\n"
     "workload:\n  kind: synthetic\n  requests: 6\n  arrival: {process: poisson, rate_per_s: 20}\n"
     "  input_tokens: {dist: uniform, min: 64, max: 256}\n"
     "  output_tokens: {dist: uniform, min: 8, max: 32}\n"
     "cluster:\n  links:\n    node_nics: {bandwidth: 25GB/s}\n  groups: {a: {count: 2}}\n"},
    {"LinkViaUndeclaredInFile", "run {bad} --out {out}", "bad.yaml:14", "node_nic",
     "name: cat\nseed: 5\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 2048}\n"
     "workload:\n  kind: synthetic\n  requests: 6\n  arrival: {process: poisson, rate_per_s: 20}\n"
     "  input_tokens: {dist: uniform, min: 64, max: 256}\n"
     "  output_tokens: {dist: uniform, min: 8, max: 32}\n"
     "cluster:\n  global_pool: {capacity: 1TB, via: [node_nic]}\n  groups: {a: {count: 2}}\n"},
    {"LinkTheDeviceFileLacksInFile", "run {bad} --out {out}", "bad.yaml:14",
     "network_link_bandwidth",
     "name: cat\nseed: 5\ndevice: ascend-910b3\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 2048}\n"
     "workload:\n  kind: synthetic\n  requests: 6\n  arrival: {process: poisson, rate_per_s: 20}\n"
     "  input_tokens: {dist: uniform, min: 64, max: 256}\n"
     "  output_tokens: {dist: uniform, min: 8, max: 32}\n"
     "cluster:\n  global_pool: {capacity: 1TB, link: roce}\n  groups: {a: {count: 2}}\n"},
    {"StagingBufferBelowOneBlockInFile", "run {bad} --out {out}", "bad.yaml:15",
     "kv_tiers.tiers[0].staging_buffer",
     "name: cat\nseed: 5\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 2048}\n"
     "workload:\n  kind: synthetic\n  requests: 6\n  arrival: {process: poisson, rate_per_s: 20}\n"
     "  input_tokens: {dist: uniform, min: 64, max: 256}\n"
     "  output_tokens: {dist: uniform, min: 8, max: 32}\n"
     "kv_tiers:\n  tiers:\n"
     "    - {name: dram, capacity: 1GiB, read_bandwidth: 1GB/s, write_bandwidth: 1GB/s, "
     "write_mode: async, staging_buffer: 4KiB}\n"},
    // A tier's own link: zero or negative bandwidth, named at its key.
    {"TierReadBandwidthZero",
     "run {base} --out {out} --set 'kv_tiers.tiers=[{name: dram, capacity: 1GiB, "
     "read_bandwidth: 0GB/s, write_bandwidth: 1GB/s}]'",
     "--set kv_tiers.tiers", "kv_tiers.tiers[0].read_bandwidth"},
    {"TierWriteBandwidthNegativeInFile", "run {bad} --out {out}", "bad.yaml:15:76",
     "kv_tiers.tiers[0].write_bandwidth",
     "name: cat\nseed: 5\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 2048}\n"
     "workload:\n  kind: synthetic\n  requests: 6\n  arrival: {process: poisson, rate_per_s: 20}\n"
     "  input_tokens: {dist: uniform, min: 64, max: 256}\n"
     "  output_tokens: {dist: uniform, min: 8, max: 32}\n"
     "kv_tiers:\n  tiers:\n"
     "    - {name: dram, capacity: 1GiB, read_bandwidth: 1GB/s, write_bandwidth: -1GB/s}\n"},
    // The PD transfer's link a device file gives no figures for.
    {"TransferLinkTheDeviceFileLacksInFile", "run {bad} --out {out}", "bad.yaml:16",
     "network_link_bandwidth",
     "name: cat\nseed: 5\ndevice: ascend-910b3\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 2048}\n"
     "workload:\n  kind: synthetic\n  requests: 6\n  arrival: {process: poisson, rate_per_s: 20}\n"
     "  input_tokens: {dist: uniform, min: 64, max: 256}\n"
     "  output_tokens: {dist: uniform, min: 8, max: 32}\n"
     "cluster:\n  transfer: {link: roce}\n  groups:\n    p: {role: prefill, count: 1}\n"
     "    d: {role: decode, count: 1}\n"},
    // A cluster group's own connector preset, a key misspelled: the group's
    // path at its line, the preset's keys.
    {"GroupConnectorPresetKeyMisspelledInFile", "run {bad} --out {out}", "bad.yaml:15:62",
     "cluster.groups.a.kv_tiers.tiers.dram.capcity",
     "name: cat\nseed: 5\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 2048}\n"
     "workload:\n  kind: synthetic\n  requests: 6\n  arrival: {process: poisson, rate_per_s: 20}\n"
     "  input_tokens: {dist: uniform, min: 64, max: 256}\n"
     "  output_tokens: {dist: uniform, min: 8, max: 32}\n"
     "cluster:\n  groups:\n"
     "    a: {count: 2, kv_tiers: {preset: lmcache, tiers: {dram: {capcity: 1GB}}}}\n"},
    {"PoolStagingBufferBelowOneBlock",
     "run {base} --out {out} --set cluster.global_pool.capacity=1TB --set "
     "cluster.global_pool.write_mode=async --set cluster.global_pool.staging_buffer=1KiB --set "
     "cluster.groups.a.count=2",
     "--set cluster.global_pool.staging_buffer", "hold no block"},
    // ---- async tier loads (kv_tiers.load_overlap: async): the per-step cap
    {"AsyncLoadCapZeroInFile", "run {bad} --out {out}", "bad.yaml:15:29",
     "kv_tiers.max_load_tokens_per_step",
     "name: cat\nseed: 5\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 2048}\n"
     "workload:\n  kind: synthetic\n  requests: 6\n  arrival: {process: poisson, rate_per_s: 20}\n"
     "  input_tokens: {dist: uniform, min: 64, max: 256}\n"
     "  output_tokens: {dist: uniform, min: 8, max: 32}\n"
     "kv_tiers:\n  load_overlap: async\n  max_load_tokens_per_step: 0\n  tiers:\n"
     "    - {name: dram, capacity: 1GiB, read_bandwidth: 1GB/s, write_bandwidth: 1GB/s}\n"},
    {"AsyncLoadCapNegative",
     "run {base} --out {out} --set kv_tiers.load_overlap=async --set "
     "kv_tiers.max_load_tokens_per_step=-64 --set 'kv_tiers.tiers=[{name: dram, "
     "capacity: 1GiB, read_bandwidth: 1GB/s, write_bandwidth: 1GB/s}]'",
     "--set kv_tiers.max_load_tokens_per_step", "max_load_tokens_per_step"},
    {"AsyncLoadCapWithoutAsyncLoads",
     "run {base} --out {out} --set kv_tiers.max_load_tokens_per_step=512 --set "
     "'kv_tiers.tiers=[{name: dram, capacity: 1GiB, read_bandwidth: 1GB/s, "
     "write_bandwidth: 1GB/s}]'",
     "--set kv_tiers.max_load_tokens_per_step", "load_overlap: async"},
    {"LoadOverlapMisspelled",
     "run {base} --out {out} --set kv_tiers.load_overlap=asynch --set "
     "'kv_tiers.tiers=[{name: dram, capacity: 1GiB, read_bandwidth: 1GB/s, "
     "write_bandwidth: 1GB/s}]'",
     "--set kv_tiers.load_overlap", "none, layerwise, async"},
    // ---- a tier staged through host DRAM (via_host)
    {"ViaHostOnDram",
     "run {base} --out {out} --set 'kv_tiers.tiers=[{name: dram, capacity: 1GiB, "
     "read_bandwidth: 1GB/s, write_bandwidth: 1GB/s, via_host: true}]'",
     "--set kv_tiers.tiers", "via_host"},
    {"ViaHostOnADeviceWithoutAHostLink", "run {bad} --out {out}", "bad.yaml:14",
     "kv_tiers.tiers[0].via_host",
     "name: x\nseed: 5\ndevice: xeon-platinum-8480\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "workload:\n  kind: synthetic\n  requests: 6\n  arrival: {process: poisson, rate_per_s: 20}\n"
     "  input_tokens: {dist: uniform, min: 64, max: 256}\n"
     "  output_tokens: {dist: uniform, min: 8, max: 32}\n"
     "kv_tiers:\n  tiers:\n"
     "    - {name: ssd, capacity: 1GiB, read_bandwidth: 1GB/s, write_bandwidth: 1GB/s, "
     "via_host: true}\n"},
    {"TierWriteModeMisspelled",
     "run {base} --out {out} --set 'kv_tiers.tiers=[{name: dram, "
     "capacity: 1GiB, read_bandwidth: 1GB/s, write_bandwidth: 1GB/s, write_mode: sinc}]'",
     "--set kv_tiers.tiers", "write_mode"},
    {"RouterTemperatureNegativeInFile", "run {bad} --out {out}", "bad.yaml:14", "temperature",
     "name: cat\nseed: 5\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: paged, block_size: 64}\n"
     "scheduler: {max_num_seqs: 16, max_batched_tokens: 2048}\n"
     "workload:\n  kind: synthetic\n  requests: 6\n  arrival: {process: poisson, rate_per_s: 20}\n"
     "  input_tokens: {dist: uniform, min: 64, max: 256}\n"
     "  output_tokens: {dist: uniform, min: 8, max: 32}\n"
     "cluster:\n  router: {policy: kv_cost, temperature: -1}\n  groups: {a: {count: 2}}\n"},
    {"ReuseQualityNotACheckpoint",
     "run {base} --out {out} --set numerics.reuse_quality.checkpoint_path={aux}", "aux.txt",
     "checkpoint", nullptr, "not a checkpoint"},
    // ---- capacity
    {"CapacityContextHuge",
     "capacity --device ascend-910b2 --model llama-3-8b --out {out} "
     "--context 9000000000000000000",
     "--context", "context"},
    {"CapacityContextHugeExponent",
     "capacity --device ascend-910b2 --model llama-3-8b --out {out} --context 9e18", "--context",
     "context"},
    {"CapacityWorkloadIsDevZero",
     "capacity --device ascend-910b2 --model llama-3-8b --out {out} "
     "--slo ttft_p99_ms=1000,tpot_p99_ms=100 --workload /dev/zero",
     "/dev/zero", "not a regular file"},
    {"CapacityModelIsDevZero", "capacity --device ascend-910b2 --model /dev/zero --out {out}",
     "--model", "/dev/zero"},
    {"CapacityDeviceIsADirectory", "capacity --device {dir}/adir --model llama-3-8b --out {out}",
     "--device", "adir"},
    {"CapacityContextZero",
     "capacity --device ascend-910b2 --model llama-3-8b --out {out} "
     "--context 0",
     "--context", "context"},
    {"CapacityContextNegative",
     "capacity --device ascend-910b2 --model llama-3-8b --out {out} "
     "--context -5",
     "--context", "context"},
    {"CapacityContextText",
     "capacity --device ascend-910b2 --model llama-3-8b --out {out} "
     "--context lots",
     "--context", "context"},
    {"CapacityKvDtype",
     "capacity --device ascend-910b2 --model llama-3-8b --out {out} "
     "--kv-dtype fp7",
     "--kv-dtype", "fp7"},
    {"CapacityTensorParallel",
     "capacity --device ascend-910b2 --model llama-3-8b --out {out} "
     "--tp 3",
     "--tp", "tp"},
    {"CapacityDeviceUnknown", "capacity --device nope --model llama-3-8b --out {out}", "--device",
     "nope"},
    {"CapacityModelUnknown", "capacity --device ascend-910b2 --model nope --out {out}", "--model",
     "nope"},
    {"CapacityModelHuge", "capacity --device ascend-910b2 --model {aux} --out {out}",
     "aux.txt:", "num_hidden_layers", nullptr, kHugeHfConfig},
    {"CapacityBlockSizeZero",
     "capacity --device ascend-910b2 --model llama-3-8b --out {out} "
     "--block-size 0",
     "--block-size", "block-size"},
    {"CapacityMemoryFraction",
     "capacity --device ascend-910b2 --model llama-3-8b --out {out} "
     "--memory-fraction 2",
     "--memory-fraction", "memory-fraction"},
    {"CapacitySloBad",
     "capacity --device ascend-910b2 --model llama-3-8b --out {out} "
     "--slo fast --workload {base}",
     "--slo", "slo"},
    // ---- calibrate
    {"CalibrateMissing", "calibrate {dir}/missing.csv --out {out}", "missing.csv", "measurements"},
    {"CalibrateIsADirectory", "calibrate {dir}/adir --out {out}", "adir:", "measurements"},
    {"CalibrateIsDevZero", "calibrate /dev/zero --out {out}", "/dev/zero:", "not a regular file"},
    {"CalibrateEmpty", "calibrate {aux} --out {out}", "aux.txt:1:1", "header", nullptr, ""},
    {"CalibrateBadHeader", "calibrate {aux} --out {out}", "aux.txt:1:", "header", nullptr,
     "a,b,c\n1,2,3\n"},
    {"CalibrateUnterminatedQuote", "calibrate {aux} --out {out}", "aux.txt:2:", "", nullptr,
     "id,device,model,weights,kv_dtype,context,batch,input_tokens,output_tokens,metric,value,"
     "unit,software,source\nX,ascend-910b2,Qwen3-8B,bf16,fp16,2048,1,128,1,tpot,\"45,ms,s,src\n"},
    {"CalibrateValueNotNumber", "calibrate {aux} --out {out}", "aux.txt:2:", "value", nullptr,
     "id,device,model,weights,kv_dtype,context,batch,input_tokens,output_tokens,metric,value,"
     "unit,software,source\nX,ascend-910b2,Qwen3-8B,bf16,fp16,2048,1,128,1,tpot,fast,ms,s,src\n"},
    // ---- check
    {"CheckMissing", "check {dir}/missing.json --baseline {aux}", "missing.json", "", nullptr,
     "{}"},
    {"CheckNotJson", "check {aux} --baseline {aux}", "aux.txt:1:", "", nullptr, "{oops"},
    {"CheckNotAnObject", "check {aux} --baseline {aux}", "aux.txt", "not a JSON object", nullptr,
     "[1, 2]"},
    {"CheckDeepNesting", "check {aux} --baseline {aux}", "aux.txt", "nested", nullptr,
     "{\"a\": "
     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]"
     "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"},
    // Found by fuzz_check_json: a number beyond a double was exit 3.
    {"CheckNumberBeyondDouble", "check {aux} --baseline {aux}", "aux.txt:2:", "1e400", nullptr,
     "{\"a\": 1,\n \"b\": 1e400}"},
    {"CheckBaselineIsADirectory", "check {aux} --baseline {dir}/adir", "adir", "not a regular file",
     nullptr, "{\"a\": 1}"},
    {"CheckIsDevZero", "check /dev/zero --baseline {aux}", "/dev/zero", "not a regular file",
     nullptr, "{\"a\": 1}"},
    {"CheckNegativeTolerance", "check {aux} --baseline {aux} --rel-tol -1", "--rel-tol", "rel-tol",
     nullptr, "{\"a\": 1}"},
    {"CheckWronglyTypedMetric", "check {aux} --baseline {dir}/typed.json", "aux.txt",
     "a: is object", nullptr, "{\"a\": {\"b\": 1}}"},
    {"CheckIsADirectory", "check {dir}/adir --baseline {aux}", "adir", "not a regular file",
     nullptr, "{\"a\": 1}"},
    // ---- validate
    {"ValidateMissing", "validate {dir}/missing.yaml", "missing.yaml", "not found"},
    {"ValidateDirectory", "validate {dir}/adir", "adir", "not a regular file"},
    {"ValidateDevZero", "validate /dev/zero", "/dev/zero", "not a regular file"},
    {"ValidateDuplicateKey", "validate {bad}", "bad.yaml:3:1", "seed",
     "name: d\nseed: 1\nseed: 2\n"},
    {"ValidateNonUtf8", "validate {bad}", "bad.yaml:2:14", "description",
     "name: x\ndescription: \xff\n"},
    {"ValidateUnknownKey", "validate {bad}", "bad.yaml:13:1", "kv_cach", nullptr},
    // ---- hitcurve
    {"HitcurveCapacityText", "hitcurve {base} --out {out} --capacity-tokens lots",
     "--capacity-tokens", "capacity"},
    {"HitcurveCapacityZero", "hitcurve {base} --out {out} --capacity-tokens 0", "--capacity-tokens",
     "capacity"},
    {"HitcurveSetBad", "hitcurve {base} --out {out} --capacity-tokens 1000 --set seed=x",
     "--set seed", "seed"},
    {"HitcurveScenarioIsDevZero", "hitcurve /dev/zero --out {out} --capacity-tokens 1000",
     "/dev/zero", "not a regular file"},
    // ---- compare: the scenario is not a file
    {"CompareScenarioIsDevZero", "compare /dev/zero --out {out} --vary seed=1,2", "/dev/zero",
     "not a regular file"},
    // ---- sweep and search
    {"SweepMissing", "sweep {dir}/missing.yaml --out {out}", "missing.yaml", "not found"},
    {"SweepIsDevZero", "sweep /dev/zero --out {out}", "/dev/zero", "not a regular file"},
    {"SweepIsADirectory", "sweep {dir}/adir --out {out}", "adir", "not a regular file"},
    {"SearchIsDevZero", "search /dev/zero --out {out}", "/dev/zero", "not a regular file"},
    {"SweepUnknownGridKey", "sweep {bad} --out {out}", "bad.yaml:", "kv_cache.nosuch",
     "name: s\nbase: default\ngrid:\n  kv_cache.nosuch: [1, 2]\nmetrics: [requests.completed]\n"},
    {"SweepEmptyGrid", "sweep {bad} --out {out}", "bad.yaml:", "grid",
     "name: s\nbase: default\ngrid: {}\nmetrics: [requests.completed]\n"},
    {"SweepBaseMissing", "sweep {bad} --out {out}", "bad.yaml:2:", "base",
     "name: s\nbase: no-such-scenario\ngrid:\n  seed: [1, 2]\nmetrics: [requests.completed]\n"},
    {"SweepDuplicateKey", "sweep {bad} --out {out}", "bad.yaml:3:1", "name",
     "name: s\nbase: default\nname: t\n"},
    {"SweepJobsZero", "sweep {bad} --out {out} --jobs 0", "--jobs", "jobs",
     "name: s\nbase: default\ngrid:\n  seed: [1, 2]\n"},
    {"SearchMissingSection", "search {bad} --out {out}", "bad.yaml", "search",
     "name: s\nbase: default\ngrid:\n  seed: [1, 2]\nmetrics: [requests.completed]\n"},
    // ---- generate
    {"GenerateCheckpointMissing", "generate --checkpoint {dir}/missing.bin --tokenizer {aux}",
     "missing.bin", "not found", nullptr, "x"},
    {"GenerateCheckpointDirectory", "generate --checkpoint {dir}/adir --tokenizer {aux}", "adir",
     "not a regular file", nullptr, "x"},
    {"GenerateCheckpointDevZero", "generate --checkpoint /dev/zero --tokenizer {aux}", "/dev/zero",
     "not a regular file", nullptr, "x"},
    {"GenerateTokenizerDevZero", "generate --checkpoint {aux} --tokenizer /dev/zero", "/dev/zero",
     "not a regular file", nullptr, "x"},
    {"GenerateTokenizerDirectory", "generate --checkpoint {aux} --tokenizer {dir}/adir", "adir",
     "not a regular file", nullptr, "x"},
    {"GenerateCheckpointBadHeader", "generate --checkpoint {aux} --tokenizer {aux}", "aux.txt",
     "bad header", nullptr, "0123456789012345678901234567"},
    {"GenerateCheckpointHugeHeader", "generate --checkpoint {aux} --tokenizer {aux}", "aux.txt",
     "needs", nullptr,
     // dim 65536, hidden 2^30, 1024 layers, 256 heads, 256 KV heads, vocab 2^30, seq 2^30
     "\x00\x00\x01\x00\x00\x00\x00\x40\x00\x04\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00"
     "\x00\x00\x00\x40\x00\x00\x00\x40",
     2, 28},
    // Found by fuzz_llama2_checkpoint: vocab_size INT32_MIN was negated (signed overflow).
    {"GenerateCheckpointVocabMin", "generate --checkpoint {aux} --tokenizer {aux}", "aux.txt",
     "bad header", nullptr,
     "\x40\x00\x00\x00\x00\x05\x00\x00\x04\x00\x00\x00\x00\x00\x02\x00\x00\x00\x02\x00"
     "\x00\x00\x00\x80\x08\x00\x00\x04\x00\x00\x00\x00",
     2, 32},
    {"GenerateStepsZero", "generate --steps 0", "--steps", "steps"},
    {"GenerateCtxSizeOne", "generate --ctx-size 1 --policy smart_mask", "--ctx-size", "ctx-size"},
    {"GenerateModelUnknown", "generate --model llama-3-8b", "--model", "model"},
    {"GenerateLlamaBehaviourUnknown", "generate --policy llama_cells --llama-behaviour b9999",
     "--llama-behaviour", "seed_2024"},
    // ---- llama_cells: a llama.cpp behaviour that does not exist, the allowed names listed
    {"LlamaCellsBehaviourUnknown", "run {bad} --out {out}", "bad.yaml:5:", "seed_2024, current",
     "name: lb\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: llama_cells, ctx_size: 4096, behaviour: newest}\n"
     "scheduler: {max_num_seqs: 4}\n"
     "workload:\n  kind: synthetic\n  requests: 2\n  arrival: {process: poisson, rate_per_s: 1}\n"
     "  input_tokens: {dist: constant, value: 16}\n  output_tokens: {dist: constant, value: 4}\n"},
    {"LlamaCellsCurrentDefragThold", "run {bad} --out {out}",
     "bad.yaml:5:", "kv_cache.defrag_thold",
     "name: lb\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: llama_cells, ctx_size: 4096, behaviour: current, defrag_thold: 0.1}\n"
     "scheduler: {max_num_seqs: 4}\n"
     "workload:\n  kind: synthetic\n  requests: 2\n  arrival: {process: poisson, rate_per_s: 1}\n"
     "  input_tokens: {dist: constant, value: 16}\n  output_tokens: {dist: constant, value: 4}\n"},
    // ---- llama-server's slots and host prompt cache (llama_cells under the serving engine)
    {"LlamaServerNoSlots", "run {bad} --out {out}", "bad.yaml:5:", "kv_cache.n_parallel",
     "name: ls\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: llama_cells, ctx_size: 4096, n_parallel: 0}\n"
     "workload:\n  kind: synthetic\n  requests: 2\n  arrival: {process: poisson, rate_per_s: 1}\n"
     "  input_tokens: {dist: constant, value: 16}\n  output_tokens: {dist: constant, value: 4}\n"},
    {"LlamaServerSlotsAboveTheCells", "run {bad} --out {out}",
     "bad.yaml:5:", "kv_cache.n_parallel: 32 slots, but the cache has 16 cells",
     "name: ls\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: llama_cells, ctx_size: 16, n_parallel: 32}\n"
     "workload:\n  kind: synthetic\n  requests: 2\n  arrival: {process: poisson, rate_per_s: 1}\n"
     "  input_tokens: {dist: constant, value: 4}\n  output_tokens: {dist: constant, value: 2}\n"},
    {"LlamaServerCacheRamAboveTheHost", "run {bad} --out {out}", "bad.yaml:5:",
     "kv_cache.cache_ram: 2.00 TiB of host prompt cache, but the host of ascend-910b2 has 1.00 TiB",
     "name: ls\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: llama_cells, ctx_size: 4096, cache_ram: 2TiB}\n"
     "workload:\n  kind: synthetic\n  requests: 2\n  arrival: {process: poisson, rate_per_s: 1}\n"
     "  input_tokens: {dist: constant, value: 16}\n  output_tokens: {dist: constant, value: 4}\n"},
    // ---- llama.cpp backends a device family offers, and the host CPU they need
    {"LlamaBackendTheFamilyDoesNotOffer", "run {bad} --out {out}", "bad.yaml:5:",
     "kv_cache.backend: llama.cpp has no hexagon backend for ascend-910b2 (kind accelerator)",
     "name: lb\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: llama_cells, ctx_size: 4096, backend: hexagon}\n"
     "workload:\n  kind: synthetic\n  requests: 2\n  arrival: {process: poisson, rate_per_s: 1}\n"
     "  input_tokens: {dist: constant, value: 16}\n  output_tokens: {dist: constant, value: 4}\n"},
    {"LlamaBackendNotABackend", "run {bad} --out {out}",
     "bad.yaml:5:", "auto, cpu, cann, cuda, hexagon",
     "name: lb\nseed: 1\ndevice: ascend-910b2\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: llama_cells, ctx_size: 4096, backend: metal}\n"
     "workload:\n  kind: synthetic\n  requests: 2\n  arrival: {process: poisson, rate_per_s: 1}\n"
     "  input_tokens: {dist: constant, value: 16}\n  output_tokens: {dist: constant, value: 4}\n"},
    {"LlamaHostLayersWithoutAHost", "run {bad} --out {out}", "bad.yaml:5:",
     "kv_cache.n_gpu_layers: cann leaves 4 of 16 layers to the host CPU, but device ascend-910b3 "
     "names no `host`",
     "name: lb\nseed: 1\ndevice: ascend-910b3\nmodel: llama-3.2-1b\n"
     "kv_cache: {policy: llama_cells, ctx_size: 4096, n_gpu_layers: 12}\n"
     "workload:\n  kind: synthetic\n  requests: 2\n  arrival: {process: poisson, rate_per_s: 1}\n"
     "  input_tokens: {dist: constant, value: 16}\n  output_tokens: {dist: constant, value: 4}\n"},
    // ---- GPU devices: formats and fabrics a part lacks, node sizes it does not allow
    {"Fp8WeightsOnAnA100",
     "run {base} --out {out} --set device=a100-sxm4 --set model=llama-3.1-8b-fp8", "--set model",
     "matrix_fp8"},
    {"Fp8KvOnAnA100", "run {base} --out {out} --set device=a100-sxm4 --set kv_cache.dtype=fp8",
     "kv_cache.dtype", "matrix_fp8"},
    {"Fp8KvOnA910b2", "run {base} --out {out} --set kv_cache.dtype=fp8_e5m2", "kv_cache.dtype",
     "matrix_fp8"},
    {"Fp4WeightsOnAnH100",
     "run {base} --out {out} --set device=h100-sxm5 --set model=llama-3.1-8b-fp4", "--set model",
     "matrix_fp4"},
    {"TensorSixteenOnAnH100Node",
     "run {base} --out {out} --set device=h100-sxm5 --set parallel.tensor=16", "parallel.tensor",
     "1..8"},
    {"NvlinkOnAPcieOnlyPart", "validate {bad}", "bad.yaml:", "device_link_bandwidth",
     "name: h100-pcie\nkind: accelerator\n"
     "memory: {value: 80GB, source: \"V: x\"}\n"
     "memory_bandwidth: {value: 2TB/s, source: \"V: x\"}\n"
     "matrix_fp16: {value: 756TFLOPS, source: \"V: x\"}\n"
     "matrix_int8: {value: 1513TOPS, source: \"V: x\"}\n"
     "vector_fp16: {value: 102TFLOPS, source: \"V: x\"}\n"
     "device_link_fabric: pcie\n"
     "device_link_bandwidth: {value: 450GB/s, source: \"V: NVLink's figure\"}\n"
     "device_link_latency: {value: 10us, source: \"A: x\"}\n"
     "host_link_bandwidth: {value: 64GB/s, source: \"D: x\"}\n"
     "kernel_launch: {value: 3us, source: \"A: x\"}\n"
     "step_overhead: {value: 1ms, source: \"A: x\"}\n"
     "max_tensor_parallel: {value: 8, source: \"A: x\"}\n"
     "efficiency:\n"
     "  gemm: {compute: {value: 0.7, source: \"A\"}, memory: {value: 0.8, source: \"A\"}}\n"
     "  attention: {compute: {value: 0.5, source: \"A\"}, memory: {value: 0.7, source: \"A\"}}\n"
     "  elementwise: {compute: {value: 0.5, source: \"A\"}, memory: {value: 0.7, source: \"A\"}}\n"
     "  transfer: {compute: {value: 1.0, source: \"A\"}, memory: {value: 0.8, source: \"A\"}}\n"
     "  collective: {compute: {value: 0.5, source: \"A\"}, memory: {value: 0.7, source: \"A\"}}\n"},
    {"CalibrateHoldOutUnknownDevice", "calibrate {aux} --hold-out h999 --out {out}", "--hold-out",
     "h999", nullptr,
     "id,device,model,metric,value,unit\nr1,a100-sxm4 "
     "x1,Llama-2-7B,output_throughput,5,tokens/s\n"},
    {"CalibrateUnknownArrival", "calibrate {aux} --out {out}", "aux.txt:2", "arrival", nullptr,
     "id,device,model,metric,value,unit,arrival\nr1,a100-sxm4 x1,Llama-2-7B,output_throughput,5,"
     "tokens/s,burst\n"},
    {"CalibrateUnknownSpeculativeMethod", "calibrate {aux} --out {out}",
     "aux.txt:2:", "speculative_method", nullptr,
     "id,device,model,metric,value,unit,speculative_method,num_speculative_tokens,acceptance\n"
     "r1,ascend-910b2,Qwen3-8B,decode_rate,5,tokens/s,medusa,2,0.5\n"},
    {"CalibrateAcceptanceAboveOne", "calibrate {aux} --out {out}", "aux.txt:2:", "acceptance",
     nullptr,
     "id,device,model,metric,value,unit,speculative_method,num_speculative_tokens,acceptance\n"
     "r1,ascend-910b2,Qwen3-8B,decode_rate,5,tokens/s,eagle3,2,1.5\n"},
    {"CalibrateSpeculationWithoutK", "calibrate {aux} --out {out}",
     "aux.txt:2:", "speculative_method", nullptr,
     "id,device,model,metric,value,unit,speculative_method,acceptance\n"
     "r1,ascend-910b2,Qwen3-8B,decode_rate,5,tokens/s,eagle3,0.5\n"},
    {"CalibrateLengthsFileMissing", "calibrate {aux} --out {out}", "aux.txt:2:", "lengths", nullptr,
     "id,device,model,metric,value,unit,lengths\n"
     "r1,h100-sxm5,Llama-3.1-8B,output_throughput,5,tokens/s,no-such-lengths.csv\n"},
    {"CalibrateLengthsBesideInputTokens", "calibrate {aux} --out {out}",
     "aux.txt:2:", "input_tokens", nullptr,
     "id,device,model,metric,value,unit,input_tokens,lengths\n"
     "r1,h100-sxm5,Llama-3.1-8B,output_throughput,5,tokens/s,128,no-such-lengths.csv\n"},
    {"CalibratePipelineZero", "calibrate {aux} --out {out}", "aux.txt:2:", "pipeline", nullptr,
     "id,device,model,metric,value,unit,pipeline\n"
     "r1,ascend-910b2,Qwen3-8B,decode_rate,5,tokens/s,0\n"},
    // ---- list and describe
    {"ListUnknownKind", "list nothing", "what", "nothing"},
    {"DescribeUnknown", "describe no-such-component", "describe", "no-such-component"},
};

class BadInputCatalogue : public testing::TempFolderTest,
                          public ::testing::WithParamInterface<BadInput> {
 protected:
  // Every file under the test folder with its contents: what must not move.
  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      const std::string rel = fs::relative(e.path(), dir_).string();
      files[rel] = e.is_regular_file() ? read(e.path().string()) : std::string("<dir>");
    }
    return files;
  }
  std::string expand(std::string s) const {
    const std::map<std::string, std::string> vars = {{"{dir}", dir_.string()},
                                                     {"{base}", path("base.yaml")},
                                                     {"{bad}", path("bad.yaml")},
                                                     {"{aux}", path("aux.txt")},
                                                     {"{out}", path("out")}};
    for (const auto& [k, v] : vars)
      for (size_t at = s.find(k); at != std::string::npos; at = s.find(k, at + v.size()))
        s.replace(at, k.size(), v);
    return s;
  }
};

TEST_P(BadInputCatalogue, ExitsTwoNamingWhereAndWhatAndTouchesNothing) {
  const BadInput& c = GetParam();
  write("base.yaml", kBase);
  // A scenario with a misspelt key on line 13 (rows that expect bad.yaml:13:1).
  write("bad.yaml", c.bad_text ? c.bad_text : std::string(kBase) + "kv_cach: {}\n");
  if (c.aux_text) {
    // The same text under the names a model file may have.
    const std::string text = c.aux_size ? std::string(c.aux_text, c.aux_size) : c.aux_text;
    for (const char* name : {"aux.txt", "aux.json", "aux.yaml"}) write(name, text);
  }
  write("typed.json", "{\"a\": 5}");
  fs::create_directories(path("adir"));
  fs::create_directories(path("notes"));
  write("notes/keep.txt", "my notes\n");
  // A script run by bash: $'...' writes a byte that is not UTF-8 on the
  // command line; the script is part of the folder before and after.
  const std::string command =
      "cd " + dir_.string() + " && " + std::string(KVSIM_BINARY) + " " + expand(c.args);
  write("command.sh", command + "\n");
  const auto before = snapshot();
  const auto r = testing::run_command("bash " + path("command.sh") + " < /dev/null");
  EXPECT_EQ(r.exit_code, c.exit_code) << command << "\n" << r.output;
  EXPECT_NE(r.output.find(c.where), std::string::npos) << "location '" << c.where << "' in\n"
                                                       << r.output;
  EXPECT_NE(r.output.find(c.key), std::string::npos) << "key '" << c.key << "' in\n" << r.output;
  EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
  EXPECT_EQ(snapshot(), before) << "the folder changed: " << command;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInputCatalogue, ::testing::ValuesIn(kCatalogue),
                         [](const ::testing::TestParamInfo<BadInput>& row) {
                           return std::string(row.param.name);
                         });

TEST(BadInputCatalogueSize, HoldsAtLeastAHundredInputs) {
  EXPECT_GE(std::size(kCatalogue), 100u);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
