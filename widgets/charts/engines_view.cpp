#include "widgets/charts/engines_view.h"

#include "widgets/charts/chart_factory.h"
#include "widgets/charts/chart_registry.h"
#include "widgets/export/csv.h"
#include "widgets/export/html_table.h"
#include "widgets/scenario/form_parts.h"
#include "widgets/state/status_text.h"

#include <qcustomplot.h>

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace kvl::widgets {

namespace {

QString displayName(core::Engine e) {
    return qs(core::engineDisplayName(e));
}

// Bars per step: one per engine, side by side inside a step's slot of width 1.
constexpr double kBarWidth = 0.19;
double barKey(std::size_t step, std::size_t engine, std::size_t engines) {
    return double(step) + (double(engine) - (double(engines) - 1) / 2.0) * (kBarWidth + 0.01);
}

} // namespace

EnginesComparison compareEngines(const LedgerView& view) {
    EnginesComparison c;
    c.scope = view.scope;
    if (!view.snapshot)
        return c;
    c.scenario = view.snapshot->scenario;
    c.invalid = view.snapshot->invalid;
    if (c.invalid) {
        c.why = qs(view.snapshot->ledger.error);
        return c;
    }
    c.rows = core::compareEngines(c.scenario);
    return c;
}

QString enginesRequestsScope(FigureScope scope) {
    return scope == FigureScope::Cluster ? QObject::tr("in the cluster")
                                         : QObject::tr("per replica");
}

std::int64_t scopedCellRequests(const EnginesComparison& c, const core::EngineCell& cell) {
    return scopeRequests(cell.requests, c.scenario, c.scope);
}

// --- the table ---

EnginesModel::EnginesModel(QObject* parent) : QAbstractTableModel(parent) {}

void EnginesModel::setComparison(std::shared_ptr<const EnginesComparison> c) {
    beginResetModel();
    m_c = std::move(c);
    endResetModel();
}

int EnginesModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || !m_c ? 0 : static_cast<int>(m_c->rows.size());
}

int EnginesModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : FirstEngineColumn + static_cast<int>(core::allEngines().size());
}

QVariant EnginesModel::data(const QModelIndex& index, int role) const {
    if (!m_c || !index.isValid() || index.row() >= rowCount())
        return {};
    const core::EngineLadderRow& row = m_c->rows[static_cast<std::size_t>(index.row())];
    if (index.column() == StepColumn) {
        if (role == Qt::DisplayRole || role == Qt::ToolTipRole)
            return qs(row.label); // core's label says "(off)" for a lever that is off
        return {};
    }
    const std::size_t e = static_cast<std::size_t>(index.column() - FirstEngineColumn);
    if (e >= row.cells.size())
        return {};
    const core::EngineCell& cell = row.cells[e];
    switch (role) {
    case Qt::DisplayRole:
        if (!cell.offered)
            return tr("not offered");
        if (!cell.error.empty())
            return tr("does not run");
        return thousandsQ(scopedCellRequests(*m_c, cell));
    case ExactValueRole:
        return cell.offered ? QVariant(qint64(scopedCellRequests(*m_c, cell))) : QVariant(-1);
    case OfferedRole:
        return cell.offered;
    case Qt::TextAlignmentRole:
        return int(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
        return !cell.offered || !cell.error.empty()
                   ? QVariant(QPalette().color(QPalette::Disabled, QPalette::Text))
                   : QVariant();
    case Qt::ToolTipRole:
        if (!cell.error.empty())
            return qs(cell.error);
        return tr("%1: %2 requests of %3 tokens %4; pool %5 tokens, %6 bytes per token per GPU")
            .arg(displayName(cell.engine), thousandsQ(scopedCellRequests(*m_c, cell)),
                 thousandsQ(m_c->scenario.workload.context), enginesRequestsScope(m_c->scope),
                 thousandsQ(cell.poolTokens), thousandsQ(cell.kvBytesPerTokenPerGpu));
    default:
        return {};
    }
}

QVariant EnginesModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    if (section == StepColumn)
        return tr("Ladder step");
    const auto engines = core::allEngines();
    const std::size_t e = static_cast<std::size_t>(section - FirstEngineColumn);
    if (e >= engines.size())
        return {};
    const QString scope =
        m_c ? enginesRequestsScope(m_c->scope) : enginesRequestsScope(FigureScope::PerGpu);
    return tr("%1\nrequests %2").arg(displayName(engines[e]), scope);
}

