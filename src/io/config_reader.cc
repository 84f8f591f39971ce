// The YAML config's Reader and the handlers that store what it reads (io/config_reader.h).
#include "io/config_reader.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "core/suggest.h"
#include "core/units.h"

namespace stagecraft::config_yaml {
namespace {

constexpr char kDurationHint[] = "a duration such as '1.5ms'; a bare number means ms";
constexpr char kSizeHint[] = "a size such as '64MiB'; a bare number means bytes";
constexpr char kBandwidthHint[] =
    "a bandwidth such as '300GB/s'; a bare number means bytes per second";
std::string Scope(const std::string& path) {
  return path.empty() ? "at the top level" : "in " + path;
}

}  // namespace

std::string Describe(const YAML::Node& node) {
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  return "no value";
}

std::vector<std::string> KeysOf(const std::vector<KeyHandler>& handlers) {
  std::vector<std::string> keys;
  for (const KeyHandler& handler : handlers) keys.push_back(handler.key);
  return keys;
}

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

Apply BoolInto(const Reader& reader, bool* out) {
  static constexpr EnumTable<bool> kBooleanNames = {{"true", true}, {"false", false}};
  return EnumInto(reader, "boolean", kBooleanNames, out);
}

// The field of `key` when the map held it, else null.
const Field* Find(const Written& written, const std::string& key) {
  const auto found = written.find(key);
  return found == written.end() ? nullptr : &found->second;
}

}  // namespace stagecraft::config_yaml
