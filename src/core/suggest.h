// SuggestClosest: the one "did you mean" helper every input error uses.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace stagecraft {

// Returns the first candidate that `word` (3+ letters) begins, else the candidate closest by
// edit distance (case-insensitive; a swap of neighbours is one edit), or "" when none is close
// enough to be a plausible typo (distance > max(2, |word|/3)).
std::string SuggestClosest(std::string_view word, const std::vector<std::string>& candidates);

// "; did you mean 'x'?" or "" — ready to append to a message.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

// "'a', 'b' or 'c'" — for "expected one of ..." messages.
std::string JoinChoices(const std::vector<std::string>& choices);

// `text` safe to echo in a message: control characters (other than newline and tab), DEL and
// bytes that are not valid UTF-8 become \xNN; valid UTF-8 and printable ASCII stay as they are.
std::string EscapeBytes(std::string_view text);

// A message as printed: EscapeBytes of at most its first kMaxMessageBytes, then how much was cut,
// so an input echoed back (a megabyte-long argument) stays a line a terminal can show.
inline constexpr size_t kMaxMessageBytes = 4096;
std::string EscapeMessage(std::string_view text);

// An input value quoted inside a message: EscapeBytes of at most its first `limit` bytes, then
// "... (N bytes)" when it was longer.
std::string EchoInput(std::string_view text, size_t limit = 120);

}  // namespace stagecraft
