// Edge-list and adjacency-list readers. One pass with TextScanner; ids as given are parsed with
// from_chars and never allocate; relabelled ids are string_views into the text, hashed once and
// looked up a few tokens later, once their hash-table slot has been prefetched (NodeIds).
#include "edgeattn/data/edge_list.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/huge_pages.hpp"
#include "core/prefetch.hpp"
#include "data/reader_support.hpp"
#include "data/text_scanner.hpp"
#include "edgeattn/core/error.hpp"
#include "edgeattn/core/file_io.hpp"
#include "edgeattn/core/rng.hpp"

namespace edgeattn::data {
namespace {

constexpr std::string_view kComment = "#%";
constexpr int64_t kGraphNodeLimit = std::numeric_limits<int32_t>::max();

/// Token -> node index, open addressing over a flat array of 16-byte slots (index + 1, 0 = empty).
/// A token of at most 8 bytes is stored in its slot, packed into a word, so finding it compares
/// two words and never touches the text; a longer one stores its 64-bit hash and is compared with
/// its first occurrence in the text on a probable hit. (std::unordered_map's per-node allocations
/// made relabelling ~7 MB/s; 8-byte slots holding a 32-bit hash tag, which sent every hit to the
/// text, ~20 MB/s.)
class TokenIndex {
 public:
  /// A token's slot key and hash, computed before the probe (see NodeIds' lookahead).
  struct Key {
    uint64_t word;  ///< the token's bytes (at most 8) or its hash
    uint64_t hash;
    uint32_t length;
  };

  /// `text_end`: the end of the buffer the tokens lie in (short tokens are loaded 8 bytes at a time
  /// where the buffer allows).
  TokenIndex(size_t expected, const char* text_end) : text_end_(text_end) {
    rehash(std::max<size_t>(16, std::bit_ceil(expected * 2 + 1)));
    edgeattn::detail::huge_page_reserve(names_, expected);
  }

  Key key(std::string_view token) const {
    const auto n = static_cast<uint32_t>(token.size());
    if (n > 8) {
      const uint64_t h = std::hash<std::string_view>{}(token);
      return {h, h, n};
    }
    uint64_t w = 0;
    if (token.data() + 8 <= text_end_) {
      std::memcpy(&w, token.data(), 8);
      // Keep the token's n bytes where memcpy of n bytes (below) puts them: the low bytes of the
      // word on little-endian machines, the high bytes on big-endian ones.
      if (n < 8) {
        if constexpr (std::endian::native == std::endian::little)
          w &= (uint64_t{1} << (8 * n)) - 1;
        else
          w &= ~uint64_t{0} << (8 * (8 - n));
      }
    } else {
      std::memcpy(&w, token.data(), n);
    }
    return {w, mix64(w ^ (uint64_t{n} << 59)), n};
  }

  /// Brings the token's first probe slot towards the cache.
  void prefetch(const Key& k) const { edgeattn::detail::prefetch_read<3>(&slots_[k.hash & mask_]); }

  /// The index of `token`, inserting it as the next index when new.
  std::pair<int64_t, bool> find_or_insert(std::string_view token, const Key& k) {
    for (size_t i = k.hash & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.index_plus1 == 0) {
        const auto index = static_cast<int64_t>(names_.size());
        slot = {k.word, static_cast<uint32_t>(index + 1), k.length};
        names_.push_back(token);
        if (names_.size() * 2 > slots_.size()) grow();
        return {index, true};
      }
      if (slot.word == k.word && slot.length == k.length) {
        const auto index = static_cast<int64_t>(slot.index_plus1 - 1);
        if (k.length <= 8 || names_[static_cast<size_t>(index)] == token) return {index, false};
      }
    }
  }

  size_t size() const { return names_.size(); }
  /// The distinct tokens, by index.
  const std::vector<std::string_view>& names() const { return names_; }

