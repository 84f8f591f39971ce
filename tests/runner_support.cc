#include "runner_support.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace stagecraft::testing {

namespace {

constexpr size_t kDiffContextLines = 3;
constexpr size_t kMaxDiffCells = 40'000'000;  // LCS table cells before falling back to a dump

}  // namespace

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

std::string Trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

std::optional<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) return std::nullopt;
  std::ostringstream buffer;
  buffer << stream.rdbuf();
  return buffer.str();
}

bool WriteFileAtomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path temporary = path.string() + ".tmp";
  {
    std::ofstream stream(temporary, std::ios::binary | std::ios::trunc);
    if (!stream) return false;
    stream << text;
    if (!stream) return false;
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  return !error;
}

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (const char character : text) {
    if (character == '\'') {
      quoted += "'\\''";
    } else {
      quoted += character;
    }
  }
  return quoted + "'";
}

void ReplaceAll(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

CommandResult RunShellScript(const std::string& binary, const std::string& script) {
  const std::string wrapped =
      "stagecraft() { " + ShellQuote(binary) + " \"$@\"; }\n{\n" + script + "\n} </dev/null 2>&1";
  CommandResult result;
  std::fflush(nullptr);
  FILE* pipe = popen(wrapped.c_str(), "r");
  if (pipe == nullptr) {
    result.exit_code = -1;
    result.description = "could not start /bin/sh";
    return result;
  }
  char buffer[4096];
  for (size_t count; (count = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
    result.output.append(buffer, count);
  }
  const int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
    result.description = "exit " + std::to_string(result.exit_code);
  } else if (status != -1 && WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
    result.description = "killed by signal " + std::to_string(WTERMSIG(status));
  } else {
    result.exit_code = -1;
    result.description = "unknown wait status " + std::to_string(status);
  }
  ReplaceAll(result.output, binary, "stagecraft");  // usage lines print argv[0]
  return result;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) {
      lines.push_back(text.substr(begin) + "  (no newline at end)");
      break;
    }
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

std::vector<DiffLine> EditScript(const std::vector<std::string>& expected,
                                 const std::vector<std::string>& actual) {
  const size_t rows = expected.size();
  const size_t columns = actual.size();
  std::vector<std::vector<int>> common(rows + 1, std::vector<int>(columns + 1, 0));
  for (size_t row = rows; row-- > 0;) {
    for (size_t column = columns; column-- > 0;) {
      common[row][column] = expected[row] == actual[column]
                                ? common[row + 1][column + 1] + 1
                                : std::max(common[row + 1][column], common[row][column + 1]);
    }
  }
  std::vector<DiffLine> script;
  size_t row = 0;
  size_t column = 0;
  while (row < rows || column < columns) {
    if (row < rows && column < columns && expected[row] == actual[column]) {
      script.push_back({' ', expected[row]});
      ++row;
      ++column;
    } else if (row < rows &&
               (column == columns || common[row + 1][column] >= common[row][column + 1])) {
      script.push_back({'-', expected[row++]});
    } else {
      script.push_back({'+', actual[column++]});
    }
  }
  return script;
}

void PrintHunks(const std::vector<DiffLine>& script, std::ostream& out, size_t first_line) {
  std::vector<bool> shown(script.size(), false);
  for (size_t index = 0; index < script.size(); ++index) {
    if (script[index].tag == ' ') continue;
    const size_t first = index >= kDiffContextLines ? index - kDiffContextLines : 0;
    const size_t last = std::min(script.size(), index + kDiffContextLines + 1);
    std::fill(shown.begin() + static_cast<long>(first), shown.begin() + static_cast<long>(last),
              true);
  }
  size_t expected_line = first_line;
  bool in_hunk = false;
  for (size_t index = 0; index < script.size(); ++index) {
    if (shown[index] && !in_hunk) out << "@@ expected line " << expected_line << " @@\n";
    in_hunk = shown[index];
    if (shown[index]) out << script[index].tag << script[index].text << "\n";
    if (script[index].tag != '+') ++expected_line;
  }
}

void PrintDiff(const std::string& expected, const std::string& actual, std::ostream& out) {
  const std::vector<std::string> expected_lines = SplitLines(expected);
  const std::vector<std::string> actual_lines = SplitLines(actual);
  out << "--- expected output\n+++ actual output\n";
  if ((expected_lines.size() + 1) * (actual_lines.size() + 1) > kMaxDiffCells) {
    for (const std::string& line : expected_lines) out << '-' << line << "\n";
    for (const std::string& line : actual_lines) out << '+' << line << "\n";
    return;
  }
  PrintHunks(EditScript(expected_lines, actual_lines), out);
}

}  // namespace stagecraft::testing
