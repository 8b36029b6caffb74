#include "widgets/state/scenario_document.h"

#include "core/deployment.h"
#include "core/io/scenario_file.h"

#include <QFile>

namespace kvl::widgets {

LedgerSnapshot invalidSnapshot(const core::Scenario& s, const std::string& reason) {
    LedgerSnapshot snap;
    snap.scenario = s;
    snap.invalid = true;
    snap.ledger.error = reason;
    snap.ledger.contextTokens = s.workload.context;
    snap.ledger.kv.format = s.levers.quant.enabled
                                ? s.levers.quant.format
                                : core::KvFormat::defaultFor(s.model.nativeKvDtype);
    return snap;
}

ScenarioDocument::ScenarioDocument(QObject* parent) : QObject(parent) {}

bool ScenarioDocument::setScenario(const core::Scenario& given) {
    // As the scenario panel commits it (a no-op for what the panel hands over).
    const core::Scenario s = withLeverKvTypes(given);
    m_scenario = s;
    const auto checked = core::checkScenario(s);
    if (checked)
        m_view.snapshot = std::make_shared<const LedgerSnapshot>(computeSnapshot(s));
    else
        m_view.snapshot =
            std::make_shared<const LedgerSnapshot>(invalidSnapshot(s, checked.error().message));
    publish();
    return checked.ok();
}

QString ScenarioDocument::validationMessage() const {
    return m_view.snapshot && m_view.snapshot->invalid ? qs(m_view.snapshot->ledger.error)
                                                       : QString();
}

void ScenarioDocument::setUnits(core::UnitSystem units) {
    m_view.units = units;
    publish();
}

void ScenarioDocument::setScope(FigureScope scope) {
    m_view.scope = scope;
    publish();
}

bool ScenarioDocument::pinReference() {
    if (!m_view.snapshot || m_view.snapshot->invalid)
        return false;
    m_view.reference = m_view.snapshot;
    publish();
    return true;
}

void ScenarioDocument::clearReference() {
    m_view.reference.reset();
    publish();
}

void ScenarioDocument::publish() {
    if (m_view.snapshot) // nothing computed yet: the units wait for the first scenario
        emit viewChanged(m_view);
}

Result<core::Scenario> loadScenarioFile(const QString& path) {
    // io::loadScenarioFile reads through io::readFile: one size limit, no FIFO hangs.
    return io::loadScenarioFile(QFile::encodeName(path).toStdString());
}

} // namespace kvl::widgets
