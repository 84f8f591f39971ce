#include "io/validation_set.h"

#include <yaml-cpp/yaml.h>

#include <set>

namespace stagecraft {
namespace {

std::string Where(std::string_view source, const YAML::Mark& mark) {
  if (mark.is_null()) return std::string(source) + ": ";
  return std::string(source) + ":" + std::to_string(mark.line + 1) + ":" +
         std::to_string(mark.column + 1) + ": ";
}

// A map's keys must be among `allowed`; `required` ones must be there.
Status CheckKeys(std::string_view source, const YAML::Node& node, const std::string& what,
                 const std::set<std::string>& allowed, const std::set<std::string>& required) {
  if (!node.IsMap()) {
    return Error{Where(source, node.Mark()) + what + " is not a map (expected keys " +
                 *allowed.begin() + ", ...; see bench/validation/SCHEMA.md)"};
  }
  for (const auto& entry : node) {
    const std::string key = entry.first.as<std::string>("");
    if (allowed.count(key) == 0) {
      return Error{Where(source, entry.first.Mark()) + what + ": unknown key '" + key +
                   "' (see bench/validation/SCHEMA.md)"};
    }
  }
  for (const std::string& key : required) {
    if (!node[key]) {
      return Error{Where(source, node.Mark()) + what + ": missing key '" + key +
                   "' (see bench/validation/SCHEMA.md)"};
    }
  }
  return Status::Ok();
}

Result<std::string> Text(std::string_view source, const YAML::Node& node, const std::string& what) {
  if (!node) return std::string();
  if (!node.IsScalar()) {
    return Error{Where(source, node.Mark()) + what + " is not a string (expected text)"};
  }
  return node.as<std::string>();
}

// The run's `config` value as text that ParseConfig reads at the same lines and columns as in the
// file (so its messages point into the file): blank lines and spaces up to where the value
// starts, then the file's text up to the end of the block (the first later line indented no
// deeper than the `config:` key).
std::string ConfigText(std::string_view text, const YAML::Node& run) {
  YAML::Mark key;
  for (const auto& entry : run) {
    if (entry.first.as<std::string>("") == "config") key = entry.first.Mark();
  }
  const YAML::Mark value = run["config"].Mark();
  size_t end = text.size();
  size_t line_start = text.find('\n', static_cast<size_t>(value.pos));
  while (line_start != std::string_view::npos && line_start + 1 < text.size()) {
    const size_t begin = line_start + 1;
    const size_t first = text.find_first_not_of(' ', begin);
    const bool blank = first == std::string_view::npos || text[first] == '\n' || text[first] == '#';
    if (!blank && static_cast<int>(first - begin) <= key.column) {
      end = begin;
      break;
    }
    line_start = text.find('\n', begin);
  }
  std::string config(static_cast<size_t>(value.line), '\n');
  config.append(static_cast<size_t>(value.column), ' ');
  config.append(text.substr(static_cast<size_t>(value.pos), end - static_cast<size_t>(value.pos)));
  return config;
}

// A suite file: YAML whose top level is `source` and `runs`.
Result<YAML::Node> LoadSuiteFile(std::string_view yaml_text, std::string_view source_name) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::ParserException& error) {
    return Error{Where(source_name, error.mark) + error.msg + " (expected YAML)"};
  }
  STAGECRAFT_RETURN_IF_ERROR(
      CheckKeys(source_name, root, "the file", {"source", "runs"}, {"source", "runs"}));
  return root;
}

Result<MeasuredRun> ReadRun(std::string_view source, std::string_view file_text,
                            const YAML::Node& node) {
  STAGECRAFT_RETURN_IF_ERROR(CheckKeys(
      source, node, "run",
      {"id", "hardware", "published", "step_s", "memory_gib", "derivation", "assumed", "config"},
      {"id", "hardware", "published", "step_s", "config"}));
  MeasuredRun run;
  for (const auto& [key, out] :
       {std::pair{"id", &run.id}, std::pair{"hardware", &run.hardware},
        std::pair{"published", &run.published}, std::pair{"derivation", &run.derivation},
        std::pair{"assumed", &run.assumed}}) {
    auto text = Text(source, node[key], std::string("run.") + key);
    if (!text.ok()) return text.error();
    *out = std::move(text).value();
  }
  const YAML::Node step = node["step_s"];
  if (!step.IsScalar() || !YAML::convert<double>::decode(step, run.step_s) || !(run.step_s > 0)) {
    return Error{Where(source, step.Mark()) + "run " + run.id +
                 ": step_s is not a number > 0 (expected the measured iteration time in seconds)"};
  }
  if (const YAML::Node memory = node["memory_gib"]) {
    if (!memory.IsScalar() || !YAML::convert<double>::decode(memory, run.memory_gib) ||
        !(run.memory_gib > 0) || !(run.memory_gib < 1e6)) {
      return Error{Where(source, memory.Mark()) + "run " + run.id +
                   ": memory_gib is not a number > 0 (expected the measured peak memory per GPU "
                   "in GiB)"};
    }
  }
  if (!node["config"].IsMap()) {
    return Error{Where(source, node["config"].Mark()) + "run " + run.id +
                 ": config is not a map (expected a stagecraft config, doc/config.md)"};
  }
  run.config_text = ConfigText(file_text, node);
  return run;
}

}  // namespace

