#include "widgets/probe/probe_results_model.h"

#include "widgets/export/csv.h"
#include "widgets/export/html_table.h"
#include "widgets/state/ledger_view_state.h"

#include "core/io/catalog.h"

#include <QBrush>
#include <QColor>
#include <QFileInfo>
#include <QGuiApplication>
#include <QPalette>

#include <cmath>
#include <iterator>

namespace kvl::widgets {

namespace {

bool finite(double v) {
    return std::isfinite(v);
}

QString num(double v, char fmt, int prec) {
    return finite(v) ? QString::number(v, fmt, prec) : QStringLiteral("n/a");
}

} // namespace

ProbeResultsModel::ProbeResultsModel(QObject* parent) : UnitsTableModel(parent) {}

void ProbeResultsModel::setReport(const probe::ProbeReport& report) {
    beginResetModel();
    m_report = report;
    m_predicted.clear();
    // The speed model's defaults: a calibration taken from these rows would predict them.
    for (const auto& r : m_report.rows)
        m_predicted.push_back(predictedAttention(r, io::builtinGpus()));
    endResetModel();
}

void ProbeResultsModel::clear() {
    setReport(probe::ProbeReport{});
}

int ProbeResultsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_report.rows.size());
}

int ProbeResultsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

const PredictedAttention& ProbeResultsModel::predicted(int row) const {
    return m_predicted[static_cast<std::size_t>(row)];
}

QVariant ProbeResultsModel::exact(const probe::ProbeResult& r, int column) const {
    const bool speed = r.ok() && r.speedMeasured;
    const bool quality = r.ok() && r.qualityMeasured;
    switch (column) {
    case FormatColumn:
        return QString::fromStdString(r.formatId);
    case WorkloadColumn:
        return static_cast<qint64>(r.context);
    case PredictedColumn:
        return r.ok() ? QVariant(static_cast<qint64>(r.predictedPoolBytes)) : QVariant();
    case MeasuredColumn:
        return r.ok() ? QVariant(static_cast<qint64>(r.allocatedPoolBytes)) : QVariant();
    case PagesUsedColumn:
        return r.ok() ? QVariant(static_cast<qint64>(r.pagesUsed)) : QVariant();
    case PagesSavedColumn:
        return r.ok() ? QVariant(static_cast<qint64>(r.pagesSaved)) : QVariant();
    case StoreGBsColumn:
        return speed ? QVariant(r.storeGBs) : QVariant();
    case AttentionMsColumn:
        return speed ? QVariant(r.attentionMs) : QVariant();
    case PredictedMsColumn:
    case RatioColumn: {
        const auto row = static_cast<int>(&r - m_report.rows.data());
        const PredictedAttention& p = predicted(row);
        if (!speed || !p.valid)
            return {};
        return column == PredictedMsColumn ? p.ms : p.ratio;
    }
    case TokensPerSColumn:
        return speed ? QVariant(r.tokensPerS) : QVariant();
    case AttentionGBsColumn:
        return speed ? QVariant(r.attentionGBs) : QVariant();
    case PctOfCopyColumn:
        return speed ? QVariant(r.attentionPctOfCopy) : QVariant();
    case RelL2Column:
        return quality ? QVariant(r.relL2) : QVariant();
    case Top8Column:
        return quality ? QVariant(r.top8) : QVariant();
    default:
        return {};
    }
}

