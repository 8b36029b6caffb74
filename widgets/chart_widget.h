#pragma once
// Our chart widget: wraps QCustomPlot behind a domain API (its subclasses take ledger
// snapshots), replots queued, re-colours on palette changes, shows hover tooltips and
// exports to PNG / PDF / SVG (vector) / CSV through one path.

#include "chart_colors.h"
#include "core/units.h"

#include <QString>
#include <QVector>
#include <QWidget>

class QCustomPlot;
class QCPPainter;
class QCPGraph;

namespace kvl::widgets {

class ChartWidget : public QWidget {
    Q_OBJECT
public:
    explicit ChartWidget(QWidget* parent = nullptr);
    ~ChartWidget() override;

    QString title() const { return m_title; }
    void setTitle(const QString& title);

    core::UnitSystem units() const { return m_units; }
    void setUnits(core::UnitSystem units);

    // Chooses the format from the suffix (.png .pdf .svg .csv). `size` empty = the widget's
    // size (900 x 520 when never shown); `scale` multiplies PNG pixels for high-DPI output.
    bool exportTo(const QString& path, double scale = 1.0, QSize size = {},
                  QString* error = nullptr);
    bool exportPng(const QString& path, double scale = 1.0, QSize size = {});
    bool exportPdf(const QString& path, QSize size = {});
    bool exportSvg(const QString& path, QSize size = {});
    bool exportCsv(const QString& path, QString* error = nullptr);
    // The chart's data as CSV: one row per data point, exact integers for bytes.
    virtual QString csv() const = 0;
    // Draws the chart with `painter` (vectorized) into (0,0)-(width,height).
    void render(QCPPainter* painter, int width, int height);
    // Re-applies the colours (the palette's, or the light set for print when `forPrint`).
    void setPrintColors(bool forPrint);

    // What is plotted, for tests and tooltips: the graphs in drawing order.
    int seriesCount() const;
    QString seriesName(int index) const;
    QVector<double> seriesKeys(int index) const;
    QVector<double> seriesValues(int index) const;
    bool seriesDashed(int index) const;
    int seriesIndex(const QString& name) const; // -1 when absent
    // Where data point `point` of series `series` is drawn, in this widget's coordinates.
    QPoint seriesPointPosition(int series, int point) const;
    QString lastTooltip() const { return m_lastTooltip; }
    // The tooltip the chart would show with the mouse at `pos` (widget coordinates).
    virtual QString tooltipAt(const QPoint& pos) const;

    void requestReplot(); // queued: a burst of changes costs one replot
    int replotCount() const { return m_replotCount; }

signals:
    void replotted();

protected:
    QCustomPlot* plot() const { return m_plot; }
    const ChartColors& colors() const { return m_colors; }
    virtual void applyColors(); // base: background, axes, grid, legend; subclasses restyle
    virtual void unitsChanged() {}
    // Tooltip text for the data point nearest to pos, or empty.
    virtual QString describePoint(const QCPGraph* graph, int index) const;
    void changeEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;
    QSize exportSize(QSize requested) const;
    void styleAxes();

private:
    QCustomPlot* m_plot = nullptr;
    QString m_title;
    ChartColors m_colors;
    bool m_forPrint = false;
    core::UnitSystem m_units = core::UnitSystem::Binary;
    int m_replotCount = 0;
    QString m_lastTooltip;
};

} // namespace kvl::widgets
