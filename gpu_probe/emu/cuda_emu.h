#pragma once
// CUDA's dialect for a host C++ compiler, so the project's own kernel sources (cuda/*.cuh) compile
// unchanged as C++ and run on the SIMT layer (simt.h). Included by cuda/dialect.cuh when
// KVL_EMULATED_CUDA is defined, instead of cuda_runtime.h.
//
// The half / bf16 / fp8 types and conversions are CUDA's own (cuda_fp16.h, cuda_bf16.h,
// cuda_fp8.h have host implementations), so the emulated kernels convert exactly as NVIDIA's
// headers define it. __global__, __device__, __host__ and __forceinline__ come from CUDA's
// crt/host_defines.h (empty, or always_inline, for a host compiler). Everything else a kernel
// uses is defined here: the built-in variables (per fiber), barriers, warp intrinsics, the few
// math intrinsics, shared memory, and global memory through GlobalPtr, which carries the bounds
// of its allocation and checks every access.

#include "gpu_probe/emu/simt.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <vector_functions.h> // make_float4, make_uint4, ...

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>

// A plain `__shared__` variable would be one host variable shared by every block: kernels
// declare shared memory through KVL_SHARED_ARRAY / KVL_DYNAMIC_SHARED (cuda/dialect.cuh).
#undef __shared__
#define __shared__ KVL_EMU_declare_shared_memory_with_KVL_SHARED_ARRAY_or_KVL_DYNAMIC_SHARED
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

inline constexpr int warpSize = 32;

// ---- barriers and warp intrinsics

inline void __syncthreads(const std::source_location& at = std::source_location::current()) {
    ::kvl::emu::syncThreads(at);
}

inline void __syncwarp(unsigned mask = 0xffffffffu,
                       const std::source_location& at = std::source_location::current()) {
    (void)::kvl::emu::warpExchange(mask, 0, ::kvl::emu::Exchange::Sync, 0, 32, at);
}

namespace kvl::emu {
template <class T> std::uint64_t toWord(const T& v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>,
                  "warp shuffles move at most 8 bytes");
    std::uint64_t w = 0;
    std::memcpy(&w, &v, sizeof(T));
    return w;
}
template <class T> T fromWord(std::uint64_t w) {
    T v;
    std::memcpy(&v, &w, sizeof(T));
    return v;
}
template <class T>
T shuffle(unsigned mask, T var, Exchange kind, int arg, int width, const std::source_location& at) {
    return fromWord<T>(warpExchange(mask, toWord(var), kind, arg, width, at));
}
} // namespace kvl::emu

template <class T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize,
              const std::source_location& at = std::source_location::current()) {
    return ::kvl::emu::shuffle(mask, var, ::kvl::emu::Exchange::Idx, srcLane, width, at);
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                 const std::source_location& at = std::source_location::current()) {
    return ::kvl::emu::shuffle(mask, var, ::kvl::emu::Exchange::Up, int(delta), width, at);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                   const std::source_location& at = std::source_location::current()) {
    return ::kvl::emu::shuffle(mask, var, ::kvl::emu::Exchange::Down, int(delta), width, at);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize,
                  const std::source_location& at = std::source_location::current()) {
    return ::kvl::emu::shuffle(mask, var, ::kvl::emu::Exchange::Xor, laneMask, width, at);
}
inline unsigned __ballot_sync(unsigned mask, int predicate,
                              const std::source_location& at = std::source_location::current()) {
    return unsigned(
        ::kvl::emu::warpExchange(mask, predicate != 0, ::kvl::emu::Exchange::Ballot, 0, 32, at));
}
inline int __any_sync(unsigned mask, int predicate,
                      const std::source_location& at = std::source_location::current()) {
    return int(
        ::kvl::emu::warpExchange(mask, predicate != 0, ::kvl::emu::Exchange::Any, 0, 32, at));
}
inline int __all_sync(unsigned mask, int predicate,
                      const std::source_location& at = std::source_location::current()) {
    return int(
        ::kvl::emu::warpExchange(mask, predicate != 0, ::kvl::emu::Exchange::All, 0, 32, at));
}
inline unsigned __activemask() {
    return ::kvl::emu::activeMask();
}

// ---- math and bit intrinsics (exact host versions; the hardware's approximate ones, such as
// __expf's ex2.approx, differ in the last bits, which the kernels' tolerances allow)

