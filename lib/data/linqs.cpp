// LINQS readers. The .content word matrix is the bulk of the bytes (2 bytes per field: "0\t" or
// "1\t"), so it is scanned with a pointer loop over each line, two bytes at a time, with no
// per-field allocation; ids and labels are string_views into the text until the Dataset is built.
#include "edgeattn/data/linqs.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "data/reader_support.hpp"
#include "data/text_scanner.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/graph/build.hpp"

namespace edgeattn::data {
namespace {

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

std::string_view clip(std::string_view s) { return s.substr(0, 40); }

/// Paper ids in node order, and their lookup.
class Papers {
 public:
  int64_t size() const { return static_cast<int64_t>(ids_.size()); }
  /// Adds a new paper; ParseError naming both lines when the id was already listed.
  void add(std::string_view id, int64_t line, const TextScanner& s) {
    const auto [it, inserted] = index_.try_emplace(id, size());
    if (!inserted)
      s.fail_at(line, "expected a new paper id, found '", clip(id), "' again (first listed on line ",
                line_[static_cast<size_t>(it->second)], ")");
    ids_.push_back(id);
    line_.push_back(line);
  }
  /// The node of `id`, adding it when `grow`; -1 when unknown.
  int64_t find(std::string_view id, bool grow) {
    if (grow) {
      const auto [it, inserted] = index_.try_emplace(id, size());
      if (inserted) {
        ids_.push_back(id);
        line_.push_back(0);
      }
      return it->second;
    }
    const auto it = index_.find(id);
    return it == index_.end() ? -1 : it->second;
  }
  std::vector<std::string> names() const { return {ids_.begin(), ids_.end()}; }

