// kvsim capacity --device D[,D] --model M[,M] [--context N,...] [--kv-dtype fp16,int8]
//                [--block-size B] [--memory-fraction F] [--tp N,...] [--ep N,...] [--pp N,...]
//                [--out DIR]
//                [--policy paged|chunk_lru --main-pool-fraction F --chunk-pool-fraction F]
//                [--policy llama_cells --kv-dtype f16,q8_0,q4_0]
//                [--slo ttft_p99_ms=X,tpot_p99_ms=Y --workload SCENARIO.yaml [--set K=V]...]
// The analytic capacity table (SPEC 9 keys) and, with --slo, the highest
// arrival rate that meets the SLO per device x model x dtype x tp.
#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <iostream>
#include <memory>

#include "base/source_paths.hpp"
#include "cli/commands.hpp"
#include "cli/number_checks.hpp"
#include "cli/studies/capacity_chunk_pool.hpp"
#include "cli/studies/capacity_plan.hpp"
#include "cli/studies/slo_search.hpp"
#include "reports/html_page.hpp"
#include "reports/input_error.hpp"
#include "reports/output_dir.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim::cli {
namespace {

struct CapacityCliOptions {
  CapacityQuery query;
  // The list flags as given (once or repeated), split in run_capacity: CLI11's
  // own splitting drops an empty element ("A,,B" would run A and B).
  std::vector<std::string> device_lists, model_lists, context_lists, kv_dtype_lists, tp_lists,
      ep_lists, pp_lists;
  std::string out;  // empty: a fresh out/capacity[-N] per invocation
  bool force = false;
  std::string slo, workload;
  std::vector<std::string> sets;
  CLI::Option* block_size = nullptr;
  CLI::Option* memory_fraction = nullptr;
  CLI::Option* kv_dtype = nullptr;
};

// A list flag of integers: every element non-empty, given once, an integer
// in [lo, hi].
std::vector<int64_t> int_list(const std::string& flag, const std::vector<std::string>& given,
                              std::vector<int64_t> fallback, int64_t lo, int64_t hi) {
  if (given.empty()) return fallback;
  const std::string allowed = fmt::format("N[,N...], each an integer in {}..{}", lo, hi);
  std::vector<int64_t> out;
  for (const std::string& item : split_flag_list(flag, given, allowed)) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size())
      throw_input_error(flag, flag.substr(2), fmt::format("'{}' is not an integer", item), allowed);
    if (v < lo || v > hi)
      throw_input_error(flag, flag.substr(2), fmt::format("{} is out of range", v), allowed);
    out.push_back(v);
  }
  return out;
}

struct SloRow {
  std::string device, model, kv_dtype;
  int64_t tp = 1;
  SloSearchResult result;
  int64_t ep = 1;
  int64_t pp = 1;
  // Why this combination of a fleet was not searched (it does not fit, its
  // layout is invalid, a phone NPU runs no serving rate); empty: searched.
  std::string not_searched;
};

nlohmann::ordered_json slo_json(const SloTarget& slo, const std::vector<SloRow>& rows,
                                const std::string& workload) {
  nlohmann::ordered_json j;
  j["workload"] = workload;
  j["ttft_p99_ms"] = slo.ttft_p99_ms ? nlohmann::ordered_json(*slo.ttft_p99_ms) : nullptr;
  j["tpot_p99_ms"] = slo.tpot_p99_ms ? nlohmann::ordered_json(*slo.tpot_p99_ms) : nullptr;
  j["searches"] = nlohmann::ordered_json::array();
  j["not_searched"] = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    nlohmann::ordered_json s;
    if (!r.not_searched.empty()) {
      j["not_searched"].push_back({{"device", r.device},
                                   {"model", r.model},
                                   {"kv_dtype", r.kv_dtype},
                                   {"tp", r.tp},
                                   {"ep", r.ep},
                                   {"pp", r.pp},
                                   {"reason", r.not_searched}});
      continue;
    }
    s["device"] = r.device;
    s["model"] = r.model;
    s["kv_dtype"] = r.kv_dtype;
    s["tp"] = r.tp;
    s["found"] = r.result.found;
    if (r.ep > 1) s["ep"] = r.ep;
    if (r.pp > 1) s["pp"] = r.pp;
    s["max_rate_per_s"] = r.result.best_rate;
    s["bracket"] = {r.result.lo, r.result.hi};
    s["probes"] = nlohmann::ordered_json::array();
    for (const auto& p : r.result.probes)
      s["probes"].push_back({{"rate_per_s", p.rate_per_s},
                             {"ttft_p99_ms", p.ttft_p99_ms},
                             {"tpot_p99_ms", p.tpot_p99_ms},
                             {"meets", p.meets}});
    j["searches"].push_back(s);
  }
  return j;
}

