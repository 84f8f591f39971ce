// The YAML config's reader (io/config.h), shared by the files that read its sections:
// config.cc (the document, cluster, parallel, schedule and multimodal sections) and
// config_model.cc (the model section). A Reader reads values out of YAML nodes, every error
// prefixed with "source:line:col: "; a map's keys are read by a table of KeyHandlers, most made
// by the *Into helpers below. Internal to src/io.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/enum_table.h"
#include "core/result.h"
#include "core/time.h"
#include "io/config.h"

namespace stagecraft::config_yaml {

// One `key: value` entry of a map, with the dotted path that names it in messages.
struct Field {
  YAML::Node key;  // undefined mark for the document itself
  YAML::Node value;
  std::string path;  // "model.forward"; "" for the document
};

// The keys a map held, with their fields, for rules that span several keys.
using Written = std::map<std::string, Field>;

// One allowed key of a map and what to do with its value.
struct KeyHandler {
  std::string key;
  std::function<Status(const Field&)> apply;
};

enum class Sign { kPositive, kNonNegative };

// "a map", "a list", "'text'" or "no value", for messages.
std::string Describe(const YAML::Node& node);

std::vector<std::string> KeysOf(const std::vector<KeyHandler>& handlers);

// Reads values out of YAML nodes; every error is prefixed with "source:line:col: ".
class Reader {
 public:
  Reader(std::string_view source, ConfigLocations* locations, const ParseOptions& options)
      : source_(source), locations_(locations), options_(options) {}

  const ParseOptions& options() const { return options_; }

  // "source:line:col: " (1-based; yaml-cpp marks are 0-based), or "source: " without a mark.
  std::string Where(const YAML::Mark& mark) const {
    if (mark.is_null()) return std::string(source_) + ": ";
    return std::string(source_) + ":" + std::to_string(mark.line + 1) + ":" +
           std::to_string(mark.column + 1) + ": ";
  }

  // An error at the field's value, or at its key when the value is missing (yaml-cpp marks a
  // missing value where the next token starts, often on the next line).
  Error At(const Field& field, const std::string& what) const {
    const bool at_key = field.value.IsNull() && !field.key.Mark().is_null();
    const YAML::Mark mark = at_key ? field.key.Mark() : field.value.Mark();
    return Error{Where(mark) + field.path + ": " + what};
  }

  // Records that `path` was written at `mark` (ConfigLocations), when locations are wanted.
  void Locate(const std::string& path, const YAML::Mark& mark) const {
    if (locations_ == nullptr) return;
    const std::string where = Where(mark);
    locations_->by_path[path] = where.substr(0, where.size() - 2);  // drop ": "
  }
  // `written`, when given, receives every key the map held.
  Status ReadMap(const Field& field, const std::vector<KeyHandler>& handlers,
                 Written* written = nullptr) const;
  Status String(const Field& field, std::string* out) const;
  Status Choice(const Field& field, const std::string& what,
                const std::vector<std::string>& choices, std::string* out) const;
  Status Int(const Field& field, int32_t min, int32_t* out) const;
  // A plain number > 0 and <= max; `wanted` says so in messages ("a number > 0").
  Status Number(const Field& field, double max, const std::string& wanted, double* out) const;
  Status Duration(const Field& field, Sign sign, Time* out) const;
  Status Bytes(const Field& field, int64_t* out) const;
  Status Bandwidth(const Field& field, double* out) const;

 private:
  Result<std::string> Text(const Field& field, std::string_view expected) const;
  Result<const KeyHandler*> FindHandler(const Field& map, const YAML::Node& key,
                                        const std::vector<KeyHandler>& handlers) const;
  template <typename T, typename Parse>
  Status Quantity(const Field& field, Parse parse, Sign sign, const char* hint, T* out) const;

  std::string_view source_;
  ConfigLocations* locations_;  // may be null
  ParseOptions options_;
};

// Handlers that store one value read from a field.
using Apply = std::function<Status(const Field&)>;

Apply StringInto(const Reader& reader, std::string* out);
Apply CountInto(const Reader& reader, int32_t* out);  // an integer >= 1
Apply DurationInto(const Reader& reader, Sign sign, Time* out);
Apply BytesInto(const Reader& reader, int64_t* out);
Apply BandwidthInto(const Reader& reader, double* out);
Apply IntInto(const Reader& reader, int32_t min, int32_t* out);

// A value from the enum's table of names (core/enum_table.h), e.g. model/layer_spec.h's
// kAttentionModeNames; `what` names the kind of value in messages ("unknown attention mode
// 'ful'").
template <typename Enum>
Apply EnumInto(const Reader& reader, std::string what, const EnumTable<Enum>& table, Enum* out) {
  return [&reader, what = std::move(what), table, out](const Field& field) -> Status {
    std::string chosen;
    STAGECRAFT_RETURN_IF_ERROR(reader.Choice(field, what, table.Names(), &chosen));
    *out = *table.Parse(chosen);  // Choice returns one of the names
    return Status::Ok();
  };
}

Apply BoolInto(const Reader& reader, bool* out);

// The field of `key` when the map held it, else null.
const Field* Find(const Written& written, const std::string& key);

// The model section (config_model.cc).
Status ReadModel(const Reader& reader, const Field& field, ModelSpec* model);

}  // namespace stagecraft::config_yaml
