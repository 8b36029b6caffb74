#pragma once
// The scenario panel: model (picker, config.json import, editable geometry for what-ifs),
// hardware (GPU, TP, memory utilization, weights, reserves), the four KV levers as checkable
// groups and the workload. Every edit updates the scenario and emits scenarioChanged at once.

#include "core/scenario.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QPushButton;
class QSlider;
class QSpinBox;

namespace kvl::widgets {

class ModelPicker;
class TokenSpinBox;

class ScenarioPanel : public QWidget {
    Q_OBJECT
public:
    explicit ScenarioPanel(QWidget* parent = nullptr);

    const core::Scenario& scenario() const { return m_scenario; }
    // Shows `s` in the controls and emits scenarioChanged once.
    void setScenario(const core::Scenario& s);
    // Reads a HuggingFace config.json, adds it to the picker and selects it. On failure emits
    // errorOccurred and returns false; the scenario is unchanged.
    bool importConfig(const QString& path);
    QString validationMessage() const; // the current input problem, or empty
    // The model's geometry differs from the picked catalog (or imported) entry: a what-if.
    // The panel shows "(edited)"; the model's name in the scenario stays as it was.
    bool modelEdited() const;

    ModelPicker* modelPicker() const { return m_picker; }

signals:
    void scenarioChanged(const kvl::core::Scenario& scenario);
    void errorOccurred(const QString& title, const QString& message);
    void importRequested(); // the "Import config.json..." button (the window opens the dialog)

private:
    QWidget* buildModelGroup();
    QWidget* buildHardwareGroup();
    QWidget* buildAttentionGroup();
    QWidget* buildQuantGroup();
    QWidget* buildPagingGroup();
    QWidget* buildPrefixGroup();
    QWidget* buildWorkloadGroup();
    void connectEdits();

    void showScenario(); // scenario -> controls (signals blocked)
    void showModel();    // the model fields and the attention choices
    void showFormat();   // the KV format fields
    void readControls(); // controls -> scenario, then validate and emit
    void onModelChosen(const core::ModelSpec& m);
    void onModelFieldEdited();
    void onDtypeChanged();
    void onContextSlider(int pos);
    void onContextSpin(int value);
    void updateEnabledStates();
    void commit();

    core::Scenario m_scenario;
    core::ModelSpec m_catalogModel; // the picked model before any field edits
    bool m_updating = false;
    QString m_validation;

    ModelPicker* m_picker = nullptr;
    QPushButton* m_importButton = nullptr;
    QLabel* m_modelInfo = nullptr;
    QPushButton* m_resetModel = nullptr;
    QSpinBox* m_layers = nullptr;
    QSpinBox* m_qHeads = nullptr;
    QSpinBox* m_kvHeads = nullptr;
    QSpinBox* m_headDim = nullptr;
    QDoubleSpinBox* m_paramsB = nullptr;
    TokenSpinBox* m_maxContext = nullptr;

    QComboBox* m_gpu = nullptr;
    QSpinBox* m_gpuCount = nullptr;
    QDoubleSpinBox* m_memUtil = nullptr;
    QComboBox* m_weightDtype = nullptr;
    QDoubleSpinBox* m_activationGiB = nullptr;

    QGroupBox* m_attentionGroup = nullptr;
    QComboBox* m_attentionMode = nullptr;
    QComboBox* m_gqaGroups = nullptr;

    QGroupBox* m_quantGroup = nullptr;
    QComboBox* m_kvDtype = nullptr;
    QComboBox* m_granularity = nullptr;
    QSpinBox* m_groupSize = nullptr;
    QComboBox* m_scaleType = nullptr;
    QCheckBox* m_zeroPoint = nullptr;
    QLabel* m_formatInfo = nullptr;

    QGroupBox* m_pagingGroup = nullptr;
    QComboBox* m_blockSize = nullptr;

    QGroupBox* m_prefixGroup = nullptr;
    TokenSpinBox* m_prefixTokens = nullptr;
    QSpinBox* m_prefixRequests = nullptr;

    QSlider* m_contextSlider = nullptr;
    TokenSpinBox* m_context = nullptr;
    TokenSpinBox* m_maxModelLen = nullptr;
    QSpinBox* m_targetRequests = nullptr;
    QLabel* m_problem = nullptr;
};

} // namespace kvl::widgets
