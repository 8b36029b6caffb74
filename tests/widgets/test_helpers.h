#pragma once
// Driving real controls with QTest: groups are toggled by clicking their check box, combos and
// spin boxes through the keyboard, as a user would. And what the export suites read back, and
// a counter of the paints a change causes, and how far two pictures differ.

#include <QByteArray>
#include <QComboBox>
#include <QEvent>
#include <QFile>
#include <QGroupBox>
#include <QImage>
#include <QLineEdit>
#include <QObject>
#include <QSlider>
#include <QSpinBox>
#include <QStyle>
#include <QStyleOptionGroupBox>
#include <QTest>

#include <algorithm>
#include <cstdlib>

namespace kvl::test {

// Counts the paint events of the widgets it is installed on as an event filter (QWidget::grab
// paints too: turn `counting` off around it).
struct PaintCounter : QObject {
    int paints = 0;
    bool counting = true;
    bool eventFilter(QObject*, QEvent* e) override {
        paints += counting && e->type() == QEvent::Paint ? 1 : 0;
        return false;
    }
};

inline void clickGroupCheck(QGroupBox* box) {
    QStyleOptionGroupBox opt;
    opt.initFrom(box);
    opt.text = box->title();
    opt.lineWidth = 1;
    opt.midLineWidth = 0;
    opt.textAlignment = Qt::Alignment(box->alignment());
    opt.subControls =
        QStyle::SC_GroupBoxFrame | QStyle::SC_GroupBoxCheckBox | QStyle::SC_GroupBoxLabel;
    opt.features = box->isFlat() ? QStyleOptionFrame::Flat : QStyleOptionFrame::None;
    const QRect r =
        box->style()->subControlRect(QStyle::CC_GroupBox, &opt, QStyle::SC_GroupBoxCheckBox, box);
    QTest::mouseClick(box, Qt::LeftButton, Qt::NoModifier, r.center());
}

inline void setGroupChecked(QGroupBox* box, bool on) {
    if (box->isChecked() != on)
        clickGroupCheck(box);
}

// Selects the item holding `data` with Home + Down keys (a non-editable combo).
inline bool selectComboData(QComboBox* combo, const QVariant& data) {
    const int target = combo->findData(data);
    if (target < 0)
        return false;
    combo->setFocus();
    if (combo->currentIndex() == target)
        return true;
    QTest::keyClick(combo, Qt::Key_Home);
    for (int i = 0; i < target && combo->currentIndex() != target; ++i)
        QTest::keyClick(combo, Qt::Key_Down);
    return combo->currentIndex() == target;
}

// Replaces the text of a spin box and presses Enter.
inline void typeInto(QAbstractSpinBox* spin, const QString& text) {
    spin->setFocus();
    QLineEdit* edit = spin->findChild<QLineEdit*>();
    QTest::keyClick(edit, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClick(edit, Qt::Key_Backspace);
    QTest::keyClicks(edit, text);
    QTest::keyClick(edit, Qt::Key_Return);
}

// A file's bytes (empty when it cannot be read).
inline QByteArray readFileBytes(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// kvprobe's results of a quick CPU bench: what the measured charts and the table are drawn from.
inline const QString kProbeResultsFile =
    QStringLiteral(KVL_SOURCE_DIR "/tests/fuzz/corpus/probe_results/cpu-bench-quick.json");

// The largest difference of any channel of any pixel (premultiplied ARGB), 0 to 255.
inline int largestDifference(const QImage& a, const QImage& b) {
    if (a.size() != b.size())
        return 256;
    const QImage x = a.convertToFormat(QImage::Format_ARGB32_Premultiplied);
    const QImage y = b.convertToFormat(QImage::Format_ARGB32_Premultiplied);
    int worst = 0;
    for (int row = 0; row < x.height(); ++row) {
        const auto* p = reinterpret_cast<const QRgb*>(x.constScanLine(row));
        const auto* q = reinterpret_cast<const QRgb*>(y.constScanLine(row));
        for (int col = 0; col < x.width(); ++col)
            worst = std::max({worst, std::abs(qRed(p[col]) - qRed(q[col])),
                              std::abs(qGreen(p[col]) - qGreen(q[col])),
                              std::abs(qBlue(p[col]) - qBlue(q[col])),
                              std::abs(qAlpha(p[col]) - qAlpha(q[col]))});
    }
    return worst;
}

} // namespace kvl::test
