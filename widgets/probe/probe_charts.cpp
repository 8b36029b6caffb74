#include "widgets/probe/probe_charts.h"

#include "widgets/charts/axis_tickers_p.h"
#include "widgets/charts/chart_text_p.h"
#include "widgets/charts/text_width.h"
#include "widgets/export/csv.h"
#include "widgets/probe/probe_overlay.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kvl::widgets {

namespace {

constexpr double kErrorFloor = 1e-9; // an exact (0) error still gets a place on the log axis

QSharedPointer<QCPAxisTickerLog> plainLogTicker() {
    QSharedPointer<QCPAxisTickerLog> t(new QCPAxisTickerLog);
    t->setLogBase(10);
    t->setSubTickCount(8);
    return t;
}

// A graph in the colour and marker every probe chart gives the KV format `colorIndex`: its
// line 1.5 px, its marker `size` px, outlined `outline` px and filled with `fill` (the
// format's colour when invalid).
QCPGraph* addFormatGraph(QCustomPlot* p, const QString& name, int colorIndex, bool dark,
                         double outline, const QColor& fill, double size) {
    QCPGraph* g = p->addGraph();
    g->setName(name);
    const QColor col = formatColor(colorIndex, dark);
    g->setPen(QPen(col, 1.5));
    g->setScatterStyle(
        QCPScatterStyle(static_cast<QCPScatterStyle::ScatterShape>(formatMarker(colorIndex)),
                        QPen(col, outline), QBrush(fill.isValid() ? fill : col), size));
    return g;
}
} // namespace

ProbeChart::ProbeChart(QWidget* parent) : ChartWidget(parent) {
    QCustomPlot* p = plot();
    // Two of these share the probe tab beside its controls: the window must still fit 1200 px.
    p->setMinimumSize(240, 200);
    p->xAxis->setScaleType(QCPAxis::stLogarithmic);
    p->yAxis->setScaleType(QCPAxis::stLogarithmic);
    p->yAxis->setNumberFormat(QStringLiteral("eb"));
    p->yAxis->setNumberPrecision(0);
    p->xAxis->grid()->setSubGridVisible(false);
    p->yAxis->grid()->setSubGridVisible(true);
    p->legend->setVisible(true);
    QFont legendFont = font();
    legendFont.setPointSizeF(legendFont.pointSizeF() * 0.85);
    p->legend->setFont(legendFont);
    p->legend->setRowSpacing(-2);
    // The legend goes under the plot (rows: title, plot, legend): it never hides a point or
    // its label.
    placeLegendInRow(p, 2);
    m_empty = new QCPItemText(p);
    m_empty->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_empty->position->setCoords(0.5, 0.5);
    m_empty->setPositionAlignment(Qt::AlignCenter);
    m_emptyText = tr("No measurements yet: press Run in the probe panel, or open a results "
                     "file from a GPU machine (File > Open Probe Results...)");
    m_empty->setText(m_emptyText);
}

void ProbeChart::setReport(const probe::ProbeReport& report) {
    m_report = report;
    rebuild();
}

void ProbeChart::setView(const LedgerView& view) {
    if (!view.snapshot)
        return;
    const LedgerSnapshot& snap = *view.snapshot;
    // Called on every slider move: redraw only when what this chart shows of the scenario (the
    // model's layers, the current format's bytes per token) changed.
    const bool same = m_snapshot && m_snapshot->scenario.model.id == snap.scenario.model.id &&
                      m_snapshot->scenario.model.numLayers() == snap.scenario.model.numLayers() &&
                      m_snapshot->ledger.kvBytesPerToken == snap.ledger.kvBytesPerToken &&
                      m_snapshot->ledger.kv.format == snap.ledger.kv.format;
    m_snapshot = view.snapshot;
    if (view.units != units())
        setUnits(view.units); // rebuilds
    else if (!same)
        rebuild();
}

void ProbeChart::applyColors() {
    styleAxes();
    m_empty->setColor(colors().foreground);
    rebuild();
}

void ProbeChart::unitsChanged() {
    if (auto t = plot()->xAxis->ticker().dynamicCast<ByteLogTicker>())
        t->setUnits(units());
    rebuild();
}

void ProbeChart::setEmptyText(const QString& text) {
    m_empty->setVisible(!text.isEmpty());
    m_emptyText = text;
    wrapEmptyText();
}

void ProbeChart::wrapEmptyText() {
    if (m_emptyText.isEmpty())
        return;
    // Wrapped to fit inside the plot, clear of the axes' tick labels, at any chart width (at
    // 1600 x 1000 the Measured tab's charts are narrower than the sentence).
    const int width = std::max(120, std::min(plotAreaRect().width(), this->width() - 110) - 16);
    m_empty->setText(wrapToWidth(m_emptyText.simplified(), m_empty->font(), width));
}

