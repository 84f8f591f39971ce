// docs_runner: runs every command that a markdown document (README.md, doc/*.md) shows in a
// fenced block as `$ COMMAND` and compares its output and exit code with what the document
// shows after it, so the documentation cannot drift from the program.
//
// Usage: docs_runner BINARY REPO_ROOT MARKDOWN_FILE
//   Each command block runs as one /bin/sh script (a block's commands share files and `$?`) in
//   a fresh scratch folder holding a link to every folder of REPO_ROOT (examples/, tests/, ...),
//   so commands read the repository's files and write their own into the scratch folder.
//   stdout and stderr are merged, stdin is /dev/null; `stagecraft` names BINARY, and BINARY's
//   path in the output reads `stagecraft`. A command must exit 0 unless the next command of its
//   block is `echo $?`, whose shown output is then its code. A shown line `...` (or
//   `... (comment)`) stands for one or more lines. Blocks after `<!-- doc-test: skip REASON -->`
//   are listed, not run. Exit 0 when every command matches, 1 with a diff per mismatch, 2 on
//   bad usage or a malformed document. With STAGECRAFT_UPDATE_DOCS=1 the shown outputs are
//   rewritten from the actual ones, keeping the `...` markers (review the diff). Conventions:
//   tests/golden/README.md, "Docs".
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "doc_markdown.h"
#include "elided_output.h"
#include "runner_support.h"

