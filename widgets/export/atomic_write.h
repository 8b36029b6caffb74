#pragma once
// The one way KV Ledger writes a file: scenario saves, CSV tables, PNG / SVG / PDF charts, the
// review report, probe results and screenshots are rendered to memory first, checked to be a
// complete file of their kind, then written through QSaveFile with every write() and the
// flush() checked before commit(), so that a full disk or a failed render never truncates
// the file that was there, and never reports success.
//
// Qt 6.4's QSaveFile::commit() returns true after its own final flush failed (the buffered
// tail is lost and the short file replaces the original): flushing ourselves first and
// checking it is what makes commit() safe. On any failure the temporary file is discarded
// with cancelWriting() and the error names the file and the OS error (errorString()).

#include "core/result.h"

#include <QByteArray>
#include <QString>

namespace kvl::widgets {

// What the bytes must look like before they may replace a file.
enum class FileKind : std::uint8_t {
    Data, // any bytes (JSON, CSV); may be empty
    Png,  // the PNG signature and an IEND chunk at the end
    Pdf,  // "%PDF-" and a "%%EOF" trailer
    Svg,  // "<?xml" or "<svg", and a closing "</svg>"
};

// The one-line check, naming `path`: "could not render /x/a.pdf: the PDF is incomplete".
Status verifyFileContent(const QByteArray& bytes, FileKind kind, const QString& path);

// Replaces `path` with `bytes` (after verifyFileContent) or leaves it exactly as it was.
// Error: "Could not write /x/a.csv: No space left on device".
Status writeFileAtomically(const QString& path, const QByteArray& bytes,
                           FileKind kind = FileKind::Data);

} // namespace kvl::widgets
