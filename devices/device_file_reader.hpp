#pragma once
// Reading a device file's `{value, source}` numbers (SPEC 4b/7) by the
// declarations of the family that owns them (base/params.hpp): the range and
// type come from the ParamSpec, the source note is filed in
// DeviceSpec::sources under the key path. Shared by every device family.
#include <string>
#include <string_view>
#include <vector>

#include "base/params.hpp"
#include "base/reader.hpp"
#include "devices/device_spec.hpp"

namespace kvsim {

class SourcedReader {
 public:
  // prefix: the key path of the map read, with its trailing dot ("htp.").
  SourcedReader(config::MapReader& reader, DeviceSpec& spec, std::string prefix)
      : reader_(reader), spec_(spec), prefix_(std::move(prefix)) {}

  // The value node (undefined when missing or bare; the error is recorded).
  // `cites`: the source the number should cite (ParamSpec::cites), named in
  // the error when the key is missing.
  config::Node value(std::string_view key, std::string_view cites = {});
  config::Node value(const config::ParamSpec& p) { return value(p.key, p.cites); }
  // Whether an optional key is present.
  bool has(std::string_view key) const { return reader_.has(key); }
  // The value of a declared number, converted by its type and range; the
  // type's zero (or the range's low end for integers) when it is wrong.
  int64_t integer(const config::ParamSpec& p);  // integer, bytes, bandwidth, duration, ops rate
  double number(const config::ParamSpec& p);
  // A fraction of peak: in (0, 1]. Zero would make an op take forever.
  double efficiency(std::string_view key, std::string_view cites);

 private:
  config::MapReader& reader_;
  DeviceSpec& spec_;
  std::string prefix_;
};

// What the error for a missing number allows: the kind of source the
// number should cite and the note's form, from its declared `cites`
// ("it should cite a datasheet: {value: ..., source: \"V: ...\"}").
std::string missing_number_hint(std::string_view cites);

// The numbers every device family has: memory and its bandwidth, matrix and
// vector rates, launch and per-step overheads.
std::vector<config::ParamSpec> common_device_params();
void read_common_numbers(SourcedReader& n, const std::vector<config::ParamSpec>& params,
                         DeviceSpec& spec);

// efficiency: {gemm: {compute: {value, source}, memory: {value, source}}, ...}
std::vector<config::ParamSpec> efficiency_params();
void read_efficiencies(config::MapReader& root, DeviceSpec& spec);

// The declaration of `key` in `params` (std::logic_error when a family reads
// a key it did not declare).
const config::ParamSpec& declared(const std::vector<config::ParamSpec>& params,
                                  std::string_view key);

}  // namespace kvsim
