// ParseConfig: the YAML config (doc/config.md) as a Config. Every problem becomes an Error that
// names "source:line:col", the key path, the bad value, what was expected and a suggestion.
#include "io/config.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/suggest.h"
#include "core/units.h"
#include "hardware/presets.h"
#include "io/hf_config.h"
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

// The keys a map held, with their fields, for rules that span several keys.
using Written = std::map<std::string, Field>;

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
Status Reader::ReadMap(const Field& field, const std::vector<KeyHandler>& handlers,
                       Written* written) const {
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
    Locate(child.path, entry.second.IsNull() ? entry.first.Mark() : entry.second.Mark());
    if (written != nullptr) written->emplace(key, child);
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

Status Reader::Number(const Field& field, double max, const std::string& wanted,
                      double* out) const {
  const std::string expected = " (expected " + wanted + ")";
  auto text = Text(field, wanted);
  if (!text.ok()) return text.error();
  const std::string& digits = text.value();
  double number = 0;
  const char* end = digits.data() + digits.size();
  const auto [stop, error] = std::from_chars(digits.data(), end, number);
  const std::string quoted = "'" + digits + "'";
  if (error != std::errc() || stop != end || !std::isfinite(number)) {
    return At(field, quoted + " is not a number" + expected);
  }
  if (!(number > 0) || number > max) return At(field, quoted + " is out of range" + expected);
  *out = number;
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

Apply IntInto(const Reader& reader, int32_t min, int32_t* out) {
  return [&reader, min, out](const Field& field) { return reader.Int(field, min, out); };
}

// model.transformer.attn_impl's names: the kernel model's table, and `flash` (LLM Foundry's name
// for FlashAttention-2, the first the configs knew).
std::vector<std::pair<std::string, AttentionKernel>> AttentionImplChoices() {
  std::vector<std::pair<std::string, AttentionKernel>> choices = {
      {"flash", AttentionKernel::kFlash}};
  for (const auto& choice : AttentionKernelChoices()) choices.push_back(choice);
  return choices;
}

// A value from a table of names, e.g. {"full", AttentionMode::kFull}; `what` names the kind of
// value in messages ("unknown attention mode 'ful'").
template <typename Enum>
Apply EnumInto(const Reader& reader, std::string what,
               std::vector<std::pair<std::string, Enum>> table, Enum* out) {
  return [&reader, what = std::move(what), table = std::move(table),
          out](const Field& field) -> Status {
    std::vector<std::string> names;
    for (const auto& entry : table) names.push_back(entry.first);
    std::string chosen;
    STAGECRAFT_RETURN_IF_ERROR(reader.Choice(field, what, names, &chosen));
    for (const auto& entry : table) {
      if (entry.first == chosen) *out = entry.second;
    }
    return Status::Ok();
  };
}

Apply BoolInto(const Reader& reader, bool* out) {
  return EnumInto<bool>(reader, "boolean", {{"true", true}, {"false", false}}, out);
}

// The field of `key` when the map held it, else null.
const Field* Find(const Written& written, const std::string& key) {
  const auto found = written.find(key);
  return found == written.end() ? nullptr : &found->second;
}

constexpr char kLayerListExample[] =
    "a list of layer entries such as [{kind: embedding}, {attention: full}, {kind: head}]";
// More layers than any model has (the largest published have under 200); guards `repeat`
// against exhausting memory and the partition against grinding (its search grows with the
// square of the layers: 10^4 layers take 1.6 s in a Release build, 10^5 minutes).
constexpr size_t kMaxLayers = 10'000;

// A model name is printed in every table, plot and trace; a longer one is a mistake.
constexpr size_t kMaxModelNameBytes = 256;

Status ReadModelName(const Reader& reader, const Field& field, ModelSpec* model) {
  STAGECRAFT_RETURN_IF_ERROR(reader.String(field, &model->name));
  if (model->name.size() <= kMaxModelNameBytes) return Status::Ok();
  return reader.At(field, "the model name is " + std::to_string(model->name.size()) +
                              " bytes long (expected at most " +
                              std::to_string(kMaxModelNameBytes) + ")");
}

// DeepSeek-V4.1-Flash defaults (Csa2Dims); every width >= 1 except where 0 means "none".
Status ReadDims(const Reader& reader, const Field& field, Csa2Dims* dims) {
  Written written;
  STAGECRAFT_RETURN_IF_ERROR(
      reader.ReadMap(field,
                     {{"hidden", CountInto(reader, &dims->hidden)},
                      {"hc_streams", CountInto(reader, &dims->hc_streams)},
                      {"vocab", CountInto(reader, &dims->vocab)},
                      {"heads", CountInto(reader, &dims->heads)},
                      {"head_dim", CountInto(reader, &dims->head_dim)},
                      {"query_latent", CountInto(reader, &dims->query_latent)},
                      {"output_groups", CountInto(reader, &dims->output_groups)},
                      {"output_group_dim", CountInto(reader, &dims->output_group_dim)},
                      {"window", CountInto(reader, &dims->window)},
                      {"kv_dim", CountInto(reader, &dims->kv_dim)},
                      {"indexer_heads", CountInto(reader, &dims->indexer_heads)},
                      {"indexer_key_dim", CountInto(reader, &dims->indexer_key_dim)},
                      {"top_k", CountInto(reader, &dims->top_k)},
                      {"candidate_blocks", CountInto(reader, &dims->candidate_blocks)},
                      {"routed_experts", CountInto(reader, &dims->routed_experts)},
                      {"shared_experts", IntInto(reader, 0, &dims->shared_experts)},
                      {"experts_per_token", CountInto(reader, &dims->experts_per_token)},
                      {"expert_width", CountInto(reader, &dims->expert_width)},
                      {"dense_width", IntInto(reader, 0, &dims->dense_width)},
                      {"indexer_trained", BoolInto(reader, &dims->indexer_trained)}},
                     &written));
  if (dims->experts_per_token <= dims->routed_experts) return Status::Ok();
  const Field* where = Find(written, "experts_per_token");
  if (where == nullptr) where = Find(written, "routed_experts");
  return reader.At(*where, "experts_per_token " + std::to_string(dims->experts_per_token) +
                               " exceeds routed_experts " + std::to_string(dims->routed_experts) +
                               " (a token picks its experts among the routed ones)");
}

// parts: {attention, dispatch, mlp, combine}: the forward of the layer in its four pieces
// (DeepSeek-V3 §3.2.1); the forward is their sum and dispatch + combine its all-to-all.
Status ReadLayerParts(const Reader& reader, const Field& field, LayerSpec* layer) {
  Time attention, dispatch, mlp, combine;
  Written written;
  STAGECRAFT_RETURN_IF_ERROR(
      reader.ReadMap(field,
                     {{"attention", DurationInto(reader, Sign::kNonNegative, &attention)},
                      {"dispatch", DurationInto(reader, Sign::kNonNegative, &dispatch)},
                      {"mlp", DurationInto(reader, Sign::kNonNegative, &mlp)},
                      {"combine", DurationInto(reader, Sign::kNonNegative, &combine)}},
                     &written));
  layer->forward = attention + dispatch + mlp + combine;
  layer->all_to_all = dispatch + combine;
  if (layer->forward.ns() <= 0) {
    return reader.At(field,
                     "the parts add up to no time (expected attention, dispatch, mlp and "
                     "combine forward times, e.g. {attention: 2ms, dispatch: 1ms, mlp: "
                     "3ms, combine: 1ms})");
  }
  return Status::Ok();
}

// The checks across a layer entry's keys: parts and forward exclude each other; keys an
// embedding or head entry must not have; swa_only drops the default compress ratio.
Status CheckLayerEntry(const Reader& reader, const Written& written, LayerSpec* layer) {
  if (const Field* parts = Find(written, "parts")) {
    if (const Field* forward = Find(written, "forward")) {
      return reader.At(*forward,
                       "given together with parts (the forward is the sum of the parts; give "
                       "one of them)");
    }
    STAGECRAFT_RETURN_IF_ERROR(ReadLayerParts(reader, *parts, layer));
  }
  if (layer->kind != LayerKind::kDecoder) {
    for (const char* key : {"attention", "compress_ratio", "mlp", "kv_source", "index_source",
                            "candidate_source", "engram"}) {
      if (const Field* field = Find(written, key)) {
        return reader.At(*field,
                         std::string("applies to decoder layers only (this entry has kind: ") +
                             LayerKindName(layer->kind) + "; remove it)");
      }
    }
  }
  if (layer->attention == AttentionMode::kSwaOnly && Find(written, "compress_ratio") == nullptr) {
    layer->compress_ratio = 0;  // swa_only has no compressed KV
  }
  return Status::Ok();
}

// One entry of model.layers; `repeat` receives how many layers it stands for.
Status ReadLayerEntry(const Reader& reader, const Field& field, LayerSpec* layer, int32_t* repeat) {
  if (!field.value.IsMap()) {
    return reader.At(field, "found " + Describe(field.value) +
                                " (expected a layer entry, a map such as {attention: full, "
                                "compress_ratio: 1})");
  }
  Written written;
  STAGECRAFT_RETURN_IF_ERROR(reader.ReadMap(
      field,
      {{"kind", EnumInto<LayerKind>(reader, "layer kind",
                                    {{"embedding", LayerKind::kEmbedding},
                                     {"decoder", LayerKind::kDecoder},
                                     {"head", LayerKind::kHead}},
                                    &layer->kind)},
       {"attention", EnumInto<AttentionMode>(reader, "attention mode",
                                             {{"full", AttentionMode::kFull},
                                              {"reindex", AttentionMode::kReindex},
                                              {"reuse", AttentionMode::kReuse},
                                              {"swa_only", AttentionMode::kSwaOnly}},
                                             &layer->attention)},
       {"compress_ratio", IntInto(reader, 0, &layer->compress_ratio)},
       {"mlp",
        EnumInto<MlpKind>(reader, "mlp", {{"moe", MlpKind::kMoe}, {"dense", MlpKind::kDense}},
                          &layer->mlp)},
       {"repeat", CountInto(reader, repeat)},
       {"kv_source", IntInto(reader, 0, &layer->kv_source)},
       {"index_source", IntInto(reader, 0, &layer->index_source)},
       {"candidate_source", IntInto(reader, 0, &layer->candidate_source)},
       {"forward", DurationInto(reader, Sign::kNonNegative, &layer->forward)},
       {"input_grad", DurationInto(reader, Sign::kNonNegative, &layer->input_grad)},
       {"weight_grad", DurationInto(reader, Sign::kNonNegative, &layer->weight_grad)},
       {"activation_bytes", BytesInto(reader, &layer->activation_bytes)},
       {"weight_grad_bytes", BytesInto(reader, &layer->weight_grad_bytes)},
       {"engram", BoolInto(reader, &layer->engram)},
       {"parts", [](const Field&) { return Status::Ok(); }}},  // CheckLayerEntry reads them
      &written));
  return CheckLayerEntry(reader, written, layer);
}

// The N of a message that starts "layers[N]: " (ResolveSources' contract), else -1.
int32_t FailingLayer(const std::string& message) {
  constexpr std::string_view kPrefix = "layers[";
  if (message.compare(0, kPrefix.size(), kPrefix) != 0) return -1;
  int32_t index = -1;
  const char* begin = message.data() + kPrefix.size();
  const auto [stop, error] = std::from_chars(begin, message.data() + message.size(), index);
  return error == std::errc() && *stop == ']' ? index : -1;
}

// Derives and checks the shared-state sources; an error names the failing layer's entry.
Status ResolveLayers(const Reader& reader, const Field& field, const std::vector<YAML::Mark>& marks,
                     std::vector<LayerSpec>& layers) {
  const Status status = ResolveSources(layers);
  if (status.ok()) return status;
  const int32_t failing = FailingLayer(status.error().message);
  const bool known = failing >= 0 && failing < static_cast<int32_t>(marks.size());
  return Error{reader.Where(known ? marks[failing] : field.value.Mark()) + status.error().message};
}

// model.layers as a list: each entry expands to `repeat` layers (LayerSpec.line = its line).
Status ReadLayerList(const Reader& reader, const Field& field, ModelSpec* model) {
  if (!field.value.IsSequence() || field.value.size() == 0) {
    const std::string found = field.value.IsScalar() ? "found '" + field.value.Scalar() +
                                                           "', a layer count (for type: uniform)"
                                                     : "found " + Describe(field.value);
    return reader.At(field, found + " (expected " + kLayerListExample + ")");
  }
  std::vector<YAML::Mark> marks;  // where each layer was written
  for (const YAML::Node& entry : field.value) {
    const Field entry_field{YAML::Node(), entry,
                            field.path + "[" + std::to_string(model->layers.size()) + "]"};
    LayerSpec layer;
    int32_t repeat = 1;
    STAGECRAFT_RETURN_IF_ERROR(ReadLayerEntry(reader, entry_field, &layer, &repeat));
    if (model->layers.size() + static_cast<size_t>(repeat) > kMaxLayers) {
      return reader.At(entry_field, "the model would have more than " + std::to_string(kMaxLayers) +
                                        " layers (lower repeat)");
    }
    layer.line = entry.Mark().line + 1;
    for (int32_t copy = 0; copy < repeat; ++copy) {  // "model.layers[N]" for every layer
      reader.Locate(field.path + "[" + std::to_string(model->layers.size() + copy) + "]",
                    entry.Mark());
    }
    model->layers.insert(model->layers.end(), static_cast<size_t>(repeat), layer);
    marks.insert(marks.end(), static_cast<size_t>(repeat), entry.Mark());
  }
  model->num_layers = static_cast<int32_t>(model->layers.size());
  return ResolveLayers(reader, field, marks, model->layers);
}

// The uniform model: model.layers is a count; the layer-list keys are errors, except the run's
// shape next to a model from --hf-config (ParseOptions::model_from_hf).
Status FinishUniformModel(const Reader& reader, const Written& written, ModelSpec* model) {
  for (const char* key : {"seq_len", "micro_batch_size", "dims"}) {
    if (reader.options().model_from_hf && std::string_view(key) != "dims") continue;
    if (const Field* field = Find(written, key)) {
      const bool shape = std::string_view(key) != "dims";
      return reader.At(*field, shape ? "applies to layer-list and transformer models only (type: "
                                       "layers or transformer), or next to --hf-config"
                                     : "applies to layer-list models only (type: layers)");
    }
  }
  const Field* layers = Find(written, "layers");
  if (layers == nullptr) return Status::Ok();
  if (layers->value.IsSequence()) {
    return reader.At(*layers,
                     "found a list of layers, but the model type is 'uniform' (a layer list needs "
                     "type: layers; a uniform model takes a layer count)");
  }
  return reader.Int(*layers, 1, &model->num_layers);
}

// The layer-list model: model.layers is a list; the uniform model's costs are errors.
Status FinishLayerListModel(const Reader& reader, const Written& written, ModelSpec* model) {
  for (const char* key : {"forward", "input_grad", "weight_grad", "fb", "activation_bytes",
                          "weight_grad_bytes", "p2p_bytes"}) {
    if (const Field* field = Find(written, key)) {
      const std::string hint = std::string(key) == "p2p_bytes"
                                   ? "the bytes crossing a stage cut follow from model.dims"
                                   : "set it on a layer entry, or leave it out to derive it";
      return reader.At(*field,
                       "applies to the uniform model only (a layer-list model has per-layer "
                       "costs: " +
                           hint + ")");
    }
  }
  const Field* layers = Find(written, "layers");
  if (layers == nullptr) {
    return reader.At(written.at("type"),
                     "a layer-list model needs model.layers, " + std::string(kLayerListExample));
  }
  return ReadLayerList(reader, *layers, model);
}

// model.transformer: the dimensions of a dense decoder-only transformer.
Status ReadTransformer(const Reader& reader, const Field& field, TransformerSpec* spec) {
  const auto wide = [&reader](int64_t* out, int32_t least = 1) -> Apply {
    return [&reader, out, least](const Field& value) -> Status {
      int32_t number = 0;
      STAGECRAFT_RETURN_IF_ERROR(reader.Int(value, least, &number));
      *out = number;
      return Status::Ok();
    };
  };
  Written written;
  STAGECRAFT_RETURN_IF_ERROR(
      reader.ReadMap(field,
                     {{"layers", CountInto(reader, &spec->layers)},
                      {"hidden", wide(&spec->hidden)},
                      {"heads", wide(&spec->heads)},
                      {"kv_heads", wide(&spec->kv_heads)},
                      {"head_dim", wide(&spec->head_dim)},
                      {"ffn_hidden", wide(&spec->ffn_hidden)},
                      {"vocab", wide(&spec->vocab)},
                      {"swiglu", BoolInto(reader, &spec->swiglu)},
                      {"causal", BoolInto(reader, &spec->causal)},
                      {"attn_impl",
                       EnumInto<AttentionKernel>(reader, "attention kernel", AttentionImplChoices(),
                                                 &spec->attention_kernel)},
                      {"tied_embeddings", BoolInto(reader, &spec->tied_embeddings)},
                      {"bias", BoolInto(reader, &spec->bias)},
                      {"learned_positions", BoolInto(reader, &spec->learned_positions)},
                      {"experts", wide(&spec->experts)},
                      {"experts_per_token", wide(&spec->experts_per_token)},
                      {"expert_ffn", wide(&spec->expert_ffn)},
                      {"shared_experts", wide(&spec->shared_experts, 0)},
                      {"dense_layers", IntInto(reader, 0, &spec->dense_layers)},
                      {"q_lora_rank", wide(&spec->q_lora_rank)},
                      {"kv_lora_rank", wide(&spec->kv_lora_rank)},
                      {"qk_nope_dim", wide(&spec->qk_nope_dim)},
                      {"qk_rope_dim", wide(&spec->qk_rope_dim)},
                      {"v_head_dim", wide(&spec->v_head_dim)},
                      {"weight_format",
                       [&reader, spec](const Field& value) {
                         return reader.Choice(value, "weight format",
                                              {"bf16", "fp8", "int8", "int4", "fp4"},
                                              &spec->weight_format);
                       }},
                      {"kv_cache_dtype",
                       [&reader, spec](const Field& value) {
                         return reader.Choice(value, "KV cache dtype", {"bf16", "fp8"},
                                              &spec->kv_cache_dtype);
                       }},
                      {"sliding_window", wide(&spec->sliding_window)},
                      {"sliding_window_layers", IntInto(reader, 0, &spec->window_layers)}},
                     &written));
  for (const char* key : {"layers", "hidden", "heads", "vocab"}) {
    if (Find(written, key) == nullptr) {
      return reader.At(field, std::string("needs '") + key +
                                  "' (a transformer is given by layers, hidden, heads and vocab; "
                                  "kv_heads, head_dim, ffn_hidden, swiglu, causal optional)");
    }
  }
  if (spec->layers > kMaxTransformerLayers) {
    return reader.At(*Find(written, "layers"),
                     std::to_string(spec->layers) + " layers is above the limit of " +
                         std::to_string(kMaxTransformerLayers) +
                         " (more than any published model; expected a real layer count)");
  }
  if (spec->head_dim == 0 && spec->hidden % spec->heads != 0) {
    return reader.At(*Find(written, "heads"),
                     std::to_string(spec->heads) + " heads do not divide hidden " +
                         std::to_string(spec->hidden) + " (give head_dim explicitly)");
  }
  if (spec->experts > 0 && (spec->experts_per_token < 1 || spec->expert_ffn < 1 ||
                            spec->experts_per_token > spec->experts)) {
    return reader.At(*Find(written, "experts"),
                     "a mixture of experts needs experts_per_token (1.." +
                         std::to_string(spec->experts) + ") and expert_ffn");
  }
  if (spec->kv_lora_rank > 0 &&
      (spec->qk_nope_dim < 1 || spec->qk_rope_dim < 1 || spec->v_head_dim < 1)) {
    return reader.At(*Find(written, "kv_lora_rank"),
                     "latent attention needs qk_nope_dim, qk_rope_dim and v_head_dim");
  }
  // A window on every layer unless sliding_window_layers says how many (interleaved models).
  const Field* window_layers = Find(written, "sliding_window_layers");
  if (window_layers != nullptr && Find(written, "sliding_window") == nullptr) {
    return reader.At(*window_layers,
                     "needs sliding_window (the window's tokens) next to it, e.g. "
                     "sliding_window: 4096");
  }
  if (window_layers == nullptr && spec->sliding_window > 0) spec->window_layers = spec->layers;
  if (spec->window_layers > spec->layers) {
    return reader.At(*window_layers, std::to_string(spec->window_layers) +
                                         " sliding-window layers, more than the model's " +
                                         std::to_string(spec->layers) + " (expected 0.." +
                                         std::to_string(spec->layers) + ")");
  }
  if (spec->sliding_window > 0 && spec->kv_lora_rank > 0) {
    return reader.At(*Find(written, "sliding_window"),
                     "a sliding window applies to MHA/GQA/MQA layers; this model's attention is "
                     "latent (kv_lora_rank): drop sliding_window");
  }
  if (spec->attention_kernel != AttentionKernel::kFlash && !spec->causal) {
    return reader.At(*Find(written, "attn_impl"),
                     "attn_impl names a fused attention kernel, but this model's attention "
                     "is the unfused path (causal: false): set causal: true, or drop attn_impl");
  }
  if (spec->kv_heads > 0 && spec->heads % spec->kv_heads != 0) {
    return reader.At(*Find(written, "kv_heads"),
                     std::to_string(spec->kv_heads) + " KV heads do not divide " +
                         std::to_string(spec->heads) + " query heads (GQA groups must be equal)");
  }
  return Status::Ok();
}

// The transformer model: model.transformer holds its dimensions; costs are derived.
Status FinishTransformerModel(const Reader& reader, const Field& field, const Written& written,
                              ModelSpec* model) {
  for (const char* key : {"forward", "input_grad", "weight_grad", "fb", "activation_bytes",
                          "weight_grad_bytes", "p2p_bytes", "layers", "dims"}) {
    if (const Field* found = Find(written, key)) {
      return reader.At(*found,
                       "does not apply to a transformer model (its costs, layers and payload "
                       "follow from model.transformer)");
    }
  }
  const Field* spec = Find(written, "transformer");
  if (spec == nullptr) {
    return reader.At(field,
                     "type: transformer needs model.transformer, e.g. {layers: 24, hidden: 2304, "
                     "heads: 24, vocab: 51200}");
  }
  return ReadTransformer(reader, *spec, &model->transformer);
}

// type: uniform (the default), layers or transformer; a list under `layers` with no type means
// layers.
Status ReadModel(const Reader& reader, const Field& field, ModelSpec* model) {
  std::string type;
  const Apply read_type = [&reader, &type](const Field& value) {
    return reader.Choice(value, "model type", {"uniform", "layers", "transformer"}, &type);
  };
  const Apply later = [](const Field&) { return Status::Ok(); };  // once the type is known
  Written written;
  STAGECRAFT_RETURN_IF_ERROR(reader.ReadMap(
      field,
      {{"name",
        [&reader, model](const Field& value) { return ReadModelName(reader, value, model); }},
       {"type", read_type},
       {"layers", later},
       {"seq_len", CountInto(reader, &model->seq_len)},
       {"micro_batch_size", CountInto(reader, &model->micro_batch_size)},
       {"dims",
        [&reader, model](const Field& value) { return ReadDims(reader, value, &model->dims); }},
       {"forward", DurationInto(reader, Sign::kPositive, &model->forward)},
       {"input_grad", DurationInto(reader, Sign::kPositive, &model->input_grad)},
       {"weight_grad", DurationInto(reader, Sign::kNonNegative, &model->weight_grad)},
       {"fb", DurationInto(reader, Sign::kPositive, &model->fb)},
       {"activation_bytes", BytesInto(reader, &model->activation_bytes)},
       {"weight_grad_bytes", BytesInto(reader, &model->weight_grad_bytes)},
       {"p2p_bytes", BytesInto(reader, &model->p2p_bytes)},
       {"transformer", later}},
      &written));
  if (type == "transformer") return FinishTransformerModel(reader, field, written, model);
  if (const Field* transformer = Find(written, "transformer")) {
    return reader.At(*transformer, "applies to type: transformer only (set model.type)");
  }
  const Field* layers = Find(written, "layers");
  const bool layer_list =
      type == "layers" || (type.empty() && layers != nullptr && layers->value.IsSequence());
  return layer_list ? FinishLayerListModel(reader, written, model)
                    : FinishUniformModel(reader, written, model);
}

Status ReadLink(const Reader& reader, const Field& field, LinkSpec* link) {
  return reader.ReadMap(field,
                        {{"latency", DurationInto(reader, Sign::kNonNegative, &link->latency)},
                         {"bandwidth", BandwidthInto(reader, &link->bandwidth_bytes_per_s)}});
}

// The compute of one device: peak_tflops (TFLOP/s) and the fraction of it a layer achieves.
Status ReadDevice(const Reader& reader, const Field& field, ClusterSpec* cluster) {
  const Apply peak = [&reader, cluster](const Field& value) -> Status {
    double tflops = 0;
    STAGECRAFT_RETURN_IF_ERROR(reader.Number(value, std::numeric_limits<double>::infinity(),
                                             "TFLOP/s, a number > 0 such as 989.5", &tflops));
    cluster->peak_flops_per_s = tflops * 1e12;
    return Status::Ok();
  };
  return reader.ReadMap(field,
                        {{"peak_tflops", peak},
                         {"memory", BytesInto(reader, &cluster->hbm_bytes)},
                         {"memory_reserve", BytesInto(reader, &cluster->memory_reserve_bytes)},
                         {"efficiency",
                          [&reader, cluster](const Field& value) {
                            cluster->efficiency_given = true;
                            return reader.Number(value, 1.0, "a fraction > 0 and <= 1 such as 0.4",
                                                 &cluster->compute_efficiency);
                          }},
                         {"memory_efficiency", [&reader, cluster](const Field& value) {
                            return reader.Number(value, 1.0, "a fraction > 0 and <= 1 such as 0.8",
                                                 &cluster->memory_efficiency);
                          }}});
}

// Writing the section at all (even empty) turns the cluster model on.
// `preset: h100x2` starts from a preset cluster (hardware/presets.h); the other keys override it.
Status ReadCluster(const Reader& reader, const Field& field, ClusterSpec* cluster) {
  cluster->given = true;
  if (field.value.IsMap()) {
    for (const auto& entry : field.value) {
      if (entry.first.as<std::string>("") != "preset") continue;
      const Field preset{entry.first, entry.second, field.path + ".preset"};
      std::string name;
      STAGECRAFT_RETURN_IF_ERROR(StringInto(reader, &name)(preset));
      auto spec = ClusterFromPreset(name);
      if (!spec.ok()) return reader.At(preset, spec.error().message);
      *cluster = std::move(spec).value();
    }
  }
  const auto link = [&reader](LinkSpec* out) -> Apply {
    return [&reader, out](const Field& value) { return ReadLink(reader, value, out); };
  };
  STAGECRAFT_RETURN_IF_ERROR(
      reader.ReadMap(field, {{"preset", [](const Field&) { return Status::Ok(); }},
                             {"devices_per_node", CountInto(reader, &cluster->devices_per_node)},
                             {"nodes", CountInto(reader, &cluster->nodes)},
                             {"intra_node", link(&cluster->intra_node)},
                             {"inter_node", link(&cluster->inter_node)},
                             {"device", [&reader, cluster](const Field& value) {
                                return ReadDevice(reader, value, cluster);
                              }}}));
  if (int64_t{cluster->nodes} * cluster->devices_per_node > kMaxClusterDevices) {
    return reader.At(field, std::to_string(cluster->nodes) + " nodes x " +
                                std::to_string(cluster->devices_per_node) +
                                " devices per node are more than the limit of " +
                                std::to_string(kMaxClusterDevices) + " devices");
  }
  return Status::Ok();
}

// parallel.layer_counts: a non-empty list of integers >= 1.
Status ReadLayerCounts(const Reader& reader, const Field& field, std::vector<int32_t>* counts) {
  if (!field.value.IsSequence() || field.value.size() == 0) {
    return reader.At(field,
                     "found " + Describe(field.value) +
                         " (expected a list of layer counts, one per stage, such as [3, 4, 3])");
  }
  counts->clear();
  for (const YAML::Node& item : field.value) {
    const Field count{YAML::Node(), item, field.path + "[" + std::to_string(counts->size()) + "]"};
    STAGECRAFT_RETURN_IF_ERROR(reader.Int(count, 1, &counts->emplace_back()));
  }
  return Status::Ok();
}

// layer_counts goes with partition: counts and layout with partition: layout; either one
// alone implies its partition.
Status CheckPartition(const Reader& reader, const Written& written, ParallelSpec* parallel) {
  const Field* partition = Find(written, "partition");
  const Field* counts = Find(written, "layer_counts");
  const Field* layout = Find(written, "layout");
  if (counts != nullptr && layout != nullptr) {
    return reader.At(*layout, "give layer_counts or layout, not both");
  }
  if (layout != nullptr && parallel->layout.empty()) {
    return reader.At(*layout, "is empty (expected a layout such as 'Et*3|t*4|t*3L')");
  }
  if (partition == nullptr) {
    if (counts != nullptr) parallel->partition = PartitionMethod::kCounts;
    if (layout != nullptr) parallel->partition = PartitionMethod::kLayout;
    return Status::Ok();
  }
  const std::string method = "'" + partition->value.Scalar() + "'";
  const bool counts_used = parallel->partition == PartitionMethod::kCounts;
  const bool layout_used = parallel->partition == PartitionMethod::kLayout;
  if (counts_used && counts == nullptr) {
    return reader.At(*partition, method + " needs parallel.layer_counts, one count per stage");
  }
  if (layout_used && layout == nullptr) {
    return reader.At(*partition, method + " needs parallel.layout, e.g. 'Et*3|t*4|t*3L'");
  }
  const Field* given = counts != nullptr ? counts : layout;  // at most one of them
  if (given == nullptr || (given == counts ? counts_used : layout_used)) return Status::Ok();
  return reader.At(*given, "is not used with partition: " + partition->value.Scalar() +
                               " (remove it, or set partition: " +
                               (given == counts ? "counts" : "layout") + ")");
}

Status ReadParallel(const Reader& reader, const Field& field, ParallelSpec* parallel) {
  Written written;
  STAGECRAFT_RETURN_IF_ERROR(reader.ReadMap(
      field,
      {{"pp", CountInto(reader, &parallel->pp)},
       {"vpp", CountInto(reader, &parallel->vpp)},
       {"microbatches", CountInto(reader, &parallel->microbatches)},
       {"placement",
        EnumInto<Placement>(
            reader, "placement",
            {{"loop", Placement::kLoop}, {"v", Placement::kV}, {"dual", Placement::kDual}},
            &parallel->placement)},
       {"partition", EnumInto<PartitionMethod>(reader, "partition method", PartitionMethodChoices(),
                                               &parallel->partition)},
       {"layer_counts",
        [&reader, parallel](const Field& value) {
          return ReadLayerCounts(reader, value, &parallel->layer_counts);
        }},
       {"layout", StringInto(reader, &parallel->layout)},
       {"tp", CountInto(reader, &parallel->tp)},
       {"dp", CountInto(reader, &parallel->dp)},
       {"cp", CountInto(reader, &parallel->cp)},
       {"ep", CountInto(reader, &parallel->ep)},
       {"cp_mode", EnumInto<bool>(reader, "cp mode", {{"ring", false}, {"all-gather", true}},
                                  &parallel->cp_all_gather)},
       {"context_parallel_rotate_method",
        EnumInto<CpRotate>(reader, "rotate method", CpRotateChoices(), &parallel->cp_rotate)},
       {"cp_sharding",
        EnumInto<CpSharding>(reader, "cp sharding", CpShardingChoices(), &parallel->cp_sharding)},
       {"cp_overlap", BoolInto(reader, &parallel->cp_overlap)},
       {"sequence_parallel", BoolInto(reader, &parallel->sequence_parallel)},
       {"recompute",
        EnumInto<Recompute>(reader, "recompute", RecomputeChoices(), &parallel->recompute)},
       {"recompute_num_layers", CountInto(reader, &parallel->recompute_num_layers)},
       {"recompute_method",
        EnumInto<RecomputeMethod>(reader, "recompute method", RecomputeMethodChoices(),
                                  &parallel->recompute_method)},
       {"distributed_optimizer", BoolInto(reader, &parallel->distributed_optimizer)},
       {"fp8", BoolInto(reader, &parallel->fp8)},
       {"enable_fsdp_float8_all_gather", BoolInto(reader, &parallel->fp8_all_gather)},
       {"fused_kernels", BoolInto(reader, &parallel->fused_kernels)},
       {"cross_entropy_fusion",
        EnumInto<CrossEntropyFusion>(reader, "cross entropy fusion",
                                     {{"none", CrossEntropyFusion::kNone},
                                      {"native", CrossEntropyFusion::kNative},
                                      {"te", CrossEntropyFusion::kTe},
                                      {"torch", CrossEntropyFusion::kTorch},
                                      {"torch-compiled", CrossEntropyFusion::kTorchCompiled}},
                                     &parallel->cross_entropy_fusion)},
       {"overlap_grad_reduce", BoolInto(reader, &parallel->overlap_grad_reduce)},
       {"overlap_param_gather", BoolInto(reader, &parallel->overlap_param_gather)},
       {"tp_comm_overlap", BoolInto(reader, &parallel->tp_comm_overlap)},
       {"async_tp", BoolInto(reader, &parallel->async_tp)},
       {"fsdp_reshard_after_forward",
        [&reader, parallel](const Field& value) -> Status {
          bool reshard = true;
          const Status read = BoolInto(reader, &reshard)(value);
          if (!read.ok()) return read;
          parallel->reshard_after_forward =
              reshard ? ReshardAfterForward::kYes : ReshardAfterForward::kNo;
          return Status::Ok();
        }},
       {"grad_buckets", EnumInto<GradBuckets>(reader, "gradient buckets",
                                              {{"none", GradBuckets::kNone},
                                               {"pytorch", GradBuckets::kPytorch},
                                               {"megatron", GradBuckets::kMegatron}},
                                              &parallel->grad_buckets)},
       {"fsdp",
        [&reader, parallel](const Field& value) -> Status {
          std::string mode;
          const Status read =
              reader.Choice(value, "fsdp sharding strategy",
                            {"no-shard", "shard-grad-op", "full-shard", "hybrid"}, &mode);
          if (!read.ok()) return read;
          parallel->zero_stage = mode == "no-shard" ? 0 : mode == "shard-grad-op" ? 2 : 3;
          parallel->hybrid_shard = mode == "hybrid";
          return Status::Ok();
        }},
       {"zero_stage",
        [&reader, parallel](const Field& value) -> Status {
          const Status read = reader.Int(value, 0, &parallel->zero_stage);
          if (!read.ok()) return read;
          if (parallel->zero_stage > kMaxZeroStage) {
            return reader.At(value, "is " + std::to_string(parallel->zero_stage) + " (" +
                                        kZeroStageExpected + ")");
          }
          return Status::Ok();
        }},
       {"precision", EnumInto<TrainingPrecision>(reader, "precision",
                                                 {{"fp32", TrainingPrecision::kFp32},
                                                  {"bf16", TrainingPrecision::kBf16},
                                                  {"fp16", TrainingPrecision::kFp16},
                                                  {"fp8", TrainingPrecision::kFp8}},
                                                 &parallel->precision)}},
      &written));
  // The recomputation's layer count and method shape full recomputation only (Megatron's
  // --recompute-num-layers and --recompute-method go with --recompute-granularity full).
  for (const char* key : {"recompute_num_layers", "recompute_method"}) {
    const Field* found = Find(written, key);
    if (found != nullptr && parallel->recompute != Recompute::kFull) {
      return reader.At(*found, std::string("applies with recompute: full (the layers that "
                                           "recompute, or their groups), but recompute is '") +
                                   RecomputeName(parallel->recompute) +
                                   "': set recompute: full, or drop " + key);
    }
  }
  return CheckPartition(reader, written, parallel);
}

Status ReadScheduleName(const Reader& reader, const Field& field, std::string* out) {
  STAGECRAFT_RETURN_IF_ERROR(reader.String(field, out));
  if (FindCostAwareScheduleGenerator(*out) != nullptr) return Status::Ok();
  auto generator = FindScheduleGenerator(*out);
  if (!generator.ok()) return reader.At(field, generator.error().message);
  return Status::Ok();
}

Status ReadSchedule(const Reader& reader, const Field& field, ScheduleSpec* schedule) {
  return reader.ReadMap(
      field,
      {{"name",
        [&reader, schedule](const Field& value) {
          return ReadScheduleName(reader, value, &schedule->name);
        }},
       {"group_size", CountInto(reader, &schedule->group_size)},
       {"p2p", EnumInto<P2pMode>(reader, "mode", P2pModeChoices(), &schedule->p2p)},
       {"cost_p2p", DurationInto(reader, Sign::kNonNegative, &schedule->cost_p2p)},
       {"csv", StringInto(reader, &schedule->csv)},
       {"state_policy", EnumInto<StatePolicy>(reader, "state policy", StatePolicyChoices(),
                                              &schedule->state_policy)},
       {"shadow_reading", EnumInto<ShadowReading>(reader, "shadow reading", ShadowReadingChoices(),
                                                  &schedule->shadow_reading)},
       {"state_buffer_slots", IntInto(reader, 0, &schedule->state_buffer_slots)}});
}

// multimodal.vision: the vision encoder and where it runs (multimodal/vision.h);
// multimodal.engram: how the Engram tables are sharded (multimodal/engram.h).
Status ReadVision(const Reader& reader, const Field& field, VisionSpec* vision) {
  vision->given = true;
  const Apply tokens = [&reader, vision](const Field& value) -> Status {
    std::string text;
    STAGECRAFT_RETURN_IF_ERROR(reader.String(value, &text));
    auto dist = ParseImageTokens(text);
    if (!dist.ok()) return reader.At(value, dist.error().message);
    const uint64_t seed = vision->image_tokens.seed;
    vision->image_tokens = std::move(dist).value();
    vision->image_tokens.seed = seed;
    return Status::Ok();
  };
  const Apply seed = [&reader, vision](const Field& value) -> Status {
    int32_t number = 0;
    STAGECRAFT_RETURN_IF_ERROR(reader.Int(value, 0, &number));
    vision->image_tokens.seed = static_cast<uint64_t>(number);
    return Status::Ok();
  };
  return reader.ReadMap(
      field, {{"placement",
               EnumInto(reader, "vision placement", VisionPlacementChoices(), &vision->placement)},
              {"layers", CountInto(reader, &vision->layers)},
              {"hidden", CountInto(reader, &vision->hidden)},
              {"heads", CountInto(reader, &vision->heads)},
              {"mlp", CountInto(reader, &vision->mlp)},
              {"patch", CountInto(reader, &vision->patch)},
              {"unshuffle", CountInto(reader, &vision->unshuffle)},
              {"images_per_sample", CountInto(reader, &vision->images_per_sample)},
              {"recompute", BoolInto(reader, &vision->recompute)},
              {"image_tokens", tokens},
              {"seed", seed},
              {"devices", CountInto(reader, &vision->devices)},
              {"tp", CountInto(reader, &vision->tp)},
              {"pp", CountInto(reader, &vision->pp)}});
}

Status ReadEngram(const Reader& reader, const Field& field, EngramSharding* engram) {
  engram->given = true;
  return reader.ReadMap(field,
                        {{"owners", CountInto(reader, &engram->owners)},
                         {"host_memory", BoolInto(reader, &engram->host_memory)},
                         {"pcie_bandwidth", BandwidthInto(reader, &engram->pcie_bytes_per_s)},
                         {"table_rows", [&reader, engram](const Field& value) -> Status {
                            int32_t rows = 0;  // up to 2^31 - 1 rows per table
                            STAGECRAFT_RETURN_IF_ERROR(reader.Int(value, 1, &rows));
                            engram->table_rows = rows;
                            return Status::Ok();
                          }}});
}

Status ReadMultimodal(const Reader& reader, const Field& field, MultimodalSpec* multimodal) {
  return reader.ReadMap(
      field, {{"vision",
               [&](const Field& value) { return ReadVision(reader, value, &multimodal->vision); }},
              {"engram", [&](const Field& value) {
                 return ReadEngram(reader, value, &multimodal->engram);
               }}});
}

Status ReadDocument(const Reader& reader, const YAML::Node& root, Config* config) {
  const std::vector<KeyHandler> sections = {
      {"model", [&](const Field& value) { return ReadModel(reader, value, &config->model); }},
      {"cluster", [&](const Field& value) { return ReadCluster(reader, value, &config->cluster); }},
      {"parallel",
       [&](const Field& value) { return ReadParallel(reader, value, &config->parallel); }},
      {"schedule",
       [&](const Field& value) { return ReadSchedule(reader, value, &config->schedule); }},
      {"multimodal",
       [&](const Field& value) { return ReadMultimodal(reader, value, &config->multimodal); }}};
  const std::string expected =
      " (expected a map with sections " + JoinChoices(KeysOf(sections)) + ")";
  if (root.IsNull()) return Error{reader.Where(YAML::Mark()) + "the config is empty" + expected};
  if (!root.IsMap()) {
    return Error{reader.Where(root.Mark()) + "the config is " + Describe(root) + ", not a map" +
                 expected};
  }
  return reader.ReadMap(Field{YAML::Node(), root, ""}, sections);
}

// Where each document of a YAML stream starts and whether it holds anything. It replaces
// YAML::LoadAll, which in yaml-cpp 0.7 loops forever, allocating, when a document consumes
// nothing, as after a stray ',' at the top level (jbeder/yaml-cpp#1040, fixed upstream by #1319;
// found by fuzz/fuzz_config): the scan stops at the first document that made no progress.
class DocumentScan : public YAML::EventHandler {
 public:
  struct Document {
    YAML::Mark mark;   // of its first node
    bool null = true;  // holds nothing (a trailing '---')
    bool seen = false;
  };

  // Scans the whole stream; throws YAML::ParserException on malformed YAML.
  explicit DocumentScan(const std::string& text) {
    std::istringstream stream(text);
    YAML::Parser parser(stream);
    while (parser.HandleNextDocument(*this)) {
      const size_t count = documents_.size();
      if (count >= 2 && documents_[count - 1].null && documents_[count - 2].null &&
          documents_[count - 1].mark.pos == documents_[count - 2].mark.pos) {
        stalled_at_ = documents_.back().mark;  // no progress: the next call would do the same
        documents_.pop_back();
        break;
      }
      if (count > text.size() + 1) break;  // every real document consumes a character
    }
  }
  const std::vector<Document>& documents() const { return documents_; }
  // Where the parser stopped making progress, if it did.
  const std::optional<YAML::Mark>& stalled_at() const { return stalled_at_; }

  void OnDocumentStart(const YAML::Mark&) override { documents_.emplace_back(); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, true); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, false); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Node(mark, false);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Node(mark, false);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Node(mark, false);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& mark, bool null) {
    if (documents_.empty()) documents_.emplace_back();
    Document& document = documents_.back();
    if (document.seen) return;
    document = Document{mark, null, true};
  }

  std::vector<Document> documents_;
  std::optional<YAML::Mark> stalled_at_;
};

