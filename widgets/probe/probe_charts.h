#pragma once
// The measured trade-offs: attention-output error vs KV bytes per token (quality vs memory,
// one point per probed format, log-log) and decode time per step vs context (speed, one
// series per format and batch). Both take a probe report and the scenario the points scale to.

#include "widgets/charts/chart_widget.h"
#include "widgets/state/ledger_view_state.h"

#include "gpu_probe/io/results_io.h"

#include <vector>

class QCPItemText;
class QCPItemStraightLine;

namespace kvl::widgets {

class ProbeChart : public ChartWidget {
    Q_OBJECT
public:
    explicit ProbeChart(QWidget* parent = nullptr);
    void setReport(const probe::ProbeReport& report);
    // The scenario (the model the points scale to, the current bytes per token) and the units.
    void setView(const LedgerView& view);
    bool hasData() const { return m_hasData; }

protected:
    void applyColors() override;
    void unitsChanged() override;
    void resizeEvent(QResizeEvent* event) override;
    virtual void rebuild() = 0;
    void setEmptyText(const QString& text);
    void clearLabels();
    void addPointLabel(double x, double y, const QString& text, const QColor& color);

    probe::ProbeReport m_report;
    std::shared_ptr<const LedgerSnapshot> m_snapshot;
    bool m_hasData = false;

private:
    QCPItemText* m_empty = nullptr;
    QString m_emptyText; // unwrapped; wrapped to the plot's width on every resize
    void wrapEmptyText();
    std::vector<QCPItemText*> m_labels;
};

class QualityChart : public ProbeChart {
    Q_OBJECT
public:
    explicit QualityChart(QWidget* parent = nullptr);
    QString csv() const override;
    // One point per format: the quality row with the largest context.
    struct Point {
        std::string formatId;
        QString label;
        double bytesPerToken = 0;         // whole model
        double bytesPerTokenPerLayer = 0; // what the probe measured
        int layers = 1;
        std::int64_t context = 0;
        double relL2 = 0, top8 = 0;
        int colorIndex = 0;
    };
    std::vector<Point> points() const;

protected:
    void rebuild() override;
    QString describePoint(const QCPGraph* graph, int index) const override;

private:
    QCPItemStraightLine* m_current = nullptr;
    QCPItemText* m_currentLabel = nullptr;
    std::vector<Point> m_points;
};

class SpeedChart : public ProbeChart {
    Q_OBJECT
public:
    explicit SpeedChart(QWidget* parent = nullptr);
    QString csv() const override;
    // How far series `index` is drawn beside its contexts (a factor on the log axis): formats
    // whose step times are alike would otherwise hide one another. 1 for a lone series.
    double keyFactor(int index) const;

protected:
    void rebuild() override;
    QString describePoint(const QCPGraph* graph, int index) const override;

private:
    struct Series {
        QString name;
        int colorIndex = 0;
        std::vector<const probe::ProbeResult*> rows; // sorted by context
        double keyFactor = 1;                        // drawn at context x this
    };
    std::vector<Series> m_series;
};

} // namespace kvl::widgets
