#include "widgets/deployment/plan_model.h"

#include "widgets/export/csv.h"
#include "widgets/state/ledger_view_state.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QFont>
#include <QFontMetricsF>
#include <QPalette>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kvl::widgets {

namespace {
QString rateText(double v, int decimals) {
    return v > 0 ? QString::number(v, 'f', decimals) : QStringLiteral("-");
}
} // namespace

QString layoutText(const core::Layout& l) {
    QString s = QStringLiteral("TP %1 × PP %2 × DP %3").arg(l.tp).arg(l.pp).arg(l.dp);
    if (l.ep)
        s += QStringLiteral(" + EP");
    if (l.dcp > 1)
        s += QStringLiteral(" + DCP %1").arg(l.dcp);
    return s;
}

QString layoutShortText(const core::Layout& l) {
    return qs(core::layoutLabel(l)).replace(QStringLiteral(" x "), QStringLiteral(" × "));
}

PlanTableModel::PlanTableModel(QObject* parent) : UnitsTableModel(parent) {}

void PlanTableModel::setPlan(std::shared_ptr<const core::PlanResult> plan, core::UnitSystem units) {
    beginResetModel();
    m_plan = std::move(plan);
    m_units = units;
    endResetModel();
}

const core::GpuPlan* PlanTableModel::gpuPlan(int row) const {
    if (!m_plan || row < 0 || row >= static_cast<int>(m_plan->gpus.size()))
        return nullptr;
    return &m_plan->gpus[static_cast<std::size_t>(row)];
}

int PlanTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || !m_plan ? 0 : static_cast<int>(m_plan->gpus.size());
}

int PlanTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant PlanTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return {};
    // One entry a column, in Column's order; a column without a tooltip has none.
    static const char* const names[] = {QT_TR_NOOP("GPU"),
                                        QT_TR_NOOP("Fits"),
                                        QT_TR_NOOP("GPUs"),
                                        QT_TR_NOOP("Layout"),
                                        QT_TR_NOOP("Requests\nper replica"),
                                        QT_TR_NOOP("Requests\ncluster"),
                                        QT_TR_NOOP("KV\nper GPU"),
                                        QT_TR_NOOP("Weights\nper GPU"),
                                        QT_TR_NOOP("Headroom\nper GPU"),
                                        QT_TR_NOOP("tokens/s\nper user"),
                                        QT_TR_NOOP("tokens/s\ncluster"),
                                        QT_TR_NOOP("Why not / note")};
    static const char* const speedTip =
        QT_TR_NOOP("Predicted decode speed at the users' concurrency (an estimate, datasheet "
                   "efficiencies)");
    static const char* const tips[] = {
        nullptr,
        nullptr,
        QT_TR_NOOP("The fewest GPUs of this kind (TP x PP x DP) whose layout vLLM accepts and "
                   "that hold the users"),
        nullptr,
        QT_TR_NOOP("Requests of the context one replica (TP x PP GPUs) holds: what memory "
                   "holds, capped by max_num_seqs"),
        nullptr,
        QT_TR_NOOP("The users' KV on the busiest GPU"),
        nullptr,
        QT_TR_NOOP("The KV pool of a GPU minus the users' KV on it"),
        speedTip,
        speedTip,
        nullptr};
    static_assert(std::size(names) == ColumnCount && std::size(tips) == ColumnCount);
    if (role == Qt::DisplayRole)
        return tr(names[section]);
    if (role == Qt::ToolTipRole && tips[section])
        return tr(tips[section]);
    return {};
}

QVariant PlanTableModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const core::GpuPlan* g = gpuPlan(index.row());
    if (!g)
        return {};
    const core::Deployment* d = g->fits && !g->layouts.empty() ? &g->layouts.front() : nullptr;
    const int col = index.column();
    if (role == GpuIdRole)
        return qs(g->gpu.id);
    if (role == Qt::TextAlignmentRole)
        return col == GpuColumn || col == LayoutColumn || col == ReasonColumn
                   ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                   : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ForegroundRole && !d)
        return QApplication::palette().color(QPalette::Disabled, QPalette::Text);
    // The scenario's GPU is the row the user came for: bold, and first (the GPUs sort key).
    const bool preferred = !m_plan->preferredGpu.empty() && g->gpu.id == m_plan->preferredGpu;
    if (role == Qt::FontRole && preferred) {
        QFont f;
        f.setBold(true);
        return f;
    }
    if (role == Qt::BackgroundRole && preferred)
        return QApplication::palette().color(QPalette::AlternateBase);
    if (role == SortRole)
        return sortValue(*g, d, col, preferred);
    if (role == Qt::ToolTipRole)
        return toolTip(*g, d, col, preferred);
    if (role != Qt::DisplayRole)
        return {};
    return displayText(*g, d, col);
}

