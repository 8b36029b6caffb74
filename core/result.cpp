#include "result.h"

#include "core/enum_names.h"

namespace kvl {

namespace {

constexpr core::EnumRow<ErrorCode> kErrorCodeNames[] = {
    {ErrorCode::BadInput, "bad input"},     {ErrorCode::BadFile, "bad file"},
    {ErrorCode::NotFound, "not found"},     {ErrorCode::Unsupported, "unsupported"},
    {ErrorCode::NoDevice, "no device"},     {ErrorCode::OutOfMemory, "out of memory"},
    {ErrorCode::Io, "i/o error"},           {ErrorCode::Cancelled, "cancelled"},
    {ErrorCode::Internal, "internal error"}};

} // namespace

std::string_view errorCodeName(ErrorCode code) {
    return core::lookupOr(kErrorCodeNames, code, "error");
}

} // namespace kvl
