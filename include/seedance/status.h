// Status and StatusCode: how every fallible Seedance call reports failure.
//
// The codes are few on purpose; each comment says what the caller does with it.
// Status is a value type: cheap to copy when OK (no allocation), thread-compatible.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace seedance {

enum class StatusCode {
  kOk = 0,
  // Bad config or bad record: do not retry; route the record to a side output.
  kInvalidArgument,
  // Transient (peer down, connection reset): retry with backoff.
  kUnavailable,
  // A deadline passed: retry with backoff.
  kDeadlineExceeded,
  // A budget, queue or disk limit is reached: back off or shed.
  kResourceExhausted,
  // Corruption detected: count, log and alert; skip the record.
  kDataLoss,
  // The system is not in a state where the call makes sense (e.g. not started).
  kFailedPrecondition,
  // A named thing (file, plugin, key) does not exist.
  kNotFound,
  // The operation was cancelled, usually by shutdown.
  kCancelled,
  // A bug or an unexpected failure of a dependency.
  kInternal,
};

// Returns the code's name without the leading 'k', e.g. "InvalidArgument".
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "InvalidArgument: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(std::string_view context) const;

  // Explicitly discards the status (for best-effort calls).
  void IgnoreError() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status UnavailableError(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status DeadlineExceededError(std::string m) {
  return Status(StatusCode::kDeadlineExceeded, std::move(m));
}
inline Status ResourceExhaustedError(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status DataLossError(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status CancelledError(std::string m) { return Status(StatusCode::kCancelled, std::move(m)); }
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

}  // namespace seedance

#define SEEDANCE_RETURN_IF_ERROR(expr)                   \
  do {                                                   \
    ::seedance::Status seedance_status_ = (expr);        \
    if (!seedance_status_.ok()) return seedance_status_; \
  } while (0)