QVariant PlanTableModel::sortValue(const core::GpuPlan& g, const core::Deployment* d, int col,
                                   bool preferred) const {
    constexpr qint64 kLast = std::numeric_limits<qint64>::max();
    switch (col) {
    case GpuColumn:
        return qs(g.gpu.name);
    case FitsColumn:
        return d ? 0 : 1;
    case GpusColumn:
        // As PlanResult::bestFirst: the scenario's GPU, then plans by GPUs, the flagged
        // (too slow, too many stages) after those that are not, then what fits nothing.
        if (preferred)
            return QVariant::fromValue<qint64>(-1);
        return QVariant::fromValue<qint64>(
            d ? d->layout.gpus() + (d->flag.empty() ? 0 : qint64(1) << 32) : kLast);
    case LayoutColumn:
        return d ? layoutText(d->layout) : QString(QChar(0x2014));
    case RequestsPerReplicaColumn:
        return QVariant::fromValue<qint64>(d ? d->requestsPerReplica : -1);
    case ClusterRequestsColumn:
        return QVariant::fromValue<qint64>(d ? d->clusterRequests : -1);
    case KvPerGpuColumn:
        return QVariant::fromValue<qint64>(d ? d->kvBytesPerGpu : -1);
    case WeightsPerGpuColumn:
        return QVariant::fromValue<qint64>(d ? d->weightsBytesPerGpu : -1);
    case HeadroomPerGpuColumn:
        return QVariant::fromValue<qint64>(d ? d->headroomBytesPerGpu : -1);
    case TokensPerUserColumn:
        return d ? d->tokensPerSecondPerUser : -1.0;
    case ClusterTokensColumn:
        return d ? d->clusterTokensPerSecond : -1.0;
    case ReasonColumn:
        return qs(g.reason);
    default:
        return {};
    }
}

QVariant PlanTableModel::toolTip(const core::GpuPlan& g, const core::Deployment* d, int col,
                                 bool preferred) const {
    if (!d) {
        QString t = qs(g.reason);
        if (g.memoryNeededBytes > 0)
            t += tr("\nOne GPU would need %1 for the smallest layout tried")
                     .arg(formatBytesQ(g.memoryNeededBytes, m_units));
        return t;
    }
    if (col == GpuColumn && preferred)
        return tr("The scenario's GPU");
    if (!d->flag.empty() &&
        (col == ReasonColumn || col == TokensPerUserColumn || col == LayoutColumn))
        return tr("Flagged, not recommended: %1").arg(qs(d->flag));
    if (col == RequestsPerReplicaColumn && d->cappedByMaxNumSeqs)
        return tr("max_num_seqs %1 caps each replica; memory holds %2")
            .arg(thousandsQ(d->maxNumSeqs), thousandsQ(d->requestsMemoryHolds));
    if (col == LayoutColumn && g.layouts.size() > 1) {
        QStringList alts;
        for (std::size_t i = 1; i < g.layouts.size() && i < 6; ++i)
            alts << layoutText(g.layouts[i].layout);
        return tr("Also holds them at %1 GPUs: %2").arg(d->layout.gpus()).arg(alts.join(", "));
    }
    if (col == ReasonColumn) // elided when the table is narrow: the whole note on hover
        return qs(g.reason);
    return {};
}

