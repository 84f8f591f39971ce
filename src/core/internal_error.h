// InternalError: a bug of ours found where no Status can carry it (a JSON writer given a number
// that is not finite). It is thrown, never for bad input (errors a user can fix are values,
// core/result.h), and the command line reports it as an internal error with exit code 2 rather
// than print invalid output (cli/app.cc, RunCli).
#pragma once

#include <stdexcept>

namespace stagecraft {

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace stagecraft