 private:
  struct Slot {
    uint64_t word;
    uint32_t index_plus1;
    uint32_t length;
  };
  void rehash(size_t capacity) {
    slots_ = edgeattn::detail::huge_page_vector<Slot>(capacity, Slot{0, 0, 0});
    mask_ = capacity - 1;
  }
  void grow() {
    rehash(slots_.size() * 2);
    for (size_t index = 0; index < names_.size(); ++index) {
      const Key k = key(names_[index]);
      size_t i = k.hash & mask_;
      while (slots_[i].index_plus1 != 0) i = (i + 1) & mask_;
      slots_[i] = {k.word, static_cast<uint32_t>(index + 1), k.length};
    }
  }
  const char* text_end_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  std::vector<std::string_view> names_;
};

/// Reads node ids per EdgeListOptions and counts the nodes.
///
/// Relabelled ids are looked up in a hash table far larger than the caches, one random access per
/// token. read_into() therefore only hashes the token and prefetches its slot; the lookup happens
/// kLookahead tokens later (in token order, so indices are still given in order of first
/// appearance), when the slot has arrived. flush() finishes the pending lookups; a reader calls it
/// at the end, and before letting a parse error escape, so an earlier id error is still the one
/// reported.
class NodeIds {
 public:
  NodeIds(const EdgeListOptions& o, size_t expected_ids, std::string_view text) : o_(o) {
    if (o.relabel) index_.emplace(expected_ids, text.data() + text.size());
    if (o.max_nodes < 0 || o.max_nodes > kGraphNodeLimit)
      raise<InvalidArgument>("EdgeListOptions: max_nodes is ", o.max_nodes, ", expected in [0, ",
                             kGraphNodeLimit, "] (a Graph's node limit)");
    if (!o.relabel && o.num_nodes > o.max_nodes)
      raise<InvalidArgument>("EdgeListOptions: num_nodes is ", o.num_nodes,
                             ", above max_nodes = ", o.max_nodes);
    limit_ = !o.relabel && o.num_nodes >= 0 ? o.num_nodes : o.max_nodes;
  }

  /// The next id as a node index (ids are below max_nodes <= 2^31 - 1, so they fit 32 bits).
  int32_t read(TextScanner& s, std::string_view what) {
    if (!o_.relabel) return static_cast<int32_t>(read_number(s, what));
    flush(s);
    const std::string_view token = s.read_token(what);
    return resolve(s, s.line(), token, index_->key(token));
  }

  /// Reads the next id and appends its node index to `out`. With relabelling the index is written
  /// when the lookup completes: `out` must not shrink, nor be read, before flush().
  void read_into(TextScanner& s, std::string_view what, std::vector<int32_t>& out) {
    if (!o_.relabel) {
      out.push_back(static_cast<int32_t>(read_number(s, what)));
      return;
    }
    const std::string_view token = s.read_token(what);
    const TokenIndex::Key key = index_->key(token);
    index_->prefetch(key);
    if (pending_count_ == kLookahead) complete_oldest(s);
    pending_[(pending_first_ + pending_count_) % kLookahead] = {token, key, s.line(), &out, out.size()};
    ++pending_count_;
    out.push_back(0);
  }

  /// Completes every pending lookup, in order (may raise the max_nodes error of one of them).
  void flush(const TextScanner& s) {
    while (pending_count_ > 0) complete_oldest(s);
  }

  /// Ids as given (no relabelling) can take TextScanner::read_uint_pair_line's fast path.
  bool numeric() const { return !o_.relabel; }
  /// An id from the fast path as a node index, if read() would accept it (false: read() it
  /// again to raise the error).
  bool accept(uint64_t id, int32_t& index) {
    const int64_t base = o_.one_based ? 1 : 0;
    if (id < static_cast<uint64_t>(base) || static_cast<int64_t>(id) - base >= limit_) return false;
    const int64_t v = static_cast<int64_t>(id) - base;
    max_ = std::max(max_, v);
    index = static_cast<int32_t>(v);
    return true;
  }
  int64_t num_nodes() const {
    if (o_.relabel) return static_cast<int64_t>(index_->size());
    return o_.num_nodes >= 0 ? o_.num_nodes : max_ + 1;
  }
  std::vector<std::string> names() const { return {index_->names().begin(), index_->names().end()}; }

 private:
  static constexpr int kLookahead = 16;
  struct Pending {
    std::string_view token;
    TokenIndex::Key key;
    int64_t line;
    std::vector<int32_t>* out;
    size_t position;
  };

  int32_t resolve(const TextScanner& s, int64_t line, std::string_view token, const TokenIndex::Key& key) {
    const auto [index, inserted] = index_->find_or_insert(token, key);
    if (inserted && index >= o_.max_nodes)
      s.fail_at(line, "expected at most max_nodes = ", o_.max_nodes, " distinct ids, found another: '", token,
                "'");
    return static_cast<int32_t>(index);
  }

