#pragma once
// A table model whose cells print byte counts in the window's units (binary or decimal), as the
// deployment plan and the probe results do: a change of units changes the text of every cell
// and nothing else, so the views are told that every cell changed.

#include "core/units.h"

#include <QAbstractTableModel>

namespace kvl::widgets {

class UnitsTableModel : public QAbstractTableModel {
public:
    using QAbstractTableModel::QAbstractTableModel;

    void setUnits(core::UnitSystem units) {
        if (units == m_units)
            return;
        m_units = units;
        if (rowCount() > 0)
            emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
    }

protected:
    core::UnitSystem m_units = core::UnitSystem::Binary;
};

} // namespace kvl::widgets