QString EnginesModel::csv() const {
    QString out = QStringLiteral("step,engine,offered,runs,requests,scope,context_tokens,"
                                 "pool_tokens,kv_bytes_per_token_per_gpu,why\n");
    if (!m_c)
        return out;
    const QString scope =
        m_c->scope == FigureScope::Cluster ? QStringLiteral("cluster") : QStringLiteral("replica");
    for (const auto& row : m_c->rows)
        for (const auto& cell : row.cells)
            out += csvQuote(qs(row.label)) + QLatin1Char(',') + qs(core::engineName(cell.engine)) +
                   QLatin1Char(',') + (cell.offered ? QStringLiteral("1") : QStringLiteral("0")) +
                   QLatin1Char(',') +
                   (cell.error.empty() ? QStringLiteral("1") : QStringLiteral("0")) +
                   QLatin1Char(',') + QString::number(scopedCellRequests(*m_c, cell)) +
                   QLatin1Char(',') + scope + QLatin1Char(',') +
                   QString::number(m_c->scenario.workload.context) + QLatin1Char(',') +
                   QString::number(cell.poolTokens) + QLatin1Char(',') +
                   QString::number(cell.kvBytesPerTokenPerGpu) + QLatin1Char(',') +
                   csvQuote(qs(cell.error)) + QLatin1Char('\n');
    return out;
}

QString EnginesModel::html() const {
    return htmlTable(*this, QStringLiteral("border=\"1\" cellspacing=\"0\" cellpadding=\"3\""),
                     [this](int r, int c) {
                         const QModelIndex i = index(r, c);
                         const bool grey = c >= FirstEngineColumn && !data(i, OfferedRole).toBool();
                         const QString text = data(i).toString().toHtmlEscaped();
                         return c == StepColumn ? QStringLiteral("<td>%1</td>").arg(text)
                                : grey          ? QStringLiteral("<td align=\"right\"><font "
                                                                          "color=\"#888888\">%1</font></td>")
                                             .arg(text)
                                       : QStringLiteral("<td align=\"right\">%1</td>").arg(text);
                     });
}

// --- the chart ---

EnginesChart::EnginesChart(QWidget* parent) : ChartWidget(parent) {
    setTitle(tr("Requests per engine, per ladder step"));
    QCustomPlot* p = plot();
    p->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTickerText));
    p->xAxis->grid()->setVisible(false);
    p->xAxis->setTickLabelRotation(0);
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    for (core::Engine e : core::allEngines()) {
        auto* b = new QCPBars(p->xAxis, p->yAxis);
        b->setName(displayName(e));
        b->setWidth(kBarWidth);
        m_bars.push_back(b);
    }
    p->legend->setVisible(true);
    p->legend->setFont(small);
    p->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    p->legend->setWrap(4);
    p->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    m_emptyLabel = new QCPItemText(p);
    m_emptyLabel->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_emptyLabel->position->setCoords(0.5, 0.5);
    m_emptyLabel->setPositionAlignment(Qt::AlignCenter);
    applyColors();
}

void EnginesChart::applyColors() {
    styleAxes();
    const ChartColors& c = colors();
    // One hue per engine, from the colour-blind-safe set the ladder steps use.
    for (std::size_t i = 0; i < m_bars.size(); ++i) {
        const QColor hue = c.steps[(i + 1) % c.steps.size()];
        m_bars[i]->setBrush(hue);
        m_bars[i]->setPen(QPen(hue.darker(130), 1));
    }
    m_emptyLabel->setColor(c.foreground);
    rebuild();
}

void EnginesChart::setView(const LedgerView& view) {
    setComparison(std::make_shared<const EnginesComparison>(compareEngines(view)));
}

void EnginesChart::setComparison(std::shared_ptr<const EnginesComparison> c) {
    m_c = std::move(c);
    rebuild();
}

int EnginesChart::notOfferedMarks() const {
    return static_cast<int>(m_marks.size());
}

