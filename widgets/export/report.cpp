#include "widgets/export/report.h"

#include "widgets/charts/chart_widget.h"
#include "widgets/charts/engines_view.h"
#include "widgets/charts/ladder_model.h"
#include "widgets/charts/speed_chart.h"
#include "widgets/deployment/plan_model.h"
#include "widgets/export/atomic_write.h"
#include "widgets/probe/probe_overlay.h"
#include "widgets/probe/probe_results_model.h"
#include "widgets/scenario/vllm_command.h"
#include "widgets/state/status_text.h"

#include "core/engine.h"
#include "core/io/catalog.h"
#include "core/kv_format.h"
#include "core/saturating.h"
#include "core/speed.h"

#include <qcustomplot.h>

#include <QBuffer>
#include <QDateTime>
#include <QDir>
#include <QImage>
#include <QPageLayout>
#include <QPageSize>
#include <QPdfWriter>
#include <QTextDocument>

#include <functional>

namespace kvl::widgets {

namespace {
QString attentionText(const core::Scenario& s, const core::LedgerResult& r) {
    if (!s.levers.attention.enabled)
        return QObject::tr("off (native %1)").arg(qs(r.kv.attentionLabel));
    return qs(r.kv.attentionLabel);
}

// `html` laid out `width` wide in the painter's font at `pointSize`, as the report draws it.
void layOutHtml(QTextDocument& doc, const QPainter& p, const QString& html, double width,
                double pointSize) {
    QFont f = p.font();
    f.setPointSizeF(pointSize);
    doc.setDefaultFont(f);
    doc.setDocumentMargin(0);
    doc.setHtml(html);
    doc.setTextWidth(width);
}

void drawHtml(QPainter& p, const QString& html, const QRectF& rect, double pointSize = 8.5) {
    QTextDocument doc;
    layOutHtml(doc, p, html, rect.width(), pointSize);
    p.save();
    p.translate(rect.topLeft());
    doc.drawContents(&p, QRectF(0, 0, rect.width(), rect.height()));
    p.restore();
}

QString gpusText(const core::Scenario& s) {
    const core::Layout l = core::layoutOf(s);
    QString t = QStringLiteral("%1 × %2").arg(l.gpus()).arg(qs(s.hardware.gpu.name));
    if (l.pp > 1 || l.dp > 1 || l.ep || l.dcp > 1)
        t += QObject::tr(" as %1").arg(layoutShortText(l));
    return t;
}

double htmlHeight(const QPainter& p, const QString& html, double width, double pointSize = 8.5) {
    QTextDocument doc;
    layOutHtml(doc, p, html, width, pointSize);
    return doc.size().height();
}
} // namespace

QString scenarioHtml(const LedgerSnapshot& snap, core::UnitSystem units, FigureScope scope) {
    const core::Scenario& s = snap.scenario;
    const core::LedgerResult& r = snap.ledger;
    auto row = [](const QString& k, const QString& v) {
        return QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>")
            .arg(k.toHtmlEscaped(), v.toHtmlEscaped());
    };
    const core::Layout layout = core::layoutOf(s);
    QString h = QStringLiteral("<table cellspacing=0 cellpadding=2>");
    h += row(QObject::tr("Model"),
             qs(s.model.name) + QStringLiteral(" - ") + qs(s.model.geometrySummary()));
    h += row(QObject::tr("GPUs"), QObject::tr("%1 × %2 as %3 (a replica is TP × PP = %4 GPUs, "
                                              "%5 replica(s)), utilization %6")
                                      .arg(layout.gpus())
                                      .arg(qs(s.hardware.gpu.name), layoutText(layout))
                                      .arg(gpusPerReplica(s))
                                      .arg(replicaCount(s))
                                      .arg(core::gpuMemoryUtilization(s), 0, 'f', 2));
    h += row(QObject::tr("1 Attention"), attentionText(s, r));
    const auto vllmDtype = core::vllmCacheDtype(s);
    h += row(QObject::tr("2 KV format"),
             (s.levers.quant.enabled
                  ? qs(core::formatLabel(r.kv.format))
                  : QObject::tr("off (%1)").arg(qs(core::formatLabel(r.kv.format)))) +
                 (vllmDtype ? QObject::tr(" - vLLM --kv-cache-dtype %1").arg(qs(*vllmDtype))
                            : QObject::tr(" - not in vLLM")));
    h += row(QObject::tr("3 Paging"), s.levers.paging.enabled
                                          ? QObject::tr("blocks of %1 tokens").arg(r.blockSize)
                                          : QObject::tr("off (contiguous max-length reservation)"));
    h += row(QObject::tr("4 Prefix sharing"),
             s.levers.prefix.enabled
                 ? QObject::tr("%1 tokens shared by %2")
                       .arg(formatTokensQ(s.levers.prefix.sharedTokens))
                       .arg(s.levers.prefix.sharingRequests > 0
                                ? QObject::tr("%1 requests").arg(s.levers.prefix.sharingRequests)
                                : QObject::tr("all requests"))
                 : QObject::tr("off"));
    h += row(QObject::tr("Workload"),
             QObject::tr("context %1 tokens, max model length %2")
                 .arg(thousandsQ(r.contextTokens), thousandsQ(r.maxModelLen)));
    // Every byte figure in the window's scope (per GPU, per replica or the cluster), named in
    // its row, so that KV per token x context and KV per request read alike.
    const QString sc = scopeLabel(scope);
    auto scoped = [&](std::int64_t perGpu) { return scopeBytes(perGpu, s, scope); };
    // A request's KV per replica is the ledger's exact total (PP stages of unequal layers).
    const std::int64_t perTokenBytes =
        scopeBytes(r.kvBytesPerTokenPerGpu, r.kvBytesPerTokenPerReplica, s, scope);
    const QString perTokenName = QObject::tr("KV per token (%1)").arg(sc);
    h += row(perTokenName, QObject::tr("%1 (%2 B)")
                               .arg(formatBytesQ(perTokenBytes, units), thousandsQ(perTokenBytes)));
    const std::int64_t perRequestBytes =
        scopeBytes(r.kvBytesPerRequestPerGpu, r.kvBytesPerRequest, s, scope);
    QString perRequest =
        QObject::tr("%1 (%2 B)")
            .arg(formatBytesQ(perRequestBytes, units), thousandsQ(perRequestBytes));
    const std::int64_t product = core::satMulCounts(perTokenBytes, r.contextTokens);
    if (product == perRequestBytes)
        perRequest +=
            QObject::tr(" = %1 × %2 tokens").arg(perTokenName, thousandsQ(r.contextTokens));
    else
        perRequest +=
            QObject::tr("; %1 × %2 tokens = %3 B, the rest is %4")
                .arg(perTokenName, thousandsQ(r.contextTokens), thousandsQ(product),
                     r.blockSize > 0 ? QObject::tr("whole blocks of %1 tokens, windows, state and "
                                                   "padding as vLLM allocates them")
                                           .arg(r.blockSize)
                                     : QObject::tr("the max-length reservation and state"));
    h += row(QObject::tr("KV per request (%1)").arg(sc), perRequest);
    if (r.stateBytesPerRequest > 0 || r.paddingBytesPerRequest > 0)
        h += row(QObject::tr("Of which (%1)").arg(sc),
                 QObject::tr("Mamba / linear-attention state %1, block padding %2")
                     .arg(formatBytesQ(scoped(r.stateBytesPerRequest), units),
                          formatBytesQ(scoped(r.paddingBytesPerRequest), units)));
    h += row(QObject::tr("Memory for KV (%1)").arg(sc),
             QObject::tr("%1 = %2 requested - weights %3 - activations %4 - overhead %5")
                 .arg(formatBytesQ(scoped(r.availableKvBytes), units),
                      formatBytesQ(scoped(r.requestedBytes), units),
                      formatBytesQ(scoped(r.weightsBytesPerGpu), units),
                      formatBytesQ(scoped(r.activationBytes), units),
                      formatBytesQ(scoped(r.overheadBytes), units)));
    if (r.cudaGraphBytes > 0)
        h += row(QObject::tr("CUDA graphs (%1)").arg(sc),
                 QObject::tr("%1 of the overhead, in vLLM %2's memory profile")
                     .arg(formatBytesQ(scoped(r.cudaGraphBytes), units), qs(r.vllmVersion)));
    if (r.blockSize > 0 && !r.vllmLogLines.empty()) {
        QStringList lines;
        for (const auto& l : r.vllmLogLines)
            lines << qs(l).toHtmlEscaped();
        // The lines as vLLM prints them, one per row, in a fixed-width face.
        h += QStringLiteral("<tr><td><b>%1</b></td><td><tt>%2</tt></td></tr>")
                 .arg(QObject::tr("vLLM %1 logs (per GPU)").arg(qs(r.vllmVersion)).toHtmlEscaped(),
                      lines.join(QStringLiteral("<br>")));
    }
    if (r.blockSize > 0)
        h += row(QObject::tr("vLLM figures (per GPU)"),
                 QObject::tr("%1 GPU blocks, KV cache %2 tokens, max concurrency %3x at %4 tokens")
                     .arg(thousandsQ(r.numGpuBlocks), thousandsQ(r.gpuKvCacheTokens))
                     .arg(r.maxConcurrency, 0, 'f', 2)
                     .arg(thousandsQ(r.maxModelLen)));
    h += row(QObject::tr("Requests you can run"),
             QObject::tr("%1 per replica, %2 for the cluster (the memory holds %3 per replica)")
                 .arg(thousandsQ(r.requestsYouCanRun),
                      thousandsQ(scopeRequests(r.requestsYouCanRun, s, FigureScope::Cluster)),
                      thousandsQ(r.maxRequestsAtContext)));
    for (const auto& w : r.warnings)
        h += row(QObject::tr("Warning"), qs(w));
    if (!r.error.empty())
        h += row(r.refused ? QObject::tr("vLLM refuses") : QObject::tr("Error"), qs(r.error));
    h += QStringLiteral("</table>");
    return h;
}

ReviewVerdict reviewVerdict(const LedgerSnapshot& snap, int gpusPerNode, int maxGpus) {
    ReviewVerdict v;
    const core::Scenario& s = snap.scenario;
    const core::Layout layout = core::layoutOf(s);
    const std::int64_t context = s.workload.context;
    v.usersAreTarget = s.workload.targetRequests > 0;
    v.users = v.usersAreTarget ? s.workload.targetRequests : s.workload.concurrency;
    const QString where = QObject::tr("on %1").arg(gpusText(s));
    v.current = core::evaluateDeployment(s, s.hardware.gpu, layout,
                                         std::max<std::int64_t>(1, v.users), context, gpusPerNode);
    const QString fitText = v.current.reason.empty() || v.current.clusterRequests > 0
                                ? QObject::tr("%1 fit").arg(thousandsQ(v.current.clusterRequests))
                                : qs(v.current.reason);
    if (v.users <= 0) {
        v.text = QObject::tr("%1 requests of %2 tokens fit %3 (no target set)")
                     .arg(thousandsQ(v.current.clusterRequests), formatTokensQ(context), where);
        return v;
    }
    const QString head =
        QObject::tr("%1 users at %2 %3").arg(thousandsQ(v.users), formatTokensQ(context), where);
    if (v.current.fits) {
        v.text = QObject::tr("%1: fits, %2").arg(head, fitText);
        return v;
    }
    core::PlanRequest req;
    req.base = s;
    req.users = v.users;
    req.context = context;
    req.gpus = {s.hardware.gpu};
    req.maxGpus = maxGpus;
    req.gpusPerNode = gpusPerNode;
    const core::PlanResult plan = core::planDeployments(req);
    if (!plan.gpus.empty())
        v.needed = plan.gpus.front();
    if (v.needed && v.needed->fits && !v.needed->layouts.empty()) {
        const core::Layout l = v.needed->layouts.front().layout;
        v.text = QObject::tr("%1: does not fit, %2; needs %3 × %4 as %5")
                     .arg(head, fitText)
                     .arg(l.gpus())
                     .arg(qs(s.hardware.gpu.name), layoutShortText(l));
    } else {
        v.text = QObject::tr("%1: does not fit, %2; no layout of up to %3 × %4 holds them (%5)")
                     .arg(head, fitText)
                     .arg(maxGpus)
                     .arg(qs(s.hardware.gpu.name),
                          v.needed ? qs(v.needed->reason) : QObject::tr("not planned"));
    }
    return v;
}

namespace {
QString planRowHtml(const QString& gpu, const core::Deployment& d, core::UnitSystem units,
                    bool bold) {
    QStringList cells{gpu,
                      QString::number(d.layout.gpus()),
                      layoutText(d.layout),
                      QStringLiteral("%1 / %2").arg(thousandsQ(d.requestsPerReplica),
                                                    thousandsQ(d.clusterRequests)),
                      formatBytesQ(d.kvBytesPerGpu, units),
                      formatBytesQ(d.weightsBytesPerGpu, units),
                      formatBytesQ(d.headroomBytesPerGpu, units),
                      d.tokensPerSecondPerUser > 0
                          ? QString::number(d.tokensPerSecondPerUser, 'f', 1)
                          : QStringLiteral("-")};
    QString out = QStringLiteral("<tr>");
    for (int i = 0; i < cells.size(); ++i) {
        QString c = cells[i].toHtmlEscaped();
        if (bold)
            c = QStringLiteral("<b>") + c + QStringLiteral("</b>");
        out += QStringLiteral("<td align=%1>%2</td>")
                   .arg(i == 0 || i == 2 ? QStringLiteral("left") : QStringLiteral("right"), c);
    }
    return out + QStringLiteral("</tr>");
}
} // namespace

QString planTableHtml(const LedgerSnapshot& snap, const ReviewVerdict& verdict,
                      const core::PlanResult* others, core::UnitSystem units) {
    const core::Scenario& s = snap.scenario;
    QString h = QStringLiteral("<table cellspacing=0 cellpadding=3 border=1 width=100%><tr>");
    for (const QString& t : {QObject::tr("GPU"), QObject::tr("GPUs"), QObject::tr("Layout"),
                             QObject::tr("Requests per replica / cluster"),
                             QObject::tr("KV per GPU"), QObject::tr("Weights per GPU"),
                             QObject::tr("Headroom per GPU"), QObject::tr("tokens/s per user")})
        h += QStringLiteral("<th>%1</th>").arg(t.toHtmlEscaped());
    h += QStringLiteral("</tr>");
    h += planRowHtml(QObject::tr("%1 (current layout)").arg(qs(s.hardware.gpu.name)),
                     verdict.current, units, false);
    if (verdict.needed)
        for (std::size_t i = 0; i < verdict.needed->layouts.size() && i < 4; ++i)
            h += planRowHtml(qs(s.hardware.gpu.name), verdict.needed->layouts[i], units, i == 0);
    int shown = 0;
    if (others) {
        for (const core::GpuPlan* g : others->bestFirst()) {
            if (g->gpu.id == s.hardware.gpu.id)
                continue;
            if (shown++ >= 5)
                break;
            if (g->fits && !g->layouts.empty())
                h += planRowHtml(qs(g->gpu.name), g->layouts.front(), units, false);
            else
                h += QStringLiteral("<tr><td>%1</td><td colspan=7>%2</td></tr>")
                         .arg(qs(g->gpu.name).toHtmlEscaped(),
                              QObject::tr("does not fit: %1").arg(qs(g->reason)).toHtmlEscaped());
        }
    }
    h += QStringLiteral("</table>");
    return h;
}

QString assumptionsHtml(const LedgerSnapshot& snap, const SpeedCalibration& calibration,
                        core::UnitSystem units) {
    const core::Scenario& s = snap.scenario;
    const core::LedgerResult& r = snap.ledger;
    QStringList items;
    // Reserves, with the numbers.
    if (r.reservesEstimated) {
        const core::Reserves e = core::estimateReserves(s, core::layoutOf(s));
        items << QObject::tr("Reserves per GPU (estimated by KV Ledger from the model, as vLLM's "
                             "profiler would take them; editable): activation peak %1 (%2 B), "
                             "non-torch memory %3, CUDA graphs %4; %5 in all.")
                     .arg(formatBytesQ(r.activationBytes, units), thousandsQ(r.activationBytes),
                          formatBytesQ(e.nonTorch, units), formatBytesQ(e.cudaGraphs, units),
                          formatBytesQ(r.activationBytes + r.overheadBytes, units));
    } else {
        items << QObject::tr("Reserves per GPU (given): activation peak %1 (%2 B), non-torch + "
                             "CUDA graphs %3 (%4 B).")
                     .arg(formatBytesQ(r.activationBytes, units), thousandsQ(r.activationBytes),
                          formatBytesQ(r.overheadBytes, units), thousandsQ(r.overheadBytes));
    }
    // The speed model.
    items << QObject::tr("Speed, an estimate per GPU of a replica: a decode step takes max(bytes "
                         "read / (bandwidth × η_mem), FLOPs / (peak × η_flops)), the PP stages "
                         "one after the other (PP raises latency, not throughput at a fixed "
                         "batch). %1.")
                 .arg(speedAssumptionsLine(s, calibration));
    // max_num_seqs.
    const std::int64_t seqs = core::effectiveMaxNumSeqs(s);
    const QString seqSource = s.engine.maxNumSeqs > 0 ? QObject::tr("set in the scenario")
                                                      : QObject::tr("vLLM's default for this GPU");
    items << (r.maxRequestsAtContext > seqs
                  ? QObject::tr("max_num_seqs %1 (%2) caps each replica at %1 running requests; "
                                "memory holds %3.")
                        .arg(thousandsQ(seqs), seqSource, thousandsQ(r.maxRequestsAtContext))
                  : QObject::tr("max_num_seqs %1 (%2) does not cap: memory holds %3 requests per "
                                "replica.")
                        .arg(thousandsQ(seqs), seqSource, thousandsQ(r.maxRequestsAtContext)));
    items << QObject::tr("max_num_batched_tokens %1 per step.")
                 .arg(thousandsQ(core::effectiveMaxNumBatchedTokens(s)));
    // Quality, from published measurements.
    items << QObject::tr("Quality of the KV formats (published results, not measured here): FP8 "
                         "and INT8 KV are about lossless on GSM8K and MMLU (vLLM docs, Quantized "
                         "KV Cache: FP8 E4M3 \"typically only minimally degrades inference "
                         "accuracy\"); INT4 with grouped scales costs about +0.2-0.3 perplexity "
                         "(KVQuant, arXiv 2401.18079; KIVI, arXiv 2402.02750); INT2 quantized "
                         "per token breaks quality, and only KIVI's per-channel keys with a "
                         "full-precision residual keep 2-bit usable (KIVI, arXiv 2402.02750). "
                         "INT4 and INT2 are not in vLLM.");
    QString h = QStringLiteral("<ul>");
    for (const QString& i : items)
        h += QStringLiteral("<li>%1</li>").arg(i.toHtmlEscaped());
    return h + QStringLiteral("</ul>");
}

namespace {
QString speedDataHtml(const PredictedSpeedChart& chart) {
    // The current scenario's curve at about eight concurrencies, one column each.
    const auto& series = chart.series();
    if (series.empty())
        return QStringLiteral("<p>%1</p>").arg(chart.emptyText().toHtmlEscaped());
    const PredictedSpeedChart::Series& cur = series.back();
    const std::size_t n = cur.curve.x.size();
    const std::size_t stride = std::max<std::size_t>(1, (n + 7) / 8);
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < n; ++i)
        if (i % stride == 0 || i + 1 == n)
            at.push_back(i);
    QString rows[4] = {QObject::tr("Requests per replica"), QObject::tr("ms / step"),
                       QObject::tr("tokens/s per user"), QObject::tr("tokens/s, cluster")};
    QString h = QStringLiteral("<table cellspacing=0 cellpadding=2 border=1>");
    for (int r = 0; r < 4; ++r) {
        h += QStringLiteral("<tr><th align=left>%1</th>").arg(rows[r].toHtmlEscaped());
        for (const std::size_t i : at) {
            const QString v = r == 0   ? thousandsQ(cur.curve.x[i])
                              : r == 1 ? QString::number(cur.curve.stepMs[i], 'f', 2)
                              : r == 2
                                  ? QString::number(cur.curve.tokensPerSecondPerUser[i], 'f', 1)
                                  : thousandsQ(static_cast<std::int64_t>(
                                        std::llround(cur.curve.clusterTokensPerSecond[i])));
            h += QStringLiteral("<td align=right>%1</td>").arg(v);
        }
        h += QStringLiteral("</tr>");
    }
    return h + QStringLiteral("</table>");
}

QString plainText(const QString& html) {
    QTextDocument doc;
    doc.setHtml(html);
    return doc.toPlainText();
}
} // namespace

