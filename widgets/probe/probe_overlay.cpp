#include "widgets/probe/probe_overlay.h"

#include "core/io/catalog.h"

#include <qcustomplot.h>

#include <QObject>

#include <algorithm>
#include <cmath>
#include <map>

namespace kvl::widgets {

int probedLayers(const probe::ProbeResult& r, const core::ModelSpec& scenarioModel, bool* known) {
    if (known)
        *known = true;
    if (!r.modelId.empty() && r.modelId == scenarioModel.id && scenarioModel.numLayers() > 0)
        return scenarioModel.numLayers();
    if (const core::ModelSpec* m = io::findModel(r.modelId); m && m->numLayers() > 0)
        return m->numLayers();
    if (known)
        *known = false;
    return 1;
}

double measuredBytesPerToken(const probe::ProbeResult& r, const core::ModelSpec& scenarioModel) {
    if (r.blockSize <= 0)
        return 0;
    return double(r.pageBytes) / double(r.blockSize) * probedLayers(r, scenarioModel);
}

int formatColorIndex(const std::string& formatId) {
    static const std::vector<probe::ProbeFormat> all = probe::allProbeFormats();
    for (std::size_t i = 0; i < all.size(); ++i)
        if (all[i].id == formatId)
            return int(i);
    return int(all.size());
}

QColor formatColor(int index, bool dark) {
    // Okabe-Ito first, then distinguishable extras; lighter on dark backgrounds.
    static const QColor light[] = {
        QColor(0x00, 0x72, 0xB2), QColor(0x56, 0xB4, 0xE9), QColor(0x44, 0x44, 0x44),
        QColor(0xD5, 0x5E, 0x00), QColor(0xB3, 0x4A, 0x00), QColor(0xE6, 0x9F, 0x00),
        QColor(0xA0, 0x78, 0x00), QColor(0x00, 0x9E, 0x73), QColor(0xCC, 0x79, 0xA7),
        QColor(0x99, 0x4F, 0x88), QColor(0x7A, 0x3B, 0x69), QColor(0x6A, 0x3D, 0x9A),
        QColor(0xC0, 0x1C, 0x28), QColor(0x33, 0x33, 0x99)};
    constexpr int n = int(sizeof light / sizeof light[0]);
    QColor c = light[((index % n) + n) % n];
    if (dark)
        c = c.lighter(150);
    return c;
}

int formatMarker(int index) {
    // One shape per probe format (13), so that two formats never share a marker even where
    // their colours are close (FP16 and BF16, the FP8 variants).
    static const QCPScatterStyle::ScatterShape shapes[] = {
        QCPScatterStyle::ssCircle,      QCPScatterStyle::ssSquare,
        QCPScatterStyle::ssDiamond,     QCPScatterStyle::ssTriangle,
        QCPScatterStyle::ssStar,        QCPScatterStyle::ssTriangleInverted,
        QCPScatterStyle::ssCrossSquare, QCPScatterStyle::ssPlusCircle,
        QCPScatterStyle::ssPlusSquare,  QCPScatterStyle::ssCrossCircle,
        QCPScatterStyle::ssPeace,       QCPScatterStyle::ssCross,
        QCPScatterStyle::ssPlus};
    constexpr int n = int(sizeof shapes / sizeof shapes[0]);
    return shapes[((index % n) + n) % n];
}

bool isCacheResident(const probe::ProbeResult& row) {
    if (!row.ok() || !row.speedMeasured)
        return false;
    // gpu_probe's notes (probe_phases.cpp, probe_quality.cpp) name it "cache-resident".
    return std::any_of(row.notes.begin(), row.notes.end(), [](const std::string& n) {
        return n.find("cache-resident") != std::string::npos;
    });
}

int cacheResidentRows(const probe::ProbeReport& report) {
    return int(std::count_if(report.rows.begin(), report.rows.end(),
                             [](const probe::ProbeResult& r) { return isCacheResident(r); }));
}

QString cacheCaveat(const probe::ProbeReport& report, bool brief) {
    const int n = cacheResidentRows(report);
    if (n == 0)
        return {};
    int timed = 0;
    for (const auto& r : report.rows)
        timed += r.ok() && r.speedMeasured ? 1 : 0;
    if (brief)
        return QObject::tr("Caveat: %1 of %2 timed pools partly cache-resident, bandwidth "
                           "overstated")
            .arg(n)
            .arg(timed);
    return QObject::tr("Caveat: %1 of %2 timed pools are small enough to stay partly in the "
                       "cache: their step times are too short and their bandwidth overstated "
                       "(measure longer contexts or larger batches)")
        .arg(n)
        .arg(timed);
}

namespace {
// A row measured for another model than the one shown: its markers would sit on curves they
// do not belong to. Rows without a model id (older files) are shown, scaled by one layer.
bool forOtherModel(const probe::ProbeResult& r, const core::Scenario& s) {
    return !r.modelId.empty() && r.modelId != s.model.id;
}
} // namespace

QString measuredNote(const probe::ProbeReport& report, const LedgerSnapshot& snap) {
    QString other;
    for (const auto& r : report.rows) {
        if (!r.ok())
            continue;
        if (forOtherModel(r, snap.scenario)) {
            if (other.isEmpty())
                other = QString::fromStdString(r.modelId);
            continue;
        }
        bool known = true;
        const int layers = probedLayers(r, snap.scenario.model, &known);
        return QObject::tr("Markers: measured on %1, one layer's pool / batch x %2 layers%3")
            .arg(QString::fromStdString(report.label()))
            .arg(layers)
            .arg(r.modelId == snap.scenario.model.id
                     ? QString()
                     : QObject::tr(" of %1").arg(QString::fromStdString(r.modelId)));
    }
    if (!other.isEmpty())
        return QObject::tr("Markers hidden: measured for %1 on %2, not for the %3 shown")
            .arg(other, QString::fromStdString(report.label()), qs(snap.scenario.model.name));
    return {};
}

QString backendLabel(const probe::ProbeReport& report) {
    return report.backend == "cuda" ? QStringLiteral("CUDA")
                                    : QString::fromStdString(report.backend).toUpper();
}

std::vector<MeasuredSeries> measuredOverlay(const probe::ProbeReport& report,
                                            const LedgerSnapshot& snap, CurveKind kind,
                                            core::UnitSystem units) {
    std::vector<MeasuredSeries> out;
    std::map<std::string, std::size_t> byFormat;
    const core::Scenario& s = snap.scenario;
    const int tp = std::max(1, s.hardware.gpuCount);
    const std::int64_t available = snap.sweep.availableKvBytes;
    for (const auto& r : report.rows) {
        if (!r.ok() || r.batch <= 0 || r.context <= 0 || r.allocatedPoolBytes <= 0 ||
            forOtherModel(r, s))
            continue;
        bool known = true;
        const int layers = probedLayers(r, s.model, &known);
        const double perLayer = double(r.allocatedPoolBytes) / double(r.batch);
        const double perRequest = perLayer * layers;
        // Tensor parallelism splits the KV heads (each GPU keeps at least one).
        const bool sameModel = r.modelId == s.model.id; // else the model is unknown
        const int heads = std::max(1, r.kvHeads);
        const double perGpu =
            sameModel && tp > 1 ? perRequest * std::max(1, heads / tp) / double(heads) : perRequest;
        QString scaling = QObject::tr("per-layer pool %1 / batch %2 x %3 layers%4")
                              .arg(formatBytesQ(r.allocatedPoolBytes, units))
                              .arg(r.batch)
                              .arg(layers)
                              .arg(known ? QString() : QObject::tr(" (model unknown: 1 layer)"));
        if (perGpu != perRequest)
            scaling += QObject::tr(", / %1 GPUs (KV heads split)").arg(tp);
        MeasuredPoint p;
        p.x = double(r.context);
        const QString head =
            QObject::tr("Measured %1 on %2, %3 x %4 tokens")
                .arg(QString::fromStdString(r.formatLabel), QString::fromStdString(r.device))
                .arg(r.batch)
                .arg(formatTokensQ(r.context));
        if (kind == CurveKind::Memory) {
            p.y = perGpu;
            p.tooltip = QObject::tr("%1\n%2 per request (%3 B)\n= %4")
                            .arg(head, formatBytesQ(perGpu, units),
                                 thousandsQ(std::llround(perGpu)), scaling);
        } else {
            if (available <= 0 || perGpu <= 0)
                continue;
            const double fit = std::floor(double(available) / perGpu);
            if (fit < 1)
                continue;
            p.y = fit;
            p.tooltip =
                QObject::tr("%1\n%2 requests fit: memory for KV %3 / measured %4 per "
                            "request\n(%5)")
                    .arg(head, thousandsQ(std::llround(fit)), formatBytesQ(available, units),
                         formatBytesQ(perGpu, units), scaling);
        }
        auto it = byFormat.find(r.formatId);
        if (it == byFormat.end()) {
            MeasuredSeries ms;
            ms.name = QObject::tr("Measured %1 (%2)")
                          .arg(QString::fromStdString(r.formatLabel), backendLabel(report));
            ms.formatId = r.formatId;
            ms.colorIndex = formatColorIndex(r.formatId);
            it = byFormat.emplace(r.formatId, out.size()).first;
            out.push_back(std::move(ms));
        }
        out[it->second].points.push_back(std::move(p));
    }
    for (auto& ms : out)
        std::stable_sort(ms.points.begin(), ms.points.end(),
                         [](const MeasuredPoint& a, const MeasuredPoint& b) { return a.x < b.x; });
    return out;
}

} // namespace kvl::widgets