Result<Config> ParseDocuments(const Reader& reader, std::string_view yaml_text) {
  const std::string text(yaml_text);
  const DocumentScan scan(text);
  if (scan.stalled_at()) {
    return Error{reader.Where(*scan.stalled_at()) +
                 "malformed YAML: the parser cannot read past this point (a stray ',', '?' or "
                 "flow indicator outside [] or {}?) (" +
                 kSyntaxHint + ")"};
  }
  for (size_t index = 1; index < scan.documents().size(); ++index) {
    const DocumentScan::Document& document = scan.documents()[index];
    if (document.null) continue;  // a trailing '---' adds an empty document
    return Error{reader.Where(document.mark) +
                 "found a second YAML document (expected one; remove the '---' line above it)"};
  }
  Config config;
  STAGECRAFT_RETURN_IF_ERROR(ReadDocument(reader, YAML::Load(text), &config));  // the first
  return config;
}

}  // namespace

const std::vector<std::pair<std::string, PartitionMethod>>& PartitionMethodChoices() {
  static const std::vector<std::pair<std::string, PartitionMethod>> kChoices = {
      {"state-aware", PartitionMethod::kStateAware},
      {"cost", PartitionMethod::kCost},
      {"counts", PartitionMethod::kCounts},
      {"layout", PartitionMethod::kLayout}};
  return kChoices;
}

