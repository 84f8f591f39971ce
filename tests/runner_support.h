// runner_support: what the two end-to-end runners share (golden_runner for tests/golden/*.test,
// docs_runner for the commands shown in README.md and doc/*.md): file I/O, running a shell
// script with `stagecraft` bound to the binary under test, and a line diff.
#ifndef STAGECRAFT_TESTS_RUNNER_SUPPORT_H_
#define STAGECRAFT_TESTS_RUNNER_SUPPORT_H_

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace stagecraft::testing {

struct CommandResult {
  int exit_code = 0;
  std::string description;  // "exit 1" or "killed by signal 11"
  std::string output;       // stdout and stderr merged, the binary's path printed as `stagecraft`
};

bool StartsWith(const std::string& text, const std::string& prefix);
std::string Trim(const std::string& text);
std::optional<std::string> ReadFile(const std::filesystem::path& path);
// Writes `text` to a temporary file beside `path`, then renames it over `path`.
bool WriteFileAtomically(const std::filesystem::path& path, const std::string& text);
std::string ShellQuote(const std::string& text);
void ReplaceAll(std::string& text, const std::string& from, const std::string& to);

// Runs `script` through /bin/sh in the current directory, stdout and stderr merged, stdin from
// /dev/null; `stagecraft` in command position names `binary` (a shell function), and `binary`
// in the output reads `stagecraft`.
CommandResult RunShellScript(const std::string& binary, const std::string& script);

// The lines of `text`; a last line without '\n' is marked "  (no newline at end)".
std::vector<std::string> SplitLines(const std::string& text);

// One line of an edit script: ' ' kept, '-' only expected, '+' only actual.
struct DiffLine {
  char tag;
  std::string text;
};

// The edit script turning `expected` into `actual`, from a longest-common-subsequence table.
std::vector<DiffLine> EditScript(const std::vector<std::string>& expected,
                                 const std::vector<std::string>& actual);
// Prints the changed lines of `script` with three lines of context, "@@ expected line N @@"
// opening each hunk (N counts the lines not tagged '+', from `first_line`).
void PrintHunks(const std::vector<DiffLine>& script, std::ostream& out, size_t first_line = 1);
// "--- expected output", "+++ actual output", then the hunks of EditScript (or every line of
// both when the table would be too large).
void PrintDiff(const std::string& expected, const std::string& actual, std::ostream& out);

}  // namespace stagecraft::testing

#endif  // STAGECRAFT_TESTS_RUNNER_SUPPORT_H_
