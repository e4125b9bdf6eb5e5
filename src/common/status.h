// Status and Result<T>: errors as values on the datapath.
//
// A Status is either OK (no allocation) or an error code with a message that a
// person can act on. Result<T> holds a T or an error Status.
//
//   Result<int> ParsePort(std::string_view s);
//   auto port = ParsePort(text);
//   if (!port.ok()) return port.status();
//   use(*port);
//
// Thread-safety: values; copy freely between threads.
#pragma once

#include <cassert>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace rampart {

enum class StatusCode : unsigned char {
  kOk = 0,
  kInvalidArgument,   // the caller passed something malformed or out of range
  kNotFound,
  kAlreadyExists,
  kResourceExhausted, // out of memory, ring space, slots, connections
  kUnavailable,       // peer unreachable, endpoint failed; retry elsewhere/later
  kTimedOut,
  kNotSupported,      // the backend cannot do this (e.g. one-sided ops on tcp)
  kFailedPrecondition,// the object is not in a state that allows the call
  kAborted,           // cancelled because the object was closed
  kCorruption,        // checksum or format mismatch
  kIoError,
  kInternal,
  kPermissionDenied,  // a peer failed authentication (values above are on the wire: append only)
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // The message without the code name; empty for OK.
  std::string_view message() const;
  // "Unavailable: peer 127.0.0.1:7000 closed the connection", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "context: message" (OK stays OK).
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const Rep> rep_;  // shared: copying an error is cheap
};

// Shorthands: Status err = Unavailable("peer ", name, " died");
inline std::string ToStringPiece(std::string_view s) { return std::string(s); }
inline std::string ToStringPiece(const std::string& s) { return s; }
inline std::string ToStringPiece(const char* s) { return s; }
template <typename T>
  requires std::is_arithmetic_v<T>
std::string ToStringPiece(T v) {
  return std::to_string(v);
}

template <typename... Parts>
std::string StrCat(const Parts&... parts) {
  std::string out;
  (out.append(ToStringPiece(parts)), ...);
  return out;
}
#define RAMPART_STATUS_FACTORY(Name, Code)                 \
  template <typename... Parts>                             \
  Status Name(const Parts&... parts) {                     \
    return Status(StatusCode::Code, StrCat(parts...));     \
  }
RAMPART_STATUS_FACTORY(InvalidArgument, kInvalidArgument)
RAMPART_STATUS_FACTORY(NotFound, kNotFound)
RAMPART_STATUS_FACTORY(AlreadyExists, kAlreadyExists)
RAMPART_STATUS_FACTORY(ResourceExhausted, kResourceExhausted)
RAMPART_STATUS_FACTORY(Unavailable, kUnavailable)
RAMPART_STATUS_FACTORY(TimedOut, kTimedOut)
RAMPART_STATUS_FACTORY(NotSupported, kNotSupported)
RAMPART_STATUS_FACTORY(FailedPrecondition, kFailedPrecondition)
RAMPART_STATUS_FACTORY(Aborted, kAborted)
RAMPART_STATUS_FACTORY(Corruption, kCorruption)
RAMPART_STATUS_FACTORY(IoError, kIoError)
RAMPART_STATUS_FACTORY(InternalError, kInternal)
RAMPART_STATUS_FACTORY(PermissionDenied, kPermissionDenied)
#undef RAMPART_STATUS_FACTORY

// Status from errno: IoError("open /x: No such file or directory").
Status ErrnoStatus(std::string_view what, int err);
// strerror(err), thread-safe: "Connection refused".
std::string ErrnoText(int err);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  // OK when a value is held.
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  // REQUIRES: ok().
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace rampart

// Early returns for the common cases.
#define RAMPART_RETURN_IF_ERROR(expr)         \
  do {                                        \
    ::rampart::Status _st = (expr);           \
    if (!_st.ok()) return _st;                \
  } while (0)

#define RAMPART_CONCAT_INNER(a, b) a##b
#define RAMPART_CONCAT(a, b) RAMPART_CONCAT_INNER(a, b)
#define RAMPART_ASSIGN_OR_RETURN(lhs, expr)                              \
  auto RAMPART_CONCAT(_res_, __LINE__) = (expr);                         \
  if (!RAMPART_CONCAT(_res_, __LINE__).ok())                             \
    return RAMPART_CONCAT(_res_, __LINE__).status();                     \
  lhs = std::move(RAMPART_CONCAT(_res_, __LINE__)).value()
