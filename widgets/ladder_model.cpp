#include "ladder_model.h"

#include <QApplication>
#include <QFont>
#include <QPalette>

#include <cmath>

namespace kvl::widgets {

LadderModel::LadderModel(QObject* parent) : QAbstractTableModel(parent) {}

void LadderModel::refresh(bool structureChanged) {
    if (structureChanged) {
        beginResetModel();
        endResetModel();
    } else if (rowCount() > 0) {
        emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
    }
}

void LadderModel::setView(const LedgerView& view) {
    const bool shape = !m_snapshot != !view.snapshot || !m_reference != !view.reference ||
                       (m_snapshot && m_snapshot->ladder.size() != view.snapshot->ladder.size());
    const bool cells = shape || view.snapshot != m_snapshot || view.reference != m_reference ||
                       view.units != m_units;
    if (shape)
        beginResetModel();
    m_snapshot = view.snapshot;
    m_reference = view.reference;
    m_units = view.units;
    if (shape)
        endResetModel();
    else if (cells)
        refresh(false);
}

int LadderModel::rowCount(const QModelIndex& parent) const {
    if (parent.isValid() || !m_snapshot)
        return 0;
    return static_cast<int>(m_snapshot->ladder.size());
}

int LadderModel::columnCount(const QModelIndex& parent) const {
    if (parent.isValid())
        return 0;
    return m_reference ? DeltaColumn + 1 : DeltaColumn;
}

QVariant LadderModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation == Qt::Vertical) {
        if (role == Qt::DisplayRole)
            return section + 1;
        return {};
    }
    const QString ctx = m_snapshot ? formatTokensQ(m_snapshot->ledger.contextTokens) : QString();
    const QString mml = m_snapshot ? formatTokensQ(m_snapshot->ledger.maxModelLen) : QString();
    if (role == Qt::DisplayRole) {
        switch (section) {
        case StepColumn:
            return tr("Lever step");
        case BytesPerTokenColumn:
            return tr("KV / token");
        case BytesPerRequestColumn:
            return tr("KV / request @%1").arg(ctx);
        case SavingColumn:
            return tr("vs baseline");
        case RequestsColumn:
            return tr("Requests @%1").arg(ctx);
        case VllmConcurrencyColumn:
            return tr("vLLM conc. @%1").arg(mml);
        case DeltaColumn:
            return tr("Δ vs reference");
        default:
            return {};
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case StepColumn:
            return tr("Each step adds one lever of the scenario to the previous step");
        case BytesPerTokenColumn:
            return tr("Whole model: 2 x layers x KV heads x head_dim x bytes per element, plus "
                      "scales (vLLM docs: Quantized KV Cache)");
        case BytesPerRequestColumn:
            return tr("KV bytes one request of the context holds, all GPUs together; without "
                      "paging a request reserves the max model length");
        case SavingColumn:
            return tr("KV per request relative to the baseline step");
        case RequestsColumn:
            return tr("Whole requests of the context that fit in the memory for KV");
        case VllmConcurrencyColumn:
            return tr("vLLM's \"Maximum concurrency for M tokens per request\": "
                      "num_gpu_blocks / ceil(M / block_size), M = max model length");
        case DeltaColumn:
            return tr("Requests at the context, this scenario minus the pinned reference");
        default:
            return {};
        }
    }
    return {};
}

QString LadderModel::text(int row, int column) const {
    const core::LadderStep& st = m_snapshot->ladder[static_cast<std::size_t>(row)];
    const core::LedgerResult& r = st.result;
    const core::LedgerResult& base = m_snapshot->ladder.front().result;
    switch (column) {
    case StepColumn:
        return qs(st.label);
    case BytesPerTokenColumn:
        return formatBytesQ(r.kvBytesPerToken, m_units, 2);
    case BytesPerRequestColumn:
        return formatBytesQ(r.kvBytesPerRequest, m_units, 2);
    case SavingColumn: {
        if (row == 0 || r.kvBytesPerRequest <= 0)
            return tr("1x");
        const double ratio = double(base.kvBytesPerRequest) / double(r.kvBytesPerRequest);
        return tr("%1x less").arg(ratio, 0, 'f', ratio < 10 ? 2 : 1);
    }
    case RequestsColumn:
        return thousandsQ(r.maxRequestsAtContext);
    case VllmConcurrencyColumn:
        return QStringLiteral("%1x").arg(r.maxConcurrency, 0, 'f', 2);
    case DeltaColumn: {
        if (!m_reference || static_cast<std::size_t>(row) >= m_reference->ladder.size())
            return {};
        const auto ref =
            m_reference->ladder[static_cast<std::size_t>(row)].result.maxRequestsAtContext;
        const std::int64_t d = r.maxRequestsAtContext - ref;
        QString s = (d > 0 ? QStringLiteral("+") : QString()) + thousandsQ(d);
        if (ref > 0)
            s += QStringLiteral(" (%1%2%)")
                     .arg(d >= 0 ? QStringLiteral("+") : QString())
                     .arg(100.0 * double(d) / double(ref), 0, 'f', 0);
        return s;
    }
    default:
        return {};
    }
}

