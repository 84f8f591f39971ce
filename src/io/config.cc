// ParseConfig: the YAML config (doc/config.md) as a Config. Every problem becomes an Error that
// names "source:line:col", the key path, the bad value, what was expected and a suggestion.
#include "io/config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/suggest.h"
#include "core/units.h"
#include "schedule/generator.h"

namespace stagecraft {
namespace {

constexpr char kDurationHint[] = "a duration such as '1.5ms'; a bare number means ms";
constexpr char kSizeHint[] = "a size such as '64MiB'; a bare number means bytes";
constexpr char kBandwidthHint[] =
    "a bandwidth such as '300GB/s'; a bare number means bytes per second";
constexpr char kSyntaxHint[] =
    "check the indentation (spaces, not tabs), the ':' after each key, and that quotes and "
    "brackets match";

// One `key: value` entry of a map, with the dotted path that names it in messages.
struct Field {
  YAML::Node key;  // undefined mark for the document itself
  YAML::Node value;
  std::string path;  // "model.forward"; "" for the document
};

// One allowed key of a map and what to do with its value.
struct KeyHandler {
  std::string key;
  std::function<Status(const Field&)> apply;
};

enum class Sign { kPositive, kNonNegative };

std::string Describe(const YAML::Node& node) {
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  return "no value";
}

std::string Scope(const std::string& path) {
  return path.empty() ? "at the top level" : "in " + path;
}

std::vector<std::string> KeysOf(const std::vector<KeyHandler>& handlers) {
  std::vector<std::string> keys;
  for (const KeyHandler& handler : handlers) keys.push_back(handler.key);
  return keys;
}

// Reads values out of YAML nodes; every error is prefixed with "source:line:col: ".
class Reader {
 public:
  Reader(std::string_view source, ConfigLocations* locations)
      : source_(source), locations_(locations) {}

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