namespace {
// The page every report is laid out on: A4 portrait, 12 mm margins, 96 dpi.
QPageLayout reportPageLayout() {
    return QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Portrait, QMarginsF(12, 12, 12, 12),
                       QPageLayout::Millimeter);
}
} // namespace

QString trafficHtml(const TrafficResult& t) {
    auto rate = [](double r) { return QString::number(r, 'f', r < 10 ? 2 : r < 100 ? 1 : 0); };
    const TrafficInputs& in = t.inputs;
    QString html =
        QStringLiteral("<p>%1</p>")
            .arg(QObject::tr("Requests arriving at a rate, served by one replica of the scenario "
                             "and each of its lever-ladder steps through a simulation of vLLM "
                             "v1's scheduler. Prompt %1 tokens, output %2, shared prefix %3 "
                             "tokens for %4% of requests; SLO: TTFT ≤ %5 ms and TPOT ≤ %6 ms "
                             "for %7% of requests. %8. These are simulations, not measurements.")
                     .arg(qs(in.prompt), qs(in.output), thousandsQ(in.prefixTokens))
                     .arg(in.prefixShare * 100, 0, 'g', 3)
                     .arg(in.sloTtftMs, 0, 'g', 6)
                     .arg(in.sloTpotMs, 0, 'g', 6)
                     .arg(in.attainment * 100, 0, 'g', 3)
                     .arg(qs(trafficAssumptions(in)))
                     .toHtmlEscaped());
    if (!t.error.empty())
        return html + QStringLiteral("<p>%1</p>")
                          .arg(QObject::tr("Not simulated: %1").arg(qs(t.error)).toHtmlEscaped());
    html += QStringLiteral("<table border=\"1\" cellspacing=\"0\" cellpadding=\"3\"><tr><th>%1</th>"
                           "<th>%2</th><th>%3</th></tr>")
                .arg(QObject::tr("Ladder step"), QObject::tr("Sustainable req/s per replica"),
                     QObject::tr("Note"));
    for (const TrafficStep& st : t.steps)
        html += QStringLiteral("<tr><td>%1</td><td align=\"right\">%2</td><td>%3</td></tr>")
                    .arg((st.current ? QObject::tr("%1 (current)").arg(qs(st.label)) : qs(st.label))
                             .toHtmlEscaped(),
                         st.found ? rate(st.sustainableRate) : QObject::tr("none"),
                         qs(st.note).toHtmlEscaped());
    html += QStringLiteral("</table>");
    if (t.currentRate > 0 && t.current.error.empty())
        html += QStringLiteral("<p>%1</p>")
                    .arg(QObject::tr("At %1 req/s per replica the scenario's p99 TTFT is %2 ms and "
                                     "p99 TPOT %3 ms; %4 preemptions.")
                             .arg(rate(t.currentRate))
                             .arg(t.current.ttftMs.p99, 0, 'f', 0)
                             .arg(t.current.tpotMs.p99, 0, 'f', 1)
                             .arg(t.current.preemptions)
                             .toHtmlEscaped());
    return html;
}

