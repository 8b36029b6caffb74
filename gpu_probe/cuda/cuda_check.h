#pragma once
// Error handling for the CUDA backend: library code returns errors (FlashInfer's
// FLASHINFER_CUDA_CALL); only kvprobe prints. do { } while (false) with file, line and the
// failing call's text.

#include <cuda_runtime.h>

#include <cstdio>
#include <string>

namespace kvl::probe {

inline std::string cudaErrorText(cudaError_t e, const char* call, const char* file, int line) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%s:%d: %s failed: %s (%s)", file, line, call,
                  cudaGetErrorString(e), cudaGetErrorName(e));
    return buf;
}

} // namespace kvl::probe

#include "gpu_probe/cuda/cuda_call.h" // KVL_CUDA_CALL

// In host C++ functions returning kvl::Status or kvl::Result<T> (core/result.h, included by
// the caller: nvcc compiles this header as C++17): an Internal error whose message names file,
// line and call.
#define KVL_CUDA_TRY(call)                                                                         \
    do {                                                                                           \
        const cudaError_t kvl_err_ = (call);                                                       \
        if (kvl_err_ != cudaSuccess) {                                                             \
            (void)cudaGetLastError(); /* clear a sticky non-fatal error */                         \
            return ::kvl::Error{::kvl::ErrorCode::Internal,                                        \
                                ::kvl::probe::cudaErrorText(kvl_err_, #call, __FILE__, __LINE__)}; \
        }                                                                                          \
    } while (false)

// After every kernel launch: launch-configuration errors surface here.
#define KVL_CUDA_CHECK_LAUNCH() KVL_CUDA_CALL(cudaGetLastError())