QVariant LadderModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid) ||
        !m_snapshot)
        return {};
    const int row = index.row();
    const int col = index.column();
    const core::LadderStep& st = m_snapshot->ladder[static_cast<std::size_t>(row)];
    const bool isCurrent = row + 1 == rowCount();
    switch (role) {
    case Qt::DisplayRole:
        return text(row, col);
    case Qt::TextAlignmentRole:
        return col == StepColumn ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                 : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::FontRole: {
        if (!isCurrent)
            return {};
        QFont f;
        f.setBold(true);
        return f;
    }
    case Qt::ForegroundRole:
        if (!st.applied)
            return QApplication::palette().color(QPalette::Disabled, QPalette::Text);
        return {};
    case Qt::ToolTipRole: {
        const core::LedgerResult& r = st.result;
        switch (col) {
        case BytesPerTokenColumn:
            return tr("%1 bytes per token (%2 per GPU)")
                .arg(thousandsQ(r.kvBytesPerToken), thousandsQ(r.kvBytesPerTokenPerGpu));
        case BytesPerRequestColumn:
            return tr("%1 bytes per request (%2 per GPU)")
                .arg(thousandsQ(r.kvBytesPerRequest), thousandsQ(r.kvBytesPerRequestPerGpu));
        case RequestsColumn:
            return tr("%1 requests take %2 of the %3 available per GPU")
                .arg(thousandsQ(r.maxRequestsAtContext),
                     formatBytesQ(r.kvBytesAtMaxRequests, m_units),
                     formatBytesQ(r.availableKvBytes, m_units));
        case VllmConcurrencyColumn:
            return tr("%1 GPU blocks, %2 tokens in the KV cache")
                .arg(thousandsQ(r.numGpuBlocks), thousandsQ(r.gpuKvCacheTokens));
        case StepColumn:
            return st.applied ? qs(st.label)
                              : tr("%1: this lever is off in the scenario, the step repeats the "
                                   "previous one")
                                    .arg(qs(st.label));
        default:
            return st.applied ? QVariant()
                              : tr("This lever is off in the scenario: the step "
                                   "repeats the previous one");
        }
    }
    case ExactValueRole: {
        const core::LedgerResult& r = st.result;
        switch (col) {
        case BytesPerTokenColumn:
            return QVariant::fromValue<qint64>(r.kvBytesPerToken);
        case BytesPerRequestColumn:
            return QVariant::fromValue<qint64>(r.kvBytesPerRequest);
        case RequestsColumn:
            return QVariant::fromValue<qint64>(r.maxRequestsAtContext);
        case VllmConcurrencyColumn:
            return QVariant::fromValue<qint64>(std::llround(r.maxConcurrency * 100));
        case DeltaColumn:
            if (m_reference)
                return QVariant::fromValue<qint64>(
                    r.maxRequestsAtContext -
                    m_reference->ladder[static_cast<std::size_t>(row)].result.maxRequestsAtContext);
            return {};
        default:
            return {};
        }
    }
    case AppliedRole:
        return st.applied;
    default:
        return {};
    }
}

QString LadderModel::csv() const {
    QString out = QStringLiteral(
        "step,applied,kv_bytes_per_token,kv_bytes_per_request,max_requests,vllm_max_concurrency");
    if (m_reference)
        out += QStringLiteral(",delta_requests_vs_reference");
    out += QLatin1Char('\n');
    for (int row = 0; row < rowCount(); ++row) {
        const core::LadderStep& st = m_snapshot->ladder[static_cast<std::size_t>(row)];
        const core::LedgerResult& r = st.result;
        QString label = qs(st.label);
        label.replace(QLatin1Char('"'), QStringLiteral("\"\""));
        out += QLatin1Char('"') + label + QStringLiteral("\",") +
               (st.applied ? QStringLiteral("1") : QStringLiteral("0")) + QLatin1Char(',') +
               QString::number(r.kvBytesPerToken) + QLatin1Char(',') +
               QString::number(r.kvBytesPerRequest) + QLatin1Char(',') +
               QString::number(r.maxRequestsAtContext) + QLatin1Char(',') +
               QString::number(r.maxConcurrency, 'f', 2);
        if (m_reference)
            out +=
                QLatin1Char(',') +
                QString::number(
                    r.maxRequestsAtContext -
                    m_reference->ladder[static_cast<std::size_t>(row)].result.maxRequestsAtContext);
        out += QLatin1Char('\n');
    }
    return out;
}

QString LadderModel::html() const {
    QString out = QStringLiteral("<table cellspacing=0 cellpadding=3 border=1 width=100%><tr>");
    for (int c = 0; c < columnCount(); ++c)
        out += QStringLiteral("<th>%1</th>")
                   .arg(headerData(c, Qt::Horizontal).toString().toHtmlEscaped());
    out += QStringLiteral("</tr>");
    for (int r = 0; r < rowCount(); ++r) {
        const bool bold = r + 1 == rowCount();
        const bool applied = data(index(r, 0), AppliedRole).toBool();
        out += QStringLiteral("<tr>");
        for (int c = 0; c < columnCount(); ++c) {
            QString cell = text(r, c).toHtmlEscaped();
            if (bold)
                cell = QStringLiteral("<b>") + cell + QStringLiteral("</b>");
            if (!applied)
                cell = QStringLiteral("<font color=#888888>") + cell + QStringLiteral("</font>");
            out += QStringLiteral("<td align=%1>%2</td>")
                       .arg(c == 0 ? QStringLiteral("left") : QStringLiteral("right"), cell);
        }
        out += QStringLiteral("</tr>");
    }
    out += QStringLiteral("</table>");
    return out;
}

} // namespace kvl::widgets
