#pragma once
// The deployment planner's answer (core/planner.h) as the Deployment tab shows it: a table of
// GPU kinds with their best layout (sortable through a QSortFilterProxyModel: every numeric
// column sorts by its number, a kind that does not fit after every kind that does), and the
// bar chart "GPUs needed per GPU kind", kinds that fit nothing hatched grey.

#include "widgets/charts/chart_widget.h"
#include "widgets/state/units_table_model.h"

#include "core/planner.h"
#include "core/units.h"

#include <memory>
#include <vector>

class QCPBars;
class QCPItemText;

namespace kvl::widgets {

// "TP 4 × PP 3 × DP 1", "+ EP", "+ DCP 2": the layout as the Deployment tab and the report
// print it (every axis named, DP too).
QString layoutText(const core::Layout& l);
// "TP 4 × PP 3", the short form of core::layoutLabel with the multiplication sign.
QString layoutShortText(const core::Layout& l);

class PlanTableModel : public UnitsTableModel {
    Q_OBJECT
public:
    enum Column {
        GpuColumn,
        FitsColumn,
        GpusColumn,
        LayoutColumn,
        RequestsPerReplicaColumn,
        ClusterRequestsColumn,
        KvPerGpuColumn,
        WeightsPerGpuColumn,
        HeadroomPerGpuColumn,
        TokensPerUserColumn,
        ClusterTokensColumn,
        ReasonColumn,
        ColumnCount
    };
    // The number a column sorts by (GPUs: a kind that does not fit sorts last).
    static constexpr int SortRole = Qt::UserRole + 1;
    static constexpr int GpuIdRole = Qt::UserRole + 2;

    explicit PlanTableModel(QObject* parent = nullptr);
    void setPlan(std::shared_ptr<const core::PlanResult> plan, core::UnitSystem units);
    const core::PlanResult* plan() const { return m_plan.get(); }
    const core::GpuPlan* gpuPlan(int row) const; // nullptr when out of range

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;
    QString csv() const;

private:
    // data()'s roles for one cell; `d` is the kind's best deployment, null when none fits.
    QVariant sortValue(const core::GpuPlan& g, const core::Deployment* d, int col,
                       bool preferred) const;
    QVariant toolTip(const core::GpuPlan& g, const core::Deployment* d, int col,
                     bool preferred) const;
    QVariant displayText(const core::GpuPlan& g, const core::Deployment* d, int col) const;

    std::shared_ptr<const core::PlanResult> m_plan;
};

class GpusNeededChart : public ChartWidget {
    Q_OBJECT
public:
    explicit GpusNeededChart(QWidget* parent = nullptr);
    void setPlan(std::shared_ptr<const core::PlanResult> plan, std::int64_t users,
                 std::int64_t context, int maxGpus);

    struct Bar {
        QString gpuId, gpuName;
        bool fits = false;
        int gpus = 0; // 0 when it does not fit
        QString layout;
    };
    // One per GPU kind tried, top to bottom (fewest GPUs first, then those that do not fit).
    const std::vector<Bar>& bars() const { return m_barList; }
    QString csv() const override;
    QString tooltipAt(const QPoint& pos) const override;

protected:
    void applyColors() override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void rebuild();
    void fitRange();   // the x range that keeps every bar's label inside the plot
    bool fitRowFont(); // the names' and labels' font for the row height; true when changed
    std::shared_ptr<const core::PlanResult> m_plan;
    std::int64_t m_users = 0, m_context = 0;
    double m_noFitLength = 8;
    int m_maxGpus = 64;
    std::vector<Bar> m_barList;
    QCPBars* m_fit = nullptr;
    QCPBars* m_noFit = nullptr;
    std::vector<QCPItemText*> m_labels;
    QCPItemText* m_emptyLabel = nullptr;
};

} // namespace kvl::widgets