  Status ReadMap(const Field& field, const std::vector<KeyHandler>& handlers) const;
  Status String(const Field& field, std::string* out) const;
  Status Choice(const Field& field, const std::string& what,
                const std::vector<std::string>& choices, std::string* out) const;
  Status Int(const Field& field, int32_t min, int32_t* out) const;
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
};

Result<std::string> Reader::Text(const Field& field, std::string_view expected) const {
  if (field.value.IsScalar()) return field.value.Scalar();
  return At(field, "found " + Describe(field.value) + " (expected " + std::string(expected) + ")");
}

// The handler for `key` in the map `map`, or an error for a key that is not a plain name or
// is not one of the allowed keys.
Result<const KeyHandler*> Reader::FindHandler(const Field& map, const YAML::Node& key,
                                              const std::vector<KeyHandler>& handlers) const {
  const std::vector<std::string> allowed = KeysOf(handlers);
  const std::string expected = " (expected one of " + JoinChoices(allowed) + ")";
  if (!key.IsScalar()) {
    return Error{Where(key.Mark()) + "found " + Describe(key) + " as a key " + Scope(map.path) +
                 expected};
  }
  for (const KeyHandler& handler : handlers) {
    if (handler.key == key.Scalar()) return &handler;
  }
  return Error{Where(key.Mark()) + "unknown key '" + key.Scalar() + "' " + Scope(map.path) +
               DidYouMean(key.Scalar(), allowed) + expected};
}

// Reads a map whose keys must all be in `handlers`, calling each key's handler in document
// order. A section written with no value (`model:`) is an empty map.
Status Reader::ReadMap(const Field& field, const std::vector<KeyHandler>& handlers) const {
  if (field.value.IsNull() && !field.path.empty()) return Status::Ok();
  if (!field.value.IsMap()) {
    return At(field, "found " + Describe(field.value) + " (expected a map with keys " +
                         JoinChoices(KeysOf(handlers)) + ")");
  }
  std::map<std::string, int> first_line;  // key → 1-based line where it was first written
  for (const auto& entry : field.value) {
    auto handler = FindHandler(field, entry.first, handlers);
    if (!handler.ok()) return handler.error();
    const std::string& key = entry.first.Scalar();
    const int line = entry.first.Mark().line + 1;
    if (auto [it, inserted] = first_line.emplace(key, line); !inserted) {
      return Error{Where(entry.first.Mark()) + "duplicate key '" + key + "' " + Scope(field.path) +
                   " (first written on line " + std::to_string(it->second) + "; keep one)"};
    }
    const Field child{entry.first, entry.second, field.path.empty() ? key : field.path + "." + key};
    if (locations_ != nullptr) {
      const std::string where =
          Where(entry.second.IsNull() ? entry.first.Mark() : entry.second.Mark());
      locations_->by_path[child.path] = where.substr(0, where.size() - 2);  // drop ": "
    }
    STAGECRAFT_RETURN_IF_ERROR(handler.value()->apply(child));
  }
  return Status::Ok();
}

Status Reader::String(const Field& field, std::string* out) const {
  auto text = Text(field, "a string");
  if (!text.ok()) return text.error();
  *out = std::move(text).value();
  return Status::Ok();
}

// `what` names the kind of value in messages ("mode" → "unknown mode 'x'").
Status Reader::Choice(const Field& field, const std::string& what,
                      const std::vector<std::string>& choices, std::string* out) const {
  const std::string expected = " (expected " + JoinChoices(choices) + ")";
  auto text = Text(field, what + " " + JoinChoices(choices));
  if (!text.ok()) return text.error();
  for (const std::string& choice : choices) {
    if (text.value() == choice) {
      *out = choice;
      return Status::Ok();
    }
  }
  return At(field, "unknown " + what + " '" + text.value() + "'" +
                       DidYouMean(text.value(), choices) + expected);
}

Status Reader::Int(const Field& field, int32_t min, int32_t* out) const {
  const std::string wanted = "an integer >= " + std::to_string(min);
  const std::string expected = " (expected " + wanted + ")";
  auto text = Text(field, wanted);
  if (!text.ok()) return text.error();
  std::string_view digits = text.value();
  if (digits.size() > 1 && digits[0] == '+' &&
      std::isdigit(static_cast<unsigned char>(digits[1]))) {
    digits.remove_prefix(1);
  }
  int64_t number = 0;
  const char* end = digits.data() + digits.size();
  const auto [stop, error] = std::from_chars(digits.data(), end, number);
  const std::string quoted = "'" + text.value() + "'";
  if (error == std::errc::invalid_argument || stop != end) {
    return At(field, quoted + " is not an integer" + expected);
  }
  if (error == std::errc::result_out_of_range || number > std::numeric_limits<int32_t>::max()) {
    return At(field, quoted + " is out of range (expected an integer from " + std::to_string(min) +
                         " to " + std::to_string(std::numeric_limits<int32_t>::max()) + ")");
  }
  if (number < min) {
    return At(field, quoted + " must be at least " + std::to_string(min) + expected);
  }
  *out = static_cast<int32_t>(number);
  return Status::Ok();
}

// A quantity with a unit: `parse` turns the text into a T, which must then satisfy `sign`.
template <typename T, typename Parse>
Status Reader::Quantity(const Field& field, Parse parse, Sign sign, const char* hint,
                        T* out) const {
  auto text = Text(field, hint);
  if (!text.ok()) return text.error();
  auto value = parse(text.value());
  if (!value.ok()) return At(field, value.error().message);
  const bool positive = sign == Sign::kPositive;
  if (positive ? !(value.value() > T{}) : value.value() < T{}) {
    return At(field, "'" + text.value() +
                         (positive ? "' must be positive" : "' must not be negative") +
                         " (expected " + hint + ")");
  }
  *out = value.value();
  return Status::Ok();
}

Status Reader::Duration(const Field& field, Sign sign, Time* out) const {
  return Quantity(field, ParseDuration, sign, kDurationHint, out);
}

Status Reader::Bytes(const Field& field, int64_t* out) const {
  return Quantity(field, ParseBytes, Sign::kNonNegative, kSizeHint, out);
}

Status Reader::Bandwidth(const Field& field, double* out) const {
  const auto parse = [](std::string_view text) -> Result<double> {
    auto rate = ParseBandwidth(text);
    if (rate.ok() && !std::isfinite(rate.value())) {
      return Error{"bandwidth '" + std::string(text) + "' is out of range"};
    }
    return rate;
  };
  return Quantity(field, parse, Sign::kPositive, kBandwidthHint, out);
}

// Handlers that store one value read from a field.
using Apply = std::function<Status(const Field&)>;

Apply StringInto(const Reader& reader, std::string* out) {
  return [&reader, out](const Field& field) { return reader.String(field, out); };
}
Apply CountInto(const Reader& reader, int32_t* out) {  // an integer >= 1
  return [&reader, out](const Field& field) { return reader.Int(field, 1, out); };
}
Apply DurationInto(const Reader& reader, Sign sign, Time* out) {
  return [&reader, sign, out](const Field& field) { return reader.Duration(field, sign, out); };
}
Apply BytesInto(const Reader& reader, int64_t* out) {
  return [&reader, out](const Field& field) { return reader.Bytes(field, out); };
}
Apply BandwidthInto(const Reader& reader, double* out) {
  return [&reader, out](const Field& field) { return reader.Bandwidth(field, out); };
}

Status ReadModel(const Reader& reader, const Field& field, ModelSpec* model) {
  const Apply type = [&reader](const Field& value) {
    std::string ignored;  // 'uniform' is the only model type so far
    return reader.Choice(value, "model type", {"uniform"}, &ignored);
  };
  return reader.ReadMap(
      field, {{"name", StringInto(reader, &model->name)},
              {"type", type},
              {"layers", CountInto(reader, &model->num_layers)},
              {"forward", DurationInto(reader, Sign::kPositive, &model->forward)},
              {"input_grad", DurationInto(reader, Sign::kPositive, &model->input_grad)},
              {"weight_grad", DurationInto(reader, Sign::kNonNegative, &model->weight_grad)},
              {"activation_bytes", BytesInto(reader, &model->activation_bytes)},
              {"weight_grad_bytes", BytesInto(reader, &model->weight_grad_bytes)},
              {"p2p_bytes", BytesInto(reader, &model->p2p_bytes)}});
}

Status ReadLink(const Reader& reader, const Field& field, LinkSpec* link) {
  return reader.ReadMap(field,
                        {{"latency", DurationInto(reader, Sign::kNonNegative, &link->latency)},
                         {"bandwidth", BandwidthInto(reader, &link->bandwidth_bytes_per_s)}});
}

// Writing the section at all (even empty) turns the cluster model on.
Status ReadCluster(const Reader& reader, const Field& field, ClusterSpec* cluster) {
  cluster->given = true;
  const auto link = [&reader](LinkSpec* out) -> Apply {
    return [&reader, out](const Field& value) { return ReadLink(reader, value, out); };
  };
  return reader.ReadMap(field, {{"devices_per_node", CountInto(reader, &cluster->devices_per_node)},
                                {"nodes", CountInto(reader, &cluster->nodes)},
                                {"intra_node", link(&cluster->intra_node)},
                                {"inter_node", link(&cluster->inter_node)}});
}

Status ReadParallel(const Reader& reader, const Field& field, ParallelSpec* parallel) {
  return reader.ReadMap(field, {{"pp", CountInto(reader, &parallel->pp)},
                                {"vpp", CountInto(reader, &parallel->vpp)},
                                {"microbatches", CountInto(reader, &parallel->microbatches)}});
}

Status ReadScheduleName(const Reader& reader, const Field& field, std::string* out) {
  STAGECRAFT_RETURN_IF_ERROR(reader.String(field, out));
  auto generator = FindScheduleGenerator(*out);
  if (!generator.ok()) return reader.At(field, generator.error().message);
  return Status::Ok();
}

Status ReadSchedule(const Reader& reader, const Field& field, ScheduleSpec* schedule) {
  const Apply p2p = [&reader, schedule](const Field& value) -> Status {
    std::string name;
    STAGECRAFT_RETURN_IF_ERROR(reader.Choice(value, "mode", {"async", "rendezvous"}, &name));
    schedule->p2p = name == "async" ? P2pMode::kAsync : P2pMode::kRendezvous;
    return Status::Ok();
  };
  return reader.ReadMap(
      field, {{"name",
               [&reader, schedule](const Field& value) {
                 return ReadScheduleName(reader, value, &schedule->name);
               }},
              {"group_size", CountInto(reader, &schedule->group_size)},
              {"p2p", p2p},
              {"cost_p2p", DurationInto(reader, Sign::kNonNegative, &schedule->cost_p2p)},
              {"csv", StringInto(reader, &schedule->csv)}});
}

Status ReadDocument(const Reader& reader, const YAML::Node& root, Config* config) {
  const std::vector<KeyHandler> sections = {
      {"model", [&](const Field& value) { return ReadModel(reader, value, &config->model); }},
      {"cluster", [&](const Field& value) { return ReadCluster(reader, value, &config->cluster); }},
      {"parallel",
       [&](const Field& value) { return ReadParallel(reader, value, &config->parallel); }},
      {"schedule",
       [&](const Field& value) { return ReadSchedule(reader, value, &config->schedule); }}};
  const std::string expected =
      " (expected a map with sections " + JoinChoices(KeysOf(sections)) + ")";
  if (root.IsNull()) return Error{reader.Where(YAML::Mark()) + "the config is empty" + expected};
  if (!root.IsMap()) {
    return Error{reader.Where(root.Mark()) + "the config is " + Describe(root) + ", not a map" +
                 expected};
  }
  return reader.ReadMap(Field{YAML::Node(), root, ""}, sections);
}

Result<Config> ParseDocuments(const Reader& reader, std::string_view yaml_text) {
  const std::vector<YAML::Node> documents = YAML::LoadAll(std::string(yaml_text));
  for (size_t index = 1; index < documents.size(); ++index) {
    if (documents[index].IsNull()) continue;  // a trailing '---' adds an empty document
    return Error{reader.Where(documents[index].Mark()) +
                 "found a second YAML document (expected one; remove the '---' line above it)"};
  }
  Config config;
  STAGECRAFT_RETURN_IF_ERROR(
      ReadDocument(reader, documents.empty() ? YAML::Node() : documents[0], &config));
  return config;
}

}  // namespace

std::string ConfigLocations::Where(const std::string& path) const {
  const auto found = by_path.find(path);
  return (found == by_path.end() ? source : found->second) + ": " + path + ": ";
}

Result<Config> ParseConfig(std::string_view yaml_text, std::string_view source,
                           ConfigLocations* locations) {
  if (locations != nullptr) *locations = ConfigLocations{std::string(source), {}};
  const Reader reader(source, locations);
  try {
    return ParseDocuments(reader, yaml_text);
  } catch (const YAML::Exception& exception) {
    return Error{reader.Where(exception.mark) + "malformed YAML: " + exception.msg + " (" +
                 kSyntaxHint + ")"};
  }
}

}  // namespace stagecraft
