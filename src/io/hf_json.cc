#include "io/hf_json.h"

namespace stagecraft::hf_json {

std::string Where(std::string_view source, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return std::string(source) + ": ";
  return std::string(source) + ":" + std::to_string(mark.line + 1) + ":" +
         std::to_string(mark.column + 1) + ": ";
}

Status ReadInteger(const YAML::Node& node, const char* key, std::string_view source, int64_t min,
                   int64_t max, int64_t* out) {
  try {
    const int64_t value = node.as<int64_t>();
    if (value < min || value > max) throw YAML::BadConversion(node.Mark());
    *out = value;
  } catch (const YAML::Exception&) {
    return Error{Where(source, node) + "'" + key +
                 "' must be an integer >= " + std::to_string(min)};
  }
  return Status::Ok();
}

bool IntList(const YAML::Node& node, std::vector<int64_t>* out) {
  if (!node || !node.IsSequence()) return false;
  out->clear();
  try {
    for (const YAML::Node& item : node) out->push_back(item.as<int64_t>());
  } catch (const YAML::Exception&) {
    return false;
  }
  return true;
}

std::string Text(const YAML::Node& node, const char* key) {
  const YAML::Node value = node[key];
  return value && value.IsScalar() ? value.as<std::string>("") : std::string();
}

}  // namespace stagecraft::hf_json