QVariant PlanTableModel::displayText(const core::GpuPlan& g, const core::Deployment* d,
                                     int col) const {
    switch (col) {
    case GpuColumn:
        return qs(g.gpu.name);
    case FitsColumn:
        return d ? tr("yes") : tr("no");
    case GpusColumn:
        return d ? QString::number(d->layout.gpus()) : QStringLiteral("-");
    case LayoutColumn:
        return d ? layoutText(d->layout) : QStringLiteral("-");
    case RequestsPerReplicaColumn:
        if (!d)
            return QStringLiteral("-");
        return d->cappedByMaxNumSeqs ? tr("%1 (cap)").arg(thousandsQ(d->requestsPerReplica))
                                     : thousandsQ(d->requestsPerReplica);
    case ClusterRequestsColumn:
        return d ? thousandsQ(d->clusterRequests) : QStringLiteral("-");
    case KvPerGpuColumn:
        return d ? formatBytesQ(d->kvBytesPerGpu, m_units) : QStringLiteral("-");
    case WeightsPerGpuColumn:
        return d ? formatBytesQ(d->weightsBytesPerGpu, m_units) : QStringLiteral("-");
    case HeadroomPerGpuColumn:
        return d ? formatBytesQ(d->headroomBytesPerGpu, m_units) : QStringLiteral("-");
    case TokensPerUserColumn:
        return d ? rateText(d->tokensPerSecondPerUser, 1) : QStringLiteral("-");
    case ClusterTokensColumn:
        return d ? rateText(d->clusterTokensPerSecond, 0) : QStringLiteral("-");
    case ReasonColumn:
        if (!d) {
            QString t = qs(g.reason);
            if (g.memoryNeededBytes > 0)
                t += tr(" (needs %1 per GPU)").arg(formatBytesQ(g.memoryNeededBytes, m_units));
            return t;
        }
        if (!d->flag.empty())
            return QString(tr("flagged: %1").arg(qs(d->flag)) +
                           (d->withinOneNode ? QString() : tr("; crosses nodes")));
        if (!d->withinOneNode)
            return tr("crosses nodes");
        return {};
    default:
        return {};
    }
}

QString PlanTableModel::csv() const {
    QString out = QStringLiteral(
        "gpu,gpu_name,fits,gpus,tp,pp,dp,ep,dcp,requests_per_replica,cluster_requests,"
        "kv_bytes_per_gpu,weights_bytes_per_gpu,headroom_bytes_per_gpu,tokens_per_s_per_user,"
        "cluster_tokens_per_s,memory_needed_bytes_per_gpu,reason\n");
    if (!m_plan)
        return out;
    for (const core::GpuPlan& g : m_plan->gpus) {
        const core::Deployment* d = g.fits && !g.layouts.empty() ? &g.layouts.front() : nullptr;
        out += csvQuote(qs(g.gpu.id)) + QLatin1Char(',') + csvQuote(qs(g.gpu.name)) +
               QLatin1Char(',') + (d ? QStringLiteral("1") : QStringLiteral("0"));
        if (d)
            out += QStringLiteral(",%1,%2,%3,%4,%5,%6,%7,%8,%9")
                       .arg(d->layout.gpus())
                       .arg(d->layout.tp)
                       .arg(d->layout.pp)
                       .arg(d->layout.dp)
                       .arg(d->layout.ep ? 1 : 0)
                       .arg(d->layout.dcp)
                       .arg(d->requestsPerReplica)
                       .arg(d->clusterRequests)
                       .arg(d->kvBytesPerGpu) +
                   QStringLiteral(",%1,%2,%3,%4")
                       .arg(d->weightsBytesPerGpu)
                       .arg(d->headroomBytesPerGpu)
                       .arg(d->tokensPerSecondPerUser, 0, 'f', 3)
                       .arg(d->clusterTokensPerSecond, 0, 'f', 3);
        else
            out += QStringLiteral(",0,0,0,0,0,0,0,0,0,0,0,0,0");
        out += QLatin1Char(',') + QString::number(g.memoryNeededBytes) + QLatin1Char(',') +
               csvQuote(qs(g.reason)) + QLatin1Char('\n');
    }
    return out;
}

// ---------------------------------------------------------------------------------------------