void EnginesChart::rebuild() {
    QCustomPlot* p = plot();
    const ChartColors& colours = colors();
    for (QCPItemText* t : m_marks)
        p->removeItem(t);
    m_marks.clear();
    auto ticker = p->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
    ticker->clear();
    const std::size_t engines = m_bars.size();
    std::vector<QVector<double>> keys(engines), values(engines);
    double top = 1;
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.8);
    const bool data = m_c && !m_c->invalid && !m_c->rows.empty();
    if (data) {
        for (std::size_t r = 0; r < m_c->rows.size(); ++r) {
            const auto& row = m_c->rows[r];
            // A long step label breaks at its first space: "Baseline\nMHA-32 BF16 ...".
            QString label = qs(row.label);
            if (const auto sp = label.indexOf(QLatin1Char(' ')); sp > 0 && label.size() > 14)
                label[sp] = QLatin1Char('\n');
            ticker->addTick(double(r), label);
            for (std::size_t e = 0; e < row.cells.size() && e < engines; ++e) {
                const auto& cell = row.cells[e];
                const double key = barKey(r, e, engines);
                if (cell.offered && cell.error.empty()) {
                    const double v = double(scopedCellRequests(*m_c, cell));
                    keys[e] << key;
                    values[e] << v;
                    top = std::max(top, v);
                    continue;
                }
                // No bar: say why at its foot ("n/a": the format is not offered; "×": the
                // engine does not run the step), rather than a bar of 0.
                auto* t = new QCPItemText(p);
                t->setFont(small);
                t->setColor(colours.foreground);
                t->setRotation(-90);
                t->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
                t->position->setCoords(key, 0);
                t->setText(cell.offered ? tr("does not run") : tr("not offered"));
                m_marks.push_back(t);
            }
        }
    }
    for (std::size_t e = 0; e < engines; ++e)
        m_bars[e]->setData(keys[e], values[e], true);
    const double n = data ? double(m_c->rows.size()) : 1.0;
    p->xAxis->setRange(-0.6, n - 0.4);
    // Room above the tallest bar for the legend, and for the rotated marks.
    p->yAxis->setRange(0, std::max(top * 1.25, 4.0));
    const QString scope = m_c ? enginesRequestsScope(m_c->scope) : QString();
    p->yAxis->setLabel(m_c ? tr("requests of %1 tokens %2")
                                 .arg(formatTokensQ(m_c->scenario.workload.context), scope)
                           : tr("requests"));
    m_emptyLabel->setText(m_c && m_c->invalid ? tr("Not computed: %1").arg(m_c->why)
                                              : tr("Nothing to compare"));
    m_emptyLabel->setVisible(!data);
    if (m_c && !m_c->invalid)
        setTitle(tr("Requests per engine, per ladder step: %1 on %2")
                     .arg(qs(m_c->scenario.model.name), deploymentText(m_c->scenario)));
    requestReplot();
}

QString EnginesChart::tooltipAt(const QPoint& pos) const {
    if (!m_c || m_c->rows.empty())
        return {};
    const auto at = plotCoordsAt(pos);
    if (!at)
        return {};
    const double x = at->x();
    const auto r =
        static_cast<std::size_t>(std::clamp<long>(std::lround(x), 0, long(m_c->rows.size()) - 1));
    const auto& row = m_c->rows[r];
    QStringList lines{qs(row.label)};
    for (const auto& cell : row.cells)
        lines << (cell.error.empty() ? tr("%1: %2").arg(displayName(cell.engine),
                                                        thousandsQ(scopedCellRequests(*m_c, cell)))
                                     : tr("%1: %2").arg(displayName(cell.engine), qs(cell.error)));
    return lines.join(QLatin1Char('\n'));
}

QString EnginesChart::csv() const {
    EnginesModel m;
    m.setComparison(m_c);
    return m.csv();
}

// --- the tab ---

EnginesPanel::EnginesPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    m_title = new QLabel(this);
    m_title->setObjectName(QStringLiteral("enginesTitle"));
    m_title->setWordWrap(true);
    layout->addWidget(m_title);
    m_chart =
        static_cast<EnginesChart*>(createChart(*findChartSpec(QStringLiteral("engines")), this));
    m_model = new EnginesModel(this);
    m_table = resultsTable(m_model, "enginesTable", this);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->horizontalHeader()->setSectionResizeMode(EnginesModel::StepColumn,
                                                      QHeaderView::ResizeToContents);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_chart);
    split->addWidget(m_table);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);
}

void EnginesPanel::setView(const LedgerView& view) {
    auto c = std::make_shared<const EnginesComparison>(compareEngines(view));
    m_chart->setComparison(c);
    m_model->setComparison(c);
    if (c->invalid) {
        m_title->setText(tr("Not computed: %1").arg(c->why));
        return;
    }
    m_title->setText(
        tr("<b>Four engines, one workload</b>: the requests of %1 tokens each engine runs at once "
           "%2 with its own rules and defaults, for each lever step. <i>Not offered</i>: the "
           "engine has no KV cache of that format. The paging and prefix levers are vLLM's: the "
           "others always page with their own page size. llama.cpp holds -np sequences of "
           "-c / -np cells, whatever the memory.")
            .arg(thousandsQ(c->scenario.workload.context), enginesRequestsScope(c->scope)));
}

} // namespace kvl::widgets
