// The stagecraft command line: the only place that prints or decides an exit code.
// Exit codes: 0 ok; 1 the check found violations (or the schedule deadlocked); 2 bad input or
// usage.
#pragma once

#include <ostream>

namespace stagecraft {

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// The process's stdout, flushed and checked once at exit: a write that failed anywhere (a full
// disk, a closed pipe's error) turns `code` into 2 with a message on `err`, so an answer is
// never lost silently. `code` when everything was written.
int FinishStdout(int code, std::ostream& err);

}  // namespace stagecraft
