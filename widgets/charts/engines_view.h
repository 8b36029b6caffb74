#pragma once
// The Engines tab: the requests of the scenario's context that vLLM, SGLang, TensorRT-LLM and
// llama.cpp each run at once for the same model, GPU and workload, per step of the lever
// ladder (core::compareEngines, each engine by its own rules), as a grouped bar chart and a
// table. A KV format an engine has no cache of is marked "not offered", never drawn as 0.
// Requests are per replica (every GPU of a replica serves every request), or the cluster's
// when the view's scope is the cluster.

#include "widgets/charts/chart_widget.h"
#include "widgets/state/ledger_view_state.h"

#include "core/engines.h"

#include <QAbstractTableModel>
#include <QWidget>

#include <memory>
#include <vector>

class QCPBars;
class QCPItemText;
class QLabel;
class QTableView;

namespace kvl::widgets {

// What the tab shows for one snapshot: the rows and the scenario and scope they are for.
struct EnginesComparison {
    core::Scenario scenario;
    FigureScope scope = FigureScope::PerGpu;
    bool invalid = false; // the scenario is not computed (the reason is in `why`)
    QString why;
    std::vector<core::EngineLadderRow> rows;
};
EnginesComparison compareEngines(const LedgerView& view);
// "per replica" or "in the cluster": what a request count of this scope covers.
QString enginesRequestsScope(FigureScope scope);
// A cell's requests in the comparison's scope (the cluster's are DP times a replica's).
std::int64_t scopedCellRequests(const EnginesComparison& c, const core::EngineCell& cell);

class EnginesModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { StepColumn, FirstEngineColumn };          // then one column per engine
    static constexpr int ExactValueRole = Qt::UserRole + 1; // requests as qint64; -1 not offered
    static constexpr int OfferedRole = Qt::UserRole + 2;

    explicit EnginesModel(QObject* parent = nullptr);
    void setComparison(std::shared_ptr<const EnginesComparison> c);
    const EnginesComparison* comparison() const { return m_c.get(); }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;
    QString csv() const;
    QString html() const; // for the review report

private:
    std::shared_ptr<const EnginesComparison> m_c;
};

class EnginesChart : public ChartWidget {
    Q_OBJECT
public:
    explicit EnginesChart(QWidget* parent = nullptr);
    // Computes the comparison of the view's scenario (core::compareEngines) and draws it.
    void setView(const LedgerView& view);
    void setComparison(std::shared_ptr<const EnginesComparison> c);
    std::shared_ptr<const EnginesComparison> comparison() const { return m_c; }
    QString csv() const override;
    QString tooltipAt(const QPoint& pos) const override;
    // The "not offered" marks drawn, one per cell without a bar (for tests).
    int notOfferedMarks() const;

protected:
    void applyColors() override;

private:
    void rebuild();
    std::shared_ptr<const EnginesComparison> m_c;
    std::vector<QCPBars*> m_bars; // one per engine
    std::vector<QCPItemText*> m_marks;
    QCPItemText* m_emptyLabel = nullptr;
};

class EnginesPanel : public QWidget {
    Q_OBJECT
public:
    explicit EnginesPanel(QWidget* parent = nullptr);
    void setView(const LedgerView& view);
    EnginesChart* chart() const { return m_chart; }
    EnginesModel* model() const { return m_model; }
    QTableView* table() const { return m_table; }

private:
    EnginesChart* m_chart = nullptr;
    EnginesModel* m_model = nullptr;
    QTableView* m_table = nullptr;
    QLabel* m_title = nullptr;
};

} // namespace kvl::widgets
