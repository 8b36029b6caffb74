// Chooses the CPU kernels at run time: the widest instruction set this CPU and its OS support
// (__builtin_cpu_supports checks both, through CPUID and XGETBV), a width that divides the head
// dimension, or the level KVL_CPU_SIMD / a test names.
#include "gpu_probe/cpu/cpu_simd.h"

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#if KVL_PROBE_HAVE_X86_SIMD
#include <cpuid.h>
#endif

namespace kvl::probe {

namespace {

const std::vector<const SimdKernels*>& levels() {
    static const std::vector<const SimdKernels*> available = [] {
        std::vector<const SimdKernels*> out;
#if KVL_PROBE_HAVE_X86_SIMD
        __builtin_cpu_init();
        // F16C through CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports does not
        // know "f16c", GCC's does; <cpuid.h> is the same in both.
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
        const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
        if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512vnni"))
            out.push_back(&kSimdAvx512);
        if (avx2)
            out.push_back(&kSimdAvx2);
#endif
        out.push_back(&kSimdPortable);
        return out;
    }();
    return available;
}

std::mutex g_overrideMutex;
std::string g_override;

std::string wantedLevel() {
    {
        const std::lock_guard<std::mutex> lock(g_overrideMutex);
        if (!g_override.empty())
            return g_override;
    }
    const char* env = std::getenv("KVL_CPU_SIMD");
    return env ? std::string(env) : std::string();
}

bool known(const std::string& name) {
    for (const SimdKernels* level : levels())
        if (name == level->name)
            return true;
    return false;
}

} // namespace

int simdLevelCount() {
    return int(levels().size());
}

const SimdKernels& simdLevel(int index) {
    return *levels().at(std::size_t(index));
}

const SimdKernels& cpuSimd(int headDim) {
    const std::string wanted = wantedLevel();
    const auto& all = levels();
    std::size_t first = 0; // the wanted level (an unknown or unsupported name: the best)
    for (std::size_t i = 0; i < all.size(); ++i)
        if (wanted == all[i]->name)
            first = i;
    for (std::size_t i = first; i < all.size(); ++i)
        if (headDim % all[i]->width == 0)
            return *all[i];
    return kSimdPortable1;
}

const char* cpuSimdName() {
    return levels().front()->name;
}

namespace testing {
bool setSimdOverride(const char* name) {
    const std::string wanted = name ? name : "";
    if (!wanted.empty() && !known(wanted))
        return false;
    const std::lock_guard<std::mutex> lock(g_overrideMutex);
    g_override = wanted;
    return true;
}
} // namespace testing

} // namespace kvl::probe
