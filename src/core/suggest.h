// SuggestClosest: the one "did you mean" helper every input error uses.
#pragma once

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

}  // namespace stagecraft
