#include "cli/generate/genie_session_file.hpp"

#include <fmt/format.h>

#include <bit>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/input_file.hpp"
#include "reports/output_rule.hpp"

namespace kvsim::kernels {
namespace {

constexpr std::string_view kMarkerLine = "kvsim genie kv session 1\n";

nlohmann::json header_json(const GenieSessionHeader& h) {
  nlohmann::json j;
  j["generator"] = "kvsim";
  j["mode"] = h.mode;
  j["layers"] = h.layers;
  j["kv_heads"] = h.kv_heads;
  j["head_dim"] = h.head_dim;
  j["dtype"] = std::string(kv_dtype_name(h.dtype));
  j["ctx_size"] = h.ctx_size;
  j["variant"] = h.variant;
  j["n_valid"] = h.n_valid;
  j["tokens"] = h.tokens;
  // The scale's bits, so a loaded session dequantises exactly as it stored.
  nlohmann::json q = nlohmann::json::array();
  for (const Int8Params& p : h.int8) q.push_back({std::bit_cast<uint32_t>(p.scale), p.offset});
  j["int8"] = q;
  return j;
}

int64_t positive(const nlohmann::json& j, const char* key, const std::string& path,
                 int64_t min = 1) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < min ||
      j[key].get<int64_t>() > (int64_t{1} << 32))
    throw std::invalid_argument(fmt::format(
        "{}: the session header's '{}' is missing or not an integer >= {}", path, key, min));
  return j[key].get<int64_t>();
}

}  // namespace

int64_t genie_session_kv_bytes(const std::vector<GenieKvBuffer>& layers) {
  int64_t b = 0;
  for (const GenieKvBuffer& l : layers) b += 2 * l.dump_bytes();
  return b;
}

bool is_genie_session_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(kMarkerLine.size(), '\0');
  return in.read(head.data(), static_cast<std::streamsize>(head.size())) && head == kMarkerLine;
}

int64_t write_genie_session(const std::string& path, const std::string& flag,
                            const GenieSessionHeader& header,
                            const std::vector<GenieKvBuffer>& layers) {
  OutputTarget target = output_target(flag, path, OutputShape::file, false);
  target.kvsim_wrote_file = &is_genie_session_file;
  target.force_flag = false;  // a user's file is never replaced by a session
  refuse_unless_writable(target);
  std::string text(kMarkerLine);
  text += header_json(header).dump() + "\n";
  // dumpCache(is_key = true) over every layer, then (is_key = false).
  std::vector<uint8_t> body;
  for (const bool is_key : {true, false})
    for (const GenieKvBuffer& l : layers) l.dump_valid(is_key, body);
  text.append(reinterpret_cast<const char*>(body.data()), body.size());
  refuse_unless_writable(target);  // again just before the rename
  write_file_atomically(target.path.string(), text);
  return static_cast<int64_t>(text.size());
}

GenieSession read_genie_session(const std::string& path) {
  std::string text;
  if (const std::string problem = read_input_file(path, text); !problem.empty())
    throw std::invalid_argument(fmt::format("{}: {}", path, problem));
  if (text.compare(0, kMarkerLine.size(), kMarkerLine) != 0)
    throw std::invalid_argument(
        fmt::format("{}: not a kvsim session file (its first line is not '{}')", path,
                    kMarkerLine.substr(0, kMarkerLine.size() - 1)));
  const size_t eol = text.find('\n', kMarkerLine.size());
  if (eol == std::string::npos)
    throw std::invalid_argument(fmt::format("{}: the session header line is cut short", path));
  const nlohmann::json j =
      nlohmann::json::parse(text.begin() + static_cast<std::ptrdiff_t>(kMarkerLine.size()),
                            text.begin() + static_cast<std::ptrdiff_t>(eol), nullptr, false);
  if (!j.is_object())
    throw std::invalid_argument(fmt::format("{}: the session header is not a JSON object", path));
  GenieSession s;
  GenieSessionHeader& h = s.header;
  h.mode = j.value("mode", "");
  h.layers = positive(j, "layers", path);
  h.kv_heads = positive(j, "kv_heads", path);
  h.head_dim = positive(j, "head_dim", path);
  h.ctx_size = positive(j, "ctx_size", path, 2);
  h.variant = positive(j, "variant", path);
  h.n_valid = positive(j, "n_valid", path, 0);
  const std::string dtype = j.value("dtype", "");
  const std::optional<KvDtype> dt = parse_kv_dtype(dtype);
  if (!dt)
    throw std::invalid_argument(
        fmt::format("{}: the session's dtype '{}' is unknown", path, dtype));
  h.dtype = *dt;
  if (!j.contains("tokens") || !j["tokens"].is_array())
    throw std::invalid_argument(fmt::format("{}: the session header has no token list", path));
  for (const auto& t : j["tokens"]) {
    if (!t.is_number_integer())
      throw std::invalid_argument(fmt::format("{}: a session token is not an integer", path));
    h.tokens.push_back(t.get<int32_t>());
  }
  if (j.contains("int8") && j["int8"].is_array())
    for (const auto& q : j["int8"]) {
      if (!q.is_array() || q.size() != 2 || !q[0].is_number_unsigned() || !q[1].is_number_integer())
        throw std::invalid_argument(
            fmt::format("{}: a session int8 entry is not [bits, offset]", path));
      h.int8.push_back({std::bit_cast<float>(q[0].get<uint32_t>()), q[1].get<int32_t>()});
    }
  // Sizes from header values each below 2^32: the product of four stays in
  // int64 only when checked, so check it.
  const int64_t per = h.kv_heads * h.head_dim;
  if (per > (int64_t{1} << 30) || h.n_valid > (int64_t{1} << 30) / per)
    throw std::invalid_argument(fmt::format("{}: the session header's sizes are too large", path));
  const int64_t each = per * h.n_valid * kv_dtype_bytes(h.dtype);
  const auto body = static_cast<int64_t>(text.size() - eol - 1);
  if (h.layers > (int64_t{1} << 20) || body != 2 * h.layers * each)
    throw std::invalid_argument(
        fmt::format("{}: the session holds {} bytes of KV, its header says {}", path, body,
                    2 * std::min<int64_t>(h.layers, int64_t{1} << 20) * each));
  const auto* at = reinterpret_cast<const uint8_t*>(text.data()) + eol + 1;
  s.keys.assign(at, at + h.layers * each);
  s.values.assign(at + h.layers * each, at + 2 * h.layers * each);
  return s;
}

}  // namespace kvsim::kernels