QString ProbeResultsModel::text(const probe::ProbeResult& r, int column) const {
    if (column == FormatColumn)
        return QString::fromStdString(r.formatLabel);
    if (column == WorkloadColumn) {
        QString s = QStringLiteral("%1 x %2").arg(r.batch).arg(formatTokensQ(r.context));
        if (r.prefixTokens > 0)
            s += tr(", prefix %1").arg(formatTokensQ(r.prefixTokens));
        return s;
    }
    if (!r.ok())
        return column == PredictedColumn
                   ? tr("failed: %1").arg(QString::fromStdString(r.error.message))
                   : QString();
    const QVariant v = exact(r, column);
    if (!v.isValid())
        return QStringLiteral("-");
    switch (column) {
    case PredictedColumn:
    case MeasuredColumn:
        return formatBytesQ(static_cast<std::int64_t>(v.toLongLong()), m_units, 2);
    case PagesUsedColumn:
    case PagesSavedColumn:
        return thousandsQ(static_cast<std::int64_t>(v.toLongLong()));
    case StoreGBsColumn:
    case AttentionGBsColumn:
        return num(v.toDouble(), 'f', v.toDouble() < 10 ? 2 : 1);
    case AttentionMsColumn:
    case PredictedMsColumn:
        return num(v.toDouble(), 'f', 3);
    case RatioColumn:
        return finite(v.toDouble()) ? QStringLiteral("%1x").arg(v.toDouble(), 0, 'f', 2)
                                    : QStringLiteral("n/a");
    case TokensPerSColumn:
        return finite(v.toDouble()) ? thousandsQ(std::llround(v.toDouble()))
                                    : QStringLiteral("n/a");
    case PctOfCopyColumn:
        return finite(v.toDouble()) ? QStringLiteral("%1%").arg(v.toDouble(), 0, 'f', 0)
                                    : QStringLiteral("n/a");
    case RelL2Column:
        return num(v.toDouble(), 'e', 2);
    case Top8Column:
        return num(v.toDouble(), 'f', 3);
    default:
        return {};
    }
}

QString ProbeResultsModel::tooltip(const probe::ProbeResult& r, int column) const {
    if (!r.ok())
        return tr("%1 failed: %2")
            .arg(QString::fromStdString(r.formatLabel), QString::fromStdString(r.error.message));
    QStringList lines;
    switch (column) {
    case FormatColumn:
        lines << tr("%1 (%2) on %3")
                     .arg(QString::fromStdString(r.formatLabel), QString::fromStdString(r.formatId),
                          QString::fromStdString(r.device));
        lines << tr("one layer of %1: %2 q / %3 KV heads x head_dim %4, block %5")
                     .arg(QString::fromStdString(r.modelId))
                     .arg(r.qHeads)
                     .arg(r.kvHeads)
                     .arg(r.headDim)
                     .arg(r.blockSize);
        break;
    case PredictedColumn:
        lines << tr("core's prediction for one layer: %1 B").arg(thousandsQ(r.predictedPoolBytes));
        break;
    case MeasuredColumn:
        lines << tr("allocated: %1 B (pool %2 B = %3 pages x %4 B, allocator granularity %5 B)")
                     .arg(thousandsQ(r.allocatedPoolBytes), thousandsQ(r.poolBytes),
                          thousandsQ(r.pagesUsed), thousandsQ(r.pageBytes),
                          thousandsQ(r.allocatorGranularity));
        lines << tr("%1% vs core's prediction").arg(r.memoryErrorPct, 0, 'f', 3);
        if (r.devicePoolBytes > 0)
            lines << tr("device's own account (%1): %2 B")
                         .arg(QString::fromStdString(r.deviceAccountKind),
                              thousandsQ(r.devicePoolBytes));
        break;
    case PagesSavedColumn:
        lines << tr("pages not allocated because %1 prefix tokens are shared (full blocks only)")
                     .arg(thousandsQ(r.prefixTokens));
        break;
    case StoreGBsColumn:
        if (r.speedMeasured)
            lines << tr("store of the whole batch: %1 ms, %2 B moved, %3% of copy")
                         .arg(r.storeMs, 0, 'f', 3)
                         .arg(thousandsQ(r.storeBytes))
                         .arg(r.storePctOfCopy, 0, 'f', 0);
        break;
    case AttentionMsColumn:
    case TokensPerSColumn:
    case AttentionGBsColumn:
    case PctOfCopyColumn:
        if (r.speedMeasured) {
            lines << tr("one decode step of %1 requests: %2 ms; %3 unique pool bytes read; copy "
                        "in the same run %4 GB/s (read + write)")
                         .arg(r.batch)
                         .arg(r.attentionMs, 0, 'f', 3)
                         .arg(thousandsQ(r.attentionBytes))
                         .arg(r.copyGBs, 0, 'f', 1);
            if (r.readGBs > 0)
                lines << tr("read stream over the pool in the same run %1 GB/s: decode at %2% of "
                            "it")
                             .arg(r.readGBs, 0, 'f', 1)
                             .arg(100.0 * r.attentionGBs / r.readGBs, 0, 'f', 0);
        }
        break;
    case PredictedMsColumn:
    case RatioColumn: {
        const PredictedAttention& p = predicted(static_cast<int>(&r - m_report.rows.data()));
        if (p.valid)
            lines << tr("core's speed model: %1 B read at %2 GB/s = %3 ms per step (%4)")
                         .arg(thousandsQ(r.attentionBytes))
                         .arg(p.effectiveGBs, 0, 'f', p.effectiveGBs < 10 ? 2 : 1)
                         .arg(p.ms, 0, 'f', 3)
                         .arg(p.basis)
                  << tr("measured %1 ms: %2x the prediction (above 1 is slower)")
                         .arg(r.attentionMs, 0, 'f', 3)
                         .arg(p.ratio, 0, 'f', 2);
        else
            lines << tr("no prediction: %1").arg(p.basis);
        break;
    }
    case RelL2Column:
    case Top8Column:
        if (r.qualityMeasured) {
            lines << tr("attention output vs FP64 on the unquantized K/V (%1 data): rel L2 %2, "
                        "max abs %3; top-8 agreement %4")
                         .arg(QString::fromStdString(r.dataSource))
                         .arg(r.relL2, 0, 'e', 3)
                         .arg(r.maxAbs, 0, 'e', 3)
                         .arg(r.top8, 0, 'f', 3);
            lines << tr("kernel vs FP64 on the same dequantized pages: %1")
                         .arg(r.kernelVsRefRelL2, 0, 'e', 2);
            for (const auto& q : r.qualityVsContext)
                lines << tr("  %1 tokens: rel L2 %2, top-8 %3")
                             .arg(formatTokensQ(q.context))
                             .arg(q.relL2, 0, 'e', 2)
                             .arg(q.top8, 0, 'f', 2);
        }
        break;
    default:
        break;
    }
    for (const auto& n : r.notes)
        lines << tr("note: %1").arg(QString::fromStdString(n));
    return lines.join(QLatin1Char('\n'));
}