void ProbeChart::resizeEvent(QResizeEvent* event) {
    ChartWidget::resizeEvent(event);
    wrapEmptyText();
}

void ProbeChart::clearLabels() {
    for (QCPItemText* t : m_labels)
        plot()->removeItem(t);
    m_labels.clear();
}

void ProbeChart::addPointLabel(double x, double y, const QString& text, const QColor& color) {
    auto* t = new QCPItemText(plot());
    t->position->setCoords(x, y);
    t->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    t->setPadding(QMargins(6, 0, 0, 2));
    t->setText(text);
    t->setColor(color);
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * 0.85);
    t->setFont(f);
    t->setClipToAxisRect(true);
    m_labels.push_back(t);
}

// ------------------------------------------------------------------------------------------

QualityChart::QualityChart(QWidget* parent) : ProbeChart(parent) {
    QCustomPlot* p = plot();
    setTitle(tr("Quality vs memory: attention error vs KV bytes per token"));
    p->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new ByteLogTicker(units())));
    p->yAxis->setTicker(plainLogTicker());
    p->xAxis->setLabel(tr("KV bytes per token, whole model (log)"));
    p->yAxis->setLabel(tr("Attention rel. L2 error vs FP64 (log)"));
    m_current = new QCPItemStraightLine(p);
    m_currentLabel = new QCPItemText(p);
    m_currentLabel->position->setTypeX(QCPItemPosition::ptPlotCoords);
    m_currentLabel->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_currentLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    m_currentLabel->setRotation(-90);
    applyColors();
}

std::vector<QualityChart::Point> QualityChart::points() const {
    std::map<std::string, Point> best;
    std::vector<std::string> order;
    const core::ModelSpec model = m_snapshot ? m_snapshot->scenario.model : core::ModelSpec{};
    for (const auto& r : m_report.rows) {
        if (!r.ok() || !r.qualityMeasured || !std::isfinite(r.relL2) || r.blockSize <= 0)
            continue;
        auto it = best.find(r.formatId);
        if (it != best.end() && it->second.context >= r.context)
            continue;
        Point pt;
        pt.formatId = r.formatId;
        pt.label = QString::fromStdString(r.formatLabel);
        pt.layers = probedLayers(r, model);
        pt.bytesPerTokenPerLayer = double(r.pageBytes) / double(r.blockSize);
        pt.bytesPerToken = pt.bytesPerTokenPerLayer * pt.layers;
        pt.context = r.context;
        pt.relL2 = r.relL2;
        pt.top8 = r.top8;
        pt.colorIndex = formatColorIndex(r.formatId);
        if (it == best.end())
            order.push_back(r.formatId);
        best[r.formatId] = pt;
    }
    std::vector<Point> out;
    for (const auto& id : order)
        out.push_back(best[id]);
    std::sort(out.begin(), out.end(),
              [](const Point& a, const Point& b) { return a.bytesPerToken > b.bytesPerToken; });
    return out;
}

void QualityChart::rebuild() {
    QCustomPlot* p = plot();
    const ChartColors& c = colors();
    m_points = points();
    p->clearGraphs();
    clearLabels();
    double xlo = 1e300, xhi = 0, ylo = 1e300, yhi = 0;
    for (const Point& pt : m_points) {
        QCPGraph* g = addFormatGraph(p, pt.label, pt.colorIndex, c.dark, 2, QColor(), 10);
        const QColor col = g->pen().color();
        g->setLineStyle(QCPGraph::lsNone);
        const double y = std::max(pt.relL2, kErrorFloor);
        g->setData(QVector<double>{pt.bytesPerToken}, QVector<double>{y}, true);
        addPointLabel(pt.bytesPerToken, y, pt.label, col);
        xlo = std::min(xlo, pt.bytesPerToken);
        xhi = std::max(xhi, pt.bytesPerToken);
        ylo = std::min(ylo, y);
        yhi = std::max(yhi, y);
    }
    m_hasData = !m_points.empty();
    double current = 0;
    if (m_snapshot && m_snapshot->ledger.kvBytesPerToken > 0)
        current = double(m_snapshot->ledger.kvBytesPerToken);
    if (!m_hasData) {
        setEmptyText(tr("No quality measurements yet: press Run in the probe panel,\nor open a "
                        "results file from a GPU machine (File > Open Probe Results...)"));
        xlo = current > 0 ? current / 8 : 1024;
        xhi = current > 0 ? current * 4 : 1 << 20;
        ylo = 1e-6;
        yhi = 1;
    } else {
        setEmptyText({});
        if (current > 0) {
            xlo = std::min(xlo, current);
            xhi = std::max(xhi, current);
        }
    }
    p->xAxis->setRange(xlo / 1.8, xhi * 2.5); // room for the labels right of the points
    const double ys = std::max(6.0, std::sqrt(100.0 * ylo / yhi));
    p->yAxis->setRange(ylo / ys, yhi * ys);
    m_current->setVisible(current > 0);
    // The scenario's label names the marker among measured points; with none, the "no
    // measurements" text takes the plot's middle and the label would cross it at 1366 x 768.
    m_currentLabel->setVisible(current > 0 && m_hasData);
    m_current->setPen(QPen(c.cursor, 1, Qt::DashLine));
    m_current->point1->setCoords(current, 1);
    m_current->point2->setCoords(current, 2);
    m_currentLabel->setColor(c.cursor);
    m_currentLabel->position->setCoords(current, 0.98);
    m_currentLabel->setPadding(QMargins(0, 0, 0, 3));
    if (m_snapshot)
        m_currentLabel->setText(
            tr("scenario: %1").arg(qs(core::shortLabel(m_snapshot->ledger.kv.format))));
    requestReplot();
}

