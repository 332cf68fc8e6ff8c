// LINQS citation datasets in their raw form: Cora, CiteSeer (`<name>.content` + `<name>.cites`)
// and PubMed-Diabetes (`Pubmed-Diabetes.NODE.paper.tab` + `Pubmed-Diabetes.DIRECTED.cites.tab`).
//
// Cora/CiteSeer:
//   .content  one paper per line: `id<TAB>w_1<TAB>...<TAB>w_F<TAB>label`, w_i in {0, 1}; ids are
//             strings (CiteSeer has ids like `abberley99thisl`); every line must have the first
//             line's field count
//   .cites    one citation per line: `cited<TAB>citing` (edge citing -> cited)
// PubMed-Diabetes:
//   NODE.paper.tab   line 1 a header; line 2 the schema, TAB-separated `cat=1,2,3:label`,
//                    `numeric:w-<word>:0.0` (one per feature, in column order), `string:summary`;
//                    then `<pmid><TAB>label=<class><TAB>w-<word>=<tf-idf>...<TAB>summary=...`
//                    (words in any order, absent words are 0; `string:` fields are ignored)
//   DIRECTED.cites.tab  two header lines, then `<edge id><TAB>paper:<pmid><TAB>|<TAB>paper:<pmid>`;
//                    field 2 cites field 4 (the convention of PyG and stellargraph)
//
// The Dataset:
//   nodes       in .content / NODE line order; node_names = the paper ids (PMIDs)
//   features    [num_nodes, F] sparse CsrMatrix: 1.0 per word present (Cora, CiteSeer), TF-IDF
//               floats (PubMed)
//   labels      class ids follow the sorted (byte-wise) order of the class names, which fill
//               labels.class_names (Cora: Case_Based = 0 ... Theory = 6; PubMed: "1", "2", "3")
//   graph       undirected (both directions) by default; LinqsOptions::directed keeps only
//               citing -> cited. Repeated citations merge. Self-citations are removed unless
//               keep_self_citations.
//   notes       one line per citation naming an unknown paper, "<file>:<line>: cites unknown
//               paper '<id>'; skipped", then counts of skipped lines and removed self-citations
// Malformed input is a ParseError naming "<file>:<line>", what was expected and what was found.
//
// Example:
//   auto cora = edgeattn::data::load_linqs("datasets/cora/linqs", "cora");  // reads *.gz too
//   cora.num_nodes();            // 2708
//   cora.num_edges();            // 10556 (5278 undirected pairs)
//   cora.labels.class_names[0];  // "Case_Based"
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "edgeattn/data/dataset.hpp"

namespace edgeattn::data {

struct LinqsOptions {
  /// Keep only the edge citing -> cited (default: both directions).
  bool directed = false;
  /// Keep self-citations as self-loops (default: remove them, with a note).
  bool keep_self_citations = false;
};

/// Cora/CiteSeer from the two files' text; the names appear in errors and notes.
Dataset parse_linqs(std::string_view content, const std::string& content_name, std::string_view cites,
                    const std::string& cites_name, const LinqsOptions& options = {});

/// PubMed-Diabetes from the NODE.paper.tab and DIRECTED.cites.tab text.
Dataset parse_pubmed_diabetes(std::string_view nodes, const std::string& nodes_name, std::string_view cites,
                              const std::string& cites_name, const LinqsOptions& options = {});

/// PubMed's DIRECTED.cites.tab alone, as a graph whose nodes are the PMIDs in order of first
/// appearance (node_names); no features, no labels.
Dataset parse_pubmed_cites(std::string_view cites, const std::string& name, const LinqsOptions& options = {});

/// `name` in {"cora", "citeseer", "pubmed"}; the files are looked up in `dir` as `<file>` or
/// `<file>.gz`: cora.content, cora.cites / citeseer.* / Pubmed-Diabetes.NODE.paper.tab,
/// Pubmed-Diabetes.DIRECTED.cites.tab. IoError naming the missing file; InvalidArgument for
/// another name. Dataset: name = `name`, format "linqs", sources = the two files.
Dataset load_linqs(const std::filesystem::path& dir, const std::string& name,
                   const LinqsOptions& options = {});

}  // namespace edgeattn::data
