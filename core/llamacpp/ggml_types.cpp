#include "ggml_types.h"

#include "core/enum_names.h"
#include "core/saturating.h"

#include <array>

namespace kvl::core::llamacpp {

namespace {

// ggml/src/ggml.c type_traits (blck_size, type_size) with the block layouts of
// ggml/src/ggml-common.h: q8_0 is an fp16 scale + 32 int8 (34 bytes per 32 values), q4_0 an fp16
// scale + 16 bytes of nibbles (18 per 32), q4_K two fp16 + 12 bytes of 6-bit scales + 128 bytes
// of nibbles (144 per 256), and so on. Ids 4, 5 (q4_2, q4_3), 31-33 and 36-38 (the repacked
// variants) are gone from ggml and are not here.
constexpr std::array<GgmlTypeInfo, 33> kTypes{{
    {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},
    {3, "q4_1", 32, 20},      {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},
    {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},      {10, "q2_K", 256, 84},
    {11, "q3_K", 256, 110},   {12, "q4_K", 256, 144},   {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210},   {15, "q8_K", 256, 292},   {16, "iq2_xxs", 256, 66},
    {17, "iq2_xs", 256, 74},  {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},
    {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},  {22, "iq2_s", 256, 82},
    {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
    {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},
    {29, "iq1_m", 256, 56},   {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},
    {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},    {-1, "", 1, 0},
}};

// GgmlKvType order -> ggml type id.
constexpr std::array<int, 9> kKvTypeIds{0, 1, 30, 8, 2, 3, 20, 6, 7};

// The -ctk / -ctv type that stores each KV dtype llama.cpp has one for.
constexpr EnumRow<KvDtype, GgmlKvType> kKvTypeForDtype[] = {{KvDtype::Fp32, GgmlKvType::F32},
                                                            {KvDtype::Fp16, GgmlKvType::F16},
                                                            {KvDtype::Bf16, GgmlKvType::Bf16},
                                                            {KvDtype::Int8, GgmlKvType::Q8_0},
                                                            {KvDtype::Int4, GgmlKvType::Q4_0}};

} // namespace

const GgmlTypeInfo* ggmlType(int id) {
    if (id < 0)
        return nullptr;
    for (const auto& t : kTypes)
        if (t.id == id)
            return &t;
    return nullptr;
}

const GgmlTypeInfo* ggmlTypeByName(std::string_view name) {
    for (const auto& t : kTypes)
        if (t.id >= 0 && t.name == name)
            return &t;
    return nullptr;
}

const GgmlTypeInfo& ggmlKvType(GgmlKvType t) {
    return *ggmlType(kKvTypeIds[static_cast<std::size_t>(t)]);
}

std::string_view ggmlKvTypeName(GgmlKvType t) {
    return ggmlKvType(t).name;
}

std::optional<GgmlKvType> kvTypeForDtype(KvDtype d) {
    return lookup(kKvTypeForDtype, d);
}

std::optional<GgmlKvType> parseGgmlKvType(std::string_view name) {
    for (std::size_t i = 0; i < kKvTypeIds.size(); ++i)
        if (ggmlType(kKvTypeIds[i])->name == name)
            return static_cast<GgmlKvType>(i);
    return std::nullopt;
}

std::int64_t rowBytes(const GgmlTypeInfo& t, std::int64_t n) {
    return satMul(t.typeSize, n / t.blockSize);
}

std::int64_t paddedRowBytes(const GgmlTypeInfo& t, std::int64_t n) {
    return satMul(t.typeSize, (n + t.blockSize - 1) / t.blockSize);
}

std::string_view llamaFtypeName(std::int64_t ftype) {
    // include/llama.h enum llama_ftype (the gaps are types that were removed).
    switch (ftype) {
    case 0:
        return "F32";
    case 1:
        return "F16";
    case 2:
        return "Q4_0";
    case 3:
        return "Q4_1";
    case 7:
        return "Q8_0";
    case 8:
        return "Q5_0";
    case 9:
        return "Q5_1";
    case 10:
        return "Q2_K";
    case 11:
        return "Q3_K_S";
    case 12:
        return "Q3_K_M";
    case 13:
        return "Q3_K_L";
    case 14:
        return "Q4_K_S";
    case 15:
        return "Q4_K_M";
    case 16:
        return "Q5_K_S";
    case 17:
        return "Q5_K_M";
    case 18:
        return "Q6_K";
    case 19:
        return "IQ2_XXS";
    case 20:
        return "IQ2_XS";
    case 21:
        return "Q2_K_S";
    case 22:
        return "IQ3_XS";
    case 23:
        return "IQ3_XXS";
    case 24:
        return "IQ1_S";
    case 25:
        return "IQ4_NL";
    case 26:
        return "IQ3_S";
    case 27:
        return "IQ3_M";
    case 28:
        return "IQ2_S";
    case 29:
        return "IQ2_M";
    case 30:
        return "IQ4_XS";
    case 31:
        return "IQ1_M";
    case 32:
        return "BF16";
    case 36:
        return "TQ1_0";
    case 37:
        return "TQ2_0";
    case 38:
        return "MXFP4_MOE";
    default:
        return {};
    }
}

} // namespace kvl::core::llamacpp
