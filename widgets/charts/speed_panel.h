#pragma once
// The Speed tab: the predicted decode speed of the scenario and its ladder steps, vs
// concurrency (cluster or per-user tokens/s, a toggle) and vs context, side by side, with the
// calibration the figures use named above them.

#include "widgets/probe/calibration.h"
#include "widgets/state/ledger_view_state.h"

#include <QWidget>

class QLabel;
class QRadioButton;

namespace kvl::widgets {

class PredictedSpeedChart;

class SpeedPanel : public QWidget {
    Q_OBJECT
public:
    explicit SpeedPanel(QWidget* parent = nullptr);
    void setView(const LedgerView& view);
    void setCalibration(const SpeedCalibration& calibration);
    const SpeedCalibration& calibration() const { return m_calibration; }
    PredictedSpeedChart* concurrencyChart() const { return m_concurrency; }
    PredictedSpeedChart* contextChart() const { return m_context; }
    QString calibrationText() const;

private:
    void updateCalibrationLabel();
    SpeedCalibration m_calibration = defaultCalibration();
    std::shared_ptr<const LedgerSnapshot> m_snapshot;
    PredictedSpeedChart* m_concurrency = nullptr;
    PredictedSpeedChart* m_context = nullptr;
    QRadioButton* m_cluster = nullptr;
    QRadioButton* m_perUser = nullptr;
    QLabel* m_calibrationLabel = nullptr;
};

} // namespace kvl::widgets
