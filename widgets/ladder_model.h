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

    void setSnapshot(const LedgerSnapshot& snap);
    void setReference(const std::optional<LedgerSnapshot>& reference);
    void setUnits(core::UnitSystem units);
    bool hasReference() const { return m_reference.has_value(); }

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

    std::optional<LedgerSnapshot> m_snapshot;
    std::optional<LedgerSnapshot> m_reference;
    core::UnitSystem m_units = core::UnitSystem::Binary;
};

} // namespace kvl::widgets