namespace {
// Lays the review report out on a painter already begun on the first page, section after
// section, turning the page (turnPage) where the next piece would not fit: the running height
// and the outline are what the sections share.
class ReportPainter {
public:
    ReportPainter(const ReportInputs& in, QCPPainter& p, double w, double h,
                  const std::function<void()>& turnPage, ReportOutline& out)
        : m_in(in), m_snap(*in.snapshot), m_p(p), m_w(w), m_h(h), m_turnPage(turnPage), m_out(out) {
    }

    void paint() {
        m_p.setMode(QCPPainter::pmVectorized);
        m_out.pages = 1;
        const ReviewVerdict verdict = reviewVerdict(m_snap);
        paintOverview(verdict);
        paintLadderAndCommand();
        paintPlanAndAssumptions(verdict);
        paintTraffic();
        paintEngines();
        paintMeasured();
    }

private:
    void newPage() {
        m_turnPage();
        ++m_out.pages;
        m_y = 0;
    }
    // A section starts here: the outline lists it with its page.
    void mark(const QString& title) {
        m_out.sections << title;
        m_out.sectionPages << m_out.pages;
    }
    void html(const QString& text, double pointSize = 8.5) {
        const double h = htmlHeight(m_p, text, m_w, pointSize);
        if (m_y > 0 && m_y + h > m_h)
            newPage();
        drawHtml(m_p, text, QRectF(0, m_y, m_w, h), pointSize);
        m_y += h + 6;
        m_out.text += plainText(text) + QLatin1Char('\n');
    }
    void section(const QString& title, const QString& body, double pointSize = 8.5) {
        const QString text = QStringLiteral("<h3>%1</h3>").arg(title.toHtmlEscaped()) + body;
        if (m_y > 0 && m_y + htmlHeight(m_p, text, m_w, pointSize) > m_h)
            newPage();
        mark(title);
        html(text, pointSize);
    }
    void drawChart(ChartWidget* chart, double height) {
        if (m_y > 0 && m_y + height > m_h)
            newPage();
        height = std::min(height, m_h - m_y);
        chart->setPrintColors(true);
        m_p.save();
        m_p.translate(0, m_y);
        chart->render(&m_p, static_cast<int>(m_w), static_cast<int>(height));
        m_p.restore();
        chart->setPrintColors(false);
        m_out.charts << chart->objectName();
        m_y += height + 8;
    }

