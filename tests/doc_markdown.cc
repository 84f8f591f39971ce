#include "doc_markdown.h"

#include <algorithm>
#include <optional>

#include "runner_support.h"

namespace stagecraft::testing {

namespace {

constexpr char kCommandPrefix[] = "$ ";
constexpr char kDirectiveOpen[] = "<!-- doc-test:";
constexpr char kDirectiveClose[] = "-->";
constexpr size_t kNoLine = std::string::npos;

struct Fence {
  std::string indent;
  char character = '`';
  size_t length = 0;
};

// The fence that `line` opens (``` or ~~~, any indentation, an info string allowed).
std::optional<Fence> OpeningFence(const std::string& line) {
  const size_t begin = line.find_first_not_of(" \t");
  if (begin == std::string::npos) return std::nullopt;
  const char character = line[begin];
  if (character != '`' && character != '~') return std::nullopt;
  const size_t end = line.find_first_not_of(character, begin);
  const size_t length = (end == std::string::npos ? line.size() : end) - begin;
  if (length < 3) return std::nullopt;
  return Fence{line.substr(0, begin), character, length};
}

bool ClosesFence(const std::string& line, const Fence& fence) {
  const std::string trimmed = Trim(line);
  return trimmed.size() >= fence.length &&
         trimmed.find_first_not_of(fence.character) == std::string::npos;
}

std::string Unindent(const std::string& line, const std::string& indent) {
  return StartsWith(line, indent) ? line.substr(indent.size()) : Trim(line);
}

std::string LineLabel(size_t index) { return "line " + std::to_string(index + 1) + ": "; }

// Reads the block whose opening fence is at `fence_line`; returns the line after its close.
size_t ReadBlock(MarkdownCommands& document, size_t fence_line, const Fence& fence,
                 CommandBlock& block) {
  const std::vector<std::string>& lines = document.lines;
  block.fence_line = fence_line;
  block.indent = fence.indent;
  size_t index = fence_line + 1;
  bool output_before_command = false;
  for (; index < lines.size() && !ClosesFence(lines[index], fence); ++index) {
    const std::string text = Unindent(lines[index], fence.indent);
    if (!StartsWith(text, kCommandPrefix)) {
      if (block.commands.empty()) {
        output_before_command = output_before_command || !Trim(text).empty();
        continue;
      }
      block.commands.back().shown.push_back(text);
      block.commands.back().output_end = index + 1;
      continue;
    }
    ShownCommand command;
    command.line = index;
    command.command = text.substr(2);
    while (!command.command.empty() && command.command.back() == '\\' && index + 1 < lines.size() &&
           !ClosesFence(lines[index + 1], fence)) {
      command.command += "\n" + Unindent(lines[++index], fence.indent);
    }
    command.output_begin = command.output_end = index + 1;
    block.commands.push_back(command);
  }
  if (index == lines.size()) {
    document.errors.push_back(LineLabel(fence_line) + "the fenced block is never closed");
  }
  if (output_before_command && !block.commands.empty()) {
    document.errors.push_back(LineLabel(fence_line) +
                              "a command block shows output before its first '$ ' line");
  }
  return index + 1;
}

// Reads a `<!-- doc-test: skip REASON -->` line into `reason`; returns an error or "".
std::string ReadDirective(const std::string& line, std::string& reason) {
  const std::string trimmed = Trim(line);
  if (trimmed.size() < sizeof kDirectiveOpen + sizeof kDirectiveClose ||
      trimmed.compare(trimmed.size() - 3, 3, kDirectiveClose) != 0) {
    return "a doc-test comment must fit on one line and end with '-->'";
  }
  const std::string body = Trim(
      trimmed.substr(sizeof kDirectiveOpen - 1, trimmed.size() - (sizeof kDirectiveOpen - 1) - 3));
  if (!StartsWith(body, "skip ") || Trim(body.substr(5)).empty()) {
    return "unknown doc-test comment '" + body +
           "' (expected 'skip REASON': why the block cannot run)";
  }
  reason = Trim(body.substr(5));
  return "";
}

}  // namespace

MarkdownCommands ParseMarkdownCommands(const std::string& text) {
  MarkdownCommands document;
  document.ends_with_newline = text.empty() || text.back() == '\n';
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    document.lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  std::string pending_reason;
  size_t pending_line = kNoLine;  // the line of a doc-test comment awaiting its block
  for (size_t index = 0; index < document.lines.size();) {
    const std::string& line = document.lines[index];
    if (StartsWith(Trim(line), kDirectiveOpen)) {
      if (pending_line != kNoLine) {
        document.errors.push_back(LineLabel(pending_line) + "the doc-test comment is not " +
                                  "followed by a fenced block");
      }
      const std::string error = ReadDirective(line, pending_reason);
      if (!error.empty()) document.errors.push_back(LineLabel(index) + error);
      pending_line = error.empty() ? index : kNoLine;
      ++index;
      continue;
    }
    const std::optional<Fence> fence = OpeningFence(line);
    if (!fence) {
      if (pending_line != kNoLine && !Trim(line).empty()) {
        document.errors.push_back(LineLabel(pending_line) +
                                  "the doc-test comment is not followed by a fenced block");
        pending_line = kNoLine;
      }
      ++index;
      continue;
    }
    CommandBlock block;
    index = ReadBlock(document, index, *fence, block);
    if (pending_line != kNoLine && block.commands.empty()) {
      document.errors.push_back(LineLabel(pending_line) +
                                "the doc-test comment is before a block with no '$ ' command");
    }
    if (pending_line != kNoLine) block.skip_reason = pending_reason;
    pending_line = kNoLine;
    if (!block.commands.empty()) document.blocks.push_back(std::move(block));
  }
  if (pending_line != kNoLine) {
    document.errors.push_back(LineLabel(pending_line) +
                              "the doc-test comment is not followed by a fenced block");
  }
  return document;
}

std::string ApplyReplacements(const MarkdownCommands& document,
                              std::vector<LineReplacement> replacements) {
  std::sort(replacements.begin(), replacements.end(),
            [](const LineReplacement& left, const LineReplacement& right) {
              return left.begin < right.begin;
            });
  std::vector<std::string> lines;
  size_t next = 0;
  for (const LineReplacement& replacement : replacements) {
    lines.insert(lines.end(), document.lines.begin() + static_cast<long>(next),
                 document.lines.begin() + static_cast<long>(replacement.begin));
    lines.insert(lines.end(), replacement.lines.begin(), replacement.lines.end());
    next = replacement.end;
  }
  lines.insert(lines.end(), document.lines.begin() + static_cast<long>(next), document.lines.end());
  std::string text;
  for (size_t index = 0; index < lines.size(); ++index) {
    text += lines[index];
    if (index + 1 < lines.size() || document.ends_with_newline) text += "\n";
  }
  return text;
}

}  // namespace stagecraft::testing
