#include "report.h"

#include "atomic_write.h"
#include "chart_widget.h"
#include "ladder_model.h"
#include "probe_results_model.h"
#include "vllm_command.h"

#include "core/kv_format.h"

#include <qcustomplot.h>

#include <QBuffer>
#include <QDateTime>
#include <QDir>
#include <QPageLayout>
#include <QPageSize>
#include <QPdfWriter>
#include <QTextDocument>

namespace kvl::widgets {

namespace {
QString attentionText(const core::Scenario& s, const core::LedgerResult& r) {
    if (!s.levers.attention.enabled)
        return QObject::tr("off (native %1)").arg(qs(r.kv.attentionLabel));
    return qs(r.kv.attentionLabel);
}

void drawHtml(QPainter& p, const QString& html, const QRectF& rect, double pointSize = 8.5) {
    QTextDocument doc;
    QFont f = p.font();
    f.setPointSizeF(pointSize);
    doc.setDefaultFont(f);
    doc.setDocumentMargin(0);
    doc.setHtml(html);
    doc.setTextWidth(rect.width());
    p.save();
    p.translate(rect.topLeft());
    doc.drawContents(&p, QRectF(0, 0, rect.width(), rect.height()));
    p.restore();
}

double htmlHeight(const QPainter& p, const QString& html, double width, double pointSize = 8.5) {
    QTextDocument doc;
    QFont f = p.font();
    f.setPointSizeF(pointSize);
    doc.setDefaultFont(f);
    doc.setDocumentMargin(0);
    doc.setHtml(html);
    doc.setTextWidth(width);
    return doc.size().height();
}
} // namespace

QString scenarioHtml(const LedgerSnapshot& snap, core::UnitSystem units) {
    const core::Scenario& s = snap.scenario;
    const core::LedgerResult& r = snap.ledger;
    auto row = [](const QString& k, const QString& v) {
        return QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>")
            .arg(k.toHtmlEscaped(), v.toHtmlEscaped());
    };
    QString h = QStringLiteral("<table cellspacing=0 cellpadding=2>");
    h += row(QObject::tr("Model"),
             qs(s.model.name) + QStringLiteral(" - ") + qs(s.model.geometrySummary()));
    h += row(QObject::tr("GPU"), QStringLiteral("%1 x %2, utilization %3")
                                     .arg(s.hardware.gpuCount)
                                     .arg(qs(s.hardware.gpu.name))
                                     .arg(s.hardware.memoryUtilization, 0, 'f', 2));
    h += row(QObject::tr("1 Attention"), attentionText(s, r));
    h += row(QObject::tr("2 KV format"),
             s.levers.quant.enabled
                 ? qs(core::formatLabel(r.kv.format))
                 : QObject::tr("off (%1)").arg(qs(core::formatLabel(r.kv.format))));
    h += row(QObject::tr("3 Paging"),
             s.levers.paging.enabled
                 ? QObject::tr("blocks of %1 tokens").arg(s.levers.paging.blockSize)
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
    h += row(QObject::tr("KV per token"),
             QObject::tr("%1 (%2 B), per GPU %3 B")
                 .arg(formatBytesQ(r.kvBytesPerToken, units), thousandsQ(r.kvBytesPerToken),
                      thousandsQ(r.kvBytesPerTokenPerGpu)));
    h += row(QObject::tr("KV per request"),
             QObject::tr("%1 (%2 B)")
                 .arg(formatBytesQ(r.kvBytesPerRequest, units), thousandsQ(r.kvBytesPerRequest)));
    h +=
        row(QObject::tr("Memory for KV"),
            QObject::tr("%1 per GPU = %2 requested - weights %3 - activations %4 - overhead %5")
                .arg(formatBytesQ(r.availableKvBytes, units), formatBytesQ(r.requestedBytes, units),
                     formatBytesQ(r.weightsBytesPerGpu, units),
                     formatBytesQ(r.activationBytes, units), formatBytesQ(r.overheadBytes, units)));
    if (r.blockSize > 0)
        h += row(QObject::tr("vLLM figures"),
                 QObject::tr("%1 GPU blocks, KV cache %2 tokens, max concurrency %3x at %4 tokens")
                     .arg(thousandsQ(r.numGpuBlocks), thousandsQ(r.gpuKvCacheTokens))
                     .arg(r.maxConcurrency, 0, 'f', 2)
                     .arg(thousandsQ(r.maxModelLen)));
    h += row(QObject::tr("Requests at context"), thousandsQ(r.maxRequestsAtContext));
    for (const auto& w : r.warnings)
        h += row(QObject::tr("Warning"), qs(w));
    if (!r.error.empty())
        h += row(QObject::tr("Error"), qs(r.error));
    h += QStringLiteral("</table>");
    return h;
}

bool writeReviewReport(const QString& path, const ReportInputs& in, QString* error) {
    if (!in.snapshot || !in.memoryChart || !in.concurrencyChart || !in.breakdownChart ||
        !in.ladder) {
        if (error)
            *error = QObject::tr("Nothing to report");
        return false;
    }
    // Rendered into memory and written with writeFileAtomically: a failed render or a full
    // disk leaves the previous report as it was.
    QBuffer buffer;
    buffer.open(QIODevice::WriteOnly);
    QPdfWriter writer(&buffer);
    writer.setResolution(96);
    writer.setCreator(QStringLiteral("KV Ledger"));
    writer.setTitle(QObject::tr("KV Ledger review - %1").arg(qs(in.snapshot->scenario.model.name)));
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Portrait,
                                     QMarginsF(12, 12, 12, 12), QPageLayout::Millimeter));
    QCPPainter p;
    if (!p.begin(&writer)) {
        if (error)
            *error = QObject::tr("Could not render %1").arg(QDir::toNativeSeparators(path));
        return false;
    }
    p.setMode(QCPPainter::pmVectorized);
    const QRect page = writer.pageLayout().paintRectPixels(writer.resolution());
    const double W = page.width();
    const double H = page.height();
    double y = 0;