std::string slo_markdown(const SloTarget& slo, const std::vector<SloRow>& rows) {
  std::string out = fmt::format(
      "\n## Highest arrival rate meeting the SLO (p99 TTFT <= {} ms, p99 TPOT <= {} ms)\n\n",
      slo.ttft_p99_ms ? fmt::format("{}", *slo.ttft_p99_ms) : "-",
      slo.tpot_p99_ms ? fmt::format("{}", *slo.tpot_p99_ms) : "-");
  std::vector<std::vector<std::string>> cells;
  bool any_not_searched = false;
  for (const auto& r : rows) any_not_searched = any_not_searched || !r.not_searched.empty();
  for (const auto& r : rows) {
    const auto& s = r.result;
    std::vector<std::string> row = {r.device, r.model, r.kv_dtype,
                                    parallel_label(r.tp, r.ep, r.pp)};
    if (r.not_searched.empty()) {
      row.insert(row.end(),
                 {s.found ? fmt::format("{:.3f}", s.best_rate) : "none",
                  fmt::format("[{:.3f}, {}]", s.lo,
                              s.hi > 0 ? fmt::format("{:.3f}", s.hi) : std::string("not reached")),
                  std::to_string(s.probes.size())});
      if (any_not_searched) row.push_back("");
    } else {
      row.insert(row.end(), {"-", "-", "0", "not searched: " + r.not_searched});
    }
    cells.push_back(std::move(row));
  }
  std::vector<std::string> header = {
      "device", "model", "kv", "tp", "max rate (req/s)", "bracket [meets, fails]", "runs"};
  if (any_not_searched) header.push_back("note");
  return out + markdown_table(header, cells);
}

