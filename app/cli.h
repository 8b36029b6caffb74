#pragma once
// The headless commands of kvledger: `ledger`, `models`, `gpus`. No display needed.

#include <ostream>
#include <string>
#include <vector>

namespace kvl::app {

// Runs `kvledger <command> args...` when command is one of the headless ledger commands.
// Returns the process exit code (0 ok, 2 bad input); sets handled = false for other commands.
int runLedgerCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                 bool& handled);

} // namespace kvl::app