QVariant ProbeResultsModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount)
        return {};
    const probe::ProbeResult& r = m_report.rows[static_cast<std::size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        return text(r, index.column());
    case Qt::ToolTipRole:
        return tooltip(r, index.column());
    case ExactValueRole:
        return exact(r, index.column());
    case OkRole:
        return r.ok();
    case Qt::TextAlignmentRole:
        return index.column() <= WorkloadColumn ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                                : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
        if (!r.ok() && index.column() == PredictedColumn)
            return QBrush(QColor(200, 60, 40));
        return {};
    default:
        return {};
    }
}

QVariant ProbeResultsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return {};
    static const char* const names[] = {
        QT_TR_NOOP("Format"),         QT_TR_NOOP("Batch x context"), QT_TR_NOOP("Predicted pool"),
        QT_TR_NOOP("Measured pool"),  QT_TR_NOOP("Pages"),           QT_TR_NOOP("Saved by prefix"),
        QT_TR_NOOP("Store GB/s"),     QT_TR_NOOP("Attn ms/step"),    QT_TR_NOOP("Predicted ms"),
        QT_TR_NOOP("Measured/pred."), QT_TR_NOOP("Tokens/s"),        QT_TR_NOOP("Attn GB/s"),
        QT_TR_NOOP("% of copy"),      QT_TR_NOOP("Rel. L2 error"),   QT_TR_NOOP("Top-8")};
    static const char* const tips[] = {
        QT_TR_NOOP("KV format of the pages"),
        QT_TR_NOOP("Requests x tokens per request (shared prefix)"),
        QT_TR_NOOP("Pool bytes core predicts for one layer (vLLM's rules)"),
        QT_TR_NOOP("Pool bytes the backend allocated for one layer"),
        QT_TR_NOOP("Pages (blocks) in use"),
        QT_TR_NOOP("Pages saved by sharing the prefix's full blocks"),
        QT_TR_NOOP("Store (quantize into pages) bandwidth"),
        QT_TR_NOOP("Paged decode attention time for one step of the whole batch (median)"),
        QT_TR_NOOP("core's speed model for the same step on the backend that ran: the bytes "
                   "read at the GPU's datasheet bandwidth x eta_kv, or at the CPU's read stream "
                   "measured in the same run (its copy, in files from an older kvprobe)"),
        QT_TR_NOOP("Measured step time / predicted: above 1 is slower than predicted"),
        QT_TR_NOOP("Decode tokens per second for this layer (batch / step time)"),
        QT_TR_NOOP("Unique pool bytes read per step / step time"),
        QT_TR_NOOP("Attention bandwidth as a share of a copy measured in the same run"),
        QT_TR_NOOP("Attention output error vs FP64 on the unquantized K/V (relative L2)"),
        QT_TR_NOOP("Share of the FP64 top-8 attended tokens the quantized attention keeps")};
    static_assert(std::size(names) == ColumnCount && std::size(tips) == ColumnCount);
    if (role == Qt::DisplayRole)
        return tr(names[section]);
    if (role == Qt::ToolTipRole)
        return tr(tips[section]);
    return {};
}

