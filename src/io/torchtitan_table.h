// One table of a torchtitan job config with typed access (TableValues), for the readers of
// io/torchtitan_config.cc and io/torchtitan_pipeline.cc. Internal to src/io.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "io/toml.h"

namespace stagecraft::torchtitan_job {

// One table's values with typed access; errors name the file, line, table and key.
class TableValues {
 public:
  TableValues(const TomlTable* table, std::string source, std::string name)
      : table_(table), source_(std::move(source)), name_(std::move(name)) {}

  const TomlValue* Find(const std::string& key) const {
    if (table_ == nullptr) return nullptr;
    for (const auto& [name, value] : table_->keys) {
      if (name == key) return &value;
    }
    return nullptr;
  }

  Error Fail(const std::string& key, const std::string& message) const {
    const TomlValue* value = Find(key);
    const int32_t line = value != nullptr ? value->line : (table_ != nullptr ? table_->line : 0);
    const std::string where = line > 0 ? source_ + ":" + std::to_string(line) : source_;
    return Error{where + ": [" + name_ + "] " + key + " " + message};
  }

  Result<std::optional<int64_t>> Int(const std::string& key, int64_t low) const {
    const TomlValue* value = Find(key);
    if (value == nullptr) return std::optional<int64_t>();
    if (value->kind != TomlValue::Kind::kInteger) {
      return Fail(key, std::string("is ") + TomlKindName(value->kind) + " (expected an integer)");
    }
    if (value->integer < low || value->integer > (int64_t{1} << 30)) {
      return Fail(key, "= " + std::to_string(value->integer) + " (expected an integer from " +
                           std::to_string(low) + " to 2^30)");
    }
    return std::optional<int64_t>(value->integer);
  }

  Result<std::optional<std::string>> String(const std::string& key) const {
    const TomlValue* value = Find(key);
    if (value == nullptr) return std::optional<std::string>();
    if (value->kind != TomlValue::Kind::kString) {
      return Fail(key, std::string("is ") + TomlKindName(value->kind) + " (expected a string)");
    }
    return std::optional<std::string>(value->text);
  }

  Result<std::optional<bool>> Bool(const std::string& key) const {
    const TomlValue* value = Find(key);
    if (value == nullptr) return std::optional<bool>();
    if (value->kind != TomlValue::Kind::kBool) {
      return Fail(key,
                  std::string("is ") + TomlKindName(value->kind) + " (expected true or false)");
    }
    return std::optional<bool>(value->boolean);
  }

  // An array of arrays of strings; nullopt when the key is absent.
  Result<std::optional<std::vector<std::vector<std::string>>>> NameLists(
      const std::string& key) const {
    const TomlValue* value = Find(key);
    if (value == nullptr) return std::optional<std::vector<std::vector<std::string>>>();
    if (value->kind == TomlValue::Kind::kStringArrays) {
      return std::optional<std::vector<std::vector<std::string>>>(value->arrays);
    }
    if (value->kind == TomlValue::Kind::kStringArray && value->strings.empty()) {
      return std::optional<std::vector<std::vector<std::string>>>(
          std::vector<std::vector<std::string>>());
    }
    return Fail(key, std::string("is ") + TomlKindName(value->kind) +
                         " (expected an array of arrays of module names, one per stage)");
  }

  // An array of strings, or one string of comma-separated names (torchtitan takes both).
  Result<std::vector<std::string>> Names(const std::string& key) const {
    const TomlValue* value = Find(key);
    std::vector<std::string> names;
    if (value == nullptr) return names;
    if (value->kind == TomlValue::Kind::kStringArray) return value->strings;
    if (value->kind != TomlValue::Kind::kString) {
      return Fail(
          key, std::string("is ") + TomlKindName(value->kind) + " (expected an array of strings)");
    }
    std::string name;
    for (char c : value->text + ",") {
      if (c != ',') {
        if (c != ' ') name += c;
        continue;
      }
      if (!name.empty()) names.push_back(name);
      name.clear();
    }
    return names;
  }

 private:
  const TomlTable* table_;
  std::string source_;
  std::string name_;
};

}  // namespace stagecraft::torchtitan_job

// `auto lhs = expr's value`, or return its error.
#define STAGECRAFT_ASSIGN_OR_RETURN(lhs, expr)         \
  auto lhs##_result = (expr);                          \
  if (!lhs##_result.ok()) return lhs##_result.error(); \
  auto lhs = std::move(lhs##_result).value()
