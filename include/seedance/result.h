// Result<T>: a T or the Status that explains why there is none.
//
// Members are named like std::expected (has_value, value, error, operator*, operator->) so a
// later switch to std::expected is mechanical.
#pragma once

#include <cassert>
#include <utility>
#include <variant>

#include "seedance/status.h"

namespace seedance {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok());
  }

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // REQUIRES: !has_value().
  const Status& error() const { return std::get<1>(v_); }

  // OK when a value is held, the error otherwise.
  Status status() const { return has_value() ? Status::Ok() : error(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace seedance

#define SEEDANCE_CONCAT_INNER_(a, b) a##b
#define SEEDANCE_CONCAT_(a, b) SEEDANCE_CONCAT_INNER_(a, b)
#define SEEDANCE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  if (!tmp.has_value()) return tmp.error();             \
  lhs = std::move(tmp).value()
#define SEEDANCE_ASSIGN_OR_RETURN(lhs, expr) \
  SEEDANCE_ASSIGN_OR_RETURN_IMPL_(SEEDANCE_CONCAT_(seedance_result_, __LINE__), lhs, expr)