int run_capacity(CapacityCliOptions& o) {
  // A fleet of devices and a list of models, every element named once.
  std::string device_names, model_names;
  for (const auto& n : list_config_names(configs_dir(), "devices"))
    device_names += (device_names.empty() ? "" : ", ") + n;
  for (const auto& n : list_config_names(configs_dir(), "models"))
    model_names += (model_names.empty() ? "" : ", ") + n;
  o.query.devices = split_flag_list(
      "--device", o.device_lists, "NAME[,NAME...], each a device file or one of: " + device_names);
  o.query.models = split_flag_list(
      "--model", o.model_lists,
      "NAME[,NAME...], each a model YAML or JSON file, a Hugging Face folder with config.json, "
      "or one of: " +
          model_names);
  if (!o.kv_dtype_lists.empty())
    o.query.kv_dtypes = split_flag_list("--kv-dtype", o.kv_dtype_lists,
                                        "DTYPE[,DTYPE...]: fp16, bf16, int8, fp32; llama_cells: "
                                        "f16, bf16, f32, q8_0, q4_0, q4_1, q5_0, q5_1");
  // --context as the rows bound it: 2^40 tokens, far past any model's window.
  o.query.contexts = int_list("--context", o.context_lists, o.query.contexts, 1, int64_t{1} << 40);
  o.query.tps = int_list("--tp", o.tp_lists, o.query.tps, 1, 64);
  o.query.eps = int_list("--ep", o.ep_lists, o.query.eps, 1, 1024);
  o.query.pps = int_list("--pp", o.pp_lists, o.query.pps, 1, 256);
  const std::shared_ptr<const PolicySpec> policy = capacity_policy(o.query);
  const std::vector<std::string> dtypes = policy->block_pool()->capacity_dtypes();
  // A policy with element types of its own (llama.cpp's ggml types) takes
  // its first as the default --kv-dtype, and its rows are not scenarios'
  // kv_cache.dtype for an --slo search.
  const bool own_dtypes = dtypes != kKvDtypeNames;
  if (own_dtypes) {
    if (o.kv_dtype->count() == 0) o.query.kv_dtypes = {dtypes.front()};
    if (!o.slo.empty()) {
      std::cerr << fmt::format(
          "kvsim: error: --policy {}: --slo runs scenarios of the rows' kv_cache.dtype; {}'s "
          "element types ({}) are keys of its own\n",
          o.query.policy, o.query.policy, fmt::join(dtypes, ", "));
      return kExitBadInput;
    }
  }
  if (o.slo.empty() != o.workload.empty()) {
    std::cerr << "kvsim: error: --slo and --workload go together (the scenario whose "
                 "workload.arrival.rate_per_s is searched)\n";
    return kExitBadInput;
  }
  if (find_policy(o.query.policy)->info.find("main_pool_fraction") != nullptr) {
    // Seed 003's split: the pools and the reserve share the device.
    const double sum = o.query.main_pool_fraction + o.query.chunk_pool_fraction;
    if (sum > 1.0 + 1e-9 || o.memory_fraction->count() > 0) {
      std::cerr << fmt::format(
          "kvsim: error: --policy {}: {}\n", o.query.policy,
          o.memory_fraction->count() > 0
              ? "--memory-fraction does not apply; the main pool is --main-pool-fraction"
              : fmt::format("--main-pool-fraction {} + --chunk-pool-fraction {} = {} is more than "
                            "the device's memory (at most 1)",
                            o.query.main_pool_fraction, o.query.chunk_pool_fraction, sum));
      return kExitBadInput;
    }
  }
  const std::vector<CapacityRow> rows = capacity_rows(o.query, configs_dir());
  std::vector<SloRow> slo_rows;
  SloTarget slo;
  if (!o.slo.empty()) {
    slo = parse_slo(o.slo);
    // One search per device x model x dtype x layout of the fleet; the
    // combinations that cannot serve a rate are rows saying why.
    size_t searchable = 0;
    std::string htp_device;
    for (const auto& r : rows) {
      const bool can_search = !r.htp && r.fits;
      SloRow* seen = nullptr;
      for (auto& s : slo_rows)
        if (s.device == r.device && s.model == r.model && s.kv_dtype == r.kv_dtype &&
            s.tp == r.tp && s.ep == r.ep && s.pp == r.pp)
          seen = &s;
      if (seen != nullptr) {
        // A combination that fits at some context is searched.
        if (can_search && !seen->not_searched.empty()) {
          seen->not_searched.clear();
          ++searchable;
        }
        continue;
      }
      SloRow row{r.device, r.model, r.kv_dtype, r.tp, {}, r.ep, r.pp, {}};
      // The SLO search sweeps a serving workload's arrival rate; a phone NPU
      // runs one user's dialog (kvsim run on a dialog scenario instead).
      if (r.htp) {
        htp_device = r.device;
        row.not_searched =
            "an HTP device runs one user's dialog, not a serving arrival rate (kvsim run)";
      } else if (!r.fits) {
        row.not_searched = r.note;
      } else {
        ++searchable;
      }
      slo_rows.push_back(std::move(row));
    }
    if (searchable == 0 && !htp_device.empty()) {
      std::cerr << "kvsim: error: --device " << htp_device
                << ": --slo searches a serving arrival rate and works on Ascend and GPU devices "
                   "only; an HTP device runs a dialog scenario (kvsim run)\n";
      return kExitBadInput;
    }
    for (auto& row : slo_rows) {
      if (!row.not_searched.empty()) continue;
      const CapacityRow* found = nullptr;
      for (const auto& r : rows)
        if (found == nullptr && r.fits && r.device == row.device && r.model == row.model &&
            r.kv_dtype == row.kv_dtype && r.tp == row.tp && r.ep == row.ep && r.pp == row.pp)
          found = &r;
      const CapacityRow& r = *found;
      std::vector<std::string> sets = o.sets;
      // The device and model as given: a file or a folder resolves where its
      // name does not.
      sets.push_back("device=" + (r.device_arg.empty() ? r.device : r.device_arg));
      sets.push_back("model=" + (r.model_arg.empty() ? r.model : r.model_arg));
      sets.push_back("kv_cache.dtype=" + r.kv_dtype);
      sets.push_back(fmt::format("parallel.tensor={}", r.tp));
      if (r.ep > 1) sets.push_back(fmt::format("parallel.expert={}", r.ep));
      if (r.pp > 1) sets.push_back(fmt::format("parallel.pipeline={}", r.pp));
      if (o.block_size->count() > 0)
        sets.push_back(fmt::format("kv_cache.block_size={}", o.query.block_size));
      if (o.memory_fraction->count() > 0)
        sets.push_back(fmt::format("kv_cache.memory_fraction={}", o.query.memory_fraction));
      // The rows' policy, with the flags it declares keys for.
      sets.push_back("kv_cache.policy=" + o.query.policy);
      for (const auto& [key, value] : std::vector<std::pair<const char*, double>>{
               {"main_pool_fraction", o.query.main_pool_fraction},
               {"chunk_pool_fraction", o.query.chunk_pool_fraction}})
        if (find_policy(o.query.policy)->info.find(key) != nullptr)
          sets.push_back(fmt::format("kv_cache.{}={}", key, value));
      row.result = search_max_rate(o.workload, sets, slo);
    }
  }

  const std::string sizing = policy->block_pool()->capacity_sizing_text();
  std::string drafter;
  for (const CapacityRow& r : rows)
    if (r.drafter_weights_bytes > 0 || r.drafter_kv_bytes_per_token > 0) {
      drafter = fmt::format(
          "Speculative drafter `{}` held beside the model (included in the weights and KV per "
          "token below), {} {}: {} of weights and {} of KV per token per rank.\n\n",
          o.query.speculative, r.model, parallel_label(r.tp, r.ep, 1),
          format_bytes(r.drafter_weights_bytes), format_bytes(r.drafter_kv_bytes_per_token));
      break;
    }
  std::string md = "# Capacity plan\n\n" + sizing + drafter + capacity_markdown(rows) +
                   capacity_chunk_pool_markdown(o.query, rows);
  if (!slo_rows.empty()) md += slo_markdown(slo, slo_rows);

  OutputDir dir(o.out.empty() ? fresh_output_folder("out/capacity") : o.out, o.force);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  std::string csv;
  for (const auto& h : capacity_csv_header()) csv += (csv.empty() ? "" : ",") + h;
  csv += "\n";
  for (const auto& r : rows) {
    list.push_back(capacity_row_json(r));
    const auto cells = capacity_csv_cells(r);
    std::string line;
    for (const auto& c : cells) {
      const bool quote = c.find_first_of(",\"") != std::string::npos;
      std::string q = c;
      if (quote) {
        q.clear();
        for (const char ch : c) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        q = "\"" + q + "\"";
      }
      line += (line.empty() ? "" : ",") + q;
    }
    csv += line + "\n";
  }
  write_file_atomically(dir.file("capacity.json"), list.dump(2) + "\n");
  write_file_atomically(dir.file("capacity.csv"), csv);
  write_file_atomically(dir.file("capacity.md"), md);
  write_file_atomically(
      dir.file("capacity.html"),
      html_document("kvsim capacity plan",
                    markdown_to_html(md) +
                        "<p>Exact byte counts, one column per quantity, are in capacity.csv "
                        "and capacity.json.</p>\n"));
  if (!slo_rows.empty())
    write_file_atomically(dir.file("slo.json"), slo_json(slo, slo_rows, o.workload).dump(2) + "\n");
  dir.commit();
  std::cout << md << "\nreport: " << dir.final_path()
            << "/ (capacity.json, capacity.csv, capacity.md, capacity.html"
            << (slo_rows.empty() ? "" : ", slo.json") << ")\n";
  return kExitOk;
}

}  // namespace

