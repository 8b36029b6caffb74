#include "widgets/export/atomic_write.h"

#include "core/io/files.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <array>

namespace kvl::widgets {

namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("kvl::widgets::AtomicWrite", text);
}

// The trailer must sit within the last few bytes (writers may end with a newline or two).
bool endsWithin(const QByteArray& bytes, const QByteArray& trailer, qsizetype slack) {
    const qsizetype from = std::max<qsizetype>(0, bytes.size() - trailer.size() - slack);
    return bytes.indexOf(trailer, from) >= 0;
}

// What a file of each kind (in FileKind's order) is named: the suffix it must have (none for
// Data) and the kind as an error calls it, both in one place so that a new kind names both.
struct KindName {
    const char* suffix;
    const char* what;
};
constexpr std::array<KindName, 4> kKindNames{{
    {nullptr, nullptr},
    {"png", QT_TRANSLATE_NOOP("kvl::widgets::AtomicWrite", "a PNG image")},
    {"pdf", QT_TRANSLATE_NOOP("kvl::widgets::AtomicWrite", "a PDF document")},
    {"svg", QT_TRANSLATE_NOOP("kvl::widgets::AtomicWrite", "an SVG image")},
}};

static_assert(kKindNames.size() == static_cast<std::size_t>(FileKind::Svg) + 1,
              "a row for each FileKind, in its order");

const KindName& kindName(FileKind kind) {
    return kKindNames[static_cast<std::size_t>(kind)];
}

} // namespace

Status verifyFileContent(const QByteArray& bytes, FileKind kind, const QString& path) {
    QString problem;
    switch (kind) {
    case FileKind::Data:
        return {};
    case FileKind::Png:
        // PNG file signature and the IEND chunk (type + CRC, the last 8 bytes): ISO/IEC 15948.
        if (!bytes.startsWith("\x89PNG\r\n\x1a\n") || !endsWithin(bytes, "IEND", 4))
            problem = tr("the PNG image is incomplete");
        break;
    case FileKind::Pdf:
        // A PDF starts with its "%PDF-1.x" header and ends with "%%EOF" (ISO 32000-1, 7.5).
        if (!bytes.startsWith("%PDF-") || !endsWithin(bytes, "%%EOF", 8))
            problem = tr("the PDF document is incomplete");
        break;
    case FileKind::Svg:
        if (!(bytes.startsWith("<?xml") || bytes.startsWith("<svg")) ||
            !endsWithin(bytes, "</svg>", 8))
            problem = tr("the SVG image is incomplete");
        break;
    }
    if (problem.isEmpty())
        return {};
    return makeError(
        ErrorCode::Internal,
        tr("Could not render %1: %2").arg(QDir::toNativeSeparators(path), problem).toStdString());
}

QString fileKindSuffix(FileKind kind) {
    const char* suffix = kindName(kind).suffix;
    return suffix ? QString::fromLatin1(suffix) : QString();
}

Status writeFileAtomically(const QString& path, const QByteArray& bytes, FileKind kind) {
    if (path.isEmpty())
        return makeError(ErrorCode::BadInput,
                         tr("Could not write: no file name given").toStdString());
    if (auto ok = verifyFileContent(bytes, kind, path); !ok)
        return ok;
    if (const QString suffix = fileKindSuffix(kind);
        !suffix.isEmpty() && QFileInfo(path).suffix().compare(suffix, Qt::CaseInsensitive) != 0) {
        return makeError(ErrorCode::BadInput,
                         tr("Could not write %1: %2 is named *.%3")
                             .arg(QDir::toNativeSeparators(path), tr(kindName(kind).what), suffix)
                             .toStdString());
    }
    const auto written =
        io::replaceFile(QFile::encodeName(path).toStdString(),
                        std::string_view(bytes.constData(), std::size_t(bytes.size())));
    if (!written)
        return Error{written.error().code, tr("Could not write %1")
                                               .arg(QString::fromStdString(written.error().message))
                                               .toStdString()};
    return {};
}

} // namespace kvl::widgets
