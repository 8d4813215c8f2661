#pragma once
// Self-contained HTML pages (SPEC 9: report.html, compare.html): one file, CSS
// inline, charts as inline SVG, nothing fetched over the network. Every
// user-supplied string (scenario names, descriptions, --vary values) goes
// through html_escape(), so a scenario named `<script>...` is inert text.
#include <string>
#include <string_view>
#include <vector>

namespace kvsim {

// Escapes & < > " ' for use in HTML text and attribute values.
std::string html_escape(std::string_view text);

// A whole HTML document around `body_html` (already escaped/trusted markup).
// `scripts` are kvsim's own inline scripts (their text, no tags): each goes
// at the end of the body and its SHA-256 into the page's
// Content-Security-Policy, so they run and nothing else can.
std::string html_document(std::string_view title, const std::string& body_html,
                          const std::vector<std::string_view>& scripts = {});

// A table; every header and cell is escaped. Cells that parse as numbers are
// right-aligned.
std::string html_table(const std::vector<std::string>& headers,
                       const std::vector<std::vector<std::string>>& rows);

// A figure holding an inline SVG chart (trusted: produced by gnuplot from
// sanitised labels) with an escaped caption.
std::string html_figure(const std::string& svg, std::string_view caption);

// The note shown instead of the charts when gnuplot is not on PATH.
std::string html_charts_missing_note();

// The HTML of the Markdown kvsim writes (headings, paragraphs, tables as
// markdown_table() makes them, **bold** marks dropped), every text escaped:
// a page that shows what its .md shows, tables in their human units.
std::string markdown_to_html(std::string_view markdown);

// A Markdown table; `|` in cells is escaped.
std::string markdown_table(const std::vector<std::string>& headers,
                           const std::vector<std::vector<std::string>>& rows);

// One CSV cell (RFC 4180): quoted, with doubled quotes, when it holds a comma,
// a quote or a line break; as it is otherwise.
std::string csv_cell(const std::string& text);

}  // namespace kvsim
