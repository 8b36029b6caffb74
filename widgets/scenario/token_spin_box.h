#pragma once
// Token counts for people: a spin box that reads and writes "32K", "1M", "8000", and the
// context slider's log scale (256 .. 1M at 1, 1.25, 1.5, 1.75 x each power of two).

#include <QSpinBox>

#include <cstdint>
#include <optional>
#include <vector>

namespace kvl::widgets {

// "32K" -> 32768, "1.5k" -> 1536, "1M" -> 1048576, "8,000" -> 8000; nothing when not a count.
std::optional<std::int64_t> parseTokens(const QString& text);

class TokenSpinBox : public QSpinBox {
    Q_OBJECT
public:
    explicit TokenSpinBox(QWidget* parent = nullptr);

protected:
    QString textFromValue(int value) const override;
    int valueFromText(const QString& text) const override;
    QValidator::State validate(QString& input, int& pos) const override;
};

// The slider positions: exact token counts, log-spaced.
const std::vector<std::int64_t>& contextSliderStops();
int sliderPositionFor(std::int64_t tokens); // nearest stop at or below
std::int64_t tokensAtSliderPosition(int position);

} // namespace kvl::widgets
