#include "result.h"

namespace kvl {

std::string_view errorCodeName(ErrorCode code) {
    switch (code) {
    case ErrorCode::BadInput:
        return "bad input";
    case ErrorCode::BadFile:
        return "bad file";
    case ErrorCode::NotFound:
        return "not found";
    case ErrorCode::Unsupported:
        return "unsupported";
    case ErrorCode::NoDevice:
        return "no device";
    case ErrorCode::OutOfMemory:
        return "out of memory";
    case ErrorCode::Io:
        return "i/o error";
    case ErrorCode::Cancelled:
        return "cancelled";
    case ErrorCode::Internal:
        return "internal error";
    }
    return "error";
}

} // namespace kvl
