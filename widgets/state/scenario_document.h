#pragma once
// The scenario document: the one owner of what the window shows. It holds the scenario (the
// truth every panel edits a copy of), the pinned reference, the units and the scope of the
// figures; it checks each scenario through core::checkScenario, computes it once, and
// publishes one immutable LedgerView in one signal, viewChanged. Charts, the banner, the
// ladder and the status line subscribe to it; headless export drives it the same way.
//
// A scenario that does not pass the check is published too, as an invalid snapshot carrying
// the reason, so no view keeps showing numbers of an earlier scenario.

#include "widgets/state/ledger_view_state.h"

#include "core/result.h"

#include <QObject>

namespace kvl::widgets {

class ScenarioDocument : public QObject {
    Q_OBJECT
public:
    explicit ScenarioDocument(QObject* parent = nullptr);

    // Checks, computes and publishes `s`. Returns false (and publishes the reason) when the
    // scenario does not pass core::checkScenario.
    bool setScenario(const core::Scenario& s);
    const core::Scenario& scenario() const { return m_scenario; }
    bool hasScenario() const { return m_view.snapshot != nullptr; }
    // The reason the current scenario is not computed; empty when it is.
    QString validationMessage() const;

    const LedgerView& view() const { return m_view; }
    const LedgerSnapshot& snapshot() const { return *m_view.snapshot; }

    void setUnits(core::UnitSystem units);
    void setScope(FigureScope scope);
    // Pins the current (valid) snapshot as the reference; false when there is none to pin.
    bool pinReference();
    void clearReference();

signals:
    // The one update every view takes: a new scenario, the units, the scope, the reference.
    void viewChanged(const kvl::widgets::LedgerView& view);

private:
    void publish();

    core::Scenario m_scenario;
    LedgerView m_view;
};

// Reads and checks a scenario file through io::readFile (regular files only, one size limit:
// a FIFO or a device never blocks). The error is one line naming the file.
Result<core::Scenario> loadScenarioFile(const QString& path);

// The snapshot of a scenario that does not pass the check: the scenario and the reason, and
// the KV format it asked for, nothing computed.
LedgerSnapshot invalidSnapshot(const core::Scenario& s, const std::string& reason);

} // namespace kvl::widgets
