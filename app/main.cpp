#include "cli.h"

#include <iostream>

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    bool handled = false;
    const int rc = kvl::app::runLedgerCli(args, std::cout, std::cerr, handled);
    if (handled)
        return rc;
    std::cerr << "kvledger: the window is not built yet\n";
    return 2;
}
