#include "widgets/scenario/token_spin_box.h"

#include "core/names.h"
#include "core/units.h"

#include <QLineEdit>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>

namespace kvl::widgets {

std::optional<std::int64_t> parseTokens(const QString& input) {
    // The command line reads the same text with the same function (core::parseTokenCount);
    // the box holds an int.
    const auto v = core::parseTokenCount(input.trimmed().toStdString());
    if (!v || *v > 2'000'000'000)
        return std::nullopt;
    return v;
}

TokenSpinBox::TokenSpinBox(QWidget* parent) : QSpinBox(parent) {
    setRange(0, 1 << 20);
    setAccelerated(true);
    setKeyboardTracking(false); // typing "32K" commits on Enter / focus out, not per keystroke
    setCorrectionMode(QAbstractSpinBox::CorrectToNearestValue);
}

QString TokenSpinBox::textFromValue(int value) const {
    return QString::fromStdString(core::formatTokens(value));
}

int TokenSpinBox::valueFromText(const QString& text) const {
    QString t = text;
    if (!specialValueText().isEmpty() && t == specialValueText())
        return minimum();
    const auto v = parseTokens(t);
    return v ? static_cast<int>(std::clamp<std::int64_t>(*v, minimum(), maximum())) : value();
}

QValidator::State TokenSpinBox::validate(QString& input, int&) const {
    if (!specialValueText().isEmpty() && input == specialValueText())
        return QValidator::Acceptable;
    if (input.trimmed().isEmpty())
        return QValidator::Intermediate;
    const auto v = parseTokens(input);
    if (!v) {
        // Allow partial input such as "1." while typing.
        static const QRegularExpression partial(QStringLiteral("^[0-9][0-9,]*\\.?[0-9]*[kKmM]?$"));
        return partial.match(input.trimmed()).hasMatch() ? QValidator::Intermediate
                                                         : QValidator::Invalid;
    }
    return (*v >= minimum() && *v <= maximum()) ? QValidator::Acceptable : QValidator::Intermediate;
}

const std::vector<std::int64_t>& contextSliderStops() {
    static const std::vector<std::int64_t> stops = [] {
        std::vector<std::int64_t> v;
        for (std::int64_t p = 256; p < (std::int64_t{1} << 20); p *= 2)
            for (std::int64_t q : {4, 5, 6, 7})
                v.push_back(p * q / 4);
        v.push_back(std::int64_t{1} << 20);
        return v;
    }();
    return stops;
}

int sliderPositionFor(std::int64_t tokens) {
    const auto& s = contextSliderStops();
    const auto it = std::upper_bound(s.begin(), s.end(), tokens);
    return std::max(0, static_cast<int>(it - s.begin()) - 1);
}

std::int64_t tokensAtSliderPosition(int position) {
    const auto& s = contextSliderStops();
    return s[static_cast<std::size_t>(
        std::clamp<int>(position, 0, static_cast<int>(s.size()) - 1))];
}

} // namespace kvl::widgets