Result<MeasurementSource> ParseMeasurementSource(std::string_view yaml_text,
                                                 std::string_view source_name) {
  auto loaded = LoadSuiteFile(yaml_text, source_name);
  if (!loaded.ok()) return loaded.error();
  const YAML::Node& root = loaded.value();
  const YAML::Node head = root["source"];
  STAGECRAFT_RETURN_IF_ERROR(CheckKeys(source_name, head, "source",
                                       {"id", "cite", "url", "measured", "memory_measured"},
                                       {"id", "cite", "measured"}));
  MeasurementSource source;
  for (const auto& [key, out] :
       {std::pair{"id", &source.id}, std::pair{"cite", &source.cite}, std::pair{"url", &source.url},
        std::pair{"measured", &source.measured},
        std::pair{"memory_measured", &source.memory_measured}}) {
    auto text = Text(source_name, head[key], std::string("source.") + key);
    if (!text.ok()) return text.error();
    *out = std::move(text).value();
  }
  const YAML::Node runs = root["runs"];
  if (!runs.IsSequence() || runs.size() == 0) {
    return Error{Where(source_name, runs.Mark()) +
                 "runs is not a non-empty list (expected one entry per measured run)"};
  }
  for (const YAML::Node& node : runs) {
    auto run = ReadRun(source_name, yaml_text, node);
    if (!run.ok()) return run.error();
    if (run.value().memory_gib > 0 && source.memory_measured.empty()) {
      return Error{Where(source_name, node["memory_gib"].Mark()) + "run " + run.value().id +
                   ": memory_gib needs source.memory_measured (say what the source's memory "
                   "figure counts, e.g. PyTorch's peak reserved bytes)"};
    }
    source.runs.push_back(std::move(run).value());
  }
  return source;
}

namespace {

Result<MeasuredServing> ReadServingRun(std::string_view source, std::string_view file_text,
                                       const YAML::Node& node) {
  STAGECRAFT_RETURN_IF_ERROR(CheckKeys(
      source, node, "run",
      {"id", "hardware", "engine", "published", "metric", "measured", "derivation", "assumed",
       "config", "serve"},
      {"id", "hardware", "engine", "published", "metric", "measured", "config", "serve"}));
  MeasuredServing run;
  for (const auto& [key, out] :
       {std::pair{"id", &run.id}, std::pair{"hardware", &run.hardware},
        std::pair{"engine", &run.engine}, std::pair{"published", &run.published},
        std::pair{"metric", &run.metric}, std::pair{"derivation", &run.derivation},
        std::pair{"assumed", &run.assumed}}) {
    auto text = Text(source, node[key], std::string("run.") + key);
    if (!text.ok()) return text.error();
    *out = std::move(text).value();
  }
  run.metric_where = Where(source, node["metric"].Mark());
  const YAML::Node measured = node["measured"];
  if (!measured.IsScalar() || !YAML::convert<double>::decode(measured, run.measured) ||
      !(run.measured > 0) || !(run.measured < 1e12)) {
    return Error{Where(source, measured.Mark()) + "run " + run.id +
                 ": measured is not a number > 0 (expected the measured value in the metric's "
                 "unit)"};
  }
  if (!node["config"].IsMap()) {
    return Error{Where(source, node["config"].Mark()) + "run " + run.id +
                 ": config is not a map (expected a stagecraft config, doc/config.md)"};
  }
  run.config_text = ConfigText(file_text, node);
  const YAML::Node flags = node["serve"];
  if (!flags.IsMap()) {
    return Error{Where(source, flags.Mark()) + "run " + run.id +
                 ": serve is not a map (expected `serve` flags without the leading --, e.g. "
                 "{offline: true, requests: 1000})"};
  }
  for (const auto& entry : flags) {
    const std::string name = entry.first.as<std::string>("");
    if (!entry.second.IsScalar()) {
      return Error{Where(source, entry.second.Mark()) + "run " + run.id + ": serve." + name +
                   " is not a scalar (expected the flag's value as `serve` takes it)"};
    }
    run.serve.push_back({name, entry.second.as<std::string>(), Where(source, entry.first.Mark())});
  }
  return run;
}

}  // namespace

Result<ServingSource> ParseServingSource(std::string_view yaml_text, std::string_view source_name) {
  auto loaded = LoadSuiteFile(yaml_text, source_name);
  if (!loaded.ok()) return loaded.error();
  const YAML::Node& root = loaded.value();
  const YAML::Node head = root["source"];
  STAGECRAFT_RETURN_IF_ERROR(CheckKeys(
      source_name, head, "source", {"id", "cite", "url", "measured"}, {"id", "cite", "measured"}));
  ServingSource source;
  for (const auto& [key, out] :
       {std::pair{"id", &source.id}, std::pair{"cite", &source.cite}, std::pair{"url", &source.url},
        std::pair{"measured", &source.measured}}) {
    auto text = Text(source_name, head[key], std::string("source.") + key);
    if (!text.ok()) return text.error();
    *out = std::move(text).value();
  }
  const YAML::Node runs = root["runs"];
  if (!runs.IsSequence() || runs.size() == 0) {
    return Error{Where(source_name, runs.Mark()) +
                 "runs is not a non-empty list (expected one entry per measured figure)"};
  }
  for (const YAML::Node& node : runs) {
    auto run = ReadServingRun(source_name, yaml_text, node);
    if (!run.ok()) return run.error();
    source.runs.push_back(std::move(run).value());
  }
  return source;
}

}  // namespace stagecraft
