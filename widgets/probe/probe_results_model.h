#pragma once
// The probe's results as a table, one row per measurement (format x context): predicted vs
// measured pool bytes, pages, store and decode speed, bandwidth against the copy measured in
// the same run, core's predicted step time for the backend that ran (calibration.h
// predictedAttention) and the ratio, and attention-output error. The report is swapped in
// wholesale.

#include "core/units.h"
#include "gpu_probe/io/results_io.h"
#include "widgets/probe/calibration.h"
#include "widgets/state/units_table_model.h"

#include <vector>

namespace kvl::widgets {

class ProbeResultsModel : public UnitsTableModel {
    Q_OBJECT
public:
    enum Column {
        FormatColumn,
        WorkloadColumn,  // batch x context (+ prefix)
        PredictedColumn, // core's pool bytes for the probed layer
        MeasuredColumn,  // allocated pool bytes
        PagesUsedColumn,
        PagesSavedColumn,
        StoreGBsColumn,
        AttentionMsColumn, // per decode step of the batch
        PredictedMsColumn, // core's speed model for the same step on the backend that ran it
        RatioColumn,       // measured / predicted step time
        TokensPerSColumn,
        AttentionGBsColumn,
        PctOfCopyColumn,
        RelL2Column, // attention output vs FP64 on unquantized K/V
        Top8Column,
        ColumnCount
    };
    // The exact number behind a cell: qint64 for bytes and pages, double otherwise; invalid
    // when not measured.
    static constexpr int ExactValueRole = Qt::UserRole + 1;
    static constexpr int OkRole = Qt::UserRole + 2;

    explicit ProbeResultsModel(QObject* parent = nullptr);

    void setReport(const probe::ProbeReport& report);
    void clear();
    const probe::ProbeReport& report() const { return m_report; }
    bool isEmpty() const { return m_report.rows.empty(); }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    QString csv() const;  // exact numbers
    QString html() const; // for the review report

private:
    QVariant exact(const probe::ProbeResult& r, int column) const;
    QString text(const probe::ProbeResult& r, int column) const;
    QString tooltip(const probe::ProbeResult& r, int column) const;
    const PredictedAttention& predicted(int row) const;

    probe::ProbeReport m_report;
    std::vector<PredictedAttention> m_predicted; // one per row
};

// "NVIDIA H200 · 2026-11-29 (from bench.json)": the results' label and where they came from
// (the Measured tab's source line, the report's).
QString probeSourceText(const probe::ProbeReport& report, const QString& origin);
// "from bench.json": the origin of results loaded from `path`.
QString probeFileOrigin(const QString& path);

} // namespace kvl::widgets
