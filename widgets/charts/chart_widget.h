#pragma once
// Our chart widget: wraps QCustomPlot behind a domain API (its subclasses take ledger
// snapshots), replots queued, re-colours on palette changes, shows hover tooltips and
// exports to PNG / PDF / SVG (vector) / CSV through one path: rendered to memory, then
// written with writeFileAtomically.

#include "widgets/charts/chart_colors.h"
#include "widgets/charts/chart_registry.h"

#include "core/result.h"
#include "core/units.h"

#include <QByteArray>

#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include <functional>
#include <optional>

class QCustomPlot;
class QCPPainter;
class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;

namespace kvl::widgets {

// A line that marks a limit on a chart (the memory limit, max_num_seqs, an SLO, a sustainable
// rate) and its label, both clipped to the axis rect: chart_text_p.h addMarkedLines makes a
// chart's two, styleMarkedLines colours them.
struct MarkedLine {
    QCPItemStraightLine* line = nullptr;
    QCPItemText* text = nullptr;
};

class ChartWidget : public QWidget {
    Q_OBJECT
public:
    explicit ChartWidget(QWidget* parent = nullptr);
    ~ChartWidget() override;

    QString title() const { return m_title; }
    void setTitle(const QString& title);
    // A line drawn under the title whatever the chart sets it to: the window says there which
    // engine's rules a chart follows when the scenario's engine is another (empty = none).
    void setTitleNote(const QString& note);
    QString titleNote() const { return m_titleNote; }

    core::UnitSystem units() const { return m_units; }
    void setUnits(core::UnitSystem units);

    // The line every exported image carries under the chart (model, GPUs x layout, KV format,
    // context, date: status_text.h exportCaption), so it stands alone on a slide; and the
    // '#' comment lines a CSV export starts with. The window gives a source for both, worked
    // out when an export (or anyone) reads them, not at every change; it calls
    // invalidateCaption with each snapshot. setCaption and setCsvComments set them outright,
    // until the next invalidateCaption.
    struct CaptionSource {
        std::function<QString()> caption;
        std::function<QStringList()> csvComments;
    };
    void setCaptionSource(CaptionSource source);
    void invalidateCaption() { m_captionStale = m_commentsStale = true; }
    void setCaption(const QString& caption);
    QString caption() const;
    void setCsvComments(const QStringList& lines);
    QStringList csvComments() const;
    // The title as drawn: wrapped onto more lines when the chart is too narrow for one.
    QString shownTitle() const { return m_shownTitle; }
    QRect titleRect() const; // where the title is drawn, in this widget's coordinates
    QFont titleFont() const;
    QRect legendRect() const;   // the legend's rectangle; empty when it is hidden
    QRect plotAreaRect() const; // the axis rect (where curves are drawn)
    // Where each visible axis draws its tick labels (one list per axis), and where the chart's
    // text items (bar and point labels) are, in this widget's coordinates as last laid out:
    // the layout tests check that none overlaps another at laptop sizes.
    QList<QList<QRect>> tickLabelRects() const;
    QList<QRect> textItemRects() const;

    // Chooses the format from the suffix (.png .pdf .svg .csv). `size` empty = the widget's
    // size (900 x 520 when never shown); `scale` multiplies PNG pixels for high-DPI output.
    // The file is replaced only by a complete export; the error names the file.
    Status exportTo(const QString& path, double scale = 1.0, QSize size = {});
    // The bytes of the export in `format`, checked to be a complete file of that format.
    Result<QByteArray> renderFile(ExportFormat format, double scale = 1.0, QSize size = {});
    // A PNG is at most this many pixels: `--scale 8 --size 10000x10000` would be 25.6 GB.
    static constexpr double kMaxPngPixels = widgets::kMaxPngPixels;
    // Refuses a scale that is not a positive finite number, or a PNG over kMaxPngPixels.
    static Status checkPngSize(QSize size, double scale);
    // The chart's data as CSV: one row per data point, exact integers for bytes (an export
    // puts csvComments() in front).
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

    // Queued: a burst of changes costs one replot. A chart hidden in a shown window (a tab not
    // in front) replots when it is shown instead; exports draw from the data, not the screen.
    void requestReplot();
    int replotCount() const { return m_replotCount; }
    bool replotPending() const { return m_replotPending; }     // requested, not yet drawn
    bool replotWhenShown() const { return m_replotWhenShown; } // hidden: drawn when shown

signals:
    void replotted();

protected:
    QCustomPlot* plot() const { return m_plot; }
    // `pos` (this widget's coordinates) in the plot's, or nothing outside the axis rect: where a
    // tooltip or a click means a point of the data.
    std::optional<QPoint> plotPointAt(const QPoint& pos) const;
    // The same point in the axes' coordinates (x on the x axis, y on the y axis).
    std::optional<QPointF> plotCoordsAt(const QPoint& pos) const;
    const ChartColors& colors() const { return m_colors; }
    virtual void applyColors(); // base: background, axes, grid, legend; subclasses restyle
    virtual void unitsChanged() {}
    // Tooltip text for the data point nearest to pos, or empty.
    virtual QString describePoint(const QCPGraph* graph, int index) const;
    void changeEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void showEvent(QShowEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;
    QSize exportSize(QSize requested) const;
    void styleAxes();
    void updateTitleLayout(); // wraps the title to the chart's width

private:
    // The plot in (0,0)-(width, height - caption), the caption under it.
    void paintExport(QCPPainter* painter, int width, int height);
    int captionHeight(int width) const;
    QFont captionFont() const;

    QCustomPlot* m_plot = nullptr;
    QString drawnTitle() const; // the title and the note
    QString m_title;
    QString m_titleNote;
    QString m_shownTitle;
    CaptionSource m_captionSource;
    mutable QString m_caption;
    mutable QStringList m_csvComments;
    mutable bool m_captionStale = false;
    mutable bool m_commentsStale = false;
    ChartColors m_colors;
    bool m_forPrint = false;
    core::UnitSystem m_units = core::UnitSystem::Binary;
    int m_replotCount = 0;
    bool m_replotPending = false;
    bool m_replotWhenShown = false;
    QString m_lastTooltip;
};

} // namespace kvl::widgets
