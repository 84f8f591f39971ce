// doc_markdown: the commands a markdown document shows. A fenced block whose lines include
// `$ COMMAND` lines is a command block: each command's shown output is the lines after it up to
// the next `$ ` line or the closing fence (conventions: tests/golden/README.md, "Docs").
#ifndef STAGECRAFT_TESTS_DOC_MARKDOWN_H_
#define STAGECRAFT_TESTS_DOC_MARKDOWN_H_

#include <string>
#include <vector>

namespace stagecraft::testing {

struct ShownCommand {
  size_t line = 0;          // 0-based markdown line of the `$ ` line
  std::string command;      // without "$ ", continuation lines ("\" at the end) joined by '\n'
  size_t output_begin = 0;  // markdown lines [output_begin, output_end) hold the shown output
  size_t output_end = 0;
  std::vector<std::string> shown;  // those lines without the block's indentation
};

struct CommandBlock {
  size_t fence_line = 0;    // 0-based markdown line of the opening fence
  std::string indent;       // the fence's indentation, removed from every line of the block
  std::string skip_reason;  // from `<!-- doc-test: skip REASON -->` before the fence; "" = run
  std::vector<ShownCommand> commands;
};

struct MarkdownCommands {
  std::vector<std::string> lines;  // the document, one entry per line, without '\n'
  bool ends_with_newline = true;
  std::vector<CommandBlock> blocks;
  std::vector<std::string> errors;  // "line N: what is wrong" (1-based)
};

// Finds every command block of `text`. A `<!-- doc-test: ... -->` comment that is not
// `skip REASON`, or is not followed (blank lines aside) by a command block, and output before
// a block's first command, are errors.
MarkdownCommands ParseMarkdownCommands(const std::string& text);

// One rewrite of a markdown range: lines [begin, end) become `lines` (already indented).
struct LineReplacement {
  size_t begin = 0;
  size_t end = 0;
  std::vector<std::string> lines;
};

// The document with `replacements` (disjoint, any order) applied.
std::string ApplyReplacements(const MarkdownCommands& document,
                              std::vector<LineReplacement> replacements);

}  // namespace stagecraft::testing

#endif  // STAGECRAFT_TESTS_DOC_MARKDOWN_H_