    // Page 1: title, scenario, memory and concurrency charts.
    QFont title = p.font();
    title.setPointSizeF(15);
    title.setBold(true);
    p.setFont(title);
    p.setPen(Qt::black);
    p.drawText(QRectF(0, y, W, 28), Qt::AlignLeft | Qt::AlignVCenter,
               QObject::tr("KV Ledger review: %1 on %2")
                   .arg(qs(in.snapshot->scenario.model.name),
                        qs(in.snapshot->scenario.hardware.gpu.name)));
    y += 30;
    QFont body = p.font();
    body.setPointSizeF(8.5);
    body.setBold(false);
    p.setFont(body);
    const QString summary = QStringLiteral("<p><i>%1</i><br>%2</p>")
                                .arg(summaryLine(*in.snapshot, in.units).toHtmlEscaped(),
                                     QDateTime::currentDateTime().toString(Qt::ISODate));
    double hsum = htmlHeight(p, summary, W);
    drawHtml(p, summary, QRectF(0, y, W, hsum));
    y += hsum + 4;
    QString scen = scenarioHtml(*in.snapshot, in.units);
    if (in.reference)
        scen += QStringLiteral("<p><b>%1</b> %2</p>")
                    .arg(QObject::tr("Pinned reference (dashed):"),
                         summaryLine(*in.reference, in.units).toHtmlEscaped());
    const double hs = htmlHeight(p, scen, W);
    drawHtml(p, scen, QRectF(0, y, W, hs));
    y += hs + 8;

    auto drawChart = [&](ChartWidget* chart, double top, double height) {
        chart->setPrintColors(true);
        p.save();
        p.translate(0, top);
        chart->render(&p, static_cast<int>(W), static_cast<int>(height));
        p.restore();
        chart->setPrintColors(false);
    };
    const double chartH = std::max(220.0, (H - y - 8) / 2);
    drawChart(in.memoryChart, y, chartH);
    y += chartH + 8;
    drawChart(in.concurrencyChart, y, std::min(chartH, H - y));

    // Page 2: breakdown, ladder table, vLLM command.
    writer.newPage();
    y = 0;
    drawChart(in.breakdownChart, y, 300);
    y += 310;
    const QString ladder =
        QStringLiteral("<h3>%1</h3>").arg(QObject::tr("Lever ladder")) + in.ladder->html();
    const double hl = htmlHeight(p, ladder, W);
    drawHtml(p, ladder, QRectF(0, y, W, hl));
    y += hl + 12;
    const QString cmd = QStringLiteral("<h3>%1</h3><pre style=\"white-space: pre-wrap\">%2</pre>")
                            .arg(QObject::tr("vLLM command"),
                                 vllmCommand(in.snapshot->scenario).text().toHtmlEscaped());
    const double hc = htmlHeight(p, cmd, W);
    drawHtml(p, cmd, QRectF(0, y, W, hc));

    // Page 3: measured beside predicted (the probe's table, quality and speed charts).
    if (in.probe && !in.probe->isEmpty()) {
        writer.newPage();
        y = 0;
        p.setFont(body);
        const QString heading =
            QStringLiteral("<h2>%1</h2>")
                .arg(QObject::tr("Measured: %1").arg(in.probeSource).toHtmlEscaped());
        const double hh = htmlHeight(p, heading, W);
        drawHtml(p, heading, QRectF(0, y, W, hh));
        y += hh + 4;
        const QString table =
            QStringLiteral("<p>%1</p>")
                .arg(QObject::tr("One layer of the probed model; predicted = core's pool bytes "
                                 "for the same batch; speed is one decode step of the batch "
                                 "(median); error is the attention output against FP64 on the "
                                 "unquantized K/V.")
                         .toHtmlEscaped()) +
            in.probe->html();
        const double ht = htmlHeight(p, table, W, 7);
        drawHtml(p, table, QRectF(0, y, W, ht), 7);
        y += ht + 10;
        const double h2 = std::max(200.0, (H - y - 8) / 2);
        if (in.qualityChart) {
            drawChart(in.qualityChart, y, std::min(h2, H - y));
            y += h2 + 8;
        }
        if (in.speedChart && y < H - 120)
            drawChart(in.speedChart, y, std::min(h2, H - y));
    }
    p.end();
    const auto written = writeFileAtomically(path, buffer.data(), FileKind::Pdf);
    if (!written && error)
        *error = qs(written.error().message);
    return written.ok();
}

} // namespace kvl::widgets
