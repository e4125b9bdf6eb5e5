#include "common/status.h"

#include <cstring>

namespace rampart {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "Invalid argument";
    case StatusCode::kNotFound: return "Not found";
    case StatusCode::kAlreadyExists: return "Already exists";
    case StatusCode::kResourceExhausted: return "Resource exhausted";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kTimedOut: return "Timed out";
    case StatusCode::kNotSupported: return "Not supported";
    case StatusCode::kFailedPrecondition: return "Failed precondition";
    case StatusCode::kAborted: return "Aborted";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kIoError: return "IO error";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kPermissionDenied: return "PermissionDenied";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) rep_ = std::make_shared<const Rep>(Rep{code, std::move(message)});
}

std::string_view Status::message() const { return rep_ ? std::string_view(rep_->message) : std::string_view(); }

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(rep_->code));
  if (!rep_->message.empty()) out.append(": ").append(rep_->message);
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(rep_->code, StrCat(context, ": ", rep_->message));
}

std::string ErrnoText(int err) {
  char buf[128];
  return strerror_r(err, buf, sizeof buf);  // GNU variant returns the text
}

Status ErrnoStatus(std::string_view what, int err) { return IoError(what, ": ", ErrnoText(err)); }

}  // namespace rampart
