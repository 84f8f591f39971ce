// The stagecraft command line: the only place that prints or decides an exit code.
// Exit codes: 0 ok; 1 the check found violations (or the schedule deadlocked); 2 bad input or
// usage.
#pragma once

#include <ostream>

namespace stagecraft {

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace stagecraft
