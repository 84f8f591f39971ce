// `stagecraft goodput`'s flags, from the text the user typed to fault/goodput.h's typed inputs.
// Each value is checked on its own here: a number (not "nan", "inf" or "1e400"), whole where it
// counts, in its range; the errors name the flag, the value and what was expected.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include "commands/flag_values.h"
#include "commands/goodput_command.h"
#include "core/units.h"

namespace stagecraft {
namespace {

// `field` = the parsed value, or the parser's error.
template <typename T, typename Field>
Status Set(Result<T> parsed, Field& field) {
  if (!parsed.ok()) return parsed.error();
  field = std::move(parsed).value();
  return Status::Ok();
}

Result<double> Duration(const char* flag, const std::string& text) {
  return ParseSeconds(flag, text, kMaxGoodputDurationS);
}

// --gpus N and --gpus-per-node G: whole numbers, 1 to 10^9 and 1 to 10^6.
Status ParseJob(const GoodputSpec& spec, GoodputInputs& in) {
  if (spec.gpus) {
    auto gpus = ParsePositive("--gpus", *spec.gpus, "a whole number of GPUs, e.g. 16384");
    if (!gpus.ok()) return gpus.error();
    if (gpus.value() != std::floor(gpus.value()) ||
        gpus.value() > static_cast<double>(kMaxGoodputGpus)) {
      return Error{"--gpus: expected a whole number of GPUs up to 10^9, got " + *spec.gpus};
    }
    in.gpus = static_cast<int64_t>(gpus.value());
  }
  if (spec.gpus_per_node) {
    STAGECRAFT_RETURN_IF_ERROR(
        Set(ParseCount("--gpus-per-node", *spec.gpus_per_node, 1, kMaxGpusPerNode,
                       "a whole number of GPUs per node, 1 to 1000000", "8"),
            in.gpus_per_node));
  }
  return Status::Ok();
}

// --failure-trace FILE: one failure time per line, hours from the job's start, increasing;
// '#' starts a comment. The times in seconds.
Result<std::vector<double>> ReadFailureTrace(const GoodputSpec& spec) {
  auto text = spec.files.read(*spec.failure_trace);
  if (!text.ok()) return Error{"--failure-trace: " + text.error().message};
  std::vector<double> times_s;
  std::istringstream lines(text.value());
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    line = line.substr(0, line.find('#'));
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    const std::string where = *spec.failure_trace + ":" + std::to_string(number);
    auto hours = ParsePositive(where, line, "a failure time in hours from the job's start");
    if (!hours.ok()) return hours.error();
    if (hours.value() > kMaxGoodputDurationS / 3600.0) {
      return Error{where + ": " + line + " h is out of range (expected a failure time in hours " +
                   "from the job's start, at most " +
                   FormatFixed(kMaxGoodputDurationS / 3600.0, 0) + ")"};
    }
    if (!times_s.empty() && hours.value() * 3600.0 <= times_s.back()) {
      return Error{where + ": " + line +
                   " h is not after the failure before it (expected the "
                   "times in increasing order)"};
    }
    times_s.push_back(hours.value() * 3600.0);
  }
  if (times_s.empty()) {
    return Error{"--failure-trace: " + *spec.failure_trace +
                 " holds no failure times (expected "
                 "one time in hours per line)"};
  }
  return times_s;
}

// The failure rate's four ways: a rate per node, the job's MTBF, a trace or a preset.
Status ParseRate(const GoodputSpec& spec, GoodputInputs& in) {
  if (spec.failures_per_1000_node_days) {
    const std::string expected = "failures per 1000 node-days, e.g. 6.5 (Meta RSC-1)";
    const std::string& text = *spec.failures_per_1000_node_days;
    auto rate = ParsePositive("--failures-per-1000-node-days", text, expected);
    if (!rate.ok()) return rate.error();
    if (rate.value() < kMinFailuresPer1000NodeDays || rate.value() > kMaxFailuresPer1000NodeDays) {
      return Error{"--failures-per-1000-node-days: " + text +
                   " is out of range (expected failures per 1000 node-days, 0.001 to 1000000, "
                   "e.g. 6.5 (Meta RSC-1))"};
    }
    in.failures_per_1000_node_days = rate.value();
  }
  if (spec.mtbf_hours) {
    auto hours = ParsePositive("--mtbf-hours", *spec.mtbf_hours, "the job's MTBF in hours, e.g. 3");
    if (!hours.ok()) return hours.error();
    if (hours.value() > kMaxMtbfHours) {
      return Error{"--mtbf-hours: " + *spec.mtbf_hours +
                   " is out of range (expected the job's MTBF in hours, at most 10^8, e.g. 3)"};
    }
    in.mtbf_hours = hours.value();
  }
  if (spec.failure_trace)
    STAGECRAFT_RETURN_IF_ERROR(Set(ReadFailureTrace(spec), in.failure_trace_s));
  if (spec.failure_preset) {
    STAGECRAFT_RETURN_IF_ERROR(Set(FindFailureRatePreset(*spec.failure_preset), in.failure_preset));
  }
  return Status::Ok();
}

// The save, the restart (whole or its parts) and the interval: durations up to 10^5 h.
Status ParseCosts(const GoodputSpec& spec, GoodputInputs& in) {
  if (spec.checkpoint_blocking) {
    STAGECRAFT_RETURN_IF_ERROR(Set(Duration("--checkpoint-blocking", *spec.checkpoint_blocking),
                                   in.checkpoint_blocking_s));
    if (*in.checkpoint_blocking_s <= 0) {
      return Error{"--checkpoint-blocking: must be above zero, got " + *spec.checkpoint_blocking +
                   " (a save that costs nothing needs no interval; expected e.g. 0.6s)"};
    }
  }
  const std::vector<
      std::tuple<const char*, const std::optional<std::string>*, std::optional<double>*>>
      durations = {{"--checkpoint-persist", &spec.checkpoint_persist, &in.checkpoint_persist_s},
                   {"--restart", &spec.restart, &in.restart_s},
                   {"--detection", &spec.detection, &in.detection_s},
                   {"--reschedule", &spec.reschedule, &in.reschedule_s},
                   {"--init", &spec.init, &in.init_s},
                   {"--load", &spec.load, &in.load_s},
                   {"--warmup", &spec.warmup, &in.warmup_s},
                   {"--interval", &spec.interval, &in.interval_s},
                   {"--repair-time", &spec.repair_time, &in.repair_s}};
  for (const auto& [flag, text, value] : durations) {
    if (*text) STAGECRAFT_RETURN_IF_ERROR(Set(Duration(flag, **text), *value));
  }
  return Status::Ok();
}

// --tokens N with an optional K, M, B or T: up to 10^18.
Result<double> ParseTokens(const std::string& text) {
  const std::string expected = "tokens to train on, e.g. 15.6T or 2e12";
  double scale = 1;
  std::string number = text;
  const std::string suffixes = "KMBT";
  if (!text.empty() && suffixes.find(text.back()) != std::string::npos) {
    scale = std::pow(1e3, static_cast<double>(suffixes.find(text.back()) + 1));
    number = text.substr(0, text.size() - 1);
  }
  auto tokens = ParsePositive("--tokens", number, expected);
  if (!tokens.ok()) return tokens.error();
  if (!(tokens.value() * scale <= kMaxGoodputTokens)) {
    return Error{"--tokens: '" + text + "' is out of range (expected at most 10^18 " + expected +
                 ")"};
  }
  return tokens.value() * scale;
}

// --seed S: 0 to 2^64-1.
Result<uint64_t> ParseSeed(const std::string& text) {
  const std::string expected = "(expected 0 to 2^64-1, e.g. 1)";
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    return Error{"--seed: '" + text + "' is not a whole number " + expected};
  }
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return Error{"--seed: '" + text + "' is out of range " + expected};
  return static_cast<uint64_t>(value);
}