GpusNeededChart::GpusNeededChart(QWidget* parent) : ChartWidget(parent) {
    setTitle(tr("GPUs needed per GPU kind"));
    QCustomPlot* p = plot();
    p->xAxis->setLabel(tr("GPUs, cluster (TP×PP×DP)"));
    // Whole GPUs: integer steps, as many ticks as the width holds (fitRange).
    auto ticks = QSharedPointer<QCPAxisTickerFixed>(new QCPAxisTickerFixed);
    ticks->setTickStep(1);
    ticks->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    p->xAxis->setTicker(ticks);
    p->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTickerText));
    p->yAxis->grid()->setVisible(false);
    p->yAxis->setRangeReversed(true); // the best at the top
    connect(p, &QCustomPlot::afterLayout, this, [this] {
        if (fitRowFont())
            requestReplot();
    });
    m_fit = new QCPBars(p->yAxis, p->xAxis);
    m_noFit = new QCPBars(p->yAxis, p->xAxis);
    for (QCPBars* b : {m_fit, m_noFit})
        b->setWidth(0.62);
    m_fit->setName(tr("fits"));
    m_noFit->setName(tr("does not fit"));
    m_emptyLabel = new QCPItemText(p);
    m_emptyLabel->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_emptyLabel->position->setCoords(0.5, 0.5);
    m_emptyLabel->setPositionAlignment(Qt::AlignCenter);
    m_emptyLabel->setText(tr("Planning…"));
    applyColors();
}

void GpusNeededChart::applyColors() {
    styleAxes();
    const ChartColors& c = colors();
    m_fit->setBrush(c.kv);
    m_fit->setPen(QPen(c.background, 1));
    // Kinds that fit nothing: grey, hatched, labelled "does not fit".
    m_noFit->setBrush(QBrush(c.cursor, Qt::BDiagPattern));
    m_noFit->setPen(QPen(c.cursor, 1));
    m_emptyLabel->setColor(c.foreground);
    rebuild();
}

void GpusNeededChart::setPlan(std::shared_ptr<const core::PlanResult> plan, std::int64_t users,
                              std::int64_t context, int maxGpus) {
    m_plan = std::move(plan);
    m_users = users;
    m_context = context;
    m_maxGpus = std::max(1, maxGpus);
    rebuild();
}

void GpusNeededChart::rebuild() {
    QCustomPlot* p = plot();
    const ChartColors& c = colors();
    m_barList.clear();
    for (QCPItemText* t : m_labels)
        p->removeItem(t);
    m_labels.clear();
    auto ticker = p->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
    ticker->clear();
    QVector<double> fitKeys, fitValues, noKeys, noValues;
    int maxFit = 0;
    if (m_plan) {
        for (const core::GpuPlan* g : m_plan->bestFirst()) {
            Bar b;
            b.gpuId = qs(g->gpu.id);
            b.gpuName = qs(g->gpu.name);
            b.fits = g->fits && !g->layouts.empty();
            if (b.fits) {
                b.gpus = g->layouts.front().layout.gpus();
                b.layout = layoutShortText(g->layouts.front().layout);
                maxFit = std::max(maxFit, b.gpus);
            }
            m_barList.push_back(b);
        }
    }
    // The hatched bars of kinds that fit nothing reach past every fitting bar: "more than
    // the planner tried".
    const double noFitLength = std::max<double>(maxFit * 1.15, std::min(m_maxGpus, 8));
    m_noFitLength = noFitLength;
    for (std::size_t i = 0; i < m_barList.size(); ++i) {
        const Bar& b = m_barList[i];
        const double key = double(i);
        ticker->addTick(key, b.gpuName);
        auto* t = new QCPItemText(p);
        t->setFont(p->yAxis->tickLabelFont());
        t->setClipToAxisRect(false);
        t->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        t->setPadding(QMargins(4, 0, 0, 0));
        if (b.fits) {
            fitKeys << key;
            fitValues << b.gpus;
            t->position->setCoords(b.gpus, key);
            t->setText(tr("%1 · %2").arg(b.gpus).arg(b.layout));
            t->setColor(c.foreground);
        } else {
            noKeys << key;
            noValues << noFitLength;
            t->position->setCoords(0, key);
            t->setText(tr("does not fit (≤ %1 GPUs)").arg(m_maxGpus));
            t->setColor(c.foreground);
        }
        m_labels.push_back(t);
    }
    m_fit->setData(fitKeys, fitValues, true);
    m_noFit->setData(noKeys, noValues, true);
    const double n = std::max<double>(1, double(m_barList.size()));
    p->yAxis->setRange(-0.6, n - 0.4);
    fitRange();
    m_emptyLabel->setVisible(m_barList.empty());
    if (m_plan)
        setTitle(m_users > 0 ? tr("GPUs needed per GPU kind: %1 users × %2 tokens")
                                   .arg(thousandsQ(m_users), formatTokensQ(m_context))
                             : tr("GPUs needed per GPU kind"));
    requestReplot();
}