 private:
  std::unordered_map<std::string_view, int64_t> index_;
  std::vector<std::string_view> ids_;
  std::vector<int64_t> line_;
};

/// Class ids in sorted order of the class names.
void set_labels(const std::vector<std::string_view>& label_of, Labels& labels) {
  std::vector<std::string_view> names(label_of.begin(), label_of.end());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  labels.classes.resize(label_of.size());
  for (size_t i = 0; i < label_of.size(); ++i)
    labels.classes[i] =
        static_cast<int32_t>(std::lower_bound(names.begin(), names.end(), label_of[i]) - names.begin());
  labels.num_classes = static_cast<int64_t>(names.size());
  labels.class_names.assign(names.begin(), names.end());
}

struct NodeTable {
  Papers papers;
  CsrMatrix features;
  std::vector<std::string_view> label_of;
};

/// Cora/CiteSeer `.content`.
NodeTable parse_content(std::string_view text, const std::string& name) {
  TextScanner s(text, name);
  NodeTable t;
  std::vector<int64_t> indptr{0};
  std::vector<int32_t> indices;
  int64_t num_words = -1, first_line = 0;
  while (!s.at_end()) {
    const int64_t line = s.line();
    const std::string_view l = s.read_line();
    if (is_blank(l)) continue;
    const size_t tab = l.find('\t');
    if (tab == std::string_view::npos)
      s.fail_at(line, "expected '<paper id><TAB><0/1 words...><TAB><label>', found '", clip(l), "'");
    if (tab == 0) s.fail_at(line, "expected a paper id, found an empty field");
    const size_t last = l.rfind('\t');
    if (last == tab)
      s.fail_at(line, "expected word fields and a class label after the paper id, found one field");
    if (last + 1 == l.size())
      s.fail_at(line, "expected a class label in the last field, found an empty field");
    t.papers.add(l.substr(0, tab), line, s);
    t.label_of.push_back(l.substr(last + 1));
    // Words occupy (tab, last]; each is one character followed by a TAB (the one at `last` ends the
    // final word).
    const char* q = l.data() + tab + 1;
    const char* const end = l.data() + last;
    int64_t w = 0;
    while (q <= end) {
      if (q < end && q[1] == '\t' && (q[0] == '0' || q[0] == '1')) {
        if (q[0] == '1') indices.push_back(static_cast<int32_t>(w));
        ++w;
        q += 2;
        continue;
      }
      const char* r = q;
      while (*r != '\t') ++r;
      s.fail_at(line, "expected 0 or 1 for word ", w + 1, ", found '",
                clip(std::string_view(q, static_cast<size_t>(r - q))), "'");
    }
    if (num_words < 0) {
      num_words = w;
      first_line = line;
    } else if (w != num_words) {
      s.fail_at(line, "expected ", num_words, " word fields (as on line ", first_line, "), found ", w);
    }
    indptr.push_back(static_cast<int64_t>(indices.size()));
  }
  if (t.papers.size() == 0) s.fail("expected at least one paper, found none");
  std::vector<float> values(indices.size(), 1.f);
  t.features =
      CsrMatrix(t.papers.size(), num_words, std::move(indptr), std::move(indices), std::move(values), name);
  return t;
}

/// PubMed-Diabetes `NODE.paper.tab`.
NodeTable parse_pubmed_nodes(std::string_view text, const std::string& name) {
  TextScanner s(text, name);
  NodeTable t;
  if (s.at_end()) s.fail("expected the header line 'NODE<TAB>paper', found an empty file");
  s.skip_rest_of_line();
  if (s.at_end())
    s.fail("expected the schema line ('cat=...:label<TAB>numeric:w-...:0.0...'), found the end of the file");
  const int64_t schema_line = s.line();
  const std::string_view schema = s.read_line();
  std::unordered_map<std::string_view, int32_t> column;
  std::unordered_set<std::string_view> ignored;
  bool has_label = false;
  for (size_t b = 0; b <= schema.size();) {
    size_t e = schema.find('\t', b);
    if (e == std::string_view::npos) e = schema.size();
    const std::string_view entry = schema.substr(b, e - b);
    b = e + 1;
    if (entry.empty()) continue;
    const size_t c1 = entry.find(':');
    if (c1 == std::string_view::npos)
      s.fail_at(schema_line, "expected a schema entry '<type>:<name>[:<default>]', found '", clip(entry),
                "'");
    const std::string_view kind = entry.substr(0, c1);
    const std::string_view rest = entry.substr(c1 + 1);
    const std::string_view field = rest.substr(0, rest.find(':'));
    if (field.empty())
      s.fail_at(schema_line, "expected a field name in schema entry '", clip(entry), "', found none");
    if (kind == "numeric") {
      if (!column.try_emplace(field, static_cast<int32_t>(column.size())).second)
        s.fail_at(schema_line, "expected each feature once, found '", clip(field), "' twice");
    } else {
      if (field == "label") has_label = true;
      ignored.insert(field);
    }
  }
  if (!has_label) s.fail_at(schema_line, "expected a 'cat=...:label' entry in the schema, found none");

  std::vector<int64_t> indptr{0};
  std::vector<int32_t> indices;
  std::vector<float> values;
  std::vector<std::pair<int32_t, float>> row;
  while (!s.at_end()) {
    const int64_t line = s.line();
    const std::string_view l = s.read_line();
    if (is_blank(l)) continue;
    size_t e = l.find('\t');
    if (e == 0) s.fail_at(line, "expected a PMID, found an empty field");
    t.papers.add(l.substr(0, e), line, s);
    std::string_view label;
    row.clear();
    while (e != std::string_view::npos) {
      const size_t b = e + 1;
      e = l.find('\t', b);
      const std::string_view f = l.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b);
      if (f.empty()) continue;  // a trailing TAB
      const size_t eq = f.find('=');
      if (eq == std::string_view::npos) s.fail_at(line, "expected 'name=value', found '", clip(f), "'");
      const std::string_view key = f.substr(0, eq), value = f.substr(eq + 1);
      if (key == "label") {
        if (value.empty()) s.fail_at(line, "expected a class after 'label=', found nothing");
        label = value;
      } else if (const auto it = column.find(key); it != column.end()) {
        float x = 0.f;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
        if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(x))
          s.fail_at(line, "expected a finite number for '", clip(key), "', found '", clip(value), "'");
        row.emplace_back(it->second, x);
      } else if (!ignored.contains(key)) {
        s.fail_at(line, "expected a field declared in the schema (line ", schema_line, "), found '",
                  clip(key), "'");
      }
    }
    if (label.empty()) s.fail_at(line, "expected a 'label=<class>' field, found none");
    t.label_of.push_back(label);
    std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t k = 0; k < row.size(); ++k) {
      if (k > 0 && row[k].first == row[k - 1].first)
        s.fail_at(line, "expected each word at most once, found a word of column ", row[k].first, " twice");
      indices.push_back(row[k].first);
      values.push_back(row[k].second);
    }
    indptr.push_back(static_cast<int64_t>(indices.size()));
  }
  if (t.papers.size() == 0) s.fail("expected at least one paper, found none");
  t.features = CsrMatrix(t.papers.size(), static_cast<int64_t>(column.size()), std::move(indptr),
                         std::move(indices), std::move(values), name);
  return t;
}