const std::vector<std::pair<std::string, Recompute>>& RecomputeChoices() {
  static const std::vector<std::pair<std::string, Recompute>> kChoices = {
      {"none", Recompute::kNone},
      {"selective", Recompute::kSelective},
      {"selective-op", Recompute::kSelectiveOp},
      {"full", Recompute::kFull}};
  return kChoices;
}

const std::vector<std::pair<std::string, RecomputeMethod>>& RecomputeMethodChoices() {
  static const std::vector<std::pair<std::string, RecomputeMethod>> kChoices = {
      {"block", RecomputeMethod::kBlock}, {"uniform", RecomputeMethod::kUniform}};
  return kChoices;
}

const char* RecomputeMethodName(RecomputeMethod method) {
  return NameIn(RecomputeMethodChoices(), method);
}

const std::vector<std::pair<std::string, CpRotate>>& CpRotateChoices() {
  static const std::vector<std::pair<std::string, CpRotate>> kChoices = {
      {"allgather", CpRotate::kAllGather}, {"alltoall", CpRotate::kAllToAll}};
  return kChoices;
}

const std::vector<std::pair<std::string, CpSharding>>& CpShardingChoices() {
  static const std::vector<std::pair<std::string, CpSharding>> kChoices = {
      {"contiguous", CpSharding::kContiguous}, {"zigzag", CpSharding::kZigzag}};
  return kChoices;
}

const char* PartitionMethodName(PartitionMethod method) {
  return NameIn(PartitionMethodChoices(), method);
}

std::string ConfigLocations::Where(const std::string& path) const {
  const auto found = by_path.find(path);
  return (found == by_path.end() ? source : found->second) + ": " + path + ": ";
}

Result<Config> ParseConfig(std::string_view yaml_text, std::string_view source,
                           ConfigLocations* locations, const ParseOptions& options) {
  if (locations != nullptr) *locations = ConfigLocations{std::string(source), {}};
  const Reader reader(source, locations, options);
  try {
    return ParseDocuments(reader, yaml_text);
  } catch (const YAML::Exception& exception) {
    return Error{reader.Where(exception.mark) + "malformed YAML: " + exception.msg + " (" +
                 kSyntaxHint + ")"};
  }
}

}  // namespace stagecraft
