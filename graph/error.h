// User-facing errors. Bad input (a malformed program, schedule or flag) is never an assert:
// it becomes a UserError that carries where the problem is (file, line or JSON path) and
// why, and the CLI turns it into one line on stderr and exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace mugraph {

class UserError : public std::runtime_error {
 public:
  UserError(std::string where, std::string reason)
      : std::runtime_error(where.empty() ? reason : where + ": " + reason),
        where_(std::move(where)),
        reason_(std::move(reason)) {}

  const std::string& where() const { return where_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string where_;
  std::string reason_;
};

}  // namespace mugraph
