#include "widgets/export/atomic_write.h"

#include "core/io/files.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

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
    switch (kind) {
    case FileKind::Data:
        return {};
    case FileKind::Png:
        return QStringLiteral("png");
    case FileKind::Pdf:
        return QStringLiteral("pdf");
    case FileKind::Svg:
        return QStringLiteral("svg");
    }
    return {};
}

Status writeFileAtomically(const QString& path, const QByteArray& bytes, FileKind kind) {
    if (path.isEmpty())
        return makeError(ErrorCode::BadInput,
                         tr("Could not write: no file name given").toStdString());
    if (auto ok = verifyFileContent(bytes, kind, path); !ok)
        return ok;
    if (const QString suffix = fileKindSuffix(kind);
        !suffix.isEmpty() && QFileInfo(path).suffix().compare(suffix, Qt::CaseInsensitive) != 0) {
        const QString what = kind == FileKind::Png   ? tr("a PNG image")
                             : kind == FileKind::Pdf ? tr("a PDF document")
                                                     : tr("an SVG image");
        return makeError(ErrorCode::BadInput, tr("Could not write %1: %2 is named *.%3")
                                                  .arg(QDir::toNativeSeparators(path), what, suffix)
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
