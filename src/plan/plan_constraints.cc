#include "plan/plan_constraints.h"

#include <algorithm>
#include <charconv>
#include <iterator>

#include "core/suggest.h"
#include "io/config.h"
#include "schedule/generator.h"

namespace stagecraft {
namespace {

constexpr int32_t kLargest = 1000000;

// The comma-separated items of `text`, each trimmed of spaces; an empty item is kept (an error).
std::vector<std::string> Items(const std::string& text) {
  std::vector<std::string> items;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(',', begin);
    std::string item =
        text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    const size_t first = item.find_first_not_of(' ');
    const size_t last = item.find_last_not_of(' ');
    items.push_back(first == std::string::npos ? "" : item.substr(first, last - first + 1));
    if (end == std::string::npos) return items;
    begin = end + 1;
  }
}

Result<int32_t> Whole(const std::string& text, const std::string& flag, const std::string& whole,
                      int32_t minimum) {
  int32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < minimum ||
      value > kLargest) {
    return MakeError(ErrorKind::kBadInput,
                     flag + ": '" + EscapeBytes(whole) + "' is not a whole number from " +
                         std::to_string(minimum) + " to " + std::to_string(kLargest) +
                         ", a comma list of them or a range A-B (e.g. " + flag + " 8, " + flag +
                         " 2,4,8 or " + flag + " 2-8)");
  }
  return value;
}

// --schedule's comma list: each a generator `stagecraft list schedules` names.
Result<std::vector<std::string>> ParseScheduleChoice(const std::string& text) {
  const std::vector<std::string> names = AllScheduleNames();
  std::vector<std::string> chosen;
  for (const std::string& item : Items(text)) {
    if (std::find(names.begin(), names.end(), item) == names.end()) {
      return MakeError(ErrorKind::kBadInput,
                       "--schedule: unknown schedule '" + EscapeBytes(item) + "'" +
                           DidYouMean(item, names) +
                           " (expected a name or a comma list of names; stagecraft list "
                           "schedules)");
    }
    chosen.push_back(item);
  }
  return chosen;
}

// --recompute's comma list: none, selective, selective-op or full.
Result<std::vector<Recompute>> ParseRecomputeChoice(const std::string& text) {
  std::vector<Recompute> chosen;
  for (const std::string& item : Items(text)) {
    const std::optional<Recompute> found = kRecomputeNames.Parse(item);
    if (!found) {
      return MakeError(ErrorKind::kBadInput, "--recompute: unknown mode '" + EscapeBytes(item) +
                                                 "'" + kRecomputeNames.DidYouMean(item) +
                                                 " (expected " + kRecomputeNames.Joined() +
                                                 ", or a comma list of them)");
    }
    chosen.push_back(*found);
  }
  return chosen;
}

}  // namespace

bool IntChoice::Admits(int32_t value) const {
  if (any()) return true;
  if (ranged) return low <= value && value <= high;
  return std::find(values.begin(), values.end(), value) != values.end();
}

Result<IntChoice> ParseIntChoice(const std::string& text, const std::string& flag,
                                 int32_t minimum) {
  IntChoice choice;
  const size_t dash = text.find('-', 1);
  if (dash != std::string::npos && text.find(',') == std::string::npos) {
    const Result<int32_t> first = Whole(text.substr(0, dash), flag, text, minimum);
    if (!first.ok()) return first.error();
    const Result<int32_t> last = Whole(text.substr(dash + 1), flag, text, minimum);
    if (!last.ok()) return last.error();
    const int32_t low = first.value();
    const int32_t high = last.value();
    if (high < low) {
      return MakeError(ErrorKind::kBadInput, flag + ": the range '" + EscapeBytes(text) +
                                                 "' ends below its start (expected A-B with "
                                                 "A <= B, e.g. " +
                                                 flag + " " + std::to_string(high) + "-" +
                                                 std::to_string(low) + ")");
    }
    choice.ranged = true;
    choice.low = low;
    choice.high = high;
    return choice;
  }
  for (const std::string& item : Items(text)) {
    const Result<int32_t> value = Whole(item, flag, text, minimum);
    if (!value.ok()) return value.error();
    choice.values.push_back(value.value());
  }
  return choice;
}

Result<PlanConstraints> ParsePlanConstraints(const PlanConstraintText& text) {
  PlanConstraints constraints;
  const struct {
    const std::string& given;
    const char* flag;
    int32_t minimum;
    IntChoice* into;
  } numbers[] = {{text.tp, "--tp", 1, &constraints.tp},
                 {text.pp, "--pp", 1, &constraints.pp},
                 {text.vpp, "--vpp", 1, &constraints.vpp},
                 {text.cp, "--cp", 1, &constraints.cp},
                 {text.ep, "--ep", 1, &constraints.ep},
                 {text.dp, "--dp", 1, &constraints.dp},
                 {text.micro_batch_size, "--micro-batch-size", 1, &constraints.micro_batch_size},
                 {text.zero, "--zero", 0, &constraints.zero}};
  for (const auto& number : numbers) {
    if (number.given.empty()) continue;
    Result<IntChoice> choice = ParseIntChoice(number.given, number.flag, number.minimum);
    if (!choice.ok()) return choice.error();
    *number.into = std::move(choice).value();
  }
  const int32_t stages[] = {0, 1, 2, 3};
  if (std::none_of(std::begin(stages), std::end(stages),
                   [&](int32_t stage) { return constraints.zero.Admits(stage); })) {
    return MakeError(ErrorKind::kBadInput, "--zero: '" + EscapeBytes(text.zero) +
                                               "' names no ZeRO stage (expected 0-3: 1 Megatron's "
                                               "distributed optimizer, 3 FSDP)");
  }
  if (!text.schedule.empty()) {
    Result<std::vector<std::string>> schedules = ParseScheduleChoice(text.schedule);
    if (!schedules.ok()) return schedules.error();
    constraints.schedules = std::move(schedules).value();
  }
  if (!text.recompute.empty()) {
    Result<std::vector<Recompute>> recompute = ParseRecomputeChoice(text.recompute);
    if (!recompute.ok()) return recompute.error();
    constraints.recompute = std::move(recompute).value();
  }
  return constraints;
}

}  // namespace stagecraft