QString QualityChart::describePoint(const QCPGraph* graph, int) const {
    for (int i = 0; i < plot()->graphCount() && i < int(m_points.size()); ++i) {
        if (plot()->graph(i) != graph)
            continue;
        const Point& pt = m_points[std::size_t(i)];
        return tr("%1 at %2 tokens\nKV %3 per token (%4 B per layer x %5 layers)\nattention rel. "
                  "L2 error %6, top-8 agreement %7")
            .arg(pt.label, formatTokensQ(pt.context), formatBytesQ(pt.bytesPerToken, units()),
                 QString::number(pt.bytesPerTokenPerLayer, 'g', 8))
            .arg(pt.layers)
            .arg(pt.relL2, 0, 'e', 3)
            .arg(pt.top8, 0, 'f', 3);
    }
    return {};
}

QString QualityChart::csv() const {
    QString out =
        QStringLiteral("format,format_label,context_tokens,kv_bytes_per_token,"
                       "kv_bytes_per_token_per_layer,layers,rel_l2_error,top8_agreement\n");
    for (const Point& pt : points())
        out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8\n")
                   .arg(csvQuote(QString::fromStdString(pt.formatId)), csvQuote(pt.label))
                   .arg(pt.context)
                   .arg(QString::number(pt.bytesPerToken, 'g', 12),
                        QString::number(pt.bytesPerTokenPerLayer, 'g', 12))
                   .arg(pt.layers)
                   .arg(QString::number(pt.relL2, 'g', 10), QString::number(pt.top8, 'g', 10));
    return out;
}

// ------------------------------------------------------------------------------------------

SpeedChart::SpeedChart(QWidget* parent) : ProbeChart(parent) {
    QCustomPlot* p = plot();
    setTitle(tr("Decode speed: attention time per step vs context"));
    p->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new TokenLogTicker));
    p->yAxis->setTicker(plainLogTicker());
    p->yAxis->setNumberFormat(QStringLiteral("gb"));
    p->xAxis->setLabel(tr("Context, tokens per request (log)"));
    p->yAxis->setLabel(tr("ms per step, one layer (log)"));
    applyColors();
}

