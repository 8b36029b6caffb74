#include "widgets/scenario/vllm_command.h"

#include "core/vllm_command.h"

namespace kvl::widgets {

namespace {

QStringList qlist(const std::vector<std::string>& v) {
    QStringList out;
    for (const auto& s : v)
        out << QString::fromStdString(s);
    return out;
}

core::VllmServeCommand toCore(const VllmCommand& c) {
    core::VllmServeCommand out;
    for (const QString& s : c.env)
        out.env.push_back(s.toStdString());
    for (const QString& s : c.args)
        out.args.push_back(s.toStdString());
    for (const QString& s : c.unsupported)
        out.notes.push_back(s.toStdString());
    return out;
}

} // namespace

QString huggingFaceRepo(const core::ModelSpec& model) {
    return QString::fromStdString(core::huggingFaceRepo(model));
}

VllmCommand vllmCommand(const core::Scenario& s) {
    const core::VllmServeCommand c = core::vllmServeCommand(s);
    return {qlist(c.env), qlist(c.args), qlist(c.notes)};
}

QString VllmCommand::text() const {
    return QString::fromStdString(toCore(*this).text());
}

} // namespace kvl::widgets
