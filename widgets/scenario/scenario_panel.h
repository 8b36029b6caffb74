#pragma once
// The scenario panel: the workload first (context slider, max model length, target), the model
// (picker, config.json import, a folded editor of its geometry for what-ifs), the deployment
// (GPU, TP x PP x DP, EP for MoE models, DCP, memory utilization, weights), the four KV levers
// as checkable groups, and vLLM's engine options with the reserves (estimated until edited).
// Controls that do not apply to the scenario are hidden or disabled. Every edit updates the
// scenario and emits scenarioChanged at once, or scenarioInvalid when it is not valid input.

#include "core/scenario.h"

#include <QWidget>

#include <cstdint>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QLayout;
class QPushButton;
class QSlider;
class QTimer;
class QSpinBox;

namespace kvl::widgets {

class ModelPicker;
class TokenSpinBox;

// What a change of vLLM release moves in the scenario, one line per rule of
// core/vllm_version.h that changed between the two, then the logged tokens and the requests
// that fit before and after ("0.20 → 0.21: GPU KV cache size 18,784 → 178,432 tokens").
QString versionChangeText(const core::Scenario& before, const core::Scenario& after);

// The largest context the window's Context box shows (a headless screenshot refuses a larger
// one rather than show another number than the figures are for).
inline constexpr std::int64_t kWindowMaxContext = std::int64_t{1} << 24;

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
    // Adds a model (a config.json read elsewhere: Open from Hugging Face) to the picker under
    // "Imported" and selects it; false (errorOccurred) when it does not validate.
    bool importModel(core::ModelSpec model, const QString& source);
    // Moves the context (the slider and the spin box follow) and commits.
    void setContext(std::int64_t tokens);
    QString validationMessage() const; // the current input problem, or empty
    // The model's geometry differs from the picked catalog (or imported) entry: a what-if.
    // The panel shows "(edited)"; the model's name in the scenario stays as it was.
    bool modelEdited() const;

    ModelPicker* modelPicker() const { return m_picker; }

    // The model-field editor is folded away until asked for (the workload comes first).
    void setGeometryEditorShown(bool shown);
    bool geometryEditorShown() const;

signals:
    void scenarioChanged(const kvl::core::Scenario& scenario);
    // The edited scenario is not valid input, or a layout vLLM refuses (core::checkLayout):
    // one line naming the field. The views then show the error, not the last numbers.
    void scenarioInvalid(const kvl::core::Scenario& scenario, const QString& message);
    void errorOccurred(const QString& title, const QString& message);
    void importRequested(); // the "Import config.json..." button (the window opens the dialog)

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QWidget* buildModelGroup();
    QWidget* buildHardwareGroup();
    QWidget* buildAttentionGroup();
    QWidget* buildQuantGroup();
    QWidget* buildPagingGroup();
    QWidget* buildPrefixGroup();
    QWidget* buildWorkloadGroup();
    QWidget* buildEngineGroup();
    void buildSglangOptions(QWidget* box);
    void buildTrtllmOptions(QWidget* box);
    void buildLlamacppOptions(QWidget* box);
    void buildVllmOptions(QWidget* box);
    void connectEdits();
    void connectHardwareEdits();
    void connectEngineEdits();
    void connectLeverEdits();
    void connectWorkloadEdits();
    // A slot for an edit of the scenario: `fn` changes m_scenario, then the change is committed
    // (not while the panel itself is filling its fields).
    template <class Fn> auto edit(Fn fn) {
        return [this, fn](auto&&...) {
            if (m_updating)
                return;
            fn();
            commit();
        };
    }
    void showReserves(); // the reserves in use: the user's, or the estimate (labelled)
    void showPrefixInfo();