void GpusNeededChart::resizeEvent(QResizeEvent* event) {
    ChartWidget::resizeEvent(event);
    fitRange();
    requestReplot();
}

void GpusNeededChart::fitRange() {
    // Room on the right of each bar for its "12 · TP 4 × PP 3" label, in pixels of the plot as
    // it is now: a bar of g GPUs ends at g / max of the axis width, its label must end inside
    // it, so max >= g x width / (width - label). A fixed factor clipped labels at 1366 px.
    QCustomPlot* p = plot();
    const double width = std::max(1, p->axisRect()->width());
    double upper = std::max(m_noFitLength, 1.0);
    for (std::size_t i = 0; i < m_barList.size() && i < m_labels.size(); ++i) {
        const Bar& b = m_barList[i];
        if (!b.fits)
            continue;
        const double label =
            QFontMetricsF(m_labels[i]->font()).horizontalAdvance(m_labels[i]->text()) + 10;
        const double free = std::max(width - label, 0.25 * width);
        upper = std::max(upper, b.gpus * width / free);
    }
    p->xAxis->setRange(0, std::ceil(upper));
    p->xAxis->ticker()->setTickCount(std::clamp(static_cast<int>(width / 45), 2, 8));
    fitRowFont();
}

bool GpusNeededChart::fitRowFont() {
    // One GPU kind per row: the names and the bar labels get a font no taller than a row, so
    // that at 1366 x 768 neighbouring names do not overlap (down to 6 pt; the table beside the
    // chart lists every kind too). Checked again after each layout, when the plot's height is
    // known.
    QCustomPlot* p = plot();
    const double pitch = p->axisRect()->height() / std::max<double>(1, double(m_barList.size()));
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * 0.85);
    while (QFontMetricsF(f).height() > pitch && f.pointSizeF() > 6)
        f.setPointSizeF(f.pointSizeF() - 0.5);
    if (p->yAxis->tickLabelFont() == f)
        return false;
    p->yAxis->setTickLabelFont(f);
    for (QCPItemText* t : m_labels)
        t->setFont(f);
    return true;
}

QString GpusNeededChart::tooltipAt(const QPoint& pos) const {
    const auto at = plotCoordsAt(pos);
    if (!at)
        return {};
    const int i = static_cast<int>(std::lround(at->y()));
    if (i < 0 || i >= static_cast<int>(m_barList.size()))
        return {};
    const Bar& b = m_barList[static_cast<std::size_t>(i)];
    if (b.fits)
        return tr("%1: %2 GPUs as %3").arg(b.gpuName).arg(b.gpus).arg(b.layout);
    for (const core::GpuPlan& g : m_plan->gpus)
        if (qs(g.gpu.id) == b.gpuId)
            return tr("%1 does not fit: %2").arg(b.gpuName, qs(g.reason));
    return {};
}

QString GpusNeededChart::csv() const {
    QString out = QStringLiteral("gpu,gpu_name,fits,gpus,layout,users,context_tokens\n");
    for (const Bar& b : m_barList)
        out += csvQuote(b.gpuId) + QLatin1Char(',') + csvQuote(b.gpuName) + QLatin1Char(',') +
               (b.fits ? QStringLiteral("1") : QStringLiteral("0")) + QLatin1Char(',') +
               QString::number(b.gpus) + QLatin1Char(',') + csvQuote(b.layout) + QLatin1Char(',') +
               QString::number(m_users) + QLatin1Char(',') + QString::number(m_context) +
               QLatin1Char('\n');
    return out;
}

} // namespace kvl::widgets