    void paintOverview(const ReviewVerdict& verdict);
    void paintLadderAndCommand();
    void paintPlanAndAssumptions(const ReviewVerdict& verdict);
    void paintTraffic();
    void paintEngines();
    void paintMeasured();

    const ReportInputs& m_in;
    const LedgerSnapshot& m_snap;
    QCPPainter& m_p;
    const double m_w, m_h; // the page's printable width and height
    const std::function<void()>& m_turnPage;
    ReportOutline& m_out;
    double m_y = 0;
    QFont m_body; // the body text's font, set again after a page of charts
};

// Page 1: title, the verdict, the scenario, memory and concurrency charts.
void ReportPainter::paintOverview(const ReviewVerdict& verdict) {
    QFont title = m_p.font();
    title.setPointSizeF(15);
    title.setBold(true);
    m_p.setFont(title);
    m_p.setPen(Qt::black);
    const QString heading =
        QObject::tr("KV Ledger review: %1 on %2")
            .arg(qs(m_snap.scenario.model.name), qs(m_snap.scenario.hardware.gpu.name));
    m_p.drawText(QRectF(0, m_y, m_w, 28), Qt::AlignLeft | Qt::AlignVCenter, heading);
    m_out.text += heading + QLatin1Char('\n');
    m_y += 30;
    m_body = m_p.font();
    m_body.setPointSizeF(8.5);
    m_body.setBold(false);
    m_p.setFont(m_body);
    mark(QObject::tr("Verdict"));
    html(QStringLiteral("<p><b>%1</b></p>").arg(verdict.text.toHtmlEscaped()), 11);
    html(QStringLiteral("<p><i>%1</i><br>%2</p>")
             .arg(scopedSummaryLine(m_snap, m_in.units, m_in.scope).toHtmlEscaped(),
                  QDateTime::currentDateTime().toString(Qt::ISODate)));
    QString scen = scenarioHtml(m_snap, m_in.units, m_in.scope);
    if (m_in.reference)
        scen +=
            QStringLiteral("<p><b>%1</b> %2</p>")
                .arg(QObject::tr("Pinned reference (dashed):"),
                     scopedSummaryLine(*m_in.reference, m_in.units, m_in.scope).toHtmlEscaped());
    section(QObject::tr("Scenario"), scen);
    const double chartH = std::max(220.0, (m_h - m_y - 8) / 2 - 8);
    drawChart(m_in.memoryChart, chartH);
    drawChart(m_in.concurrencyChart, chartH);
}

// Page 2: breakdown, ladder table, vLLM command.
void ReportPainter::paintLadderAndCommand() {
    newPage();
    drawChart(m_in.breakdownChart, 300);
    section(QObject::tr("Lever ladder"), m_in.ladder->html());
    if (m_snap.engine) {
        // SGLang, TensorRT-LLM, llama.cpp: that engine's launch command and startup lines.
        QString text =
            qs(m_snap.engine->formatOffered ? m_snap.engine->command : m_snap.engine->error);
        for (const auto& line : m_snap.engine->logLines)
            text += QStringLiteral("\n#   ") + qs(line);
        section(QObject::tr("%1 command").arg(qs(core::engineDisplayName(m_snap.engine->engine))),
                QStringLiteral("<pre style=\"white-space: pre-wrap\">%1</pre>")
                    .arg(text.toHtmlEscaped()));
    } else {
        section(QObject::tr("vLLM command"),
                QStringLiteral("<pre style=\"white-space: pre-wrap\">%1</pre>")
                    .arg(vllmCommand(m_snap.scenario).text().toHtmlEscaped()));
    }
}

// Page 3: the deployment plan, the Speed chart with its data, the assumptions.
void ReportPainter::paintPlanAndAssumptions(const ReviewVerdict& verdict) {
    newPage();
    std::shared_ptr<const core::PlanResult> others = m_in.plan;
    const std::int64_t planUsers = std::max<std::int64_t>(1, verdict.users);
    if (!others || m_in.planUsers != planUsers) {
        // Every catalog kind in one go: tens of milliseconds (the planner's benchmark).
        core::PlanRequest req;
        req.base = m_snap.scenario;
        req.users = planUsers;
        req.context = m_snap.scenario.workload.context;
        req.gpus = io::builtinGpus();
        others = std::make_shared<const core::PlanResult>(core::planDeployments(req));
    }
    section(QObject::tr("Deployment plan"),
            QStringLiteral("<p>%1</p>")
                    .arg(QObject::tr("%1 users × %2 tokens: the current layout, the fewest %3 "
                                     "that hold them (best first), and the best of other GPU "
                                     "kinds. Memory per GPU; requests per replica and cluster.")
                             .arg(thousandsQ(planUsers),
                                  formatTokensQ(m_snap.scenario.workload.context),
                                  qs(m_snap.scenario.hardware.gpu.name))
                             .toHtmlEscaped()) +
                planTableHtml(m_snap, verdict, others.get(), m_in.units),
            7);
    if (m_in.predictedSpeedChart) {
        mark(QObject::tr("Speed"));
        drawChart(m_in.predictedSpeedChart, 380);
        html(speedDataHtml(*m_in.predictedSpeedChart), 7.5);
    }
    section(QObject::tr("Assumptions"), assumptionsHtml(m_snap, m_in.calibration, m_in.units), 7.5);
}

// Then: the traffic simulation, labelled as one, with its assumptions.
void ReportPainter::paintTraffic() {
    if (!m_in.traffic || !m_in.trafficTtftChart || !m_in.trafficTpotChart ||
        !m_in.trafficTimelineChart)
        return;
    newPage();
    m_p.setFont(m_body);
    section(QObject::tr("Traffic (simulated)"), trafficHtml(*m_in.traffic), 7.5);
    // The three charts share what is left of the page, so the simulation stays on one.
    const double h3 = std::max(170.0, (m_h - m_y - 8) / 3 - 8);
    drawChart(m_in.trafficTtftChart, h3);
    drawChart(m_in.trafficTpotChart, h3);
    drawChart(m_in.trafficTimelineChart, h3);
}

// The engines side by side: each engine's own rules for the same model, GPU and workload.
void ReportPainter::paintEngines() {
    if (!m_in.enginesChart || !m_in.engines || m_in.engines->rowCount() <= 0)
        return;
    newPage();
    mark(QObject::tr("Engines side by side"));
    html(QStringLiteral("<h3>%1</h3><p>%2</p>")
             .arg(QObject::tr("Engines side by side").toHtmlEscaped(),
                  QObject::tr("The requests of %1 tokens vLLM, SGLang, TensorRT-LLM and "
                              "llama.cpp each run at once %2, each with its own rules and "
                              "defaults, per lever step. \"Not offered\": the engine has no "
                              "KV cache of that format.")
                      .arg(thousandsQ(m_snap.scenario.workload.context),
                           enginesRequestsScope(m_in.engines->comparison()->scope))
                      .toHtmlEscaped()));
    drawChart(m_in.enginesChart, 340);
    html(m_in.engines->html(), 7.5);
}

// Then: measured beside predicted (the probe's table, quality and speed charts).
void ReportPainter::paintMeasured() {
    if (!m_in.probe || m_in.probe->isEmpty())
        return;
    newPage();
    m_p.setFont(m_body);
    mark(QObject::tr("Measured"));
    html(QStringLiteral("<h2>%1</h2>")
             .arg(QObject::tr("Measured: %1").arg(m_in.probeSource).toHtmlEscaped()));
    const QString caveat = cacheCaveat(m_in.probe->report());
    html(QStringLiteral("<p>%1</p>")
                 .arg(QObject::tr("One layer of the probed model; predicted = core's pool "
                                  "bytes for the same batch, and core's speed model for the "
                                  "same step on the backend that ran; speed is one decode "
                                  "step of the batch (median); error is the attention output "
                                  "against FP64 on the unquantized K/V.")
                          .toHtmlEscaped()) +
             (caveat.isEmpty() ? QString()
                               : QStringLiteral("<p><b>%1</b></p>").arg(caveat.toHtmlEscaped())) +
             m_in.probe->html(),
         7);
    const double h2 = std::max(200.0, (m_h - m_y - 8) / 2 - 8);
    if (m_in.qualityChart)
        drawChart(m_in.qualityChart, h2);
    if (m_in.speedChart)
        drawChart(m_in.speedChart, h2);
}
} // namespace

