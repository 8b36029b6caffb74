// The emulated-cuda backend in a build without the SIMT emulator (no CUDA headers or no
// Boost.Context at configure time): unavailable, saying why.
#include "gpu_probe/backend.h"

namespace kvl::probe {

namespace {
const char* const kWhy = "not built: CUDA's headers (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h) or "
                         "Boost.Context were not found when this build was configured";
}

BackendInfo emulatedCudaBackendInfo() {
    BackendInfo info;
    info.name = "emulated-cuda";
    info.reason = kWhy;
    return info;
}

Result<std::unique_ptr<Backend>> makeEmulatedCudaBackend() {
    return Error{ErrorCode::Unsupported, std::string("emulated-cuda backend unavailable: ") + kWhy};
}

} // namespace kvl::probe
