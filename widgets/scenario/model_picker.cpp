#include "widgets/scenario/model_picker.h"

#include "widgets/state/ledger_view_state.h"

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
    m_search->setPlaceholderText(tr("Search: llama 70, mla, sliding, moe..."));
    m_search->setClearButtonEnabled(true);
    m_search->setToolTip(tr("Words in any order: parts of the name, id, family or repository, "
                            "and attention kinds (mla, sliding, chunked, hybrid, mamba, moe, "
                            "gqa, mha, mqa)"));
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
    // The list is filtered here (words in any order), so the completer shows it as it is.
    m_completer->setCompletionMode(QCompleter::UnfilteredPopupCompletion);
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
    connect(m_search, &QLineEdit::textEdited, this, &ModelPicker::updateCompletions);
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
        }
    }
    if (!m_search->text().isEmpty())
        updateCompletions(m_search->text());
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

QString ModelPicker::searchText(const core::ModelSpec& m) {
    QStringList words{qs(m.name), qs(m.id), qs(m.family), qs(m.hfRepo)};
    if (m.isMla())
        words << QStringLiteral("mla latent");
    if (m.countLayers(core::LayerKind::Sliding) > 0)
        words << QStringLiteral("sliding swa window");
    if (m.countLayers(core::LayerKind::Chunked) > 0)
        words << QStringLiteral("chunked local");
    if (m.countLayers(core::LayerKind::State) > 0 && m.state) {
        // Named by what the state is: Mamba's SSM, Qwen3-Next's gated delta net (linear
        // attention) or LFM2's short convolution, so "mamba" does not list Qwen3.5.
        switch (m.state->kind) {
        case core::StateKind::Mamba1:
        case core::StateKind::Mamba2:
            words << QStringLiteral("mamba ssm state");
            break;
        case core::StateKind::GatedDeltaNet:
            words << QStringLiteral("gdn gated delta net linear state");
            break;
        case core::StateKind::ShortConv:
            words << QStringLiteral("short conv state");
            break;
        }
        if (m.countLayers(core::LayerKind::State) < m.numLayers())
            words << QStringLiteral("hybrid");
    }
    if (m.isMoe())
        words << QStringLiteral("moe experts mixture");
    if (!m.isMla() && m.kvHeads > 0)
        words << (m.kvHeads == m.qHeads ? QStringLiteral("mha")
                  : m.kvHeads == 1      ? QStringLiteral("mqa")
                                        : QStringLiteral("gqa"));
    return words.join(QLatin1Char(' ')).toLower();
}

bool ModelPicker::matches(const core::ModelSpec& m, const QString& text) {
    const QStringList tokens = text.toLower().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    if (tokens.isEmpty())
        return false;
    const QString hay = searchText(m);
    for (const QString& t : tokens)
        if (!hay.contains(t))
            return false;
    return true;
}

QStringList ModelPicker::matchingIds(const QString& text) const {
    QStringList out;
    for (const auto* list : {&m_imported, &m_models})
        for (const auto& m : *list)
            if (matches(m, text))
                out << qs(m.id);
    return out;
}

void ModelPicker::updateCompletions(const QString& text) {
    QStringList names;
    for (const auto* list : {&m_imported, &m_models})
        for (const auto& m : *list)
            if (matches(m, text))
                names << qs(m.name);
    static_cast<QStringListModel*>(m_completer->model())->setStringList(names);
    if (!names.isEmpty() && m_search->hasFocus())
        m_completer->complete();
}

void ModelPicker::clearSearch() {
    m_search->clear();
    static_cast<QStringListModel*>(m_completer->model())->setStringList({});
}

bool ModelPicker::chooseBySearch(const QString& text) {
    const QString t = text.trimmed();
    if (t.isEmpty())
        return false;
    for (const auto* list : {&m_imported, &m_models})
        for (const auto& m : *list)
            if (qs(m.name).compare(t, Qt::CaseInsensitive) == 0 ||
                qs(m.id).compare(t, Qt::CaseInsensitive) == 0)
                return setCurrentId(qs(m.id));
    const QStringList ids = matchingIds(t);
    return !ids.isEmpty() && setCurrentId(ids.first());
}

} // namespace kvl::widgets
