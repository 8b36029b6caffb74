#include "text.h"

#include "app/cli.h"

#include <cstdio>
#include <sstream>

namespace kvl::app {

namespace cli {

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

void wrapped(std::ostream& out, const std::string& text, int col, int indent) {
    constexpr int kWidth = 100;
    std::istringstream words(text);
    std::string w;
    bool first = true;
    while (words >> w) {
        if (!first && col + 1 + static_cast<int>(w.size()) > kWidth) {
            out << "\n" << std::string(static_cast<std::size_t>(indent), ' ');
            col = indent;
            first = true;
        }
        if (!first) {
            out << ' ';
            ++col;
        }
        out << w;
        col += static_cast<int>(w.size());
        first = false;
    }
    out << "\n";
}

} // namespace cli

std::string printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += ch;
        }
    }
    return out;
}

} // namespace kvl::app
