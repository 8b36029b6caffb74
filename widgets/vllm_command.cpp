#include "vllm_command.h"

#include "core/kv_format.h"
#include "core/units.h"

#include <QObject>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>

namespace kvl::widgets {

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

} // namespace

QString huggingFaceRepo(const core::ModelSpec& model) {
    if (!model.hfRepo.empty())
        return q(model.hfRepo);
    return model.id.empty() ? QStringLiteral("MODEL") : q(model.id);
}

VllmCommand vllmCommand(const core::Scenario& s) {
    VllmCommand c;
    c.args << QStringLiteral("vllm") << QStringLiteral("serve") << huggingFaceRepo(s.model);
    const auto& lv = s.levers;

    // --kv-cache-dtype: vLLM takes auto (the model dtype) and the FP8 variants.
    if (lv.quant.enabled) {
        const auto& f = lv.quant.format;
        switch (f.dtype) {
        case core::KvDtype::Fp8E4M3:
            c.args << QStringLiteral("--kv-cache-dtype") << QStringLiteral("fp8_e4m3");
            if (f.granularity != core::Granularity::PerTensor)
                c.unsupported << QObject::tr("FP8 %1 scales: vLLM keeps per-tensor k_scale/v_scale "
                                             "(per-head scales only from a calibrated checkpoint)")
                                     .arg(q(std::string(core::granularityName(f.granularity))));
            break;
        case core::KvDtype::Fp8E5M2:
            c.args << QStringLiteral("--kv-cache-dtype") << QStringLiteral("fp8_e5m2");
            break;
        case core::KvDtype::Int8:
        case core::KvDtype::Int4:
        case core::KvDtype::Int2:
            c.args << QStringLiteral("--kv-cache-dtype") << QStringLiteral("auto");
            c.unsupported << QObject::tr("%1 KV cache: vLLM has no integer KV cache dtype "
                                         "(\"--kv-cache-dtype int8\" is rejected); the closest "
                                         "is fp8 (LMDeploy and TensorRT-LLM offer INT8/INT4 KV)")
                                 .arg(q(core::shortLabel(f)));
            break;
        default:
            if (f.dtype == s.model.nativeKvDtype) {
                c.args << QStringLiteral("--kv-cache-dtype") << QStringLiteral("auto");
            } else {
                c.args << QStringLiteral("--kv-cache-dtype") << QStringLiteral("auto");
                c.unsupported
                    << QObject::tr("%1 KV for a %2 model: vLLM stores the model dtype "
                                   "(\"--dtype\" changes the weights too)")
                           .arg(q(core::shortLabel(f)),
                                q(std::string(core::dtypeName(s.model.nativeKvDtype))).toUpper());
            }
        }
    } else {
        c.args << QStringLiteral("--kv-cache-dtype") << QStringLiteral("auto");
    }

    if (lv.paging.enabled) {
        c.args << QStringLiteral("--block-size") << QString::number(lv.paging.blockSize);
        static const int supported[] = {1, 8, 16, 32, 64, 128};
        if (std::find(std::begin(supported), std::end(supported), lv.paging.blockSize) ==
            std::end(supported))
            c.unsupported << QObject::tr("block size %1: vLLM's CUDA backends take 1, 8, 16, 32, "
                                         "64 or 128")
                                 .arg(lv.paging.blockSize);
    } else {
        c.args << QStringLiteral("--block-size") << QStringLiteral("16");
        c.unsupported << QObject::tr("no paging: vLLM always pages the KV cache; contiguous "
                                     "reservation of max_model_len per request has no flag");
    }

    if (lv.prefix.enabled && lv.paging.enabled)
        c.args << QStringLiteral("--enable-prefix-caching");
    else
        c.args << QStringLiteral("--no-enable-prefix-caching");
    if (lv.prefix.enabled && lv.prefix.sharingRequests > 0)
        c.unsupported << QObject::tr("sharing by exactly %1 requests: vLLM's prefix cache shares "
                                     "with every request that has the prefix")
                             .arg(lv.prefix.sharingRequests);

    if (lv.attention.enabled && lv.attention.mode != core::AttentionMode::Native) {
        const char* mode = lv.attention.mode == core::AttentionMode::Mha   ? "MHA"
                           : lv.attention.mode == core::AttentionMode::Mqa ? "MQA"
                                                                           : "GQA";
        c.unsupported << QObject::tr("attention regrouping (%1): no vLLM flag; it needs a "
                                     "checkpoint converted or trained with those KV heads")
                             .arg(QString::fromLatin1(mode) +
                                  (lv.attention.mode == core::AttentionMode::Gqa
                                       ? QStringLiteral("-%1").arg(lv.attention.gqaKvHeads)
                                       : QString()));
    }

    if (s.hardware.kvMemoryBytes)
        c.args << QStringLiteral("--kv-cache-memory-bytes")
               << QString::number(*s.hardware.kvMemoryBytes);
    else
        c.args << QStringLiteral("--gpu-memory-utilization")
               << QString::number(s.hardware.memoryUtilization, 'g', 4);
    c.args << QStringLiteral("--max-model-len") << QString::number(s.effectiveMaxModelLen());
    c.args << QStringLiteral("--tensor-parallel-size") << QString::number(s.hardware.gpuCount);

    if (s.hardware.weightDtype && *s.hardware.weightDtype != s.model.weightDtype) {
        switch (*s.hardware.weightDtype) {
        case core::WeightDtype::Fp32:
            c.args << QStringLiteral("--dtype") << QStringLiteral("float32");
            break;
        case core::WeightDtype::Fp16:
            c.args << QStringLiteral("--dtype") << QStringLiteral("float16");
            break;
        case core::WeightDtype::Bf16:
            c.args << QStringLiteral("--dtype") << QStringLiteral("bfloat16");
            break;
        case core::WeightDtype::Fp8:
            c.args << QStringLiteral("--quantization") << QStringLiteral("fp8");
            break;
        case core::WeightDtype::Int8:
        case core::WeightDtype::Int4:
            c.unsupported << QObject::tr("%1 weights: serve a pre-quantized checkpoint (GPTQ / AWQ "
                                         "/ compressed-tensors) instead of this model id")
                                 .arg(q(std::string(core::weightDtypeName(*s.hardware.weightDtype)))
                                          .toUpper());
            break;
        }
    }
    if (s.workload.context > s.effectiveMaxModelLen())
        c.unsupported << QObject::tr(
                             "context %1 exceeds --max-model-len %2: vLLM rejects such requests")
                             .arg(s.workload.context)
                             .arg(s.effectiveMaxModelLen());
    if (s.effectiveMaxModelLen() > s.model.maxContext)
        c.unsupported << QObject::tr(
                             "--max-model-len above max_position_embeddings (%1) also needs "
                             "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 or RoPE scaling")
                             .arg(s.model.maxContext);
    return c;
}

QString VllmCommand::text() const {
    QString out;
    // "vllm serve MODEL \" then one flag (with its value) per line.
    int i = 0;
    QStringList lines;
    QString first = args.mid(0, 3).join(QLatin1Char(' '));
    lines << first;
    for (i = 3; i < args.size(); ++i) {
        QString line = QStringLiteral("  ") + args[i];
        if (i + 1 < args.size() && !args[i + 1].startsWith(QStringLiteral("--"))) {
            line += QLatin1Char(' ') + args[i + 1];
            ++i;
        }
        lines << line;
    }
    out = lines.join(QStringLiteral(" \\\n")) + QLatin1Char('\n');
    for (const QString& u : unsupported)
        out += QStringLiteral("# no vLLM equivalent: ") + u + QLatin1Char('\n');
    return out;
}

} // namespace kvl::widgets
