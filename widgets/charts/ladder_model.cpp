#include "widgets/charts/ladder_model.h"

#include "core/engine.h"
#include "core/hybrid_note.h"
#include "widgets/export/html_table.h"

#include <QApplication>
#include <QFont>
#include <QPalette>

#include <cmath>

namespace kvl::widgets {

namespace {
// A cell's tooltip before the hybrid model's notes are added (data() asks itself for it).
constexpr int kOwnToolTipRole = Qt::UserRole + 40;
} // namespace

LadderModel::LadderModel(QObject* parent) : QAbstractTableModel(parent) {}

void LadderModel::setView(const LedgerView& view) {
    const bool shape = !m_snapshot != !view.snapshot || !m_reference != !view.reference ||
                       (m_snapshot && m_snapshot->ladder.size() != view.snapshot->ladder.size());
    const bool speed = view.snapshot != m_snapshot;
    const bool cells = shape || view.snapshot != m_snapshot || view.reference != m_reference ||
                       view.units != m_units || view.scope != m_scope;
    if (shape)
        beginResetModel();
    m_snapshot = view.snapshot;
    m_reference = view.reference;
    m_units = view.units;
    m_scope = view.scope;
    if (speed)
        recomputeSpeed();
    if (shape) {
        m_shownTexts.clear(); // another shape: data() formats afresh until publishChanges
        m_shownApplied.clear();
        endResetModel();
    }
    if (cells)
        publishChanges(shape);
}

void LadderModel::setSpeedAssumptions(const core::SpeedAssumptions& assumptions) {
    m_speedAssumptions = assumptions;
    recomputeSpeed();
    publishChanges(false);
}

// Only the cells whose text or greying changed are announced, each on its own: the view then
// repaints those cells alone instead of the whole table (a slider step changes the columns at
// the context and the speed, not the step names or the per-token bytes), and the header only
// when a title changed ("@4K" -> "@5K").
void LadderModel::publishChanges(bool reset) {
    const int rows = m_snapshot ? rowCount() : 0;
    const int cols = columnCount();
    std::vector<QString> texts;
    std::vector<char> applied;
    texts.reserve(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
    for (int r = 0; r < rows; ++r) {
        applied.push_back(m_snapshot->ladder[static_cast<std::size_t>(r)].applied ? 1 : 0);
        for (int c = 0; c < cols; ++c)
            texts.push_back(text(r, c));
    }
    QStringList headers;
    for (int c = 0; c < cols; ++c)
        headers << headerData(c, Qt::Horizontal).toString();
    const bool sameShape =
        !reset && texts.size() == m_shownTexts.size() && applied.size() == m_shownApplied.size();
    if (sameShape) {
        for (int r = 0; r < rows; ++r) {
            const auto row = static_cast<std::size_t>(r);
            if (applied[row] != m_shownApplied[row]) {
                emit dataChanged(index(r, 0), index(r, cols - 1));
                continue;
            }
            for (int c = 0; c < cols; ++c) {
                const std::size_t i = row * static_cast<std::size_t>(cols) + std::size_t(c);
                if (texts[i] != m_shownTexts[i])
                    emit dataChanged(index(r, c), index(r, c));
            }
        }
        for (int c = 0; c < cols; ++c)
            if (headers[c] != m_shownHeaders.value(c))
                emit headerDataChanged(Qt::Horizontal, c, c);
    } else if (!reset && rows > 0) {
        emit dataChanged(index(0, 0), index(rows - 1, cols - 1));
        emit headerDataChanged(Qt::Horizontal, 0, cols - 1);
    }
    m_shownTexts = std::move(texts);
    m_shownApplied = std::move(applied);
    m_shownHeaders = headers;
    emit cellsUpdated();
}

void LadderModel::recomputeSpeed() {
    m_speed.clear();
    if (!m_snapshot)
        return;
    // Each step at its own concurrency: the scenario's when set, else as many as that step
    // fits (what the step buys in users is what it is quoted at).
    for (const core::LadderStep& st : m_snapshot->ladder) {
        RowSpeed r;
        r.concurrency = chosenConcurrency(st.scenario, st.result);
        if (r.concurrency > 0)
            r.step = core::decodeStep(st.scenario, r.concurrency, st.scenario.workload.context,
                                      m_speedAssumptions);
        r.inVllm = core::vllmCacheDtype(st.scenario).has_value();
        m_speed.push_back(r);
    }
}

std::int64_t LadderModel::rowConcurrency(int row) const {
    return m_speed.at(static_cast<std::size_t>(row)).concurrency;
}

const core::DecodeStep& LadderModel::rowSpeed(int row) const {
    return m_speed.at(static_cast<std::size_t>(row)).step;
}

bool LadderModel::rowInVllm(int row) const {
    return m_speed.at(static_cast<std::size_t>(row)).inVllm;
}

QString LadderModel::scopeText() const {
    return scopeLabel(m_scope);
}

QString LadderModel::requestScopeText() const {
    // Every GPU of a replica serves every request: requests are per replica or the cluster's.
    return m_scope == FigureScope::Cluster ? scopeLabel(FigureScope::Cluster)
                                           : scopeLabel(FigureScope::PerReplica);
}

std::int64_t LadderModel::bytes(int row, int column) const {
    const core::LadderStep& st = m_snapshot->ladder[static_cast<std::size_t>(row)];
    const core::LedgerResult& r = st.result;
    switch (column) {
    case BytesPerTokenColumn:
        return scopeBytes(r.kvBytesPerTokenPerGpu, r.kvBytesPerTokenPerReplica, st.scenario,
                          m_scope);
    case BytesPerRequestColumn:
        return scopeBytes(r.kvBytesPerRequestPerGpu, r.kvBytesPerRequest, st.scenario, m_scope);
    default:
        return 0;
    }
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
            return tr("KV / token\n(%1)").arg(scopeText());
        case BytesPerRequestColumn:
            return tr("KV / request @%1\n(%2)").arg(ctx, scopeText());
        case SavingColumn:
            return tr("vs\nbaseline");
        case RequestsColumn:
            return tr("Requests @%1\n(%2)").arg(ctx, requestScopeText());
        case VllmConcurrencyColumn:
            return tr("vLLM conc.\n@%1").arg(mml);
        case StepMsColumn:
            return tr("ms / step\n@ requests");
        case TokensPerUserColumn:
            return tr("tokens/s\nper user");
        case DeltaColumn:
            return tr("Δ vs\nreference");
        default:
            return {};
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case StepColumn:
            return tr("Each step adds one lever of the scenario to the previous step");
        case BytesPerTokenColumn:
            return tr("2 x layers x KV heads x head_dim x bytes per element, plus scales (vLLM "
                      "docs: Quantized KV Cache), %1: a GPU holds its TP share of the KV heads "
                      "(replicated when TP exceeds them) and its PP stage's layers")
                .arg(scopeText());
        case BytesPerRequestColumn:
            return tr("KV bytes one request of the context holds, %1 (whole blocks); without "
                      "paging a request reserves the max model length")
                .arg(scopeText());
        case SavingColumn:
            return tr("KV per request relative to the baseline step");
        case RequestsColumn:
            return tr("Requests you can run: what vLLM runs at once at the context, the whole "
                      "requests that fit in the memory for KV capped by max_num_seqs, and 0 "
                      "when vLLM refuses to start. A cell's tooltip gives what the memory holds");
        case VllmConcurrencyColumn:
            return tr("vLLM's \"Maximum concurrency for M tokens per request\": "
                      "num_gpu_blocks / ceil(M / block_size), M = max model length");
        case StepMsColumn:
            return tr("Predicted decode step of a replica (an estimate, core/speed.h) at the "
                      "context and the row's concurrency: the scenario's, or as many requests as "
                      "the step fits (memory and max_num_seqs)");
        case TokensPerUserColumn:
            return tr("Output tokens per second each running request gets: 1000 / ms per step");
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
    const RowSpeed& sp = m_speed[static_cast<std::size_t>(row)];
    switch (column) {
    case StepColumn:
        // vLLM has no such KV format: the row's figures are the ledger's, not a vLLM run's.
        return sp.inVllm ? qs(st.label) : tr("%1 · not in vLLM").arg(qs(st.label));
    case BytesPerTokenColumn:
    case BytesPerRequestColumn:
        return formatBytesQ(bytes(row, column), m_units, 2);
    case SavingColumn: {
        if (row == 0 || r.kvBytesPerRequest <= 0)
            return tr("1x");
        const double ratio = double(base.kvBytesPerRequest) / double(r.kvBytesPerRequest);
        return tr("%1x less").arg(ratio, 0, 'f', ratio < 10 ? 2 : 1);
    }
    case RequestsColumn:
        return thousandsQ(scopeRequests(r.requestsYouCanRun, st.scenario, m_scope));
    case VllmConcurrencyColumn:
        return QStringLiteral("%1x").arg(r.maxConcurrency, 0, 'f', 2);
    case StepMsColumn:
        if (sp.concurrency <= 0 || !(sp.step.stepMs > 0))
            return QStringLiteral("-");
        return tr("%1 @%2").arg(QString::number(sp.step.stepMs, 'f', 1),
                                thousandsQ(sp.concurrency));
    case TokensPerUserColumn:
        if (sp.concurrency <= 0 || !(sp.step.stepMs > 0))
            return QStringLiteral("-");
        return QString::number(sp.step.tokensPerSecondPerUser, 'f',
                               sp.step.tokensPerSecondPerUser < 100 ? 1 : 0);
    case DeltaColumn: {
        if (!m_reference || static_cast<std::size_t>(row) >= m_reference->ladder.size())
            return {};
        const auto ref =
            m_reference->ladder[static_cast<std::size_t>(row)].result.requestsYouCanRun;
        const std::int64_t d = r.requestsYouCanRun - ref;
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
    case Qt::DisplayRole: {
        // The texts publishChanges formatted for this update: the view's paint and the column
        // fit read them at each change, and formatting them again was work done twice.
        const auto i = static_cast<std::size_t>(row) * static_cast<std::size_t>(columnCount()) +
                       static_cast<std::size_t>(col);
        if (m_shownTexts.size() ==
            static_cast<std::size_t>(rowCount()) * static_cast<std::size_t>(columnCount()))
            return m_shownTexts[i];
        return text(row, col);
    }
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
    case Qt::ToolTipRole:
        return toolTip(row, col);
    case kOwnToolTipRole:
        return ownToolTip(row, col);
    case ExactValueRole:
        return exactValue(row, col);
    case AppliedRole:
        return st.applied;
    default:
        return {};
    }
}

QString LadderModel::toolTip(int row, int col) const {
    const core::LadderStep& st = m_snapshot->ladder[static_cast<std::size_t>(row)];
    // On a hybrid model the byte and concurrency figures carry why they do not read as a
    // dense model's (core/hybrid_note.h), as kvledger ledger prints under its ladder.
    QString tip = ownToolTip(row, col).toString();
    const bool explains = col == BytesPerRequestColumn || col == RequestsColumn ||
                          col == VllmConcurrencyColumn ||
                          (col == StepColumn && st.id == core::LadderStepId::Paging);
    if (explains)
        for (const auto& n : core::hybridLadderNotes(m_snapshot->scenario, m_snapshot->ledger,
                                                     m_snapshot->ladder, m_units))
            tip += QStringLiteral("\n\n") + qs(n);
    return tip;
}

QVariant LadderModel::ownToolTip(int row, int col) const {
    const core::LadderStep& st = m_snapshot->ladder[static_cast<std::size_t>(row)];
    const core::LedgerResult& r = st.result;
    switch (col) {
    case BytesPerTokenColumn:
        return tr("%1 bytes per token (%2 per GPU)")
            .arg(thousandsQ(r.kvBytesPerToken), thousandsQ(r.kvBytesPerTokenPerGpu));
    case BytesPerRequestColumn:
        return tr("%1 bytes per request (%2 per GPU)")
            .arg(thousandsQ(r.kvBytesPerRequest), thousandsQ(r.kvBytesPerRequestPerGpu));
    case RequestsColumn: {
        // The figure is what vLLM runs at once; what the memory holds is the second figure.
        const QString holds = tr("memory holds %1 (%2 take %3 of the %4 available per GPU)")
                                  .arg(thousandsQ(r.maxRequestsAtContext),
                                       r.maxRequestsAtContext == 1 ? tr("it") : tr("they"),
                                       formatBytesQ(r.kvBytesAtMaxRequests, m_units),
                                       formatBytesQ(r.availableKvBytes, m_units));
        if (!r.error.empty())
            return tr("0: %1. Of this context, %2")
                .arg(r.refused ? tr("vLLM refuses to start") : qs(r.error), holds);
        if (r.requestsYouCanRun < r.maxRequestsAtContext)
            return tr("%1: max_num_seqs caps it; %2").arg(thousandsQ(r.requestsYouCanRun), holds);
        return tr("%1 requests run at once; %2").arg(thousandsQ(r.requestsYouCanRun), holds);
    }
    case VllmConcurrencyColumn:
        return tr("%1 GPU blocks, %2 tokens in the KV cache")
            .arg(thousandsQ(r.numGpuBlocks), thousandsQ(r.gpuKvCacheTokens));
    case StepMsColumn:
    case TokensPerUserColumn: {
        const RowSpeed& sp = m_speed[static_cast<std::size_t>(row)];
        if (sp.concurrency <= 0)
            return tr("No request of the context fits");
        return tr("%1 running requests x %2 tokens: %3 ms per step (%4), %5 tokens/s per "
                  "user, %6 tokens/s cluster; an estimate%7")
            .arg(thousandsQ(sp.concurrency), formatTokensQ(r.contextTokens),
                 QString::number(sp.step.stepMs, 'f', 2), qs(core::regimeName(sp.step.regime)),
                 QString::number(sp.step.tokensPerSecondPerUser, 'f', 1),
                 QString::number(sp.step.clusterTokensPerSecond, 'f', 0),
                 sp.step.calibrated ? tr(", attention calibrated by the probe") : QString());
    }
    case StepColumn: {
        const QString vllm = m_speed[static_cast<std::size_t>(row)].inVllm
                                 ? QString()
                                 : tr("\nvLLM has no --kv-cache-dtype for %1: not in vLLM")
                                       .arg(qs(core::shortLabel(r.kv.format)));
        const QString label =
            st.applied ? qs(st.label)
                       : tr("%1: this lever is off in the scenario, the step repeats the "
                            "previous one")
                             .arg(qs(st.label));
        return QString(label + vllm);
    }
    default:
        return st.applied ? QVariant()
                          : tr("This lever is off in the scenario: the step "
                               "repeats the previous one");
    }
}

QVariant LadderModel::exactValue(int row, int col) const {
    const core::LadderStep& st = m_snapshot->ladder[static_cast<std::size_t>(row)];
    const core::LedgerResult& r = st.result;
    switch (col) {
    case BytesPerTokenColumn:
    case BytesPerRequestColumn:
        return QVariant::fromValue<qint64>(bytes(row, col));
    case RequestsColumn:
        return QVariant::fromValue<qint64>(
            scopeRequests(r.requestsYouCanRun, st.scenario, m_scope));
    case StepMsColumn:
        return m_speed[static_cast<std::size_t>(row)].step.stepMs;
    case TokensPerUserColumn:
        return m_speed[static_cast<std::size_t>(row)].step.tokensPerSecondPerUser;
    case VllmConcurrencyColumn:
        return QVariant::fromValue<qint64>(std::llround(r.maxConcurrency * 100));
    case DeltaColumn:
        if (m_reference)
            return QVariant::fromValue<qint64>(
                r.requestsYouCanRun -
                m_reference->ladder[static_cast<std::size_t>(row)].result.requestsYouCanRun);
        return {};
    default:
        return {};
    }
}

QString LadderModel::csv() const {
    // Column names carry the scope, as the headers do.
    QString scope = scopeText().toLower();
    scope.replace(QLatin1Char(' '), QLatin1Char('_'));
    QString requestScope = requestScopeText().toLower();
    requestScope.replace(QLatin1Char(' '), QLatin1Char('_'));
    QString out = QStringLiteral("step,applied,kv_bytes_per_token_%1,kv_bytes_per_request_%1,"
                                 "requests_you_can_run_%2,memory_holds_requests_%2,"
                                 "vllm_max_concurrency,concurrency,"
                                 "decode_step_ms,tokens_per_s_per_user,vllm_kv_cache_dtype")
                      .arg(scope, requestScope);
    if (m_reference)
        out += QStringLiteral(",delta_requests_vs_reference");
    out += QLatin1Char('\n');
    for (int row = 0; row < rowCount(); ++row) {
        const core::LadderStep& st = m_snapshot->ladder[static_cast<std::size_t>(row)];
        const core::LedgerResult& r = st.result;
        QString label = qs(st.label);
        label.replace(QLatin1Char('"'), QStringLiteral("\"\""));
        const RowSpeed& sp = m_speed[static_cast<std::size_t>(row)];
        out += QLatin1Char('"') + label + QStringLiteral("\",") +
               (st.applied ? QStringLiteral("1") : QStringLiteral("0")) + QLatin1Char(',') +
               QString::number(bytes(row, BytesPerTokenColumn)) + QLatin1Char(',') +
               QString::number(bytes(row, BytesPerRequestColumn)) + QLatin1Char(',') +
               QString::number(scopeRequests(r.requestsYouCanRun, st.scenario, m_scope)) +
               QLatin1Char(',') +
               QString::number(scopeRequests(r.maxRequestsAtContext, st.scenario, m_scope)) +
               QLatin1Char(',') + QString::number(r.maxConcurrency, 'f', 2) + QLatin1Char(',') +
               QString::number(sp.concurrency) + QLatin1Char(',') +
               QString::number(sp.step.stepMs, 'f', 3) + QLatin1Char(',') +
               QString::number(sp.step.tokensPerSecondPerUser, 'f', 3) + QLatin1Char(',') +
               qs(core::vllmCacheDtype(st.scenario).value_or("not in vLLM"));
        if (m_reference)
            out += QLatin1Char(',') +
                   QString::number(
                       r.requestsYouCanRun -
                       m_reference->ladder[static_cast<std::size_t>(row)].result.requestsYouCanRun);
        out += QLatin1Char('\n');
    }
    return out;
}

QString LadderModel::html() const {
    return htmlTable(*this, QStringLiteral("cellspacing=0 cellpadding=3 border=1 width=100%"),
                     [this](int r, int c) {
                         QString cell = text(r, c).toHtmlEscaped();
                         if (r + 1 == rowCount())
                             cell = QStringLiteral("<b>") + cell + QStringLiteral("</b>");
                         if (!data(index(r, 0), AppliedRole).toBool())
                             cell = QStringLiteral("<font color=#888888>") + cell +
                                    QStringLiteral("</font>");
                         return QStringLiteral("<td align=%1>%2</td>")
                             .arg(c == 0 ? QStringLiteral("left") : QStringLiteral("right"), cell);
                     });
}

} // namespace kvl::widgets
