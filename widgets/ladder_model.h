#pragma once
// The lever ladder as a live table: baseline -> +attention -> +quantization -> +paging ->
// +prefix, with bytes per token, per request, the savings and the concurrency each step buys,
// and a delta column against the pinned reference.

#include "ledger_view_state.h"

#include <QAbstractTableModel>

#include <optional>

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
        DeltaColumn, // only while a reference is pinned
    };
    // The exact number behind a cell (bytes, requests; concurrency x100) as qint64.
    static constexpr int ExactValueRole = Qt::UserRole + 1;
    static constexpr int AppliedRole = Qt::UserRole + 2;

    explicit LadderModel(QObject* parent = nullptr);

    // The ladder of the scenario, the delta column against the reference, the units. A new
    // snapshot of the same shape updates the cells in place; a reference coming or going
    // resets the model (the delta column appears or goes).
    void setView(const LedgerView& view);
    bool hasReference() const { return m_reference != nullptr; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    // The table as CSV (exact integers) and as HTML (for the report).
    QString csv() const;
    QString html() const;

private:
    QString text(int row, int column) const;
    void refresh(bool structureChanged);

    std::shared_ptr<const LedgerSnapshot> m_snapshot;
    std::shared_ptr<const LedgerSnapshot> m_reference;
    core::UnitSystem m_units = core::UnitSystem::Binary;
};

} // namespace kvl::widgets
