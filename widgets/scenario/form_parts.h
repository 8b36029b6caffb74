#pragma once
// The parts the panels' forms are made of: a label whose mnemonic ("&Users:") gives its field
// the keyboard focus, rows of such labelled fields (the input grids of the Deployment and
// Traffic tabs), a push button and a spin box with the object name the tests and style sheets
// find them by, and the table view the tabs show their results in.

#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLayout>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>

#include <initializer_list>

namespace kvl::widgets {

inline QLabel* buddyLabel(const QString& text, QWidget* buddy) {
    auto* l = new QLabel(text);
    l->setBuddy(buddy);
    return l;
}

// One field of an input row: its label, the widget the label's mnemonic focuses and, where the
// field is more than that widget (a spin box with its share beside it), the layout shown.
struct LabelledField {
    QString label;
    QWidget* field;
    QLayout* layout = nullptr;
};

// Puts `fields` in row `row` of `grid`, each after its label: columns 0 and 1, 2 and 3, ...
inline void addLabelledRow(QGridLayout* grid, int row,
                           std::initializer_list<LabelledField> fields) {
    int column = 0;
    for (const LabelledField& f : fields) {
        grid->addWidget(buddyLabel(f.label, f.field), row, column);
        if (f.layout)
            grid->addLayout(f.layout, row, column + 1);
        else
            grid->addWidget(f.field, row, column + 1);
        column += 2;
    }
}

// A push button named `objectName`, with `toolTip` where it says more than its text.
inline QPushButton* namedButton(const QString& text, const char* objectName,
                                const QString& toolTip = {}, QWidget* parent = nullptr) {
    auto* b = new QPushButton(text, parent);
    b->setObjectName(QLatin1String(objectName));
    if (!toolTip.isEmpty())
        b->setToolTip(toolTip);
    return b;
}

// A spin box named `objectName` holding `value` in [lo, hi], with `toolTip`.
inline QSpinBox* namedSpin(const char* objectName, int lo, int hi, int value,
                           const QString& toolTip) {
    auto* s = new QSpinBox;
    s->setObjectName(QLatin1String(objectName));
    s->setRange(lo, hi);
    s->setValue(value);
    s->setToolTip(toolTip);
    return s;
}

// A table view of `model` named `objectName`, as the Engines, Deployment and Probe tabs show
// their results: rows striped, each cell on one line, no row numbers.
inline QTableView* resultsTable(QAbstractItemModel* model, const char* objectName,
                                QWidget* parent = nullptr) {
    auto* t = new QTableView(parent);
    t->setObjectName(QLatin1String(objectName));
    t->setModel(model);
    t->setAlternatingRowColors(true);
    t->setWordWrap(false);
    t->verticalHeader()->setVisible(false);
    return t;
}

} // namespace kvl::widgets
