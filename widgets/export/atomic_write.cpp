#include "widgets/export/atomic_write.h"

#include <QCoreApplication>
#include <QDir>
#include <QSaveFile>

namespace kvl::widgets {

namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("kvl::widgets::AtomicWrite", text);
}

Error ioError(const QString& path, const QString& why) {
    return makeError(
        ErrorCode::Io,
        tr("Could not write %1: %2").arg(QDir::toNativeSeparators(path), why).toStdString());
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

Status writeFileAtomically(const QString& path, const QByteArray& bytes, FileKind kind) {
    if (auto ok = verifyFileContent(bytes, kind, path); !ok)
        return ok;
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return ioError(path, file.errorString());
    auto fail = [&] {
        const QString why = file.errorString();
        file.cancelWriting(); // commit() will not replace the file now
        return ioError(path, why);
    };
    for (qsizetype done = 0; done < bytes.size();) {
        const qint64 n = file.write(bytes.constData() + done, bytes.size() - done);
        if (n <= 0)
            return fail();
        done += n;
    }
    if (!file.flush())
        return fail();
    if (!file.commit())
        return ioError(path, file.errorString());
    return {};
}

} // namespace kvl::widgets
