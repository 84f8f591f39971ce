// Errors the user can fix are values: Status and Result<T> (no exceptions across modules).
// A message says where (file:line:col or the flag), what was wrong, what was expected, and a
// suggestion.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace stagecraft {

struct Error {
  std::string message;
};

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
