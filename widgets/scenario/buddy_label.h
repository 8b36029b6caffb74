#pragma once
// A form's label whose mnemonic ("&Users:") gives its field the keyboard focus: the input rows
// of the Deployment and Traffic tabs.

#include <QLabel>

namespace kvl::widgets {

inline QLabel* buddyLabel(const QString& text, QWidget* buddy) {
    auto* l = new QLabel(text);
    l->setBuddy(buddy);
    return l;
}

} // namespace kvl::widgets
