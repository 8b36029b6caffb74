#pragma once
// Text helpers of kvledger's command line, shared by its help and its tables. printable(),
// the third, is public (app/cli.h).

#include <ostream>
#include <string>

namespace kvl::app::cli {

// `v` with exactly `decimals` decimals ("%.*f").
std::string fixed(double v, int decimals);

// Words of `text` from column `col`, wrapped at `width` with continuation lines indented by
// `indent`.
void wrapped(std::ostream& out, const std::string& text, int col, int indent);

} // namespace kvl::app::cli
