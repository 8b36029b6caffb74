#pragma once
// The one way KV Ledger writes a file: scenario saves, CSV tables, PNG / SVG / PDF charts, the
// review report, probe results and screenshots are rendered to memory first, checked to be a
// complete file of their kind named for its kind, then handed to io::replaceFile
// (core/io/files.h), which kvprobe shares: it refuses a symbolic link or anything that is not
// a regular file (a device node, FIFO, socket, directory), keeps the mode of a file it
// replaces, checks every write() and the fsync(), and renames only a complete file over the
// old one, so that a full disk or a failed render never truncates the file that was there,
// and never reports success. Every error names the file and gives the OS's reason.
//
// (QSaveFile did this before: it follows a symbolic link and replaces its target, so an
// export to `ln -s /dev/null x.png` replaced /dev/null; it leaves a replaced 0444 file 0644,
// and says "not writable" where the OS says "Read-only file system".)

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

// The suffix a file of `kind` must have ("png"; empty for Data, which any name may hold).
QString fileKindSuffix(FileKind kind);

// Replaces `path` with `bytes` (after verifyFileContent, and after checking that a PNG, PDF or
// SVG file is named *.png, *.pdf or *.svg: a PDF never goes out as r.png) or leaves it exactly
// as it was. Errors: "Could not write /x/a.csv: No space left on device", "Could not write
// /x/n.png: is a character device, not a regular file", "Could not write /x/r.png: a PDF
// document is named *.pdf".
Status writeFileAtomically(const QString& path, const QByteArray& bytes,
                           FileKind kind = FileKind::Data);

} // namespace kvl::widgets
