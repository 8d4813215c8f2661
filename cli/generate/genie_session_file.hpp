#pragma once
// A Genie KV session on disk (seed 002 "Cache Save/Restore"): dumpCache
// writes the valid portion of every key cache, then of every value cache;
// loadCache clears each buffer and reads it back, left-padded. kvsim's file
// puts one marker line and one JSON header line before those bytes: the
// shape they must be read into (a mismatch is refused, not reinterpreted),
// the tokens so far (generate continues from the last one), and int8's
// per-layer (scale, offset), the graph's fixed quantParam.
//
//   kvsim genie kv session 1\n
//   {"generator":"kvsim", "layers":L, "kv_heads":H, "head_dim":D,
//    "dtype":"fp16", "ctx_size":C, "variant":n, "n_valid":N, "mode":...,
//    "tokens":[...], "int8":[[scale bits, offset], ...]}\n
//   keys of layer 0 .. L-1 ([H, D, N] each), values of layer 0 .. L-1
//   ([H, N, D] each), in the cache's dtype.
//
// The marker line is what lets a later save replace the file
// (reports/output_rule.hpp): kvsim never writes over a file without it.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/genie_kv_buffer.hpp"

namespace kvsim::kernels {

struct GenieSessionHeader {
  std::string mode;  // the update mode that saved it (informational: the bytes are layout-free)
  int64_t layers = 0, kv_heads = 0, head_dim = 0;
  KvDtype dtype = KvDtype::fp32;
  int64_t ctx_size = 0, variant = 1, n_valid = 0;
  std::vector<int32_t> tokens;   // BOS, prompt, generated so far
  std::vector<Int8Params> int8;  // per layer, int8 only
};

struct GenieSession {
  GenieSessionHeader header;
  std::vector<uint8_t> keys, values;  // every layer's, in layer order
};

// KV bytes a session of these buffers holds (both K and V, every layer):
// what storage_bandwidth prices.
int64_t genie_session_kv_bytes(const std::vector<GenieKvBuffer>& layers);

// Writes the session to `path` under the output rule (new, or a file with
// this format's marker; OutputRefused otherwise, naming `flag`), through a
// temporary name and a rename. Returns the bytes written.
int64_t write_genie_session(const std::string& path, const std::string& flag,
                            const GenieSessionHeader& header,
                            const std::vector<GenieKvBuffer>& layers);

// Reads a session; throws std::invalid_argument "<path>: <what is wrong>"
// for a file that is not one (no marker), a bad header or a short body.
GenieSession read_genie_session(const std::string& path);

// Whether the regular file at `path` starts with this format's marker line.
bool is_genie_session_file(const std::filesystem::path& path);

}  // namespace kvsim::kernels