    void showScenario(); // scenario -> controls (signals blocked)
    void showVllmVersion();
    void applyVllmVersion(); // the combo's text -> the scenario, or a red one-line reason
    void showVersionInfo();  // the version note (m_versionNote), for vLLM only
    void showModel();        // the model fields and the attention choices
    void showFormat();       // the KV format fields
    void readControls();     // controls -> scenario, then validate and emit
    void onModelChosen(const core::ModelSpec& m);
    void onModelFieldEdited();
    void onDtypeChanged();
    void onContextSlider(int pos);
    void onContextSpin(int value);
    // The slider's top stop is the max model len (the user's, else the model's): a drag never
    // lands on a context vLLM would reject (issue 29, item 5). Typing one still shows the
    // warning.
    void fitContextSlider();
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
    QPushButton* m_geometryToggle = nullptr;
    QWidget* m_geometry = nullptr;
    QSpinBox* m_layers = nullptr;
    QSpinBox* m_qHeads = nullptr;
    QSpinBox* m_kvHeads = nullptr;
    QSpinBox* m_headDim = nullptr;
    QDoubleSpinBox* m_paramsB = nullptr;
    TokenSpinBox* m_maxContext = nullptr;

    QComboBox* m_gpu = nullptr;
    QSpinBox* m_gpuCount = nullptr; // TP
    QSpinBox* m_pp = nullptr;
    QSpinBox* m_dp = nullptr;
    QSpinBox* m_dcp = nullptr;
    QCheckBox* m_ep = nullptr;
    QDoubleSpinBox* m_memUtil = nullptr;
    QComboBox* m_weightDtype = nullptr;

    // The engine whose rules size the pool, and each other engine's own flags (core/scenario.h
    // SglangOptions, TrtllmOptions, LlamaCppOptions); only the chosen engine's rows show.
    QComboBox* m_engine = nullptr;
    QWidget* m_sglangOptions = nullptr;
    QDoubleSpinBox* m_sgMemFraction = nullptr; // 0 = SGLang's default for the GPU
    QSpinBox* m_sgMaxTotalTokens = nullptr;
    QSpinBox* m_sgPageSize = nullptr;
    QWidget* m_trtllmOptions = nullptr;
    QDoubleSpinBox* m_trtFraction = nullptr;
    QSpinBox* m_trtMaxTokens = nullptr;
    QSpinBox* m_trtTokensPerBlock = nullptr;
    QWidget* m_llamacppOptions = nullptr;
    QSpinBox* m_lcCtx = nullptr; // 0 = the model's training context
    QSpinBox* m_lcParallel = nullptr;
    QCheckBox* m_lcUnified = nullptr;
    QComboBox* m_lcTypeK = nullptr;
    QComboBox* m_lcTypeV = nullptr;
    QCheckBox* m_lcSwaFull = nullptr;
    void showEngineOptions(); // the chosen engine's rows, its values, the greyed KV formats
    QComboBox* m_vllmVersion = nullptr; // editable: a listed series or any release typed
    QLabel* m_versionInfo = nullptr;    // what moved at the last version change, and why
    QString m_versionNote;              // its text, kept while another engine is picked
    QSpinBox* m_maxNumSeqs = nullptr;
    QCheckBox* m_asyncScheduling = nullptr;
    QCheckBox* m_disableHybrid = nullptr;
    QComboBox* m_mambaMode = nullptr;
    QLabel* m_mambaLabel = nullptr;
    QDoubleSpinBox* m_activationGiB = nullptr;
    QDoubleSpinBox* m_overheadGiB = nullptr;
    QPushButton* m_activationEstimate = nullptr;
    QPushButton* m_overheadEstimate = nullptr;
    QLayout* m_activationRow = nullptr;
    QLayout* m_overheadRow = nullptr;

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
    QLayout* m_scalesRow = nullptr;

    QGroupBox* m_pagingGroup = nullptr;
    QComboBox* m_blockSize = nullptr;

    QGroupBox* m_prefixGroup = nullptr;
    TokenSpinBox* m_prefixTokens = nullptr;
    QSpinBox* m_prefixRequests = nullptr;
    QLabel* m_prefixInfo = nullptr;
    QLayout* m_prefixRow = nullptr;

    QSlider* m_contextSlider = nullptr;
    QTimer* m_dragCommit = nullptr; // commits a drag's latest context once per event-loop pass
    TokenSpinBox* m_context = nullptr;
    TokenSpinBox* m_maxModelLen = nullptr;
    QSpinBox* m_targetRequests = nullptr;
};

} // namespace kvl::widgets
