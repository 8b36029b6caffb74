#pragma once
// The one header a kernel source (decode_kernels.cuh, store_kernels.cuh) includes: CUDA itself
// under nvcc, or the SIMT emulator's host dialect (emu/cuda_emu.h) when KVL_EMULATED_CUDA is
// defined, so the same kernel text runs on the GPU and, in CI, on the CPU. What differs is kept
// to a few names:
//  - gptr<T>: a pointer to global memory: T* on the GPU; a bounds-checked pointer in the
//    emulator. Kernels read through ldg() (the read-only path, __ldg) and write through
//    gstore(); gcast<U>() reinterprets (a vector view of bytes);
//  - KVL_SHARED_ARRAY / KVL_DYNAMIC_SHARED declare shared memory (per block in both);
//  - launchKernel() launches on a stream and returns the launch's error;
//  - KVL_INJECT(fault): false on the GPU; in the emulator, true while a test plants that bug in
//    the real kernel (emu::Fault), to show the emulator catches its class;
//  - KVL_KERNEL_NS: the namespace the kernels and launchers live in (cuda / emulated), so both
//    builds link into one library.

#include <cstdint>

#if defined(KVL_EMULATED_CUDA)

#include "gpu_probe/emu/cuda_emu.h"
#define KVL_KERNEL_NS emulated
#define KVL_SHARED_ARRAY(type, name, count)                                                        \
    type* name = static_cast<type*>(::kvl::emu::staticShared(sizeof(type) * (count), alignof(type)))
#define KVL_DYNAMIC_SHARED(type, name) type* name = static_cast<type*>(::kvl::emu::dynamicShared())
#define KVL_INJECT(fault) (::kvl::emu::faultActive(::kvl::emu::Fault::fault))
#include "gpu_probe/cuda/cuda_call.h" // KVL_CUDA_CALL over the emulator's cudaError_t

namespace kvl::probe::emulated {

template <class T> using gptr = ::kvl::emu::GlobalPtr<T>;
using ::kvl::emu::launchKernel;

template <class T>
inline T ldg(gptr<const T> p, const std::source_location& at = std::source_location::current()) {
    T v{};
    if (const T* q = p.access(sizeof(T), alignof(T), false, at))
        std::memcpy(static_cast<void*>(&v), q, sizeof(T));
    return v;
}
template <class T>
inline T ldg(gptr<T> p, const std::source_location& at = std::source_location::current()) {
    return ldg(gptr<const T>(p), at);
}
template <class T>
inline void gstore(gptr<T> p, const T& v,
                   const std::source_location& at = std::source_location::current()) {
    if (T* q = p.access(sizeof(T), alignof(T), true, at))
        std::memcpy(static_cast<void*>(q), &v, sizeof(T));
}
template <class U, class T> inline gptr<U> gcast(gptr<T> p) {
    return p.template reinterpret<U>();
}

} // namespace kvl::probe::emulated

#else // nvcc

#include "gpu_probe/cuda/cuda_check.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <type_traits>
#include <utility>

#define KVL_KERNEL_NS cuda
#define KVL_SHARED_ARRAY(type, name, count) __shared__ type name[count]
#define KVL_DYNAMIC_SHARED(type, name)                                                             \
    extern __shared__ __align__(16) unsigned char kvl_dynamic_shared_[];                           \
    type* name = reinterpret_cast<type*>(kvl_dynamic_shared_)
#define KVL_INJECT(fault) false

namespace kvl::probe::cuda {

template <class T> using gptr = T*;

// __ldg for the types it has (the read-only data path); a plain load otherwise.
template <class T> __device__ __forceinline__ T ldg(const T* p) {
    if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, uint4> || std::is_same_v<T, uint2> ||
                  std::is_same_v<T, float4> || std::is_same_v<T, float2> ||
                  std::is_same_v<T, int4> || std::is_same_v<T, int2> || std::is_same_v<T, ushort2>)
        return __ldg(p);
    else
        return *p;
}
template <class T> __device__ __forceinline__ void gstore(T* p, const T& v) {
    *p = v;
}
template <class U, class T> __device__ __host__ __forceinline__ U* gcast(T* p) {
    return reinterpret_cast<U*>(p);
}

template <class... Params, class... Args>
cudaError_t launchKernel(const char*, void (*kernel)(Params...), dim3 grid, dim3 block,
                         std::size_t dynamicShared, cudaStream_t stream, Args&&... args) {
    kernel<<<grid, block, dynamicShared, stream>>>(std::forward<Args>(args)...);
    return cudaGetLastError();
}

} // namespace kvl::probe::cuda

#endif
