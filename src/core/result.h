// Errors the user can fix are values: Status and Result<T> (no exceptions across modules).
// A message says where (file:line:col or the flag), what was wrong, what was expected, and a
// suggestion.
#pragma once

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace stagecraft {

// What kind of failure an error is; the command line maps each kind to its exit code in one
// place (cli/app.cc, ExitCode): bad input 2, the others 1.
enum class ErrorKind : uint8_t {
  kBadInput,    // the input is malformed, inconsistent or out of range: the user must fix it
  kInfeasible,  // the input is valid but asks for what cannot be (a layout over the device memory)
  kViolation,   // a schedule breaks a rule (the checker's findings)
  kDeadlock,    // a schedule's run cannot finish
};

struct Error {
  Error() = default;
  Error(std::string text, ErrorKind error_kind = ErrorKind::kBadInput,  // NOLINT: implicit
        std::string diagnosis = "")
      : message(std::move(text)), kind(error_kind), detail(std::move(diagnosis)) {}

  std::string message;  // one line: where, what, what was expected, a suggestion ("" = none)
  ErrorKind kind = ErrorKind::kBadInput;
  std::string detail;  // a diagnosis shown after the message (violations, a wait-for cycle)
};

// An error of another kind: Error{"..."} is bad input; MakeError(kind, "...") any kind.
inline Error MakeError(ErrorKind kind, std::string message, std::string detail = "") {
  return Error{std::move(message), kind, std::move(detail)};
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design
  static Status Ok() { return Status(); }

  bool ok() const { return !error_.has_value(); }
  const Error& error() const {
    assert(!ok());
    return *error_;
  }

 private:
  std::optional<Error> error_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : data_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(data_); }
  // REQUIRES: ok().
  const T& value() const& {
    assert(ok());
    return std::get<T>(data_);
  }
  T& value() & {
    assert(ok());
    return std::get<T>(data_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(data_));
  }
  // REQUIRES: !ok().
  const Error& error() const {
    assert(!ok());
    return std::get<Error>(data_);
  }
  Status status() const { return ok() ? Status::Ok() : Status(error()); }

 private:
  std::variant<T, Error> data_;
};

// Returns early from the enclosing function when `expr` (a Status or Result) failed.
#define STAGECRAFT_RETURN_IF_ERROR(expr)                      \
  do {                                                        \
    auto stagecraft_status_ = (expr);                         \
    if (!stagecraft_status_.ok()) {                           \
      return ::stagecraft::Error{stagecraft_status_.error()}; \
    }                                                         \
  } while (false)

}  // namespace stagecraft