inline float __expf(float x) {
    return std::exp(x);
}
inline float __fdividef(float a, float b) {
    return a / b;
}
inline float __frcp_rn(float x) {
    return 1.0f / x;
}
inline float __fmaf_rn(float a, float b, float c) {
    return std::fma(a, b, c);
}
// The reinterpreting casts are std::bit_cast (all four types are 4 bytes).
inline float __uint_as_float(unsigned u) {
    return std::bit_cast<float>(u);
}
inline unsigned __float_as_uint(float f) {
    return std::bit_cast<unsigned>(f);
}
inline float __int_as_float(int i) {
    return std::bit_cast<float>(i);
}
inline int __float_as_int(float f) {
    return std::bit_cast<int>(f);
}
inline int __float2int_rn(float f) {
    return int(std::nearbyint(f)); // the default rounding mode: to nearest, ties to even
}
inline int __popc(unsigned x) {
    return __builtin_popcount(x);
}
inline int __clz(int x) {
    return x == 0 ? 32 : __builtin_clz(unsigned(x));
}
inline int __ffs(int x) {
    return __builtin_ffs(x);
}
// PTX prmt (default mode): byte i of the result is byte (s >> 4i) & 7 of {y, x}; with bit 3 of
// the selector set, that byte's sign is replicated.
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const std::uint64_t both = (std::uint64_t(y) << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) {
        const unsigned sel = (s >> (4 * i)) & 0xfu;
        unsigned byte = unsigned(both >> (8 * (sel & 7u))) & 0xffu;
        if (sel & 8u)
            byte = (byte & 0x80u) ? 0xffu : 0u;
        r |= byte << (8 * i);
    }
    return r;
}

// ---- global memory

namespace kvl::emu {

// A pointer into device memory that knows the allocation it came from (looked up when it is
// made from a raw pointer, kept through arithmetic and casts) and checks size, bounds and
// alignment at every access. Arithmetic past the bounds is allowed (as for raw pointers); only
// the access is checked. There is no dereference operator: kernels read and write through
// ldg() and gstore() (cuda/dialect.cuh), so no access escapes the check.
template <class T> class GlobalPtr {
public:
    GlobalPtr() = default;
    GlobalPtr(std::nullptr_t) {}
    GlobalPtr(T* p) : m_a(reinterpret_cast<std::uintptr_t>(p)), m_span(findAllocation(p)) {}
    template <class U>
    requires std::is_convertible_v<U*, T*> GlobalPtr(const GlobalPtr<U>& other)
        : m_a(other.address()), m_span(other.span()) {}

    GlobalPtr operator+(std::int64_t n) const { return at(m_a + std::uintptr_t(n * step())); }
    GlobalPtr operator-(std::int64_t n) const { return at(m_a - std::uintptr_t(n * step())); }
    GlobalPtr& operator+=(std::int64_t n) { return *this = *this + n; }
    GlobalPtr& operator-=(std::int64_t n) { return *this = *this - n; }
    explicit operator bool() const { return m_a != 0; }
    friend bool operator==(const GlobalPtr& a, const GlobalPtr& b) { return a.m_a == b.m_a; }

    std::uintptr_t address() const { return m_a; }
    Span span() const { return m_span; }
    template <class U> GlobalPtr<U> reinterpret() const {
        GlobalPtr<U> p;
        p.m_a = m_a;
        p.m_span = m_span;
        return p;
    }

    // The raw pointer when [address, address + bytes) lies in the allocation and the address is
    // aligned; nullptr (and a fault recorded for the running thread) otherwise.
    T* access(std::size_t bytes, std::size_t align, bool write,
              const std::source_location& where) const {
        if (m_a >= m_span.begin && m_a + bytes <= m_span.end && m_a % align == 0 &&
            m_span.begin != m_span.end) [[likely]] {
            maybePreempt();
            return reinterpret_cast<T*>(m_a);
        }
        badAccess(m_a, bytes, align, write, m_span, where);
        return nullptr;
    }

private:
    template <class U> friend class GlobalPtr;
    static constexpr std::int64_t step() {
        if constexpr (std::is_void_v<T>)
            return 1;
        else
            return std::int64_t(sizeof(T));
    }
    GlobalPtr at(std::uintptr_t a) const {
        GlobalPtr p = *this;
        p.m_a = a;
        return p;
    }
    std::uintptr_t m_a = 0;
    Span m_span;
};

// Launches `kernel` on the SIMT layer. The parameters are copied once, as the driver copies
// them to the device; every thread then calls the kernel with them.
template <class... Params, class... Args>
cudaError_t launchKernel(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block,
                         std::size_t dynamicShared, cudaStream_t, Args&&... args) {
    std::tuple<std::decay_t<Params>...> params(std::forward<Args>(args)...);
    const std::function<void()> body = [&] { std::apply(kernel, params); };
    return launch(name, reinterpret_cast<const void*>(kernel), grid, block, dynamicShared, body);
}

} // namespace kvl::emu

template <class... Params>
cudaError_t cudaFuncSetAttribute(void (*kernel)(Params...), cudaFuncAttribute attribute,
                                 int value) {
    if (attribute == cudaFuncAttributeMaxDynamicSharedMemorySize)
        ::kvl::emu::setMaxDynamicShared(reinterpret_cast<const void*>(kernel), value);
    return cudaSuccess;
}
