#pragma once
// The headless GUI commands: `kvledger export ...` and `kvledger --screenshot FILE ...`.
// They take the same scenario options as `kvledger ledger` and need no display.

#include <ostream>
#include <string>
#include <vector>

namespace kvl::app {

// True for the commands below (the caller then selects the offscreen platform when
// QT_QPA_PLATFORM is unset, before constructing QApplication).
bool isHeadlessGuiCommand(const std::vector<std::string>& args);

// Runs one of them; needs a QApplication. Returns the exit code (0 ok, 2 bad input, 1 failed).
int runHeadlessGuiCommand(const std::vector<std::string>& args, std::ostream& out,
                          std::ostream& err);

} // namespace kvl::app
