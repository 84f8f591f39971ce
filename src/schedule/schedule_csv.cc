#include "schedule/schedule_csv.h"

#include <algorithm>
#include <utility>

namespace stagecraft {
namespace {

std::string Where(std::string_view source, size_t line, size_t column) {
  return std::string(source) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
}

bool AllStagesMatch(const Schedule& schedule, Placement placement) {
  Schedule placed_view;
  placed_view.num_ranks = schedule.num_ranks;
  placed_view.num_microbatches = schedule.num_microbatches;
  placed_view.placement = placement;
  for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
    for (const Action& action : schedule.rank_actions[rank]) {
      if (PlacedRank(placed_view, action) != static_cast<int32_t>(rank)) return false;
    }
  }
  return true;
}

constexpr std::string_view kOverlapSuffix = "OVERLAP_F_B";

// The highest stage or microbatch index a CSV may hold, so that counts (index + 1) stay within
// int32; how large a run may grow is the caller's check (the task graph's estimated size).
constexpr int32_t kMaxCsvIndex = 1'000'000'000;

// The actions of one cell, `actions[first..]`, within kMaxCsvIndex.
Status CheckIndices(const std::vector<Action>& actions, size_t first) {
  for (size_t index = first; index < actions.size(); ++index) {
    const Action& action = actions[index];
    for (const auto& [what, value] : {std::pair{"stage", action.stage.value()},
                                      std::pair{"microbatch", action.microbatch.value()}}) {
      if (value > kMaxCsvIndex) {
        return Error{"action " + FormatAction(action) + ": " + what + " index " +
                     std::to_string(value) + " is above the limit of " +
                     std::to_string(kMaxCsvIndex) + " (indices count from 0)"};
      }
    }
  }
  return Status::Ok();
}

// The action types of torch's compute_comms format beyond F/B/I/W (schedules.py,
// _ComputationType): the four point-to-point ones, and FSDP's UNSHARD/RESHARD/REDUCE_GRAD,
// which carry no pipeline dependency and are skipped.
struct CommType {
  std::string_view name;
  bool point_to_point;
  bool send;
  bool backward;
};
constexpr CommType kCommTypes[] = {
    {"SEND_F", true, true, false},       {"RECV_F", true, false, false},
    {"SEND_B", true, true, true},        {"RECV_B", true, false, true},
    {"UNSHARD", false, false, false},    {"RESHARD", false, false, false},
    {"REDUCE_GRAD", false, false, false}};

// A compute_comms cell such as "0SEND_F3" or "2UNSHARD": true when `cell` is one (appended to
// `comms` with `after` = the compute actions before it, when it is a SEND/RECV); false when it is
// not a comm action at all; an error when it names one badly.
Result<bool> ParseCommCell(std::string_view cell, int32_t after, std::vector<CommAction>& comms) {
  size_t digits = 0;
  while (digits < cell.size() && cell[digits] >= '0' && cell[digits] <= '9') ++digits;
  const std::string_view rest = cell.substr(digits);
  for (const CommType& type : kCommTypes) {
    if (rest.substr(0, type.name.size()) != type.name) continue;
    const std::string_view microbatch = rest.substr(type.name.size());
    const std::string quoted = "'" + std::string(cell) + "'";
    auto number = [](std::string_view text) -> int64_t {
      if (text.empty() || text.size() > 9) return -1;
      int64_t value = 0;
      for (char c : text) {
        if (c < '0' || c > '9') return -1;
        value = value * 10 + (c - '0');
      }
      return value;
    };
    const int64_t stage = number(cell.substr(0, digits));
    if (!type.point_to_point) {
      if (stage < 0 || !microbatch.empty()) {
        return Error{"bad action " + quoted + " (expected {stage}" + std::string(type.name) +
                     ", e.g. '0" + std::string(type.name) + "')"};
      }
      return true;
    }
    const int64_t index = number(microbatch);
    if (stage < 0 || index < 0) {
      return Error{"bad action " + quoted + " (expected {stage}" + std::string(type.name) +
                   "{microbatch}, e.g. '0" + std::string(type.name) + "1')"};
    }
    comms.push_back({StageId(static_cast<int32_t>(stage)),
                     MicrobatchId(static_cast<int32_t>(index)), type.send, type.backward, after});
    return true;
  }
  return false;
}

// One cell: an action, torch's overlapped pair "(0F1;3B0)OVERLAP_F_B" (the second action
// runs fused with the first), or a compute_comms action. Appends to `actions` or `comms`.
Status ParseCell(std::string_view cell, std::vector<Action>& actions,
                 std::vector<CommAction>& comms) {
  while (!cell.empty() && (cell.front() == ' ' || cell.front() == '\t')) cell.remove_prefix(1);
  while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\t')) cell.remove_suffix(1);
  auto comm = ParseCommCell(cell, static_cast<int32_t>(actions.size()), comms);
  if (!comm.ok()) return comm.error();
  if (comm.value()) return Status::Ok();
  if (cell.empty() || cell.front() != '(') {
    auto action = ParseAction(cell);
    if (!action.ok()) return action.error();
    actions.push_back(action.value());
    return Status::Ok();
  }
  const std::string expected =
      " (expected an overlapped pair '(F;B)OVERLAP_F_B', e.g. '(0F1;3B0)OVERLAP_F_B')";
  const size_t close = cell.find(')');
  if (close == std::string_view::npos || cell.substr(close + 1) != kOverlapSuffix) {
    return Error{"bad overlapped action '" + std::string(cell) + "'" + expected};
  }
  const std::string_view inner = cell.substr(1, close - 1);
  const size_t split = inner.find(';');
  if (split == std::string_view::npos || inner.find(';', split + 1) != std::string_view::npos) {
    return Error{"bad overlapped action '" + std::string(cell) + "': it needs exactly two actions" +
                 expected};
  }
  auto first = ParseAction(inner.substr(0, split));
  if (!first.ok()) return first.error();
  auto second = ParseAction(inner.substr(split + 1));
  if (!second.ok()) return second.error();
  actions.push_back(first.value());
  Action fused = second.value();
  fused.overlapped = true;
  actions.push_back(fused);
  return Status::Ok();
}

}  // namespace

