#pragma once
// kvledger's CLI run in-process for the CLI tests: exit code, stdout and stderr.

#include "app/cli.h"

#include <QString>
#include <QStringList>

#include <sstream>
#include <string>
#include <vector>

namespace kvl::test {

struct Run {
    int rc = -1;
    QString out;
    QString err;
};

inline Run run(const QStringList& args) {
    std::vector<std::string> a;
    for (const auto& s : args)
        a.push_back(s.toStdString());
    std::ostringstream out, err;
    bool handled = false;
    Run r;
    r.rc = kvl::app::runLedgerCli(a, out, err, handled);
    r.out = QString::fromStdString(out.str());
    r.err = QString::fromStdString(err.str());
    return r;
}

} // namespace kvl::test