namespace {

namespace fs = std::filesystem;
using namespace stagecraft::testing;

constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;
constexpr char kStatusToken[] = "\x1estagecraft-doc-test-status ";
constexpr char kShowStatus[] = "echo $?";

struct Outcome {
  CommandResult result;
  bool reached = true;  // false when the block's shell stopped before the command
};

// A scratch folder with a link to every folder of the repository; removed on destruction
// (the links, not what they point to).
class Scratch {
 public:
  explicit Scratch(const fs::path& repo_root) {
    std::string pattern = (fs::temp_directory_path() / "stagecraft-docs-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) return;
    path_ = pattern;
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(repo_root, error)) {
      const std::string name = entry.path().filename().string();
      if (name.empty() || name[0] == '.' || !entry.is_directory()) continue;
      fs::create_directory_symlink(entry.path(), path_ / name, error);
    }
  }
  ~Scratch() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The block as one script: after each command its status is printed behind kStatusToken and
// restored, so the next command's `$?` still sees it.
std::string BlockScript(const CommandBlock& block) {
  std::string script;
  for (const ShownCommand& command : block.commands) {
    script += command.command + "\n";
    script += "__doc_status=$?; printf '\\036stagecraft-doc-test-status %d\\n' \"$__doc_status\"";
    script += "; (exit \"$__doc_status\")\n";
  }
  return script;
}

// Splits the block's merged output at the status tokens into one outcome per command.
std::vector<Outcome> SplitOutcomes(const CommandResult& block_result, size_t count) {
  std::vector<Outcome> outcomes(count);
  const std::string& output = block_result.output;
  size_t begin = 0;
  for (Outcome& outcome : outcomes) {
    const size_t token = output.find(kStatusToken, begin);
    if (token == std::string::npos) {
      outcome.reached = false;
      outcome.result = block_result;
      outcome.result.output = output.substr(begin);
      begin = output.size();
      continue;
    }
    outcome.result.output = output.substr(begin, token - begin);
    const size_t status_begin = token + sizeof kStatusToken - 1;
    const size_t line_end = output.find('\n', status_begin);
    outcome.result.exit_code =
        std::atoi(output.substr(status_begin, line_end - status_begin).c_str());
    outcome.result.description = "exit " + std::to_string(outcome.result.exit_code);
    begin = line_end == std::string::npos ? output.size() : line_end + 1;
  }
  return outcomes;
}

std::vector<Outcome> RunBlock(const std::string& binary, const fs::path& repo_root,
                              const CommandBlock& block) {
  const Scratch scratch(repo_root);
  std::error_code error;
  if (scratch.path().empty() || (fs::current_path(scratch.path(), error), error)) {
    CommandResult failed{-1, "could not create a scratch folder", ""};
    return std::vector<Outcome>(block.commands.size(), Outcome{failed, false});
  }
  CommandResult result = RunShellScript(binary, BlockScript(block));
  ReplaceAll(result.output, scratch.path().string() + "/", "");
  fs::current_path(repo_root, error);
  return SplitOutcomes(result, block.commands.size());
}

struct Tally {
  size_t commands = 0;
  size_t failed = 0;
  size_t rewritten = 0;
  std::vector<std::string> skips;
};

// Judges one command; adds its rewrite to `replacements` when it does not match.
void Judge(const std::string& label, const CommandBlock& block, size_t index,
           const Outcome& outcome, std::vector<LineReplacement>& replacements, Tally& tally) {
  const ShownCommand& command = block.commands[index];
  const bool status_shown =
      index + 1 < block.commands.size() && block.commands[index + 1].command == kShowStatus;
  const bool exit_ok = outcome.reached && (status_shown || outcome.result.exit_code == 0);
  const OutputAlignment alignment = AlignOutput(command.shown, SplitLines(outcome.result.output));
  ++tally.commands;
  if (exit_ok && alignment.matches) return;
  ++tally.failed;
  std::cout << "FAIL " << label << ":" << command.line + 1 << ": $ " << command.command << "\n";
  if (!outcome.reached) std::cout << "  the block's shell stopped before this command\n";
  if (!exit_ok && outcome.reached) {
    std::cout << "  " << outcome.result.description
              << ": a command that exits non-zero must be followed by '$ echo $?' showing its "
                 "code\n";
  }
  if (alignment.too_large) std::cout << "  the output is too large to compare; skip the block\n";
  if (!alignment.matches && !alignment.too_large) {
    std::cout << "--- shown output\n+++ actual output\n";
    PrintHunks(alignment.script, std::cout, command.output_begin + 1);
  }
  LineReplacement replacement{command.output_begin, command.output_end, {}};
  for (const std::string& line : alignment.updated)
    replacement.lines.push_back(block.indent + line);
  if (!status_shown && outcome.reached && outcome.result.exit_code != 0) {
    replacement.lines.push_back(block.indent + "$ " + kShowStatus);
    replacement.lines.push_back(block.indent + std::to_string(outcome.result.exit_code));
  }
  if (!alignment.too_large) replacements.push_back(replacement);
}

bool UpdateRequested() {
  const char* value = std::getenv("STAGECRAFT_UPDATE_DOCS");
  return value != nullptr && std::string(value) == "1";
}

void PrintSummary(const std::string& label, const MarkdownCommands& document, const Tally& tally) {
  std::cout << label << ": " << tally.commands << " commands in "
            << document.blocks.size() - tally.skips.size() << " blocks checked, " << tally.failed
            << " failed; " << tally.skips.size() << " blocks skipped\n";
  for (const std::string& skip : tally.skips) std::cout << "  skipped " << skip << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: docs_runner BINARY REPO_ROOT MARKDOWN_FILE\n";
    return kExitUsage;
  }
  std::error_code error;
  const std::string binary = fs::absolute(argv[1], error).lexically_normal().string();
  const fs::path repo_root = fs::absolute(argv[2], error).lexically_normal();
  const fs::path markdown = fs::absolute(argv[3], error).lexically_normal();
  const std::string label = markdown.lexically_relative(repo_root).string();
  const std::optional<std::string> text = ReadFile(markdown);
  if (!text) {
    std::cerr << markdown.string() << ": cannot read the file\n";
    return kExitUsage;
  }
  const MarkdownCommands document = ParseMarkdownCommands(*text);
  for (const std::string& problem : document.errors) std::cerr << label << ": " << problem << "\n";
  if (!document.errors.empty()) return kExitUsage;
  std::vector<LineReplacement> replacements;
  Tally tally;
  for (const CommandBlock& block : document.blocks) {
    if (!block.skip_reason.empty()) {
      tally.skips.push_back("line " + std::to_string(block.fence_line + 1) + " (" +
                            std::to_string(block.commands.size()) +
                            " commands): " + block.skip_reason);
      continue;
    }
    const std::vector<Outcome> outcomes = RunBlock(binary, repo_root, block);
    for (size_t index = 0; index < block.commands.size(); ++index) {
      Judge(label, block, index, outcomes[index], replacements, tally);
    }
  }
  PrintSummary(label, document, tally);
  if (!UpdateRequested()) {
    if (tally.failed > 0) {
      std::cout << "To accept the program's output: STAGECRAFT_UPDATE_DOCS=1, then review "
                   "the diff.\n";
    }
    return tally.failed == 0 ? kExitPass : kExitFail;
  }
  if (!replacements.empty() &&
      !WriteFileAtomically(markdown, ApplyReplacements(document, replacements))) {
    std::cerr << markdown.string() << ": cannot rewrite the file\n";
    return kExitUsage;
  }
  std::cout << "updated " << label << ": " << replacements.size() << " shown outputs rewritten\n";
  return kExitPass;
}