struct Citations {
  std::vector<int64_t> src, dst;
  int64_t lines = 0, unknown = 0, self = 0;
};

/// Records citing -> cited, or a note when either id is unknown (-1).
void add_citation(Citations& c, int64_t citing, int64_t cited, std::string_view citing_id,
                  std::string_view cited_id, int64_t line, const std::string& file,
                  std::vector<std::string>& notes) {
  ++c.lines;
  if (citing < 0 || cited < 0) {
    ++c.unknown;
    std::string note = file + ":" + std::to_string(line) + ": cites unknown paper";
    if (citing < 0 && cited < 0)
      note.append("s '").append(citing_id).append("' and '").append(cited_id).append("'");
    else
      note.append(" '").append(citing < 0 ? citing_id : cited_id).append("'");
    notes.push_back(note + "; skipped");
    return;
  }
  if (citing == cited) ++c.self;
  c.src.push_back(citing);
  c.dst.push_back(cited);
}

/// `<cited><TAB><citing>` lines.
Citations parse_linqs_cites(std::string_view text, const std::string& name, Papers& papers,
                            std::vector<std::string>& notes) {
  TextScanner s(text, name);
  Citations c;
  while (!s.at_end()) {
    if (s.skip_blank_or_comment({})) continue;
    const int64_t line = s.line();
    const std::string_view cited = s.read_token("the cited paper id");
    const std::string_view citing = s.read_token("the citing paper id");
    s.expect_end_of_line("the citation '<cited><TAB><citing>'");
    add_citation(c, papers.find(citing, false), papers.find(cited, false), citing, cited, line, name, notes);
  }
  return c;
}

/// `<edge id><TAB>paper:<pmid><TAB>|<TAB>paper:<pmid>` lines after two header lines.
Citations parse_pubmed_cites_lines(std::string_view text, const std::string& name, Papers& papers, bool grow,
                                   std::vector<std::string>& notes) {
  TextScanner s(text, name);
  for (int h = 0; h < 2; ++h) {
    if (s.at_end())
      s.fail("expected the header line ", h == 0 ? "'DIRECTED<TAB>cites'" : "'NO_FEATURES'",
             ", found the end of the file");
    s.skip_rest_of_line();
  }
  Citations c;
  constexpr std::string_view kPaper = "paper:";
  auto pmid = [&](std::string_view what) {
    const std::string_view t = s.read_token(what);
    if (!t.starts_with(kPaper) || t.size() == kPaper.size())
      s.fail("expected ", what, ", found '", clip(t), "'");
    return t.substr(kPaper.size());
  };
  while (!s.at_end()) {
    if (s.skip_blank_or_comment({})) continue;
    const int64_t line = s.line();
    (void)s.read_token("an edge id");
    const std::string_view citing = pmid("'paper:<pmid>' (the citing paper)");
    const std::string_view bar = s.read_token("'|'");
    if (bar != "|") s.fail("expected '|' between the papers, found '", clip(bar), "'");
    const std::string_view cited = pmid("'paper:<pmid>' (the cited paper)");
    s.expect_end_of_line("the citation '<edge id><TAB>paper:<pmid><TAB>|<TAB>paper:<pmid>'");
    add_citation(c, papers.find(citing, grow), papers.find(cited, grow), citing, cited, line, name, notes);
  }
  return c;
}

