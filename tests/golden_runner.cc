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
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "runner_support.h"

namespace {

namespace fs = std::filesystem;
using stagecraft::testing::CommandResult;
using stagecraft::testing::PrintDiff;
using stagecraft::testing::ReadFile;
using stagecraft::testing::RunShellScript;
using stagecraft::testing::StartsWith;
using stagecraft::testing::Trim;
using stagecraft::testing::WriteFileAtomically;

constexpr char kSeparator[] = "----";
constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;

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
  const CommandResult result = RunShellScript(binary.lexically_normal().string(), test.command);
  RemoveFiles(test.files);
  return Judge(test_path, test, result);
}
