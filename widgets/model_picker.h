#pragma once
// The model picker: the catalog grouped by family (with each model's layers, q / KV heads and
// head_dim), a search field that completes on any part of the name, and imported models.

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
    // Chooses the first model whose name or id contains `text` (the search field's action).
    bool chooseBySearch(const QString& text);

    QComboBox* comboBox() const { return m_combo; }
    QLineEdit* searchField() const { return m_search; }

    static QString describe(const core::ModelSpec& m); // "32 L · 32 q / 8 KV heads · d 128"

signals:
    void modelChosen(const kvl::core::ModelSpec& model);

private:
    void rebuild();
    std::vector<core::ModelSpec> m_models;
    std::vector<core::ModelSpec> m_imported;
    QComboBox* m_combo = nullptr;
    QLineEdit* m_search = nullptr;
    QStandardItemModel* m_items = nullptr;
    QCompleter* m_completer = nullptr;
    bool m_rebuilding = false;
};

} // namespace kvl::widgets
