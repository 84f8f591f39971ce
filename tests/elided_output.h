// elided_output: compares the output a document shows for a command with what the command
// printed, where the shown output may leave lines out with an elision marker, and rewrites the
// shown output from the actual one keeping the markers (docs_runner's update mode).
#ifndef STAGECRAFT_TESTS_ELIDED_OUTPUT_H_
#define STAGECRAFT_TESTS_ELIDED_OUTPUT_H_

#include <string>
#include <vector>

#include "runner_support.h"

namespace stagecraft::testing {

// True for a line that is `...`, or `... (a comment)`, after its indentation: it stands for one
// or more lines of the actual output.
bool IsElisionMarker(const std::string& line);

struct OutputAlignment {
  bool matches = false;  // every shown line equals its actual line; every marker elides >= 1
  // The shown output rewritten from the actual output: markers kept where they still elide a
  // line (dropped where they elide none), shown lines replaced by the actual lines they align
  // with, lines the program no longer prints dropped, new lines added where they appear.
  std::vector<std::string> updated;
  // For a failure report: ' ' a shown line that matches (or a marker), '-' a shown line that
  // does not, '+' an actual line no shown line matches.
  std::vector<DiffLine> script;
  bool too_large = false;  // the alignment table would exceed kMaxAlignmentCells
};

// Aligns `shown` (with markers) to `actual` at the least cost: a shown line that equals an
// actual line costs 0, one that differs only in its numbers and spacing 1 (plus 0.1 per
// differing number), one with the same indentation and first word 2.5 (plus the same), any
// other pairing 8, a shown line left unmatched 9, an actual line outside every marker and
// unpaired 4, a marker that elides nothing 1. The output matches when the cost is 0.
OutputAlignment AlignOutput(const std::vector<std::string>& shown,
                            const std::vector<std::string>& actual);

}  // namespace stagecraft::testing

#endif  // STAGECRAFT_TESTS_ELIDED_OUTPUT_H_
