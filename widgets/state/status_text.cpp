#include "widgets/state/status_text.h"

#include "core/engine.h"
#include "core/kv_format.h"

#include <QCoreApplication>

namespace kvl::widgets {

namespace {
QString tr(const char* text) {
    return QCoreApplication::translate("kvl::widgets::StatusText", text);
}

// Saturating: the per-GPU figures of a huge scenario are already saturated.
std::int64_t perToken(const LedgerSnapshot& snap, FigureScope scope) {
    return scopeBytes(snap.ledger.kvBytesPerTokenPerGpu, snap.ledger.kvBytesPerTokenPerReplica,
                      snap.scenario, scope);
}
std::int64_t perRequest(const LedgerSnapshot& snap, FigureScope scope) {
    return scopeBytes(snap.ledger.kvBytesPerRequestPerGpu, snap.ledger.kvBytesPerRequest,
                      snap.scenario, scope);
}

QString requestsScopeText(FigureScope scope) {
    // Every GPU of a replica serves every request: requests are per replica or the cluster's.
    return scope == FigureScope::Cluster ? tr("in the cluster") : tr("per replica");
}
} // namespace

QString prefixText(const core::Scenario& s) {
    const core::PrefixLever& p = s.levers.prefix;
    if (!p.enabled || p.sharedTokens <= 0)
        return tr("no shared prefix");
    return p.sharingRequests > 0
               ? tr("shared prefix %1 x %2 requests")
                     .arg(formatTokensQ(p.sharedTokens))
                     .arg(thousandsQ(p.sharingRequests))
               : tr("shared prefix %1 x all requests").arg(formatTokensQ(p.sharedTokens));
}

QString deploymentText(const core::Scenario& s) {
    const core::Layout l = core::layoutOf(s);
    return QStringLiteral("%1 x %2 (%3)")
        .arg(l.gpus())
        .arg(qs(s.hardware.gpu.name), qs(core::layoutLabel(l)));
}

bool formatInVllm(const core::Scenario& s) {
    return core::vllmCacheDtype(s).has_value();
}

QString kvFormatText(const LedgerSnapshot& snap) {
    QString text = qs(core::shortLabel(snap.ledger.kv.format));
    if (snap.engine) {
        if (!snap.engine->formatOffered)
            text += tr(" (not in %1)").arg(qs(core::engineDisplayName(snap.engine->engine)));
    } else if (!formatInVllm(snap.scenario))
        text += tr(" (not in vLLM)");
    return text;
}

namespace {
// The status line of SGLang, TensorRT-LLM or llama.cpp: that engine's own pool and requests.
QString engineSummaryLine(const LedgerSnapshot& snap, const core::EngineResult& e,
                          core::UnitSystem units, FigureScope scope) {
    const core::Scenario& s = snap.scenario;
    QStringList parts;
    parts << qs(s.model.name) << qs(core::engineDisplayName(e.engine)) << kvFormatText(snap);
    QString line = parts.join(QStringLiteral(" | "));
    const QString where = deploymentText(s);
    if (!e.error.empty())
        return line + tr(" | does not run on %1").arg(where); // the reason is in the banner
    line += tr(" -> %1: %2/token, pool %3 (%4 tokens)")
                .arg(scopeLabel(scope),
                     formatBytesQ(scopeBytes(e.kvBytesPerTokenPerGpu, s, scope), units, 2),
                     formatBytesQ(scopeBytes(e.kvPoolBytesPerGpu, s, scope), units, 2),
                     thousandsQ(e.poolTokens));
    const std::int64_t fit = scopeRequests(e.requestsAtContext, s, scope);
    line += tr(" | %1 %2 of %3 %4 on %5")
                .arg(thousandsQ(fit))
                .arg(fit == 1 ? tr("request") : tr("requests"))
                .arg(formatTokensQ(s.workload.context), requestsScopeText(scope), where);
    return line;
}
} // namespace

QString scopedSummaryLine(const LedgerSnapshot& snap, core::UnitSystem units, FigureScope scope) {
    if (snap.invalid)
        return tr("Not computed: %1").arg(qs(snap.ledger.error));
    if (snap.engine)
        return engineSummaryLine(snap, *snap.engine, units, scope);
    const core::Scenario& s = snap.scenario;
    const core::LedgerResult& r = snap.ledger;
    QStringList parts;
    parts << qs(s.model.name) << qs(r.kv.attentionLabel) << kvFormatText(snap);
    parts << (s.levers.paging.enabled ? QStringLiteral("paged %1").arg(r.blockSize)
                                      : QStringLiteral("contiguous"));
    parts << prefixText(s);
    QString line = parts.join(QStringLiteral(" | "));
    line +=
        tr(" -> %1: %2/token, %3/request @%4")
            .arg(scopeLabel(scope), formatBytesQ(perToken(snap, scope), units, 2),
                 formatBytesQ(perRequest(snap, scope), units, 2), formatTokensQ(r.contextTokens));
    const QString where = deploymentText(s);
    if (!r.error.empty())
        return line + tr(" | does not fit on %1").arg(where); // the reason is in the banner
    const std::int64_t fit = scopeRequests(r.maxRequestsAtContext, s, scope);
    line += tr(" | %1 %2 %3 on %4")
                .arg(thousandsQ(fit))
                .arg(fit == 1 ? tr("request") : tr("requests"))
                .arg(requestsScopeText(scope), where);
    const std::int64_t cap = core::effectiveMaxNumSeqs(s);
    if (r.maxRequestsAtContext > cap)
        line += tr(" (max_num_seqs runs %1)").arg(thousandsQ(scopeRequests(cap, s, scope)));
    return line;
}

QString chartScopeText(ChartScope chart, FigureScope selected) {
    // Requests are the same per GPU and per replica (every GPU of a replica serves every
    // request): only the cluster scope changes them.
    const QString requests = selected == FigureScope::Cluster ? tr("requests in the cluster")
                                                              : tr("requests per replica");
    switch (chart) {
    case ChartScope::Selected:
        return tr("figures %1").arg(scopeLabel(selected));
    case ChartScope::Requests:
        return requests;
    case ChartScope::BytesRequests:
        return selected == FigureScope::PerGpu ? tr("bytes per GPU, %1").arg(requests)
                                               : tr("figures %1").arg(scopeLabel(selected));
    case ChartScope::PerGpu:
        return tr("memory per GPU");
    case ChartScope::PerReplica:
        return tr("figures per replica");
    case ChartScope::ClusterGpus:
        return tr("GPUs of the whole cluster");
    case ChartScope::Plan:
        return tr("memory per GPU, requests per replica and cluster");
    case ChartScope::ProbedLayer:
        return tr("one layer, as measured");
    case ChartScope::ProbedPerToken:
        return tr("KV per token of the whole model, from one measured layer");
    }
    return {};
}

QString exportCaption(const LedgerSnapshot& snap, FigureScope scope, ChartScope chart,
                      const QDate& date) {
    const core::Scenario& s = snap.scenario;
    QStringList parts;
    parts << qs(s.model.name) << deploymentText(s);
    if (s.engine.kind != core::Engine::Vllm)
        parts << qs(core::engineDisplayName(s.engine.kind));
    if (!snap.invalid)
        parts << tr("KV %1").arg(kvFormatText(snap));
    parts << tr("context %1").arg(formatTokensQ(s.workload.context));
    parts << prefixText(s); // the requests that fit depend on it
    parts << chartScopeText(chart, scope);
    parts << date.toString(Qt::ISODate) << QStringLiteral("KV Ledger");
    return parts.join(QStringLiteral(" · "));
}

QStringList csvComments(const LedgerSnapshot& snap, FigureScope scope, ChartScope chart,
                        const QDate& date) {
    const core::Scenario& s = snap.scenario;
    QStringList out;
    out << QStringLiteral("# ") + exportCaption(snap, scope, chart, date);
    QStringList levers;
    levers << tr("model %1").arg(s.model.hfRepo.empty() ? qs(s.model.id) : qs(s.model.hfRepo));
    if (!snap.invalid)
        levers << tr("attention %1").arg(qs(snap.ledger.kv.attentionLabel))
               << tr("KV %1").arg(qs(core::formatLabel(snap.ledger.kv.format)));
    levers << (s.levers.paging.enabled
                   ? tr("paged, block %1")
                         .arg(snap.ledger.blockSize > 0 ? QString::number(snap.ledger.blockSize)
                                                        : tr("vLLM's"))
                   : tr("contiguous"));
    if (s.levers.prefix.enabled)
        levers << tr("prefix %1 tokens shared by %2")
                      .arg(thousandsQ(s.levers.prefix.sharedTokens))
                      .arg(s.levers.prefix.sharingRequests > 0
                               ? thousandsQ(s.levers.prefix.sharingRequests)
                               : tr("all requests"));
    out << QStringLiteral("# ") + levers.join(QStringLiteral("; "));
    QStringList engine;
    engine << tr("context %1").arg(thousandsQ(s.workload.context))
           << tr("max_model_len %1").arg(thousandsQ(s.effectiveMaxModelLen()))
           << tr("gpu_memory_utilization %1").arg(core::gpuMemoryUtilization(s))
           << tr("max_num_seqs %1").arg(thousandsQ(core::effectiveMaxNumSeqs(s)));
    if (s.workload.targetRequests > 0)
        engine << tr("target %1 requests").arg(thousandsQ(s.workload.targetRequests));
    out << QStringLiteral("# ") + engine.join(QStringLiteral("; "));
    if (snap.invalid)
        out << QStringLiteral("# not computed: ") + qs(snap.ledger.error);
    out << tr("# bytes are exact integers; *_per_gpu columns are one GPU's share (TP and PP "
              "split the model, replicated KV heads counted on every GPU)");
    return out;
}

QString withCsvComments(const QString& csv, const QStringList& comments) {
    if (comments.isEmpty())
        return csv;
    return comments.join(QLatin1Char('\n')) + QLatin1Char('\n') + csv;
}

} // namespace kvl::widgets
