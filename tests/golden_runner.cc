// golden_runner: runs one end-to-end golden test (tests/golden/<group>/<name>.test) and compares
// the exit code and the output of its command with the expectation stored in the file.
//
// Usage: golden_runner BINARY TEST_FILE
//   Runs the test's command through /bin/sh in the test file's folder, with stdout and stderr
//   merged (2>&1) and stdin from /dev/null. The word `stagecraft` in command position names
//   BINARY (a shell function), and BINARY's absolute path in the output reads `stagecraft`.
//   Exit 0 when exit code and output match; 1 with a diff when they do not; 2 on bad usage or
//   an unreadable test file. With STAGECRAFT_UPDATE_GOLDEN=1 the file's expectation is rewritten
//   with what the command did (review the diff before committing).
//
// A .test file (format in tests/golden/README.md):
//   # what this checks; source and tolerance when it reproduces a published number
//   command: stagecraft simulate ../data/uniform.yaml --json
//   exit: 0
//   files: out.json            (optional: files the command writes; removed before and after)
//   ----
//   <expected output, verbatim, to end of file>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

constexpr char kSeparator[] = "----";
constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;
constexpr int kDiffContextLines = 3;
constexpr size_t kMaxDiffCells = 40'000'000;  // LCS table cells before falling back to a dump

// A parsed .test file. `header` keeps every line before the separator verbatim so an update
// rewrites only the `exit:` line and the expected output.
struct GoldenTest {
  std::vector<std::string> header;
  std::string command;
  int expected_exit = 0;
  bool has_exit_line = false;
  bool has_separator = false;
  std::vector<std::string> files;  // written by the command; removed before and after the run
  std::string expected_output;
};

struct CommandResult {
  int exit_code = 0;
  std::string description;  // "exit 1" or "killed by signal 11"
  std::string output;
};

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

std::string Trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

std::optional<std::string> ReadFile(const fs::path& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) return std::nullopt;
  std::ostringstream buffer;
  buffer << stream.rdbuf();
  return buffer.str();
}

std::vector<std::string> SplitWords(const std::string& text) {
  std::istringstream stream(text);
  std::vector<std::string> words;
  for (std::string word; stream >> word;) words.push_back(word);
  return words;
}

// Reads one header line into `test`; returns an error message or "".
std::string ParseHeaderLine(const std::string& line, GoldenTest& test) {
  const std::string trimmed = Trim(line);
  if (trimmed.empty() || trimmed[0] == '#') return "";
  if (StartsWith(trimmed, "command:")) {
    test.command = Trim(trimmed.substr(8));
    return "";
  }
  if (StartsWith(trimmed, "exit:")) {
    const std::string value = Trim(trimmed.substr(5));
    if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
      return "'exit:' needs a number, got '" + value + "'";
    }
    test.expected_exit = std::stoi(value);
    test.has_exit_line = true;
    return "";
  }
  if (StartsWith(trimmed, "files:")) {
    test.files = SplitWords(trimmed.substr(6));
    return "";
  }
  return "unknown header line '" + trimmed +
         "' (expected '# comment', 'command:', 'exit:', 'files:' or '----')";
}