// Lays the report out on `p` (already begun on the first page), `turnPage` turning the page.
static void paintReport(const ReportInputs& in, QCPPainter& p, double W, double H,
                        const std::function<void()>& turnPage, ReportOutline& out) {
    ReportPainter(in, p, W, H, turnPage, out).paint();
}

bool writeReviewReport(const QString& path, const ReportInputs& in, QString* error,
                       ReportOutline* outline) {
    if (!in.snapshot || !in.memoryChart || !in.concurrencyChart || !in.breakdownChart ||
        !in.ladder) {
        if (error)
            *error = QObject::tr("Nothing to report");
        return false;
    }
    ReportOutline local;
    ReportOutline& out = outline ? *outline : local;
    out = ReportOutline{};
    // Rendered into memory and written with writeFileAtomically: a failed render or a full
    // disk leaves the previous report as it was.
    QBuffer buffer;
    buffer.open(QIODevice::WriteOnly);
    QPdfWriter writer(&buffer);
    writer.setResolution(96);
    writer.setCreator(QStringLiteral("KV Ledger"));
    writer.setTitle(QObject::tr("KV Ledger review - %1").arg(qs(in.snapshot->scenario.model.name)));
    writer.setPageLayout(reportPageLayout());
    QCPPainter p;
    if (!p.begin(&writer)) {
        if (error)
            *error = QObject::tr("Could not render %1").arg(QDir::toNativeSeparators(path));
        return false;
    }
    const QRect page = writer.pageLayout().paintRectPixels(writer.resolution());
    paintReport(
        in, p, page.width(), page.height(), [&] { writer.newPage(); }, out);
    p.end();
    const auto written = writeFileAtomically(path, buffer.data(), FileKind::Pdf);
    if (!written && error)
        *error = qs(written.error().message);
    return written.ok();
}

QList<QImage> renderReviewReportPages(const ReportInputs& in, double scale,
                                      ReportOutline* outline) {
    QList<QImage> pages;
    if (!in.snapshot || !in.memoryChart || !in.concurrencyChart || !in.breakdownChart || !in.ladder)
        return pages;
    ReportOutline local;
    ReportOutline& out = outline ? *outline : local;
    out = ReportOutline{};
    const QRect rect = reportPageLayout().paintRectPixels(96);
    auto blank = [&] {
        QImage img(QSize(rect.width(), rect.height()) * scale, QImage::Format_ARGB32_Premultiplied);
        img.setDevicePixelRatio(scale);
        img.fill(Qt::white);
        return img;
    };
    pages << blank();
    QCPPainter p;
    if (!p.begin(&pages.last()))
        return {};
    paintReport(
        in, p, rect.width(), rect.height(),
        [&] {
            p.end();
            pages << blank();
            p.begin(&pages.last());
        },
        out);
    p.end();
    return pages;
}

} // namespace kvl::widgets
