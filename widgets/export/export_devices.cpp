#include "widgets/export/export_devices.h"

#include <QImage>
#include <QPageLayout>
#include <QPageSize>
#include <QPdfWriter>
#include <QSvgGenerator>

#include <cmath>

namespace kvl::widgets {

void setUpPdfWriter(QPdfWriter& writer, QSize size, const QString& title) {
    writer.setResolution(96);
    writer.setCreator(QStringLiteral("KV Ledger"));
    writer.setTitle(title);
    writer.setPageLayout(
        QPageLayout(QPageSize(QSizeF(size), QPageSize::Point, QString(), QPageSize::ExactMatch),
                    QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
}

void setUpSvgGenerator(QSvgGenerator& generator, QIODevice* out, QSize size, const QString& title,
                       const QString& description) {
    generator.setOutputDevice(out);
    generator.setResolution(96);
    generator.setSize(size);
    generator.setViewBox(QRect(QPoint(0, 0), size));
    generator.setTitle(title);
    generator.setDescription(description);
}

void setScreenDpi(QImage& image) {
    const int dotsPerMeter = static_cast<int>(std::lround(96 / 0.0254));
    image.setDotsPerMeterX(dotsPerMeter);
    image.setDotsPerMeterY(dotsPerMeter);
}

FileKind fileKindOf(ExportFormat format) {
    switch (format) {
    case ExportFormat::Png:
        return FileKind::Png;
    case ExportFormat::Pdf:
        return FileKind::Pdf;
    case ExportFormat::Svg:
        return FileKind::Svg;
    case ExportFormat::Csv:
        break;
    }
    return FileKind::Data;
}

} // namespace kvl::widgets