// Parses the text of a .test file; returns an error message or "".
std::string ParseGoldenTest(const std::string& text, GoldenTest& test) {
  size_t line_begin = 0;
  while (line_begin < text.size()) {
    size_t line_end = text.find('\n', line_begin);
    const bool last = line_end == std::string::npos;
    if (last) line_end = text.size();
    const std::string line = text.substr(line_begin, line_end - line_begin);
    line_begin = last ? text.size() : line_end + 1;
    if (Trim(line) == kSeparator) {
      test.has_separator = true;
      test.expected_output = text.substr(line_begin);
      break;
    }
    test.header.push_back(line);
    const std::string error = ParseHeaderLine(line, test);
    if (!error.empty()) return "line " + std::to_string(test.header.size()) + ": " + error;
  }
  if (test.command.empty()) return "no 'command:' line";
  return "";
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

// Runs `command` through /bin/sh in the current directory, stdout and stderr merged.
CommandResult RunCommand(const std::string& binary, const std::string& command) {
  const std::string script =
      "stagecraft() { " + ShellQuote(binary) + " \"$@\"; }\n{\n" + command + "\n} </dev/null 2>&1";
  CommandResult result;
  std::fflush(nullptr);
  FILE* pipe = popen(script.c_str(), "r");
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

// One line of an edit script: ' ' kept, '-' only expected, '+' only actual.
struct DiffLine {
  char tag;
  std::string text;
};

// The edit script turning `expected` into `actual`, from a longest-common-subsequence table.
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

// Prints the changed lines of `script` with kDiffContextLines of context, "@@ line N @@"
// opening each hunk (N is the line of the expected output).
void PrintHunks(const std::vector<DiffLine>& script, std::ostream& out) {
  std::vector<bool> shown(script.size(), false);
  for (size_t index = 0; index < script.size(); ++index) {
    if (script[index].tag == ' ') continue;
    const size_t first = index >= kDiffContextLines ? index - kDiffContextLines : 0;
    const size_t last = std::min(script.size(), index + kDiffContextLines + 1);
    std::fill(shown.begin() + static_cast<long>(first), shown.begin() + static_cast<long>(last),
              true);
  }
  size_t expected_line = 1;
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

// The test file with its `exit:` line and expected output replaced by what the command did.
std::string UpdatedText(const GoldenTest& test, const CommandResult& result) {
  std::string text;
  bool wrote_exit = false;
  for (const std::string& line : test.header) {
    if (StartsWith(Trim(line), "exit:")) {
      text += "exit: " + std::to_string(result.exit_code) + "\n";
      wrote_exit = true;
      continue;
    }
    text += line + "\n";
    if (!test.has_exit_line && !wrote_exit && StartsWith(Trim(line), "command:")) {
      text += "exit: " + std::to_string(result.exit_code) + "\n";
      wrote_exit = true;
    }
  }
  return text + kSeparator + "\n" + result.output;
}

bool WriteFileAtomically(const fs::path& path, const std::string& text) {
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream stream(temporary, std::ios::binary | std::ios::trunc);
    if (!stream) return false;
    stream << text;
    if (!stream) return false;
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  return !error;
}

void RemoveFiles(const std::vector<std::string>& files) {
  std::error_code ignored;
  for (const std::string& file : files) fs::remove(file, ignored);
}

bool UpdateRequested() {
  const char* value = std::getenv("STAGECRAFT_UPDATE_GOLDEN");
  return value != nullptr && std::string(value) == "1";
}

// Compares, or rewrites the expectation under STAGECRAFT_UPDATE_GOLDEN=1.
int Judge(const fs::path& test_path, const GoldenTest& test, const CommandResult& result) {
  if (UpdateRequested()) {
    if (!WriteFileAtomically(test_path, UpdatedText(test, result))) {
      std::cerr << test_path.string() << ": cannot rewrite the file\n";
      return kExitUsage;
    }
    std::cout << "updated " << test_path.string() << " (" << result.description << ")\n";
    return kExitPass;
  }
  const bool exit_matches = result.exit_code == test.expected_exit;
  const bool output_matches = test.has_separator && result.output == test.expected_output;
  if (exit_matches && output_matches) return kExitPass;
  std::cout << "FAIL " << test_path.string() << "\n  command: " << test.command << "\n";
  if (!exit_matches) {
    std::cout << "  exit: expected " << test.expected_exit << ", got " << result.description
              << "\n";
  }
  if (!test.has_separator) std::cout << "  no '----' line: the test has no expected output\n";
  if (!output_matches) PrintDiff(test.expected_output, result.output, std::cout);
  std::cout << "To accept the new output: STAGECRAFT_UPDATE_GOLDEN=1, then review the diff.\n";
  return kExitFail;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: golden_runner BINARY TEST_FILE\n";
    return kExitUsage;
  }
  std::error_code error;
  const fs::path binary = fs::absolute(argv[1], error);
  const fs::path test_path = fs::absolute(argv[2], error).lexically_normal();
  const std::optional<std::string> text = ReadFile(test_path);
  if (!text) {
    std::cerr << test_path.string() << ": cannot read the test file\n";
    return kExitUsage;
  }
  GoldenTest test;
  if (const std::string problem = ParseGoldenTest(*text, test); !problem.empty()) {
    std::cerr << test_path.string() << ": " << problem << "\n";
    return kExitUsage;
  }
  fs::current_path(test_path.parent_path(), error);
  if (error) {
    std::cerr << test_path.parent_path().string() << ": " << error.message() << "\n";
    return kExitUsage;
  }
  RemoveFiles(test.files);
  const CommandResult result = RunCommand(binary.lexically_normal().string(), test.command);
  RemoveFiles(test.files);
  return Judge(test_path, test, result);
}