  void complete_oldest(const TextScanner& s) {
    const Pending p = pending_[pending_first_];
    pending_first_ = (pending_first_ + 1) % kLookahead;
    --pending_count_;
    (*p.out)[p.position] = resolve(s, p.line, p.token, p.key);
  }

  int64_t read_number(TextScanner& s, std::string_view what) {
    const int64_t id = s.read_int64(what);
    if (id < (o_.one_based ? 1 : 0))
      s.fail("expected a ", what, o_.one_based ? " >= 1 (ids are 1-based)" : " >= 0", ", found ", id);
    const int64_t v = o_.one_based ? id - 1 : id;
    if (v >= limit_) {
      if (o_.num_nodes >= 0)
        s.fail("expected a ", what, " below num_nodes = ", o_.num_nodes + (o_.one_based ? 1 : 0), ", found ",
               id);
      s.fail("expected a ", what, " below max_nodes = ", o_.max_nodes + (o_.one_based ? 1 : 0), ", found ",
             id);
    }
    max_ = std::max(max_, v);
    return v;
  }

  const EdgeListOptions& o_;
  int64_t limit_ = 0;
  int64_t max_ = -1;
  std::optional<TokenIndex> index_;
  std::array<Pending, kLookahead> pending_{};
  int pending_first_ = 0, pending_count_ = 0;
};

struct ParsedEdges {
  std::vector<int32_t> src, dst;  // node ids are below max_nodes <= 2^31 - 1
  std::vector<float> weight;      // empty unless the list has a weight column
  std::vector<int64_t> line;      // only for Duplicates::error
};

Dataset finish(ParsedEdges& e, NodeIds& ids, const std::string& name, const char* format,
               const EdgeListOptions& o) {
  Dataset ds;
  ds.name = name;
  ds.format = format;
  if (o.duplicates == Duplicates::error)
    detail::check_no_repeated_edges(e.src, e.dst, e.line, o.self_loops != SelfLoops::keep, name);
  const BuildOptions build{.self_loops = o.self_loops,
                           .duplicates = o.duplicates == Duplicates::error ? Duplicates::merge : o.duplicates,
                           .symmetrize = o.undirected};
  const int64_t num_edges = static_cast<int64_t>(e.src.size()) * (o.undirected ? 2 : 1);
  if (o.num_nodes >= 0)
    detail::check_graph_fits(name, ids.num_nodes(), num_edges,
                             edgeattn::detail::message("num_nodes is ", o.num_nodes), "");
  else if (!o.relabel)
    detail::check_graph_fits(
        name, ids.num_nodes(), num_edges,
        edgeattn::detail::message("ids are node indices and the largest is ",
                                  ids.num_nodes() - 1 + (o.one_based ? 1 : 0)),
        "if the ids are labels rather than indices, relabel them (EdgeListOptions::relabel: "
        "nodes numbered in order of appearance)");
  ds.graph = detail::build_weighted_graph(ids.num_nodes(), e.src, e.dst, e.weight, build, ds.edge_weight);
  if (o.relabel) ds.node_names = ids.names();
  return ds;
}

size_t reserve_for(std::string_view text, size_t min_line_bytes) { return text.size() / min_line_bytes + 1; }

}  // namespace

