#include "reports/html_page.hpp"

#include "reports/sha256.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>

namespace kvsim {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string html_document(std::string_view title, const std::string& body_html,
                          const std::vector<std::string_view>& scripts) {
  // A strict Content-Security-Policy as a second line of defence: even a
  // string that escaped escaping could not run a script or load anything;
  // kvsim's own scripts run by their hashes alone.
  // (Appends, not "a" + string: g++ 12 raises a false -Wrestrict on those.)
  std::string csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";
  if (!scripts.empty()) csp += "; script-src";
  for (const std::string_view script : scripts) {
    csp += ' ';
    csp += csp_script_hash(script);
  }
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"";
  out += csp;
  out +=
      "\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
  out += html_escape(title);
  out +=
      "</title>\n<style>\n"
      "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2em auto;"
      "max-width:1200px;padding:0 1em;color:#1d2329;}\n"
      "h1{font-size:1.6em;margin-bottom:.2em;}h2{font-size:1.25em;margin-top:1.6em;"
      "border-bottom:1px solid #d0d7de;padding-bottom:.2em;}\n"
      "table{border-collapse:collapse;margin:.8em 0;font-size:.9em;}\n"
      "th,td{border:1px solid #d0d7de;padding:.3em .6em;}th{background:#f3f5f7;text-align:left;}\n"
      "td.num{text-align:right;font-variant-numeric:tabular-nums;}\n"
      ".wide{overflow-x:auto;max-width:100%;}\n"
      ".charts{display:flex;flex-wrap:wrap;gap:1em;}\n"
      "figure{margin:0;border:1px solid #d0d7de;padding:.4em;background:#fff;max-width:100%;"
      "box-sizing:border-box;}\n"
      "figure svg{max-width:100%;height:auto;display:block;}\n"
      ".verdict{background:#dafbe1;border:1px solid #4ac26b;padding:.4em .6em;}\n"
      ".warning{background:#fff8c5;border:1px solid #d4a72c;padding:.4em .6em;}\n"
      "figcaption{font-size:.85em;color:#57606a;}\n"
      ".note{background:#fff8c5;border:1px solid #d4a72c;padding:.6em;}\n"
      "pre{background:#f6f8fa;padding:.8em;overflow-x:auto;}\n"
      "</style>\n</head>\n<body>\n";
  out += body_html;
  for (const std::string_view script : scripts) {
    out += "<script>";
    out += script;
    out += "</script>\n";
  }
  out += "</body>\n</html>\n";
  return out;
}

namespace {
bool looks_numeric(const std::string& s) {
  // "42", "1.5x", "12%", "12.55 GiB": a number, optionally with a unit.
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return false;
  if (*end == '\0' || ((*end == '%' || *end == 'x') && end[1] == '\0')) return true;
  if (*end != ' ' || end[1] == '\0') return false;
  for (const char* p = end + 1; *p != '\0'; ++p)
    if (!std::isalpha(static_cast<unsigned char>(*p)) && *p != '/') return false;
  return true;
}
}  // namespace

std::string html_table(const std::vector<std::string>& headers,
                       const std::vector<std::vector<std::string>>& rows) {
  // Inside a scrolling block: a table wider than the page scrolls on its own
  // and never widens the page.
  std::string out = "<div class=\"wide\"><table>\n<tr>";
  for (const auto& h : headers) out += "<th>" + html_escape(h) + "</th>";
  out += "</tr>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const auto& cell : row) {
      out += looks_numeric(cell) ? "<td class=\"num\">" : "<td>";
      out += html_escape(cell) + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</table></div>\n";
}

std::string html_figure(const std::string& svg, std::string_view caption) {
  return "<figure>\n" + svg + "\n<figcaption>" + html_escape(caption) +
         "</figcaption>\n</figure>\n";
}

std::string html_charts_missing_note() {
  return "<p class=\"note\">No charts: gnuplot was not found on PATH when this report was "
         "written (Debian package <code>gnuplot-nox</code>). The tables below are complete; "
         "the data behind the charts is in the CSV files of this folder.</p>\n";
}

namespace {

// The cells of a Markdown table row ("| a | b\\|c |" -> {"a", "b|c"}).
std::vector<std::string> markdown_cells(std::string_view line) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (line[i] == '|') {
      const size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
      cells.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

std::string without_bold(std::string text) {
  for (size_t at = text.find("**"); at != std::string::npos; at = text.find("**"))
    text.erase(at, 2);
  return text;
}

}  // namespace

std::string markdown_to_html(std::string_view markdown) {
  std::string out;
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;
  const auto flush_table = [&] {
    if (!headers.empty()) out += html_table(headers, rows);
    headers.clear();
    rows.clear();
  };
  size_t start = 0;
  while (start < markdown.size()) {
    size_t end = markdown.find('\n', start);
    if (end == std::string_view::npos) end = markdown.size();
    const std::string_view line = markdown.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.front() == '|') {
      std::vector<std::string> cells = markdown_cells(line);
      for (auto& c : cells) c = without_bold(c);
      if (headers.empty())
        headers = std::move(cells);
      else if (line.find("---") == std::string_view::npos || !rows.empty())
        rows.push_back(std::move(cells));
      continue;
    }
    flush_table();
    if (line.empty()) continue;
    size_t level = 0;
    while (level < line.size() && line[level] == '#') ++level;
    if (level > 0 && level <= 6 && level < line.size() && line[level] == ' ') {
      out += fmt::format("<h{0}>{1}</h{0}>\n", level, html_escape(line.substr(level + 1)));
    } else {
      out += "<p>" + html_escape(without_bold(std::string(line))) + "</p>\n";
    }
  }
  flush_table();
  return out;
}

std::string markdown_table(const std::vector<std::string>& headers,
                           const std::vector<std::vector<std::string>>& rows) {
  auto cell = [](const std::string& s) {
    std::string out;
    for (const char c : s) {
      if (c == '|')
        out += "\\|";
      else if (c == '\n')
        out += ' ';
      else
        out += c;
    }
    return out;
  };
  std::string out = "|";
  for (const auto& h : headers) out += fmt::format(" {} |", cell(h));
  out += "\n|";
  // A column is right-aligned when every non-empty cell in it is a number.
  for (size_t i = 0; i < headers.size(); ++i) {
    bool numeric = i > 0;
    for (const auto& row : rows)
      if (i < row.size() && !row[i].empty() && !looks_numeric(row[i])) numeric = false;
    out += numeric ? " ---: |" : " --- |";
  }
  out += "\n";
  for (const auto& row : rows) {
    out += "|";
    for (const auto& c : row) out += fmt::format(" {} |", cell(c));
    out += "\n";
  }
  return out;
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace kvsim