Command add_capacity_command(CLI::App& app) {
  auto o = std::make_shared<CapacityCliOptions>();
  auto* cmd = app.add_subcommand("capacity", "KV capacity table and SLO rate search");
  cmd->add_option("--device", o->device_lists,
                  "devices side by side, comma separated: names or device files")
      ->required();
  cmd->add_option("--model", o->model_lists,
                  "models, comma separated: names, model YAML files or Hugging Face folders")
      ->required();
  cmd->add_option("--context", o->context_lists,
                  "context lengths in tokens (default 1024,8192,32768)");
  o->kv_dtype = cmd->add_option("--kv-dtype", o->kv_dtype_lists,
                                "KV dtypes: fp16,bf16,int8,fp32 (default fp16); llama_cells: "
                                "f16,bf16,f32,q8_0,q4_0,q4_1,q5_0,q5_1");
  o->block_size = cmd->add_option("--block-size", o->query.block_size, "tokens per block (128)")
                      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  o->memory_fraction =
      cmd->add_option("--memory-fraction", o->query.memory_fraction, "share of memory (0.9)")
          ->check(finite_range(0.01, 1.0));
  cmd->add_option("--policy", o->query.policy,
                  "paged, chunk_lru for seed 003's main/chunk pool split, or llama_cells for "
                  "llama.cpp's cell cache with ggml --kv-dtype types (default paged)")
      ->check(CLI::IsMember(capacity_policy_names()));
  cmd->add_option("--main-pool-fraction", o->query.main_pool_fraction,
                  "chunk_lru: share of memory for weights, activations and main KV (0.70)")
      ->check(finite_range(0.01, 1.0));
  cmd->add_option("--chunk-pool-fraction", o->query.chunk_pool_fraction,
                  "chunk_lru: share of memory for cached chunks (0.15)")
      ->check(finite_range(0.0, 1.0));
  cmd->add_option("--ep", o->ep_lists,
                  "expert-parallel sizes 1..1024, multiples of --tp (default 1; models without "
                  "experts make ep 1 rows only)");
  cmd->add_option("--pp", o->pp_lists,
                  "pipeline-parallel sizes 1..256 (default 1): stages of consecutive layers, tp "
                  "devices each");
  cmd->add_option("--tp", o->tp_lists, "tensor-parallel sizes 1..64 (default 1)");
  cmd->add_option("--speculative", o->query.speculative,
                  "a speculative drafter held beside the model (vLLM's method: mtp, eagle, "
                  "eagle3, ngram, draft_model): its weights and KV count");
  cmd->add_option("--draft-model", o->query.draft_model,
                  "the draft model of --speculative draft_model (a name, a path or a folder)");
  cmd->add_option("--out", o->out,
                  "output folder (default: out/capacity, or out/capacity-N when that exists)");
  cmd->add_flag("--force", o->force, "replace --out even if kvsim did not write it");
  cmd->add_option("--slo", o->slo, "ttft_p99_ms=X,tpot_p99_ms=Y: search the highest rate");
  cmd->add_option("--workload", o->workload,
                  "scenario YAML whose workload.arrival.rate_per_s is searched");
  cmd->add_option("--set", o->sets, "override a key of the --workload scenario (repeatable)");
  return {cmd, [o] { return run_capacity(*o); }};
}

}  // namespace kvsim::cli