Graph citation_graph(int64_t num_nodes, const Citations& c, const std::string& cites_name,
                     const LinqsOptions& o, std::vector<std::string>& notes) {
  if (c.unknown > 0)
    notes.push_back(cites_name + ": skipped " + std::to_string(c.unknown) + " of " + std::to_string(c.lines) +
                    " citation lines that name unknown papers");
  if (c.self > 0 && !o.keep_self_citations)
    notes.push_back(cites_name + ": removed " + std::to_string(c.self) + " self-citations");
  const BuildOptions build{.self_loops = o.keep_self_citations ? SelfLoops::keep : SelfLoops::remove,
                           .duplicates = Duplicates::merge,
                           .symmetrize = !o.directed};
  return build_graph(num_nodes, num_nodes, c.src, c.dst, build);
}

Dataset assemble(NodeTable& t, const Citations& c, const std::string& cites_name, const LinqsOptions& o,
                 std::vector<std::string>& notes) {
  Dataset ds;
  ds.format = "linqs";
  ds.graph = citation_graph(t.papers.size(), c, cites_name, o, notes);
  ds.features = std::move(t.features);
  set_labels(t.label_of, ds.labels);
  ds.node_names = t.papers.names();
  ds.notes = std::move(notes);
  return ds;
}

}  // namespace

Dataset parse_linqs(std::string_view content, const std::string& content_name, std::string_view cites,
                    const std::string& cites_name, const LinqsOptions& options) {
  NodeTable t = parse_content(content, content_name);
  std::vector<std::string> notes;
  const Citations c = parse_linqs_cites(cites, cites_name, t.papers, notes);
  Dataset ds = assemble(t, c, cites_name, options, notes);
  ds.name = detail::stem_without_gz(content_name);
  return ds;
}

Dataset parse_pubmed_diabetes(std::string_view nodes, const std::string& nodes_name, std::string_view cites,
                              const std::string& cites_name, const LinqsOptions& options) {
  NodeTable t = parse_pubmed_nodes(nodes, nodes_name);
  std::vector<std::string> notes;
  const Citations c = parse_pubmed_cites_lines(cites, cites_name, t.papers, false, notes);
  Dataset ds = assemble(t, c, cites_name, options, notes);
  ds.name = "pubmed";
  return ds;
}

Dataset parse_pubmed_cites(std::string_view cites, const std::string& name, const LinqsOptions& options) {
  Papers papers;
  std::vector<std::string> notes;
  const Citations c = parse_pubmed_cites_lines(cites, name, papers, true, notes);
  Dataset ds;
  ds.name = "pubmed-cites";
  ds.format = "linqs";
  ds.graph = citation_graph(papers.size(), c, name, options, notes);
  ds.node_names = papers.names();
  ds.notes = std::move(notes);
  return ds;
}

Dataset load_linqs(const std::filesystem::path& dir, const std::string& name, const LinqsOptions& options) {
  std::filesystem::path nodes_path, cites_path;
  if (name == "cora" || name == "citeseer") {
    nodes_path = detail::existing_or_gz(dir / (name + ".content"));
    cites_path = detail::existing_or_gz(dir / (name + ".cites"));
  } else if (name == "pubmed") {
    nodes_path = detail::existing_or_gz(dir / "Pubmed-Diabetes.NODE.paper.tab");
    cites_path = detail::existing_or_gz(dir / "Pubmed-Diabetes.DIRECTED.cites.tab");
  } else {
    raise<InvalidArgument>("load_linqs: unknown dataset '", name, "', expected cora, citeseer or pubmed");
  }
  const std::string nodes = read_file(nodes_path);
  const std::string cites = read_file(cites_path);
  Dataset ds = name == "pubmed"
                   ? parse_pubmed_diabetes(nodes, nodes_path.string(), cites, cites_path.string(), options)
                   : parse_linqs(nodes, nodes_path.string(), cites, cites_path.string(), options);
  ds.name = name;
  ds.sources.push_back(detail::source_file(nodes_path, nodes.size()));
  ds.sources.push_back(detail::source_file(cites_path, cites.size()));
  ds.validate();
  return ds;
}

}  // namespace edgeattn::data
