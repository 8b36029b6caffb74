#pragma once
// The one-line texts that name a scenario and the scope of its figures: the status line, the
// caption every exported chart carries, and the '#' comment lines CSV exports start with. All
// of them follow LedgerView.scope (per GPU, per replica, cluster) with scopeBytes and
// scopeRequests, so "KV per token x context" and "KV per request" agree in every scope.

#include "widgets/charts/chart_registry.h"
#include "widgets/state/ledger_view_state.h"

#include <QDate>
#include <QString>
#include <QStringList>

namespace kvl::widgets {

// "no shared prefix", or "shared prefix 2K x all requests" ("x 8 requests"): every capacity
// figure depends on it, so the status line and the export caption say which.
QString prefixText(const core::Scenario& s);
// "1 x H100 SXM 80GB (TP 1)", "12 x H100 SXM 80GB (TP 4 x PP 3)".
QString deploymentText(const core::Scenario& s);
// The stored KV format ("FP8 E4M3"), with " (not in vLLM)" when vLLM has no --kv-cache-dtype
// for it (core::vllmCacheDtype).
QString kvFormatText(const LedgerSnapshot& snap);
bool formatInVllm(const core::Scenario& s);

// "Llama-3-8B | GQA-8 | FP8 E4M3 | paged 16 | shared prefix 2K x all requests -> per GPU: 64
// KiB/token, 256 MiB/request
//  @4K | 1,234 requests per replica on 1 x H100 SXM 80GB (TP 1)"; for an invalid scenario
// "Not computed: <why>".
QString scopedSummaryLine(const LedgerSnapshot& snap, core::UnitSystem units, FigureScope scope);

// What the figures of a chart of scope `chart` are counted over when the window shows
// `selected`: "figures per GPU" (memory per GPU), "requests per replica" (concurrency, whatever
// the bytes' scope), "memory per GPU" (the breakdown), "one layer, as measured" (the probe).
QString chartScopeText(ChartScope chart, FigureScope selected);

// "Llama-3-8B · 1 x H100 SXM 80GB (TP 1) · KV FP8 E4M3 · context 4K · no shared prefix ·
//  figures per GPU ·
//  2026-05-01 · KV Ledger": the line under every exported chart; the scope words are the
// chart's own (chartScopeText of its registry entry).
QString exportCaption(const LedgerSnapshot& snap, FigureScope scope, ChartScope chart,
                      const QDate& date);
// The comment lines ("# ...") a CSV export starts with: the caption, then the scenario's
// levers and engine settings, then what the byte columns mean.
QStringList csvComments(const LedgerSnapshot& snap, FigureScope scope, ChartScope chart,
                        const QDate& date);
// `csv` with the comment lines in front.
QString withCsvComments(const QString& csv, const QStringList& comments);

} // namespace kvl::widgets