Dataset parse_edge_list(std::string_view text, const std::string& name, const EdgeListOptions& options) {
  TextScanner s(text, name);
  NodeIds ids(options, std::min<size_t>(text.size() / 16, static_cast<size_t>(options.max_nodes)), text);
  ParsedEdges e;
  // A guess, not a bound: a typical SNAP line ("123456\t654321\n") has ~14 bytes.
  e.src.reserve(reserve_for(text, 14));
  e.dst.reserve(reserve_for(text, 14));
  const bool want_lines = options.duplicates == Duplicates::error;
  int columns = 0;
  int64_t first_line = 0;
  try {
    while (!s.at_end()) {
      // Plain "u<TAB>v" lines take the fast path (no weights: all lines have as many columns as the
      // first); anything else, errors included, is read by the general code below.
      if (ids.numeric() && columns != 3) {
        const TextScanner::Mark start = s.mark();
        uint64_t a, b;
        int32_t u, v;
        if (s.read_uint_pair_line(a, b)) {
          if (ids.accept(a, u) && ids.accept(b, v)) {
            if (columns == 0) {
              columns = 2;
              first_line = start.line;
            }
            e.src.push_back(u);
            e.dst.push_back(v);
            if (want_lines) e.line.push_back(start.line);
            continue;
          }
          s.restore(start);
        }
      }
      if (s.skip_blank_or_comment(kComment)) continue;
      const int64_t line = s.line();
      ids.read_into(s, "source id", e.src);
      ids.read_into(s, "target id", e.dst);
      int cols = 2;
      float w = 1.f;
      if (!s.at_end_of_line(kComment)) {
        w = s.read_float("weight");
        if (!std::isfinite(w)) s.fail("expected a finite weight, found ", w);
        cols = 3;
      }
      if (columns == 0) {
        columns = cols;
        first_line = line;
      } else if (cols != columns) {
        s.fail("expected ", columns, " columns (as on line ", first_line, "), found ", cols);
      }
      s.expect_end_of_line("the edge (at most 3 columns: source, target, weight)", kComment);
      if (cols == 3) e.weight.push_back(w);
      if (want_lines) e.line.push_back(line);
    }
  } catch (const ParseError&) {
    ids.flush(s);  // an id error on an earlier line is the first error
    throw;
  }
  ids.flush(s);
  return finish(e, ids, name, "edge-list", options);
}

Dataset parse_adjacency_list(std::string_view text, const std::string& name, const EdgeListOptions& options) {
  TextScanner s(text, name);
  NodeIds ids(options, std::min<size_t>(text.size() / 16, static_cast<size_t>(options.max_nodes)), text);
  ParsedEdges e;
  const bool want_lines = options.duplicates == Duplicates::error;
  try {
    while (!s.at_end()) {
      if (s.skip_blank_or_comment(kComment)) continue;
      const int64_t line = s.line();
      const int32_t v = ids.read(s, "node id");
      while (!s.at_end_of_line(kComment)) {
        e.src.push_back(v);
        ids.read_into(s, "neighbour id", e.dst);
        if (want_lines) e.line.push_back(line);
      }
      s.skip_rest_of_line();
    }
  } catch (const ParseError&) {
    ids.flush(s);  // an id error on an earlier line is the first error
    throw;
  }
  ids.flush(s);
  return finish(e, ids, name, "adjlist", options);
}

Dataset load_edge_list(const std::filesystem::path& path, const EdgeListOptions& options) {
  const std::string text = read_file(path);
  Dataset ds = parse_edge_list(text, path.string(), options);
  ds.name = detail::stem_without_gz(path);
  ds.sources.push_back(detail::source_file(path, text.size()));
  return ds;
}

Dataset load_adjacency_list(const std::filesystem::path& path, const EdgeListOptions& options) {
  const std::string text = read_file(path);
  Dataset ds = parse_adjacency_list(text, path.string(), options);
  ds.name = detail::stem_without_gz(path);
  ds.sources.push_back(detail::source_file(path, text.size()));
  return ds;
}

Dataset load_karate(const std::filesystem::path& adjlist_path) {
  Dataset ds = load_adjacency_list(adjlist_path, {.undirected = true, .one_based = true});
  constexpr int64_t kNodes = 34, kEdges = 156;
  if (ds.num_nodes() != kNodes || ds.num_edges() != kEdges)
    raise<ParseError>(adjlist_path.string(), ": expected Zachary's karate club (", kNodes, " nodes, ", kEdges,
                      " directed edges), found ", ds.num_nodes(), " nodes and ", ds.num_edges(), " edges");
  ds.name = "karate";
  ds.format = "adjlist";
  // networkx's karate_club_graph() `club` attribute, 1-based node ids.
  constexpr int kMrHi[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 17, 18, 20, 22};
  ds.labels.classes.assign(kNodes, 1);
  for (const int v : kMrHi) ds.labels.classes[static_cast<size_t>(v - 1)] = 0;
  ds.labels.num_classes = 2;
  ds.labels.class_names = {"Mr. Hi", "Officer"};
  ds.node_names.clear();
  for (int64_t v = 1; v <= kNodes; ++v) ds.node_names.push_back(std::to_string(v));
  ds.validate();
  return ds;
}

}  // namespace edgeattn::data
