#pragma once
// Help > Formulas: the ledger's arithmetic in one table, worded as core's sources state it
// (core/kv_format.h, core/kv_cache.h, core/ledger.h, core/deployment.h, after vLLM's
// kv_cache_interface.py and kv_cache_utils.py).

#include <QString>

namespace kvl::app {

// The formula table as HTML (a <table> of quantity, formula, where it comes from).
QString formulasHtml();

} // namespace kvl::app