QString ProbeResultsModel::csv() const {
    QString out = QStringLiteral(
        "format,format_label,backend,device,batch,context,prefix_tokens,block_size,ok,"
        "predicted_pool_bytes,allocated_pool_bytes,pool_bytes,pages_used,pages_saved,store_gbs,"
        "attention_ms,predicted_attention_ms,measured_over_predicted,tokens_per_s,attention_gbs,"
        "pct_of_copy,rel_l2_error,top8_agreement,error\n");
    auto d = [](bool have, double v) {
        return have && std::isfinite(v) ? QString::number(v, 'g', 10) : QString();
    };
    for (std::size_t i = 0; i < m_report.rows.size(); ++i) {
        const probe::ProbeResult& r = m_report.rows[i];
        const PredictedAttention& p = m_predicted[i];
        const bool s = r.ok() && r.speedMeasured, q = r.ok() && r.qualityMeasured;
        QStringList f;
        f << csvQuote(QString::fromStdString(r.formatId))
          << csvQuote(QString::fromStdString(r.formatLabel))
          << csvQuote(QString::fromStdString(r.backend))
          << csvQuote(QString::fromStdString(r.device)) << QString::number(r.batch)
          << QString::number(r.context) << QString::number(r.prefixTokens)
          << QString::number(r.blockSize) << (r.ok() ? QStringLiteral("1") : QStringLiteral("0"))
          << QString::number(r.predictedPoolBytes) << QString::number(r.allocatedPoolBytes)
          << QString::number(r.poolBytes) << QString::number(r.pagesUsed)
          << QString::number(r.pagesSaved) << d(s, r.storeGBs) << d(s, r.attentionMs)
          << d(s && p.valid, p.ms) << d(s && p.valid, p.ratio) << d(s, r.tokensPerS)
          << d(s, r.attentionGBs) << d(s, r.attentionPctOfCopy) << d(q, r.relL2) << d(q, r.top8)
          << csvQuote(QString::fromStdString(r.error.message));
        out += f.join(QLatin1Char(',')) + QLatin1Char('\n');
    }
    return out;
}

QString ProbeResultsModel::html() const {
    return htmlTable(*this, QStringLiteral("border=1 cellspacing=0 cellpadding=2 width=100%"),
                     [this](int row, int c) {
                         return QStringLiteral("<td align=%1>%2</td>")
                             .arg(c <= WorkloadColumn ? QStringLiteral("left")
                                                      : QStringLiteral("right"),
                                  data(index(row, c)).toString().toHtmlEscaped());
                     });
}

QString probeSourceText(const probe::ProbeReport& report, const QString& origin) {
    return QStringLiteral("%1 (%2)").arg(QString::fromStdString(report.label()), origin);
}

QString probeFileOrigin(const QString& path) {
    return ProbeResultsModel::tr("from %1").arg(QFileInfo(path).fileName());
}

} // namespace kvl::widgets
