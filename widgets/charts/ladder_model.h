#pragma once
// The lever ladder as a live table: baseline -> +attention -> +quantization -> +paging ->
// +prefix, with bytes per token, per request (in the view's scope: per GPU, per replica or the
// cluster, named in the headers), the savings, the concurrency each step buys, the predicted
// decode step and per-user speed at that concurrency, "not in vLLM" where a step's KV format
// has no vLLM equivalent, and a delta column against the pinned reference.

#include "widgets/probe/calibration.h"
#include "widgets/state/ledger_view_state.h"

#include "core/speed.h"

#include <QAbstractTableModel>
#include <QStringList>

#include <optional>
#include <vector>

namespace kvl::widgets {

class LadderModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        StepColumn,
        BytesPerTokenColumn,
        BytesPerRequestColumn,
        SavingColumn,
        RequestsColumn,
        VllmConcurrencyColumn,
        StepMsColumn,        // predicted decode step at the row's concurrency
        TokensPerUserColumn, // 1000 / step ms
        DeltaColumn,         // only while a reference is pinned
    };
    // The exact number behind a cell (bytes, requests; concurrency x100) as qint64; the speed
    // columns as double.
    static constexpr int ExactValueRole = Qt::UserRole + 1;
    static constexpr int AppliedRole = Qt::UserRole + 2;

    explicit LadderModel(QObject* parent = nullptr);

    // The ladder of the scenario, the delta column against the reference, the units. A new
    // snapshot of the same shape updates the cells in place; a reference coming or going
    // resets the model (the delta column appears or goes).
    void setView(const LedgerView& view);
    bool hasReference() const { return m_reference != nullptr; }
    // The speed model's assumptions (the probe's calibration); recomputes the speed columns.
    void setSpeedAssumptions(const core::SpeedAssumptions& assumptions);
    // The concurrency and decode step of a row (computed once per snapshot, not per paint).
    std::int64_t rowConcurrency(int row) const;
    const core::DecodeStep& rowSpeed(int row) const;
    // Whether vLLM can run the row's KV format (core::vllmCacheDtype).
    bool rowInVllm(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    // The table as CSV (exact integers) and as HTML (for the report).
signals:
    // After every update of the cells (a reset, a new snapshot, new speed assumptions), once:
    // what fits the columns to their texts listens to this, not to each cell's dataChanged.
    void cellsUpdated();

public:
    QString csv() const;
    QString html() const;

private:
    QString text(int row, int column) const;
    // data()'s tooltip (its own plus the hybrid model's notes), its own tooltip and its exact
    // value, for a row of the current snapshot.
    QString toolTip(int row, int col) const;
    QVariant ownToolTip(int row, int col) const;
    QVariant exactValue(int row, int col) const;
    void publishChanges(bool reset);
    void recomputeSpeed();
    std::int64_t bytes(int row, int column) const; // the scoped bytes of a byte column
    QString scopeText() const;
    QString requestScopeText() const;

    std::shared_ptr<const LedgerSnapshot> m_snapshot;
    std::shared_ptr<const LedgerSnapshot> m_reference;
    core::UnitSystem m_units = core::UnitSystem::Binary;
    FigureScope m_scope = FigureScope::PerGpu;
    core::SpeedAssumptions m_speedAssumptions;
    // The texts, greying and headers the view was last told about (publishChanges).
    std::vector<QString> m_shownTexts;
    std::vector<char> m_shownApplied;
    QStringList m_shownHeaders;
    struct RowSpeed {
        std::int64_t concurrency = 0;
        core::DecodeStep step;
        bool inVllm = true;
    };
    std::vector<RowSpeed> m_speed;
};

} // namespace kvl::widgets
