#pragma once
// The model picker: the catalog grouped by family (with each model's layers, q / KV heads and
// head_dim), a search field that matches words in any order against the name, id, family,
// repository and the attention kinds ("llama 70", "mla", "sliding", "hybrid", "moe"), and
// imported models.

#include "core/model.h"

#include <QWidget>

#include <vector>

class QComboBox;
class QLineEdit;
class QStandardItemModel;
class QCompleter;

namespace kvl::widgets {

class ModelPicker : public QWidget {
    Q_OBJECT
public:
    explicit ModelPicker(QWidget* parent = nullptr);

    void setModels(const std::vector<core::ModelSpec>& models);
    // Adds (or replaces, by id) a model under the "Imported" family and selects it.
    void addImported(const core::ModelSpec& model);
    // Selects the entry with this id; false when absent (the picker then shows nothing).
    bool setCurrentId(const QString& id);
    QString currentId() const;
    const core::ModelSpec* currentModel() const;
    const core::ModelSpec* modelById(const QString& id) const;
    // Chooses the first model matching `text` (the search field's action): an exact name or
    // id first, then every word of `text` found in searchText().
    bool chooseBySearch(const QString& text);
    // The ids of the models matching `text`, in picker order (imported first).
    QStringList matchingIds(const QString& text) const;
    void clearSearch();
    // What a search looks in (lower case): name, id, family, repository and the kinds of
    // attention the model has ("mla", "sliding swa", "chunked", "hybrid mamba state", "moe",
    // "gqa" / "mha" / "mqa").
    static QString searchText(const core::ModelSpec& m);
    static bool matches(const core::ModelSpec& m, const QString& text);

    QComboBox* comboBox() const { return m_combo; }
    QLineEdit* searchField() const { return m_search; }

    static QString describe(const core::ModelSpec& m); // "32 L · 32 q / 8 KV heads · d 128"

signals:
    void modelChosen(const kvl::core::ModelSpec& model);

private:
    void rebuild();
    void updateCompletions(const QString& text);
    std::vector<core::ModelSpec> m_models;
    std::vector<core::ModelSpec> m_imported;
    QComboBox* m_combo = nullptr;
    QLineEdit* m_search = nullptr;
    QStandardItemModel* m_items = nullptr;
    QCompleter* m_completer = nullptr;
    bool m_rebuilding = false;
};

} // namespace kvl::widgets
