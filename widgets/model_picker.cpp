#include "model_picker.h"

#include "ledger_view_state.h"

#include <QAbstractItemView>
#include <QComboBox>
#include <QCompleter>
#include <QLineEdit>
#include <QStandardItemModel>
#include <QStringListModel>
#include <QVBoxLayout>

#include <map>

namespace kvl::widgets {

namespace {
constexpr int IdRole = Qt::UserRole + 1;
}

ModelPicker::ModelPicker(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    m_search = new QLineEdit(this);
    m_search->setObjectName(QStringLiteral("modelSearch"));
    m_search->setPlaceholderText(tr("Search models (name, family, id)..."));
    m_search->setClearButtonEnabled(true);
    m_search->setToolTip(tr("Type any part of a model's name and pick it from the list"));
    m_combo = new QComboBox(this);
    m_combo->setObjectName(QStringLiteral("modelCombo"));
    m_combo->setMaxVisibleItems(24);
    m_combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_combo->setMinimumContentsLength(16);
    m_items = new QStandardItemModel(this);
    m_combo->setModel(m_items);
    m_completer = new QCompleter(this);
    m_completer->setModel(new QStringListModel(this));
    m_completer->setCaseSensitivity(Qt::CaseInsensitive);
    m_completer->setFilterMode(Qt::MatchContains);
    m_completer->setCompletionMode(QCompleter::PopupCompletion);
    m_search->setCompleter(m_completer);
    layout->addWidget(m_search);
    layout->addWidget(m_combo);

    connect(m_combo, &QComboBox::currentIndexChanged, this, [this](int) {
        if (m_rebuilding)
            return;
        if (const core::ModelSpec* m = currentModel())
            emit modelChosen(*m);
    });
    connect(m_completer, qOverload<const QString&>(&QCompleter::activated), this,
            [this](const QString& text) {
                chooseBySearch(text);
                m_search->clear();
            });
    connect(m_search, &QLineEdit::returnPressed, this, [this] {
        if (chooseBySearch(m_search->text()))
            m_search->clear();
    });
}

QString ModelPicker::describe(const core::ModelSpec& m) {
    if (m.isMla())
        return tr("%1 L · MLA latent %2+%3")
            .arg(m.numLayers())
            .arg(m.kvLoraRank)
            .arg(m.qkRopeHeadDim);
    return tr("%1 L · %2 q / %3 KV heads · d %4")
        .arg(m.numLayers())
        .arg(m.qHeads)
        .arg(m.kvHeads)
        .arg(m.headDim);
}

void ModelPicker::setModels(const std::vector<core::ModelSpec>& models) {
    m_models = models;
    rebuild();
}

void ModelPicker::addImported(const core::ModelSpec& model) {
    auto it = std::find_if(m_imported.begin(), m_imported.end(),
                           [&](const core::ModelSpec& m) { return m.id == model.id; });
    if (it != m_imported.end())
        *it = model;
    else
        m_imported.push_back(model);
    rebuild();
    setCurrentId(qs(model.id));
}

void ModelPicker::rebuild() {
    const QString current = currentId();
    m_rebuilding = true;
    m_items->clear();
    QStringList names;
    // Families in catalog order, models in catalog order within a family.
    std::vector<std::pair<QString, std::vector<const core::ModelSpec*>>> groups;
    auto add = [&](const core::ModelSpec& m, const QString& family) {
        auto g =
            std::find_if(groups.begin(), groups.end(), [&](auto& p) { return p.first == family; });
        if (g == groups.end()) {
            groups.push_back({family, {}});
            g = groups.end() - 1;
        }
        g->second.push_back(&m);
    };
    for (const auto& m : m_models)
        add(m, m.family.empty() ? tr("Other") : qs(m.family));
    for (const auto& m : m_imported)
        add(m, tr("Imported"));
    for (const auto& [family, models] : groups) {
        auto* header = new QStandardItem(family);
        header->setFlags(Qt::NoItemFlags); // a group title, not a choice
        QFont f = font();
        f.setBold(true);
        header->setFont(f);
        header->setData(QString(), IdRole);
        m_items->appendRow(header);
        for (const core::ModelSpec* m : models) {
            auto* item =
                new QStandardItem(QStringLiteral("    %1   (%2)").arg(qs(m->name), describe(*m)));
            item->setData(qs(m->id), IdRole);
            item->setToolTip(qs(m->geometrySummary()) +
                             (m->notes.empty() ? QString() : QStringLiteral("\n") + qs(m->notes)));
            m_items->appendRow(item);
            names << qs(m->name);
        }
    }
    static_cast<QStringListModel*>(m_completer->model())->setStringList(names);
    m_rebuilding = false;
    if (!current.isEmpty())
        setCurrentId(current);
}

bool ModelPicker::setCurrentId(const QString& id) {
    for (int row = 0; row < m_items->rowCount(); ++row) {
        if (m_items->item(row)->data(IdRole).toString().compare(id, Qt::CaseInsensitive) == 0 &&
            !id.isEmpty()) {
            if (m_combo->currentIndex() != row)
                m_combo->setCurrentIndex(row);
            return true;
        }
    }
    const bool wasRebuilding = m_rebuilding;
    m_rebuilding = true;
    m_combo->setCurrentIndex(-1);
    m_rebuilding = wasRebuilding;
    return false;
}

QString ModelPicker::currentId() const {
    const int row = m_combo->currentIndex();
    if (row < 0 || row >= m_items->rowCount())
        return {};
    return m_items->item(row)->data(IdRole).toString();
}

const core::ModelSpec* ModelPicker::modelById(const QString& id) const {
    if (id.isEmpty())
        return nullptr;
    for (const auto& m : m_imported)
        if (qs(m.id).compare(id, Qt::CaseInsensitive) == 0)
            return &m;
    for (const auto& m : m_models)
        if (qs(m.id).compare(id, Qt::CaseInsensitive) == 0)
            return &m;
    return nullptr;
}

const core::ModelSpec* ModelPicker::currentModel() const {
    return modelById(currentId());
}

bool ModelPicker::chooseBySearch(const QString& text) {
    const QString t = text.trimmed();
    if (t.isEmpty())
        return false;
    auto matches = [&](const core::ModelSpec& m, bool exact) {
        if (exact)
            return qs(m.name).compare(t, Qt::CaseInsensitive) == 0 ||
                   qs(m.id).compare(t, Qt::CaseInsensitive) == 0;
        return qs(m.name).contains(t, Qt::CaseInsensitive) ||
               qs(m.id).contains(t, Qt::CaseInsensitive) ||
               qs(m.family).contains(t, Qt::CaseInsensitive);
    };
    for (bool exact : {true, false}) {
        for (const auto* list : {&m_imported, &m_models})
            for (const auto& m : *list)
                if (matches(m, exact))
                    return setCurrentId(qs(m.id));
    }
    return false;
}

} // namespace kvl::widgets
