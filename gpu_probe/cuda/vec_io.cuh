#pragma once
// Aligned vector loads / stores of 1-16 bytes (16-byte accesses where the layout allows, as
// vLLM's and FlashInfer's kernels use).
#include <cstdint>

namespace kvl::probe {

__device__ __forceinline__ bool isVectorSize(int bytes) {
    return bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16;
}

// `p` must be aligned to `bytes`; `out` to 16.
__device__ __forceinline__ void loadVec(const void* p, int bytes, void* out) {
    switch (bytes) {
    case 16:
        *static_cast<uint4*>(out) = __ldg(static_cast<const uint4*>(p));
        break;
    case 8:
        *static_cast<uint2*>(out) = __ldg(static_cast<const uint2*>(p));
        break;
    case 4:
        *static_cast<unsigned*>(out) = __ldg(static_cast<const unsigned*>(p));
        break;
    case 2:
        *static_cast<unsigned short*>(out) = __ldg(static_cast<const unsigned short*>(p));
        break;
    default:
        *static_cast<unsigned char*>(out) = __ldg(static_cast<const unsigned char*>(p));
        break;
    }
}

__device__ __forceinline__ void storeVec(void* p, int bytes, const void* in) {
    switch (bytes) {
    case 16:
        *static_cast<uint4*>(p) = *static_cast<const uint4*>(in);
        break;
    case 8:
        *static_cast<uint2*>(p) = *static_cast<const uint2*>(in);
        break;
    case 4:
        *static_cast<unsigned*>(p) = *static_cast<const unsigned*>(in);
        break;
    case 2:
        *static_cast<unsigned short*>(p) = *static_cast<const unsigned short*>(in);
        break;
    default:
        *static_cast<unsigned char*>(p) = *static_cast<const unsigned char*>(in);
        break;
    }
}

} // namespace kvl::probe