void SpeedChart::rebuild() {
    QCustomPlot* p = plot();
    const ChartColors& c = colors();
    m_series.clear();
    std::map<std::pair<std::string, int>, std::size_t> index;
    std::map<std::string, std::map<int, int>> batchSets;
    for (const auto& r : m_report.rows)
        if (r.ok() && r.speedMeasured)
            batchSets[r.formatId][r.batch] = 1;
    for (const auto& r : m_report.rows) {
        if (!r.ok() || !r.speedMeasured || !(r.attentionMs > 0) || r.context <= 0)
            continue;
        const auto key = std::make_pair(r.formatId, r.batch);
        auto it = index.find(key);
        if (it == index.end()) {
            Series s;
            s.name = QString::fromStdString(r.formatLabel);
            if (batchSets[r.formatId].size() > 1)
                s.name += tr(", batch %1").arg(r.batch);
            s.colorIndex = formatColorIndex(r.formatId);
            it = index.emplace(key, m_series.size()).first;
            m_series.push_back(std::move(s));
        }
        m_series[it->second].rows.push_back(&r);
    }
    for (auto& s : m_series)
        std::stable_sort(s.rows.begin(), s.rows.end(),
                         [](const auto* a, const auto* b) { return a->context < b->context; });
    // Formats with alike step times (FP16 and FP8 on a GPU, where both read at the same
    // bandwidth) would draw one marker on the other: the series stand side by side around each
    // context, at most 0.15 octave apart and within 0.4 of the closest two contexts' distance,
    // so that every marker stays nearer its own context than any other. The tooltips and the
    // CSV keep the exact contexts.
    {
        std::vector<double> contexts;
        for (const Series& s : m_series)
            for (const auto* r : s.rows)
                contexts.push_back(double(r->context));
        std::sort(contexts.begin(), contexts.end());
        contexts.erase(std::unique(contexts.begin(), contexts.end()), contexts.end());
        double closest = 1; // octaves
        for (std::size_t i = 1; i < contexts.size(); ++i)
            closest = std::min(closest, std::log2(contexts[i] / contexts[i - 1]));
        const double n = double(m_series.size());
        const double step = n > 1 ? std::min(0.15, 0.4 * closest / (n - 1)) : 0;
        for (std::size_t i = 0; i < m_series.size(); ++i)
            m_series[i].keyFactor = std::exp2((double(i) - (n - 1) / 2) * step);
    }
    p->clearGraphs();
    clearLabels();
    double xlo = 1e300, xhi = 0, ylo = 1e300, yhi = 0;
    for (const Series& s : m_series) {
        QCPGraph* g = addFormatGraph(p, s.name, s.colorIndex, c.dark, 1.5, c.background, 8);
        QVector<double> keys, values;
        for (const auto* r : s.rows) {
            const double x = double(r->context) * s.keyFactor;
            keys.push_back(x);
            values.push_back(r->attentionMs);
            xlo = std::min(xlo, x);
            xhi = std::max(xhi, x);
            ylo = std::min(ylo, r->attentionMs);
            yhi = std::max(yhi, r->attentionMs);
        }
        g->setData(keys, values, true);
    }
    m_hasData = !m_series.empty();
    // Shown under the title (and in every export), not only in a cell's tooltip.
    setTitleNote(cacheCaveat(m_report, true));
    if (!m_hasData) {
        setEmptyText(tr("No speed measurements yet: press Run in the probe panel,\nor open a "
                        "results file from a GPU machine (File > Open Probe Results...)"));
        xlo = 512;
        xhi = 32768;
        ylo = 0.01;
        yhi = 10;
    } else {
        setEmptyText({});
    }
    // At least a factor 8 of context and two decades of time, so the log ticks stay round.
    const double xs = std::max(1.6, std::sqrt(8.0 * xlo / xhi));
    const double ys = std::max(3.0, std::sqrt(100.0 * ylo / yhi));
    p->xAxis->setRange(xlo / xs, xhi * xs);
    p->yAxis->setRange(ylo / ys, yhi * ys);
    requestReplot();
}

double SpeedChart::keyFactor(int index) const {
    return index >= 0 && index < int(m_series.size()) ? m_series[std::size_t(index)].keyFactor
                                                      : 1.0;
}

QString SpeedChart::describePoint(const QCPGraph* graph, int index) const {
    for (int i = 0; i < plot()->graphCount() && i < int(m_series.size()); ++i) {
        if (plot()->graph(i) != graph || index < 0 ||
            index >= int(m_series[std::size_t(i)].rows.size()))
            continue;
        const probe::ProbeResult& r = *m_series[std::size_t(i)].rows[std::size_t(index)];
        return tr("%1 on %2\n%3 x %4 tokens: %5 ms per decode step\n%6 tokens/s, %7 GB/s (%8% "
                  "of copy)")
            .arg(QString::fromStdString(r.formatLabel), QString::fromStdString(r.device))
            .arg(r.batch)
            .arg(formatTokensQ(r.context))
            .arg(r.attentionMs, 0, 'f', 3)
            .arg(thousandsQ(std::llround(r.tokensPerS)))
            .arg(r.attentionGBs, 0, 'f', 1)
            .arg(r.attentionPctOfCopy, 0, 'f', 0);
    }
    return {};
}

QString SpeedChart::csv() const {
    QString out = QStringLiteral("series,format,batch,context_tokens,attention_ms,tokens_per_s,"
                                 "attention_gbs,pct_of_copy\n");
    for (const Series& s : m_series)
        for (const auto* r : s.rows)
            out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8\n")
                       .arg(csvQuote(s.name), csvQuote(QString::fromStdString(r->formatId)))
                       .arg(r->batch)
                       .arg(r->context)
                       .arg(QString::number(r->attentionMs, 'g', 10),
                            QString::number(r->tokensPerS, 'g', 10),
                            QString::number(r->attentionGBs, 'g', 10),
                            QString::number(r->attentionPctOfCopy, 'g', 10));
    return out;
}

} // namespace kvl::widgets