// --correlated SHARE:NODES: a share above 0 (at most 1: checked with the job) and a whole
// number of nodes.
Result<CorrelatedFailures> ParseCorrelated(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string expected = "SHARE:NODES, e.g. 0.1:4 (a tenth of the failures take 4 nodes)";
  if (colon == std::string::npos) return Error{"--correlated: expected " + expected};
  auto share = ParsePositive("--correlated", text.substr(0, colon), expected);
  if (!share.ok()) return share.error();
  auto nodes = ParsePositive("--correlated", text.substr(colon + 1), expected);
  if (!nodes.ok()) return nodes.error();
  if (nodes.value() != std::floor(nodes.value()) ||
      nodes.value() > static_cast<double>(kMaxGoodputGpus)) {
    return Error{"--correlated: '" + text +
                 "' out of range (expected a whole number of nodes, 1 to 10^9; " + expected + ")"};
  }
  return CorrelatedFailures{share.value(), static_cast<int64_t>(nodes.value())};
}

// The run: its length, the Monte Carlo and its spares, the fp16 overflows.
Status ParseRun(const GoodputSpec& spec, GoodputInputs& in) {
  if (spec.tokens) STAGECRAFT_RETURN_IF_ERROR(Set(ParseTokens(*spec.tokens), in.tokens));
  if (spec.days) {
    auto days = ParsePositive("--days", *spec.days, "days of failure-free training, e.g. 54");
    if (!days.ok()) return days.error();
    if (days.value() > kMaxGoodputDays) {
      return Error{"--days: expected at most 3650 days, got " + *spec.days};
    }
    in.days = days.value();
  }
  if (spec.monte_carlo) {
    STAGECRAFT_RETURN_IF_ERROR(
        Set(ParseCount("--monte-carlo", *spec.monte_carlo, 1, kMaxMonteCarloRuns,
                       "a whole number of simulated runs, 1 to 1000000", "10000"),
            in.monte_carlo_runs));
  }
  if (spec.seed) STAGECRAFT_RETURN_IF_ERROR(Set(ParseSeed(*spec.seed), in.seed));
  if (spec.weibull_shape) {
    auto shape = ParsePositive("--weibull-shape", *spec.weibull_shape,
                               "the Weibull shape k, e.g. 0.7; 1 is exponential");
    if (!shape.ok()) return shape.error();
    if (shape.value() < kMinWeibullShape || shape.value() > kMaxWeibullShape) {
      return Error{"--weibull-shape: " + *spec.weibull_shape +
                   " is outside 0.3 to 5 (below, almost every draw is a failure at once and a "
                   "run hardly finishes; expected e.g. 0.7, or 1 for exponential)"};
    }
    in.weibull_shape = shape.value();
  }
  if (spec.spares) {
    auto spares = ParseNumber("--spares", *spec.spares, "spare nodes");
    if (!spares.ok() || spares.value() != std::floor(spares.value()) || spares.value() < 0 ||
        spares.value() > static_cast<double>(kMaxSpareNodes)) {
      return Error{"--spares: expected a whole number of spare nodes, 0 to 10^9, got '" +
                   *spec.spares + "'"};
    }
    in.spares = static_cast<int64_t>(spares.value());
  }
  if (spec.correlated)
    STAGECRAFT_RETURN_IF_ERROR(Set(ParseCorrelated(*spec.correlated), in.correlated));
  if (spec.fp16_overflow) {
    auto probability = ParsePositive("--fp16-overflow-probability", *spec.fp16_overflow,
                                     "a probability per step in (0, 1), e.g. 0.001");
    if (!probability.ok()) return probability.error();
    if (probability.value() >= 1.0) {
      return Error{"--fp16-overflow-probability: must be below 1, got " + *spec.fp16_overflow +
                   " (expected a probability per step in (0, 1), e.g. 0.001)"};
    }
    in.fp16_overflow_probability = probability.value();
  }
  return Status::Ok();
}

}  // namespace

Result<GoodputInputs> ParseGoodputFlags(const GoodputSpec& spec) {
  GoodputInputs in;
  in.config_path = spec.config_path;
  in.files = spec.files;
  in.sync_save = spec.sync_save;
  in.what_if = spec.what_if;
  STAGECRAFT_RETURN_IF_ERROR(ParseJob(spec, in));
  STAGECRAFT_RETURN_IF_ERROR(ParseRate(spec, in));
  STAGECRAFT_RETURN_IF_ERROR(ParseCosts(spec, in));
  STAGECRAFT_RETURN_IF_ERROR(ParseRun(spec, in));
  if (spec.storage) {
    auto tier = FindStorageTier(*spec.storage);
    if (!tier.ok()) return tier.error();
    in.storage = tier.value();
  }
  return in;
}

}  // namespace stagecraft
