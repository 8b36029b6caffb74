#include "widgets/charts/speed_panel.h"

#include "widgets/charts/chart_factory.h"
#include "widgets/charts/speed_chart.h"

#include <QButtonGroup>
#include <QHBoxLayout>
#include <QLabel>
#include <QRadioButton>
#include <QSplitter>
#include <QVBoxLayout>

namespace kvl::widgets {

SpeedPanel::SpeedPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    auto* top = new QHBoxLayout;
    m_calibrationLabel = new QLabel;
    m_calibrationLabel->setObjectName(QStringLiteral("speedCalibrationLabel"));
    m_calibrationLabel->setWordWrap(true);
    top->addWidget(m_calibrationLabel, 1);
    top->addWidget(new QLabel(tr("Concurrency chart shows:")));
    m_cluster = new QRadioButton(tr("clus&ter tokens/s"));
    m_cluster->setObjectName(QStringLiteral("speedClusterRadio"));
    m_perUser = new QRadioButton(tr("tokens/s per &user"));
    m_perUser->setObjectName(QStringLiteral("speedPerUserRadio"));
    m_cluster->setChecked(true);
    auto* group = new QButtonGroup(this);
    group->addButton(m_cluster);
    group->addButton(m_perUser);
    top->addWidget(m_cluster);
    top->addWidget(m_perUser);
    layout->addLayout(top);
    m_concurrency =
        static_cast<PredictedSpeedChart*>(createChart(*findChartSpec(u"speed-concurrency")));
    m_context = static_cast<PredictedSpeedChart*>(createChart(*findChartSpec(u"speed-context")));
    auto* split = new QSplitter(Qt::Horizontal);
    split->setObjectName(QStringLiteral("speedSplitter"));
    split->addWidget(m_concurrency);
    split->addWidget(m_context);
    split->setChildrenCollapsible(false);
    layout->addWidget(split, 1);
    connect(m_perUser, &QRadioButton::toggled, this, [this](bool on) {
        m_concurrency->setMetric(on ? SpeedMetric::TokensPerSecondPerUser
                                    : SpeedMetric::ClusterTokensPerSecond);
    });
    updateCalibrationLabel();
}

void SpeedPanel::setView(const LedgerView& view) {
    m_snapshot = view.snapshot;
    m_concurrency->setView(view);
    m_context->setView(view);
    updateCalibrationLabel();
}

void SpeedPanel::setCalibration(const SpeedCalibration& calibration) {
    m_calibration = calibration;
    m_concurrency->setCalibration(calibration);
    m_context->setCalibration(calibration);
    updateCalibrationLabel();
}

QString SpeedPanel::calibrationText() const {
    return m_calibrationLabel->text();
}

void SpeedPanel::updateCalibrationLabel() {
    QString text;
    if (m_snapshot && calibratesScenario(m_calibration.assumptions, m_snapshot->scenario))
        text = tr("<b>Predicted, calibrated</b>: %1").arg(m_calibration.status.toHtmlEscaped());
    else if (m_calibration.calibrated)
        text = tr("<b>Predicted</b> from datasheet figures: the probe results are from %1, not "
                  "this scenario's GPU or KV format")
                   .arg(m_calibration.gpuName.toHtmlEscaped());
    else
        text = tr("<b>Predicted</b> (%1)").arg(m_calibration.status.toHtmlEscaped());
    m_calibrationLabel->setText(text);
}

} // namespace kvl::widgets