Result<Schedule> ParseScheduleCsv(std::string_view text, std::string_view source) {
  Schedule schedule;
  schedule.name = "csv";
  size_t line_number = 0;
  size_t line_begin = 0;
  while (line_begin < text.size()) {
    size_t line_end = text.find('\n', line_begin);
    if (line_end == std::string_view::npos) line_end = text.size();
    std::string_view line = text.substr(line_begin, line_end - line_begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++line_number;
    std::vector<Action> actions;
    std::vector<CommAction> comms;
    size_t cell_begin = 0;
    while (cell_begin <= line.size()) {
      size_t cell_end = line.find(',', cell_begin);
      if (cell_end == std::string_view::npos) cell_end = line.size();
      std::string_view cell = line.substr(cell_begin, cell_end - cell_begin);
      if (cell.find_first_not_of(" \t\"") != std::string_view::npos) {
        if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') {
          cell = cell.substr(1, cell.size() - 2);
        }
        const size_t first = actions.size();
        Status parsed = ParseCell(cell, actions, comms);
        if (parsed.ok()) parsed = CheckIndices(actions, first);
        if (!parsed.ok()) {
          return Error{Where(source, line_number, cell_begin + 1) + parsed.error().message};
        }
      }
      cell_begin = cell_end + 1;
    }
    schedule.rank_actions.push_back(std::move(actions));
    schedule.rank_comms.push_back(std::move(comms));
    line_begin = line_end + 1;
  }
  while (!schedule.rank_actions.empty() && schedule.rank_actions.back().empty() &&
         schedule.rank_comms.back().empty()) {
    schedule.rank_actions.pop_back();  // trailing blank lines
    schedule.rank_comms.pop_back();
  }
  const bool explicit_comms =
      std::any_of(schedule.rank_comms.begin(), schedule.rank_comms.end(),
                  [](const std::vector<CommAction>& comms) { return !comms.empty(); });
  if (!explicit_comms) schedule.rank_comms.clear();
  if (schedule.rank_actions.empty()) {
    return Error{std::string(source) +
                 ": the schedule CSV has no rows (expected one row of "
                 "actions per rank, e.g. '0F0,0F1,0B0,0B1')"};
  }
  schedule.num_ranks = static_cast<int32_t>(schedule.rank_actions.size());
  int32_t max_stage = -1;
  int32_t max_microbatch = -1;
  for (const auto& actions : schedule.rank_actions) {
    for (const Action& action : actions) {
      max_stage = std::max(max_stage, action.stage.value());
      max_microbatch = std::max(max_microbatch, action.microbatch.value());
    }
  }
  schedule.num_stages = max_stage + 1;
  schedule.num_microbatches = max_microbatch + 1;
  schedule.placement = Placement::kLoop;
  if (schedule.num_stages == 2 * schedule.num_ranks &&
      !AllStagesMatch(schedule, Placement::kLoop) && AllStagesMatch(schedule, Placement::kV)) {
    schedule.placement = Placement::kV;
  } else if (schedule.num_stages == schedule.num_ranks && schedule.num_ranks > 1 &&
             schedule.num_microbatches % 2 == 0 && !AllStagesMatch(schedule, Placement::kLoop) &&
             AllStagesMatch(schedule, Placement::kDual)) {
    schedule.placement = Placement::kDual;
  }
  return schedule;
}

std::string WriteScheduleCsv(const Schedule& schedule) {
  std::string text;
  for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
    const auto& actions = schedule.rank_actions[rank];
    const std::vector<CommAction> none;
    const auto& comms = rank < schedule.rank_comms.size() ? schedule.rank_comms[rank] : none;
    size_t next_comm = 0;
    bool first = true;
    auto cell = [&](const std::string& written) {
      text += (first ? "" : ",") + written;
      first = false;
    };
    auto flush_comms = [&](size_t position) {
      while (next_comm < comms.size() && static_cast<size_t>(comms[next_comm].after) <= position) {
        cell(FormatCommAction(comms[next_comm++]));
      }
    };
    for (size_t index = 0; index < actions.size(); ++index) {
      flush_comms(index);
      if (!first) text += ',';
      first = false;
      if (index + 1 < actions.size() && actions[index + 1].overlapped) {
        text += "(" + FormatAction(actions[index]) + ";" + FormatAction(actions[index + 1]) + ")" +
                std::string(kOverlapSuffix);
        ++index;
        continue;
      }
      text += FormatAction(actions[index]);
    }
    flush_comms(actions.size());
    text += '\n';
  }
  return text;
}

}  // namespace stagecraft
