// edgeattn._edgeattn: the compiled half of the Python package (nanobind).
//
// Array policy (documented in edgeattn/__init__.py as well):
//   - float operands of the kernels (query, key, value, ...) must be float32, C-contiguous, on the
//     CPU: they are passed to the kernels as views, never copied. Anything else raises
//     edgeattn.InvalidArgument / edgeattn.ShapeError with edgeattn's message (no silent copy).
//   - index arrays (edge_index, CSR indptr/indices, valid lengths, ...) may be int32 or int64 with
//     any strides: the Graph owns its CSR, so they are always copied into it.
//   - results (attention output, gradients, ...) are NumPy arrays that own the C++ tensor (no
//     copy); graph and dataset arrays are read-only views whose lifetime is tied to their object.
//   - model parameters are writable views of the C++ parameters; features passed to a model are
//     copied into a C++ tensor (the model keeps them for the backward pass).
// The GIL is released while kernels, builders, loaders and training run.
#include <cxxabi.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "edgeattn/core/error.hpp"
#include "edgeattn/core/parallel.hpp"
#include "edgeattn/core/rng.hpp"
#include "edgeattn/core/sparse_matrix.hpp"
#include "edgeattn/core/tensor.hpp"
#include "edgeattn/data/dataset.hpp"
#include "edgeattn/data/npz_writer.hpp"
#include "edgeattn/data/ogb_binary.hpp"
#include "edgeattn/data/preprocess.hpp"
#include "edgeattn/data/registry.hpp"
#include "edgeattn/data/splits.hpp"
#include "edgeattn/data/synthetic.hpp"
#include "edgeattn/dist/dataset_part.hpp"
#include "edgeattn/dist/distributed_training.hpp"
#if EDGEATTN_HAVE_MPI
#include "edgeattn/dist/mpi_communicator.hpp"
#endif
#include "edgeattn/graph/build.hpp"
#include "edgeattn/graph/generators.hpp"
#include "edgeattn/graph/graph.hpp"
#include "edgeattn/graph/neighbor_sampler.hpp"
#include "edgeattn/graph/ordering.hpp"
#include "edgeattn/graph/partition.hpp"
#include "edgeattn/graph/pattern.hpp"
#include "edgeattn/graph/transforms.hpp"
#include "edgeattn/kernels/attention.hpp"
#include "edgeattn/kernels/cuda.hpp"
#include "edgeattn/kernels/matmul.hpp"
#include "edgeattn/nn/gat_conv.hpp"
#include "edgeattn/nn/gatv2_conv.hpp"
#include "edgeattn/nn/model.hpp"
#include "edgeattn/nn/prepare_graph.hpp"
#include "edgeattn/nn/transformer_conv.hpp"
#include "edgeattn/train/checkpoint.hpp"
#include "edgeattn/train/trainer.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace edgeattn::python {
namespace {

// ---------------------------------------------------------------------------------------------
// Arrays in and out
// ---------------------------------------------------------------------------------------------

/// Any array-like nanobind accepts (NumPy, DLPack/PyTorch, ...), read-only; no conversion.
/// nb::gil_scoped_release, except when the interpreter exits during the call. A thread that comes
/// back after Python began finalizing (a daemon thread: the user's, say, still sampling when the
/// script ends) is ended by PyEval_RestoreThread with pthread_exit, and that forced unwind through
/// this destructor (noexcept, as every destructor) would abort the process ("terminate called
/// without an active exception"). The unwind is caught here and the thread parked instead, as
/// Python 3.14 itself does: the process exits around it.
class GilRelease {
 public:
  GilRelease() : state_(PyEval_SaveThread()) {}
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;
  ~GilRelease() {
    try {
      PyEval_RestoreThread(state_);
    } catch (abi::__forced_unwind&) {  // never rethrown: the handler does not end
      for (;;) ::pause();
    }
  }

 private:
  PyThreadState* state_;
};

using AnyArray = nb::ndarray<nb::ro>;
using FloatArray = nb::ndarray<nb::numpy, float>;

std::string shape_str(const AnyArray& a) {
  std::string s = "[";
  for (size_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + "]";
}

std::string dtype_str(nb::dlpack::dtype t) {
  using code = nb::dlpack::dtype_code;
  const auto c = static_cast<code>(t.code);
  if (c == code::Bool) return "bool";
  const char* kind = c == code::Int       ? "int"
                     : c == code::UInt    ? "uint"
                     : c == code::Float   ? "float"
                     : c == code::Complex ? "complex"
                     : c == code::Bfloat  ? "bfloat"
                                          : "dtype-code-";
  return std::string(kind) +
         (c == code::Int || c == code::UInt || c == code::Float || c == code::Complex || c == code::Bfloat
              ? std::to_string(t.bits)
              : std::to_string(t.code) + "-bits-" + std::to_string(t.bits));
}

void require_cpu(const AnyArray& a, const std::string& what) {
  if (a.device_type() != nb::device::cpu::value)
    raise<InvalidArgument>(what, " is not in CPU memory (DLPack device type ", a.device_type(),
                           "); edgeattn runs on the CPU: move it with .cpu()");
}

bool is_c_contiguous(const AnyArray& a) {
  int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected) return false;
    expected *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

/// A zero-copy view of a float32 C-contiguous CPU array of rank <= 4 (`rank` = -1: any).
ConstView float_view(const AnyArray& a, const std::string& what, int rank = -1) {
  require_cpu(a, what);
  if (a.dtype() != nb::dtype<float>())
    raise<InvalidArgument>(what, " has dtype ", dtype_str(a.dtype()),
                           ", expected float32 (edgeattn computes in float32 and does not copy operands: "
                           "convert with .astype(numpy.float32) or .float())");
  if (rank >= 0 && static_cast<int>(a.ndim()) != rank)
    raise<ShapeError>(what, " has shape ", shape_str(a), " (rank ", a.ndim(), "), expected rank ", rank);
  if (a.ndim() > static_cast<size_t>(Shape::kMaxRank))
    raise<ShapeError>(what, " has shape ", shape_str(a), ", expected rank <= ", Shape::kMaxRank);
  if (!is_c_contiguous(a))
    raise<InvalidArgument>(what, " with shape ", shape_str(a),
                           " is not C-contiguous; edgeattn does not copy operands: pass "
                           "numpy.ascontiguousarray(x) or x.contiguous()");
  std::vector<int64_t> dims(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) dims[i] = static_cast<int64_t>(a.shape(i));
  return ConstView(static_cast<const float*>(a.data()), Shape(std::span<const int64_t>(dims)));
}

ConstView optional_view(const std::optional<AnyArray>& a, const std::string& what) {
  return a ? float_view(*a, what) : ConstView{};
}

/// Element `k` (strided) of an int32/int64 array, as int64.
int64_t index_at(const AnyArray& a, int64_t offset_elems) {
  if (a.dtype() == nb::dtype<int64_t>()) return static_cast<const int64_t*>(a.data())[offset_elems];
  return static_cast<const int32_t*>(a.data())[offset_elems];
}

void require_index_dtype(const AnyArray& a, const std::string& what) {
  require_cpu(a, what);
  if (a.dtype() != nb::dtype<int64_t>() && a.dtype() != nb::dtype<int32_t>())
    raise<InvalidArgument>(what, " has dtype ", dtype_str(a.dtype()), ", expected int64 or int32");
}

/// Copies a 1-D int32/int64 array (any strides).
std::vector<int64_t> index_vector(const AnyArray& a, const std::string& what) {
  require_index_dtype(a, what);
  if (a.ndim() != 1) raise<ShapeError>(what, " has shape ", shape_str(a), ", expected one dimension");
  std::vector<int64_t> out(a.shape(0));
  for (size_t k = 0; k < out.size(); ++k) out[k] = index_at(a, static_cast<int64_t>(k) * a.stride(0));
  return out;
}

/// Dataset.add_split / add_random_split: `make()` gives the split (and checks it), which becomes
/// `name`, and the default when the dataset has none. A taken name is refused, not replaced:
/// NumPy views of the old split's arrays may be alive.
template <class Make>
void add_split_to(data::Dataset& d, const char* who, const std::string& name, Make&& make) {
  if (name.empty()) raise<InvalidArgument>(who, ": name is empty");
  if (d.splits.contains(name))
    raise<InvalidArgument>(who, ": dataset '", d.name, "' already has a split named '", name,
                           "' (splits are not replaced: views of them may be alive)");
  d.splits.emplace(name, make());
  if (d.default_split.empty()) d.default_split = name;
}

/// A NumPy array that owns `t` (moved to the heap; freed with the array). None when absent.
nb::object to_numpy(Tensor t) {
  if (t.absent()) return nb::none();
  auto* owned = new Tensor(std::move(t));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape(owned->shape().dims().begin(), owned->shape().dims().end());
  return nb::cast(FloatArray(owned->data(), shape.size(), shape.data(), owner));
}

/// A NumPy array that owns `v`.
template <class T>
nb::object vector_to_numpy(std::vector<T> v) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  const size_t n = owned->size();
  return nb::cast(nb::ndarray<nb::numpy, T>(owned->data(), {n}, owner));
}

/// A read-only 1-D NumPy view of `s`, keeping `owner` alive.
template <class T>
nb::ndarray<nb::numpy, const T, nb::ndim<1>> readonly_view(std::span<const T> s, nb::handle owner) {
  return nb::ndarray<nb::numpy, const T, nb::ndim<1>>(s.data(), {s.size()}, owner);
}

/// A property getter: the read-only int64 view of an object's `member` vector, kept alive by the
/// object (Block's and SampledSubgraph's node and edge ids).
template <class C>
auto index_member_view(std::vector<int64_t> C::*member) {
  return [member](nb::handle self) { return readonly_view<int64_t>(nb::cast<const C&>(self).*member, self); };
}

/// A writable NumPy view of a tensor, keeping `owner` alive (None when absent).
nb::object tensor_view(Tensor& t, nb::handle owner) {
  if (t.absent()) return nb::none();
  std::vector<size_t> shape(t.shape().dims().begin(), t.shape().dims().end());
  return nb::cast(FloatArray(t.data(), shape.size(), shape.data(), owner));
}

nb::object readonly_tensor_view(const Tensor& t, nb::handle owner) {
  if (t.absent()) return nb::none();
  std::vector<size_t> shape(t.shape().dims().begin(), t.shape().dims().end());
  return nb::cast(nb::ndarray<nb::numpy, const float>(t.data(), shape.size(), shape.data(), owner));
}

/// A copy of a float32 array (any rank <= 4) as an owning Tensor.
Tensor tensor_copy(const AnyArray& a, const std::string& what) {
  const ConstView v = float_view(a, what);
  return Tensor(v.shape(), v.span());
}

// ---------------------------------------------------------------------------------------------
// Options from strings
// ---------------------------------------------------------------------------------------------

SelfLoops parse_self_loops(const std::string& s) {
  if (s == "keep") return SelfLoops::keep;
  if (s == "remove") return SelfLoops::remove;
  if (s == "add") return SelfLoops::add;
  raise<InvalidArgument>("self_loops: unknown policy '", s, "' (expected keep, remove or add)");
}

Duplicates parse_duplicates(const std::string& s) {
  if (s == "keep") return Duplicates::keep;
  if (s == "merge") return Duplicates::merge;
  if (s == "error") return Duplicates::error;
  raise<InvalidArgument>("duplicates: unknown policy '", s, "' (expected keep, merge or error)");
}

BuildOptions build_options(const std::string& self_loops, const std::string& duplicates, bool symmetrize) {
  return {.self_loops = parse_self_loops(self_loops),
          .duplicates = parse_duplicates(duplicates),
          .symmetrize = symmetrize};
}

Normalization parse_normalization(const std::string& s) {
  if (s == "softmax") return Normalization::softmax;
  if (s == "relu") return Normalization::relu;
  raise<InvalidArgument>("normalization: unknown value '", s, "' (expected softmax or relu)");
}

HeadCombine parse_combine(const std::string& s) {
  if (s == "concat") return HeadCombine::concat;
  if (s == "mean") return HeadCombine::mean;
  raise<InvalidArgument>("combine: unknown value '", s, "' (expected concat or mean)");
}

AttentionPath parse_path(const std::string& s) {
  for (AttentionPath p : {AttentionPath::automatic, AttentionPath::sparse, AttentionPath::dense,
                          AttentionPath::reference, AttentionPath::cuda})
    if (s == to_string(p)) return p;
  raise<InvalidArgument>("path: unknown value '", s, "' (expected ", to_string(AttentionPath::automatic),
                         ", ", to_string(AttentionPath::sparse), ", ", to_string(AttentionPath::dense), ", ",
                         to_string(AttentionPath::reference), " or ", to_string(AttentionPath::cuda), ")");
}

// ---------------------------------------------------------------------------------------------
// Graph construction
// ---------------------------------------------------------------------------------------------

Graph graph_from_edge_index(const AnyArray& edge_index, std::optional<int64_t> num_nodes,
                            std::optional<int64_t> num_src, const std::string& self_loops,
                            const std::string& duplicates, bool symmetrize) {
  const std::string what = "Graph.from_edge_index: edge_index";
  require_index_dtype(edge_index, what);
  if (edge_index.ndim() != 2 || edge_index.shape(0) != 2)
    raise<ShapeError>(what, " has shape ", shape_str(edge_index), ", expected [2, num_edges]");
  const BuildOptions options = build_options(self_loops, duplicates, symmetrize);
  const size_t e = edge_index.shape(1);
  std::vector<int64_t> src(e), dst(e);
  int64_t max_id = -1;
  for (size_t k = 0; k < e; ++k) {
    src[k] = index_at(edge_index, static_cast<int64_t>(k) * edge_index.stride(1));
    dst[k] = index_at(edge_index, edge_index.stride(0) + static_cast<int64_t>(k) * edge_index.stride(1));
    max_id = std::max({max_id, src[k], dst[k]});
  }
  const int64_t nd = num_nodes ? *num_nodes : max_id + 1;
  const int64_t ns = num_src ? *num_src : nd;
  if (nd < 0 || ns < 0) raise<InvalidArgument>("Graph.from_edge_index: negative node count ", nd, " / ", ns);
  GilRelease release;
  return build_graph(nd, ns, src, dst, options);
}

std::vector<int32_t> to_int32_indices(const std::vector<int64_t>& v, const std::string& what) {
  std::vector<int32_t> out(v.size());
  for (size_t k = 0; k < v.size(); ++k) {
    if (v[k] < std::numeric_limits<int32_t>::min() || v[k] > std::numeric_limits<int32_t>::max())
      raise<GraphError>(what, "[", k, "] = ", v[k], " does not fit a 32-bit node id");
    out[k] = static_cast<int32_t>(v[k]);
  }
  return out;
}

Graph graph_from_csr(const AnyArray& indptr, const AnyArray& indices, std::optional<int64_t> num_src,
                     bool sort) {
  std::vector<int64_t> rp = index_vector(indptr, "Graph.from_csr: indptr");
  if (rp.empty()) raise<ShapeError>("Graph.from_csr: indptr is empty, expected num_dst + 1 >= 1 entries");
  std::vector<int32_t> ci =
      to_int32_indices(index_vector(indices, "Graph.from_csr: indices"), "Graph.from_csr: indices");
  const int64_t nd = static_cast<int64_t>(rp.size()) - 1;
  const int64_t ns = num_src ? *num_src : nd;
  GilRelease release;
  return Graph::from_csr(nd, ns, std::move(rp), std::move(ci),
                         sort ? CsrCheck::sort : CsrCheck::require_sorted);
}

nb::object to_input_order(const Graph& g, const AnyArray& per_edge) {
  const ConstView v = float_view(per_edge, "Graph.to_input_order: per_edge");
  Tensor t;
  {
    GilRelease release;
    t = to_input_edge_order(g, v);
  }
  return to_numpy(std::move(t));
}

// ---------------------------------------------------------------------------------------------
// Attention
// ---------------------------------------------------------------------------------------------

struct Operands {
  std::optional<AnyArray> query, key, value, score_dst, score_src, weight, key_weight, att, edge_bias,
      score_edge, edge_attr, edge_proj, att_dst, att_src;

  AttentionInputs views(const std::string& who) const {
    AttentionInputs in;
    in.query = optional_view(query, who + ": query");
    in.key = optional_view(key, who + ": key");
    in.value = optional_view(value, who + ": value");
    in.score_dst = optional_view(score_dst, who + ": score_dst");
    in.score_src = optional_view(score_src, who + ": score_src");
    in.weight = optional_view(weight, who + ": weight");
    in.key_weight = optional_view(key_weight, who + ": key_weight");
    in.att = optional_view(att, who + ": att");
    in.edge_bias = optional_view(edge_bias, who + ": edge_bias");
    in.score_edge = optional_view(score_edge, who + ": score_edge");
    in.edge_attr = optional_view(edge_attr, who + ": edge_attr");
    in.edge_proj = optional_view(edge_proj, who + ": edge_proj");
    in.att_dst = optional_view(att_dst, who + ": att_dst");
    in.att_src = optional_view(att_src, who + ": att_src");
    return in;
  }
};

AttentionConfig make_config(const std::string& score, const std::string& normalization,
                            const std::string& combine, float scale, float negative_slope, float dropout,
                            uint64_t seed, bool return_attention, const std::string& path,
                            double dense_threshold) {
  AttentionConfig c;
  c.score = parse_score(score);
  c.normalization = parse_normalization(normalization);
  c.combine = parse_combine(combine);
  c.scale = scale;
  c.negative_slope = negative_slope;
  c.dropout = dropout;
  c.seed = seed;
  c.return_attention = return_attention;
  c.path = parse_path(path);
  c.dense_threshold = dense_threshold;
  return c;
}

/// The forward result as Python sees it: the C++ result (backward needs out and row_stats) plus
/// the config it ran with and the order its attention weights are in.
struct PyAttentionResult {
  AttentionResult result;
  AttentionConfig config;
  std::string attention_order = "csr";
};

PyAttentionResult py_attention_forward(const Pattern& pattern, const Operands& ops,
                                       const AttentionConfig& config, const std::string& attention_order) {
  if (attention_order != "csr" && attention_order != "input")
    raise<InvalidArgument>("attention_forward: attention_order '", attention_order,
                           "' (expected csr or input)");
  const AttentionInputs in = ops.views("attention_forward");
  if (attention_order == "input" && config.return_attention) {
    const Graph* g = std::get_if<Graph>(&pattern);
    // A graph built from an empty edge list has an empty input order, not a missing one.
    if (!g || (g->csr_edge_of_input().empty() && g->input_edge_of_csr().empty() && g->num_edges() > 0))
      raise<InvalidArgument>(
          "attention_forward: attention_order='input' needs a Graph built from an edge list "
          "(Graph.from_edge_index); this pattern is ",
          describe(pattern));
  }
  PyAttentionResult r;
  r.config = config;
  r.attention_order = attention_order;
  GilRelease release;
  r.result = attention_forward(pattern, in, config);
  if (attention_order == "input" && config.return_attention)
    r.result.attention = to_input_edge_order(std::get<Graph>(pattern), r.result.attention);
  return r;
}

nb::dict py_attention_backward(const Pattern& pattern, const Operands& ops, const PyAttentionResult& forward,
                               const AnyArray& grad_out) {
  const AttentionInputs in = ops.views("attention_backward");
  const ConstView dout = float_view(grad_out, "attention_backward: grad_out");
  AttentionGrads g;
  {
    GilRelease release;
    g = attention_backward(pattern, in, forward.config, forward.result, dout);
  }
  nb::dict d;
  const std::pair<const char*, Tensor*> fields[] = {
      {"query", &g.query},           {"key", &g.key},
      {"value", &g.value},           {"score_dst", &g.score_dst},
      {"score_src", &g.score_src},   {"weight", &g.weight},
      {"key_weight", &g.key_weight}, {"att", &g.att},
      {"edge_bias", &g.edge_bias},   {"score_edge", &g.score_edge},
      {"edge_attr", &g.edge_attr},   {"edge_proj", &g.edge_proj},
      {"att_dst", &g.att_dst},       {"att_src", &g.att_src}};
  for (const auto& [name, t] : fields)
    if (!t->absent()) d[name] = to_numpy(std::move(*t));
  return d;
}

// ---------------------------------------------------------------------------------------------
// Models and training
// ---------------------------------------------------------------------------------------------

/// A model with the graph and features it was last prepared for (prepared once per graph).
/// The parameter called `name`; InvalidArgument naming `owner` and every parameter otherwise.
autograd::Parameter& find_parameter(const std::vector<autograd::Parameter*>& params, const std::string& name,
                                    const char* owner) {
  for (autograd::Parameter* p : params)
    if (p->name == name) return *p;
  std::string names;
  for (autograd::Parameter* p : params) names += (names.empty() ? "" : ", ") + p->name;
  raise<InvalidArgument>(owner, ": no parameter '", name, "' (parameters: ", names, ")");
}

/// parameter_names / parameter (a writable view) / set_parameter for a class whose instances have
/// parameters() and parameter(name). `set_prefix` starts set_parameter's error messages.
template <class Py, class C>
void bind_parameter_access(C& cls, const char* set_prefix, const char* view_doc) {
  cls.def("parameter_names",
          [](Py& c) {
            std::vector<std::string> names;
            for (autograd::Parameter* p : c.parameters()) names.push_back(p->name);
            return names;
          })
      .def(
          "parameter",
          [](nb::handle self, const std::string& name) {
            return tensor_view(nb::cast<Py&>(self).parameter(name).value, self);
          },
          "name"_a, view_doc)
      .def(
          "set_parameter",
          [set_prefix](Py& c, const std::string& name, const AnyArray& value) {
            autograd::Parameter& p = c.parameter(name);
            const ConstView v = float_view(value, set_prefix + name);
            if (!(v.shape() == p.value.shape()))
              raise<ShapeError>(set_prefix, name, " has shape ", p.value.shape().str(), ", got ",
                                v.shape().str());
            for (int64_t k = 0; k < v.numel(); ++k)  // a NaN weight makes every logit NaN
              if (!std::isfinite(v.data()[k]))
                raise<InvalidArgument>(set_prefix, name, ": element ", k, " is ", v.data()[k],
                                       ", expected finite weights");
            std::memcpy(p.value.data(), v.data(), static_cast<size_t>(v.numel()) * sizeof(float));
          },
          "name"_a, "value"_a,
          "Copies a float32 array of the parameter's shape into it (finite values: InvalidArgument "
          "otherwise, naming the element).");
}

/// A Dataset -> Dataset transform (data/preprocess.hpp) run without the GIL.
template <data::Dataset (*Transform)(const data::Dataset&)>
data::Dataset without_gil(const data::Dataset& d) {
  GilRelease release;
  return Transform(d);
}

struct PyModel {
  explicit PyModel(const nn::ModelConfig& c) : model(c) {}
  nn::Model model;
  bool normalize_features = false;  ///< as the model file records it (Model.load)

  std::vector<autograd::Parameter*> parameters() { return model.parameters(); }
  autograd::Parameter& parameter(const std::string& name) {
    return find_parameter(parameters(), name, "Model");
  }
};

nn::ModelConfig model_config(const std::string& kind, int64_t in_channels, int64_t num_classes,
                             int64_t hidden, int64_t heads, int64_t out_heads, int64_t layers, double dropout,
                             double attention_dropout, double negative_slope, bool residual,
                             std::optional<bool> add_self_loops, bool share_weights, bool beta, bool pre_norm,
                             int64_t ffn_hidden, const std::string& pe, int64_t pe_dim, int64_t edge_dim,
                             uint64_t seed) {
  nn::ModelConfig c;
  c.kind = nn::parse_model_kind(kind);
  c.in_channels = in_channels;
  c.num_classes = num_classes;
  c.hidden = hidden;
  c.heads = heads;
  c.out_heads = out_heads;
  c.layers = layers;
  c.dropout = static_cast<float>(dropout);
  c.attention_dropout = static_cast<float>(attention_dropout);
  c.negative_slope = static_cast<float>(negative_slope);
  c.residual = residual;
  // PyG's TransformerConv adds no self-loops, its GATConv and GATv2Conv do (the CLI's defaults).
  c.add_self_loops = add_self_loops.value_or(c.kind != nn::ModelKind::transformer);
  c.share_weights = share_weights;
  c.beta = beta;
  c.pre_norm = pre_norm;
  c.ffn_hidden = ffn_hidden;
  c.pe = nn::parse_positional_encoding(pe);
  c.pe_dim = pe_dim;
  if (edge_dim < 0)
    raise<InvalidArgument>("Model: edge_dim is ", edge_dim, ", expected >= 0 (0: no edge features)");
  c.edge_dim = edge_dim;
  c.seed = seed;
  c.validate();
  c.check_kind_options();
  return c;
}

/// The model's prepared graph, with the edge attributes [E, edge_dim] (the graph's CSR order,
/// e.g. Dataset.edge_attr) carried through its self-loops when the model reads them.
nn::PreparedGraph prepared_graph(const nn::Model& model, const Graph& graph, const Tensor& edge_attr,
                                 const char* who) {
  const int64_t edge_dim = model.config().edge_dim;
  if (edge_dim == 0) return {model.prepare_graph(graph), {}};
  if (edge_attr.absent())
    raise<InvalidArgument>(who, ": the model was built with edge_dim = ", edge_dim,
                           "; give edge attributes [num_edges, ", edge_dim,
                           "] (a Dataset with edge_attr, or edge_attr=)");
  return model.prepare_graph(graph, edge_attr);
}

/// Logits [N, C] of `model` on (graph, features[, edge attributes]) in evaluation or training mode.
/// Positional encodings come from `graph` itself (before self-loops), as the CLI computes them.
Tensor model_logits(PyModel& m, const Graph& graph, const data::Features& features, const Tensor& edge_attr,
                    bool training, uint64_t seed, std::vector<Tensor>* attention,
                    const char* who = "Model.logits") {
  const nn::PreparedGraph pg = prepared_graph(m.model, graph, edge_attr, who);
  const Graph& g = pg.graph;
  const data::Features x = m.model.prepare_features(graph, features);
  // Evaluation without attention weights runs layer by layer (the same logits, less memory).
  if (!training && attention == nullptr) return m.model.inference(g, x, pg.edge_attr);
  autograd::Tape tape;
  tape.training = training;
  const nn::EdgeFeatures edges{pg.edge_attr.absent() ? autograd::Var{} : tape.constant_ref(pg.edge_attr)};
  const autograd::Var logits = m.model.forward(tape, g, x, edges, seed, attention);
  return tape.take_value(logits);
}

data::Features features_from_array(const AnyArray& x) {
  return data::Features(tensor_copy(x, "Model: features"));
}

nb::dict epoch_dict(const train::EpochStats& s) {
  nb::dict d;
  d["epoch"] = s.epoch;
  d["train_loss"] = s.train_loss;
  d["train_accuracy"] = s.train_accuracy;
  d["val_loss"] = s.val_loss;
  d["val_accuracy"] = s.val_accuracy;
  d["test_loss"] = s.test_loss;
  d["test_accuracy"] = s.test_accuracy;
  d["train_seconds"] = s.train_seconds;
  d["eval_seconds"] = s.eval_seconds;
  d["evaluated"] = s.evaluated;  // false: eval_every skipped it (the metrics above are NaN)
  return d;
}

// Adam and early stopping as `fit` and `fit_distributed` take them; `who` names the function.
train::TrainConfig train_config(const char* who, int64_t epochs, int64_t patience, double lr,
                                double weight_decay, uint64_t seed, const std::string& criterion,
                                int64_t eval_every) {
  train::TrainConfig tc;
  tc.epochs = epochs;
  tc.patience = patience;
  tc.eval_every = eval_every;  // checked by the trainer
  tc.optimizer.lr = static_cast<float>(lr);
  tc.optimizer.weight_decay = static_cast<float>(weight_decay);
  tc.seed = seed;
  if (criterion == "loss_or_accuracy")
    tc.criterion = train::EarlyStoppingConfig::Criterion::loss_or_accuracy;
  else if (criterion == "loss")
    tc.criterion = train::EarlyStoppingConfig::Criterion::loss;
  else if (criterion == "accuracy")
    tc.criterion = train::EarlyStoppingConfig::Criterion::accuracy;
  else
    raise<InvalidArgument>(who, ": unknown criterion '", criterion,
                           "' (expected loss_or_accuracy, loss or accuracy)");
  return tc;
}

nb::dict result_dict(const train::TrainResult& r) {
  nb::dict d;
  nb::list history;
  for (const auto& s : r.history) history.append(epoch_dict(s));
  d["history"] = history;
  d["best_epoch"] = r.best_epoch;
  d["epochs_run"] = r.epochs_run;
  d["val_accuracy"] = r.val_accuracy;
  d["val_loss"] = r.val_loss;
  d["test_accuracy"] = r.test_accuracy;
  d["test_loss"] = r.test_loss;
  d["seconds_per_epoch"] = r.seconds_per_epoch;
  d["total_seconds"] = r.total_seconds;
  return d;
}

nb::dict py_fit(PyModel& m, const data::Dataset& ds, const std::string& split, int64_t epochs,
                int64_t patience, double lr, double weight_decay, uint64_t seed, const std::string& criterion,
                int64_t batch_size, const std::vector<int64_t>& fanout, bool replace,
                const std::optional<std::string>& source_order, bool sample_weights, int64_t eval_every) {
  const train::TrainConfig tc =
      train_config("fit", epochs, patience, lr, weight_decay, seed, criterion, eval_every);
  if (batch_size < 0)
    raise<InvalidArgument>("fit: batch_size is ", batch_size, ", expected >= 0 (0: full batch)");
  if (batch_size == 0 && (!fanout.empty() || sample_weights || replace || source_order))
    raise<InvalidArgument>(
        "fit: fanout, replace, source_order and sample_weights apply to mini-batch training; give "
        "batch_size too");
  // By default new sources by ascending id: blocks keep the dataset's locality
  // (graph/neighbor_sampler.hpp).
  NeighborSamplerOptions sampling{.fanouts = fanout,
                                  .replace = replace,
                                  .seed = 0,
                                  .order = parse_source_order(source_order.value_or("ascending"))};
  if (batch_size > 0 && sampling.fanouts.empty())
    sampling.fanouts.assign(static_cast<size_t>(m.model.config().layers), 10);
  // By the dataset's edge weights; none (every weight 1) samples uniformly, which is the same law.
  if (sample_weights) sampling.weights = ds.edge_weight;
  const data::Split& sp = ds.split(split);
  train::TrainResult r;
  {
    GilRelease release;
    const nn::PreparedGraph pg = prepared_graph(m.model, ds.graph, ds.edge_attr, "fit");
    const Graph& g = pg.graph;
    const data::Features x = m.model.prepare_features(ds.graph, ds.features);
    const bool with_edges = !pg.edge_attr.absent();
    auto forward = [&](autograd::Tape& tape, uint64_t step_seed) {
      if (!tape.training) return tape.constant(m.model.inference(g, x, pg.edge_attr));  // layer-wise
      const nn::EdgeFeatures edges{with_edges ? tape.constant_ref(pg.edge_attr) : autograd::Var{}};
      return m.model.forward(tape, g, x, edges, step_seed);
    };
    if (batch_size > 0) {
      auto batch = [&](autograd::Tape& tape, std::span<const int64_t> seeds, uint64_t step_seed) {
        NeighborSamplerOptions o = sampling;
        o.seed = step_seed;
        const SampledSubgraph sub = sample_neighbors(ds.graph, seeds, o);
        return with_edges ? m.model.forward(tape, sub, x, ds.edge_attr, step_seed)
                          : m.model.forward(tape, sub, x, step_seed);
      };
      r = train::fit_minibatch(batch, forward, m.model.parameters(), ds.labels, sp, batch_size, tc);
    } else {
      r = train::fit(forward, m.model.parameters(), ds.labels, sp, tc);
    }
  }
  return result_dict(r);
}

// ---- Distributed training (dist/) ---------------------------------------------------------------

nb::dict quality_dict(const PartitionQuality& q, PartitionMethod method) {
  nb::dict d;
  d["parts"] = q.parts;
  d["method"] = std::string(to_string(method));
  d["nodes"] = q.nodes;
  d["edges"] = q.edges;
  d["halo_nodes"] = q.halo_nodes;
  d["edge_cut"] = q.edge_cut;
  d["edge_imbalance"] = q.edge_imbalance;
  d["node_imbalance"] = q.node_imbalance;
  d["halo_fraction"] = q.halo_fraction;
  return d;
}

nb::dict py_partition(const data::Dataset& ds, int64_t parts, const std::string& out,
                      const std::string& method, const std::string& split, uint64_t seed) {
  if (parts < 1) raise<InvalidArgument>("partition: parts is ", parts, ", expected >= 1");
  if (out.empty()) raise<InvalidArgument>("partition: out is empty, expected a directory");
  const PartitionMethod m = method.empty() ? default_partition_method() : parse_partition_method(method);
  PartitionQuality q;
  {
    GilRelease release;
    const std::vector<int32_t> owner = partition_nodes(ds.graph, {.parts = parts, .method = m, .seed = seed});
    q = dist::write_partitions(out, ds, split, owner, static_cast<int>(parts), m);
  }
  return quality_dict(q, m);
}

// Whether this process was started by an MPI launcher (mpirun / mpiexec / srun) or MPI is
// already initialised (mpi4py): then fit_distributed runs over MPI_COMM_WORLD; otherwise it is
// rank 0 of 1 without initialising MPI (a singleton MPI_Init costs seconds and may not be allowed).
bool launched_by_mpi() {
#if EDGEATTN_HAVE_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return true;
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(var) != nullptr) return true;
#endif
  return false;
}

#if EDGEATTN_HAVE_MPI
// MPI for the module: initialised on first use (unless mpi4py or the program did), finalised at
// interpreter exit (atexit, registered below) when the module initialised it.
std::optional<dist::MpiEnvironment>& mpi_environment() {
  static std::optional<dist::MpiEnvironment> env;
  return env;
}
dist::MpiCommunicator& world() {
  static std::optional<dist::MpiCommunicator> comm;
  if (!comm) {
    if (!mpi_environment()) mpi_environment().emplace();
    comm.emplace(MPI_COMM_WORLD);
  }
  return *comm;
}
#endif

// Runs f(comm) on MPI_COMM_WORLD when launched by MPI, else on a one-process communicator. On
// more than one rank an error ends the whole job (MPI_Abort with the message and this rank): the
// other ranks would otherwise wait in a collective for ever.
template <class F>
auto with_communicator(const char* who, F&& f) {
#if EDGEATTN_HAVE_MPI
  if (launched_by_mpi()) {
    dist::MpiCommunicator& comm = world();
    if (comm.size() == 1) return f(comm);
    try {
      return f(comm);
    } catch (const std::exception& e) {
      comm.abort(std::string(who) + ": " + e.what());
    }
  }
#endif
  (void)who;
  dist::SelfCommunicator self;
  return f(self);
}

// This rank's part of the partition files in `partitions`, prepared for the model's layers.
dist::DistributedInputs read_prepared_part(const PyModel& m, const std::string& partitions,
                                           const dist::Communicator& comm, dist::HaloInput halo_input) {
  return dist::prepare_part(m.model, dist::read_partition(partitions, comm.size(), comm.rank()),
                            m.model.config().edge_dim > 0, halo_input);
}

nb::dict py_fit_distributed(PyModel& m, const std::string& partitions, int64_t epochs, int64_t patience,
                            double lr, double weight_decay, uint64_t seed, const std::string& criterion,
                            const std::string& halo_input, int64_t eval_every) {
  const train::TrainConfig tc =
      train_config("fit_distributed", epochs, patience, lr, weight_decay, seed, criterion, eval_every);
  const dist::HaloInput halo = dist::parse_halo_input(halo_input);
  train::TrainResult r;
  dist::Traffic step;
  {
    GilRelease release;
    r = with_communicator("fit_distributed", [&](dist::Communicator& comm) {
      return dist::fit_distributed(m.model, comm, read_prepared_part(m, partitions, comm, halo), tc, &step);
    });
  }
  nb::dict d = result_dict(r);
  d["halo_bytes_per_epoch"] = step.row_bytes;
  d["gradient_bytes_per_epoch"] = step.gathered_bytes;
  return d;
}

nb::tuple py_predict_distributed(PyModel& m, const std::string& partitions, bool gather,
                                 const std::string& halo_input) {
  const dist::HaloInput halo = dist::parse_halo_input(halo_input);
  Tensor logits;
  std::vector<int64_t> nodes;
  {
    GilRelease release;
    with_communicator("predict_distributed", [&](dist::Communicator& comm) {
      const dist::DistributedInputs in = read_prepared_part(m, partitions, comm, halo);
      logits = dist::predict_distributed(m.model, comm, in);
      if (gather) {
        logits = dist::gather_owned_rows(comm, in.part, logits.view());
        nodes.resize(static_cast<size_t>(in.part.num_nodes));
        std::iota(nodes.begin(), nodes.end(), int64_t{0});
      } else {
        nodes = in.part.owned;
      }
      return 0;
    });
  }
  return nb::make_tuple(vector_to_numpy(std::move(nodes)), to_numpy(std::move(logits)));
}

nb::dict py_evaluate(PyModel& m, const data::Dataset& ds, const std::string& split) {
  const data::Split& sp = ds.split(split);
  train::Evaluation ev[3];
  {
    GilRelease release;
    autograd::Tape tape;
    tape.training = false;
    const autograd::Var logits =
        tape.constant(model_logits(m, ds.graph, ds.features, ds.edge_attr, false, 0, nullptr, "evaluate"));
    ev[0] = train::evaluate(tape, logits, ds.labels, sp.train);
    ev[1] = train::evaluate(tape, logits, ds.labels, sp.val);
    ev[2] = train::evaluate(tape, logits, ds.labels, sp.test);
  }
  nb::dict d;
  const char* names[] = {"train", "val", "test"};
  for (int i = 0; i < 3; ++i) {
    d[(std::string(names[i]) + "_loss").c_str()] = ev[i].loss;
    d[(std::string(names[i]) + "_accuracy").c_str()] = ev[i].accuracy;
  }
  return d;
}

/// A standalone attention layer (nn/gat_conv.hpp, gatv2_conv.hpp, transformer_conv.hpp) with
/// parameters under PyG's names (no prefix), forward only.
template <class Conv>
struct PyConv {
  template <class Options>
  PyConv(const Options& o, uint64_t seed, bool self_loops) : conv(o, "", seed), add_self_loops(self_loops) {}
  Conv conv;
  bool add_self_loops;

  std::vector<autograd::Parameter*> parameters() { return conv.parameters(); }
  autograd::Parameter& parameter(const std::string& name) {
    return find_parameter(parameters(), name, "layer");
  }
};

/// parameter_names / parameter / set_parameter / __call__ for a PyConv class.
template <class Conv, class C>
void bind_conv_methods(C& cls) {
  using Py = PyConv<Conv>;
  bind_parameter_access<Py>(
      cls, "set_parameter: ", "A writable float32 view of the named parameter (PyG name and shape).");
  cls.def(
      "__call__",
      [](Py& c, const Graph& graph, const AnyArray& x, bool training, uint64_t seed,
         bool return_attention) -> nb::object {
        Tensor features = tensor_copy(x, "layer: x");
        Tensor out, attention;
        {
          GilRelease release;
          const Graph g = nn::prepare_graph(graph, c.add_self_loops);
          autograd::Tape tape;
          tape.training = training;
          const autograd::Var in = tape.constant(std::move(features));
          out = tape.value(c.conv.forward(tape, g, in, seed, return_attention ? &attention : nullptr));
        }
        if (!return_attention) return to_numpy(std::move(out));
        return nb::make_tuple(to_numpy(std::move(out)), to_numpy(std::move(attention)));
      },
      "graph"_a, "x"_a, "training"_a = false, "seed"_a = 0, "return_attention"_a = false,
      "x: float32 [N, in] (copied) -> [N, H*C] (concat) or [N, C]. Self-loops are added when the layer "
      "adds them (PyG's add_self_loops); attention weights come in the CSR order of that prepared "
      "graph.");
}

// ---------------------------------------------------------------------------------------------
// Patterns: shared read-only properties
// ---------------------------------------------------------------------------------------------

template <class P, class C>
void pattern_common(C& cls) {
  cls.def_prop_ro("num_dst", [](const P& p) { return p.num_dst(); })
      .def_prop_ro("num_src", [](const P& p) { return p.num_src(); })
      .def_prop_ro("num_edges", [](const P& p) { return p.num_edges(); })
      .def(
          "contains",
          [](const P& p, int64_t i, int64_t j) {
            if (i < 0 || i >= p.num_dst() || j < 0 || j >= p.num_src())
              raise<InvalidArgument>("contains: (", i, ", ", j, ") is outside the ", p.num_dst(), " x ",
                                     p.num_src(), " pattern");
            return p.contains(i, j);
          },
          "i"_a, "j"_a, "Whether destination i attends to source j.")
      .def(
          "materialize",
          [](const P& p) {
            GilRelease release;
            return materialize(Pattern(p));
          },
          "The explicit CSR Graph of the pattern (same edge numbering).")
      .def("__repr__", [](const P& p) { return describe(Pattern(p)); });
}

PyObject* new_exception(nb::module_& m, const char* name, std::initializer_list<PyObject*> bases,
                        const char* doc) {
  nb::tuple b = nb::steal<nb::tuple>(PyTuple_New(static_cast<Py_ssize_t>(bases.size())));
  Py_ssize_t i = 0;
  for (PyObject* base : bases) {
    Py_INCREF(base);
    PyTuple_SET_ITEM(b.ptr(), i++, base);
  }
  const std::string qualified = std::string("edgeattn.") + name;
  PyObject* e = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, b.ptr(), nullptr);
  if (!e) throw nb::python_error();
  m.attr(name) = nb::handle(e);
  return e;
}

}  // namespace
}  // namespace edgeattn::python

NB_MODULE(_edgeattn, m) {
  using namespace edgeattn;
  using namespace edgeattn::python;
  m.doc() = "edgeattn: graph attention over sparse graphs (compiled module; import edgeattn instead)";
  // PyTorch autograd nodes (edgeattn.torch) hold the forward result and the pattern; tensors that
  // are still alive when the interpreter exits are torn down after this module, which nanobind
  // would report as leaks. The lifetimes themselves are tested (tests/test_package.py).
  nb::set_leak_warnings(false);

  // -- Errors: one Python class per C++ type, all under edgeattn.Error -----------------------
  static PyObject* py_error = new_exception(m, "Error", {PyExc_Exception}, "Base of every edgeattn error.");
  static PyObject* py_shape =
      new_exception(m, "ShapeError", {py_error, PyExc_ValueError},
                    "A tensor's rank or extents do not match what the operation requires.");
  static PyObject* py_invalid = new_exception(m, "InvalidArgument", {py_error, PyExc_ValueError},
                                              "An option, dtype or layout is out of its valid range.");
  static PyObject* py_graph = new_exception(m, "GraphError", {py_error, PyExc_ValueError},
                                            "A graph's structure is invalid (indices out of range, ...).");
  static PyObject* py_io =
      new_exception(m, "IoError", {py_error, PyExc_OSError}, "A file cannot be opened, read or written.");
  static PyObject* py_parse = new_exception(m, "ParseError", {py_error, PyExc_ValueError},
                                            "A file's content does not follow its format.");
  static PyObject* py_checksum =
      new_exception(m, "ChecksumError", {py_io}, "A file's bytes do not match the checksum recorded for it.");
  static PyObject* py_download = new_exception(
      m, "DownloadError", {py_io},
      "A file could not be downloaded: offline, unreachable, an HTTP error such as 404, a stalled "
      "server, a full disk or an interrupted transfer (the message says which and names the URL).");
  static PyObject* py_device = new_exception(
      m, "DeviceError", {py_error, PyExc_RuntimeError},
      "The GPU of path='cuda' is missing or failed (built without CUDA, no driver, no device, or a "
      "CUDA runtime error, which the message names).");
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const data::DownloadError& e) {
      PyErr_SetString(py_download, e.what());
    } catch (const ChecksumError& e) {
      PyErr_SetString(py_checksum, e.what());
    } catch (const IoError& e) {
      PyErr_SetString(py_io, e.what());
    } catch (const ParseError& e) {
      PyErr_SetString(py_parse, e.what());
    } catch (const ShapeError& e) {
      PyErr_SetString(py_shape, e.what());
    } catch (const InvalidArgument& e) {
      PyErr_SetString(py_invalid, e.what());
    } catch (const GraphError& e) {
      PyErr_SetString(py_graph, e.what());
    } catch (const DeviceError& e) {
      PyErr_SetString(py_device, e.what());
    } catch (const Error& e) {
      PyErr_SetString(py_error, e.what());
    }
  });

  // -- Graph ------------------------------------------------------------------------------------
  nb::class_<Graph>(m, "Graph",
                    "The sparsity pattern of attention, CSR by destination: row i lists the sources j of the "
                    "edges j -> i (ascending). Immutable; indptr/indices are read-only views.")
      .def(nb::init<>(), "The empty graph.")
      .def_static(
          "from_edge_index", &graph_from_edge_index, "edge_index"_a, "num_nodes"_a = nb::none(),
          "num_src"_a = nb::none(), "self_loops"_a = "keep", "duplicates"_a = "keep", "symmetrize"_a = false,
          "From a [2, E] int64/int32 edge_index (PyG convention: row 0 source, row 1 destination; any "
          "strides, copied). num_nodes defaults to max id + 1 and num_src to num_nodes. self_loops: "
          "keep | remove | add; duplicates: keep | merge | error. The default, keep, is PyG's semantics: "
          "a repeated (src, dst) pair is a separate edge with its own attention weight, so it counts "
          "twice in its destination's softmax, as in PyG's layers on the same edge_index; merge keeps "
          "the first occurrence (later ones map to it in to_input_order). The graph remembers the input "
          "edge order (see to_input_order).")
      .def_static(
          "from_csr", &graph_from_csr, "indptr"_a, "indices"_a, "num_src"_a = nb::none(), "sort"_a = false,
          "From CSR-by-destination arrays: indptr [num_dst + 1], indices [E] (source ids, int32/int64, "
          "copied). num_src defaults to num_dst. sort=True sorts unsorted rows instead of raising.")
      .def_prop_ro("num_dst", &Graph::num_dst)
      .def_prop_ro("num_src", &Graph::num_src)
      .def_prop_ro("num_nodes",
                   [](const Graph& g) {
                     if (g.num_dst() != g.num_src())
                       raise<InvalidArgument>("Graph.num_nodes: the graph is bipartite (", g.num_dst(),
                                              " destinations, ", g.num_src(),
                                              " sources); use num_dst / num_src");
                     return g.num_dst();
                   })
      .def_prop_ro("num_edges", &Graph::num_edges)
      .def_prop_ro("density", &Graph::density)
      .def_prop_ro(
          "indptr",
          [](nb::handle self) { return readonly_view(nb::cast<const Graph&>(self).row_ptr(), self); },
          "int64 [num_dst + 1], read-only view")
      .def_prop_ro(
          "indices",
          [](nb::handle self) { return readonly_view(nb::cast<const Graph&>(self).col_idx(), self); },
          "int32 [num_edges] source of each edge, read-only view")
      .def_prop_ro(
          "input_edge_of_csr",
          [](nb::handle self) {
            return readonly_view(nb::cast<const Graph&>(self).input_edge_of_csr(), self);
          },
          "int64 [num_edges]: each CSR edge's index in the input edge list (-1: added); empty when built "
          "from CSR")
      .def_prop_ro(
          "csr_edge_of_input",
          [](nb::handle self) {
            return readonly_view(nb::cast<const Graph&>(self).csr_edge_of_input(), self);
          },
          "int64 [num_input_edges]: each input edge's CSR position (-1: dropped)")
      .def(
          "edge_index",
          [](const Graph& g) {
            const int64_t e = g.num_edges();
            std::vector<int64_t> out(static_cast<size_t>(2 * e));
            for (int64_t i = 0; i < g.num_dst(); ++i)
              for (int64_t p = g.row_ptr()[static_cast<size_t>(i)];
                   p < g.row_ptr()[static_cast<size_t>(i) + 1]; ++p) {
                out[static_cast<size_t>(p)] = g.col_idx()[static_cast<size_t>(p)];
                out[static_cast<size_t>(e + p)] = i;
              }
            auto* owned = new std::vector<int64_t>(std::move(out));
            nb::capsule owner(owned, [](void* q) noexcept { delete static_cast<std::vector<int64_t>*>(q); });
            return nb::ndarray<nb::numpy, int64_t>(owned->data(), {2, static_cast<size_t>(e)}, owner);
          },
          "A new [2, E] int64 array (row 0 source, row 1 destination) in CSR edge order.")
      .def("degree_stats",
           [](const Graph& g) {
             const DegreeStats& s = g.degree_stats();
             nb::dict d;
             d["min_degree"] = s.min_degree;
             d["max_degree"] = s.max_degree;
             d["mean_degree"] = s.mean_degree;
             d["isolated_rows"] = s.isolated_rows;
             d["self_loops"] = s.self_loops;
             return d;
           })
      .def(
          "permute",
          [](const Graph& g, const AnyArray& new_of_old) {
            const std::vector<int64_t> order = index_vector(new_of_old, "Graph.permute: new_of_old");
            GilRelease release;
            return permute(g, order).graph;
          },
          "new_of_old"_a,
          "The graph with node i renamed new_of_old[i] (edge i <- j becomes new_of_old[i] <- new_of_old[j]; "
          "e.g. from rcm_ordering). Raises GraphError unless new_of_old is a permutation of [0, N).")
      .def("to_input_order", &to_input_order, "per_edge"_a,
           "Maps per-edge float32 values in CSR order [E, ...] to the input edge list's order (dropped edges "
           "get 0, merged duplicates the kept edge's value).")
      .def("__repr__", &Graph::describe);

  // -- Structured patterns ----------------------------------------------------------------------
  {
    auto c = nb::class_<CompletePattern>(m, "CompletePattern", "Every destination attends to every source.")
                 .def(nb::init<int64_t, int64_t>(), "num_dst"_a, "num_src"_a);
    pattern_common<CompletePattern>(c);
    auto ca = nb::class_<CausalPattern>(m, "CausalPattern",
                                        "Row i attends to sources j <= i + (num_src - num_dst).")
                  .def(nb::init<int64_t, int64_t>(), "num_dst"_a, "num_src"_a);
    pattern_common<CausalPattern>(ca);
    auto w =
        nb::class_<WindowPattern>(m, "WindowPattern",
                                  "Row i attends to j = i + k*dilation, -left <= k <= right, 0 <= j < n.")
            .def(nb::init<int64_t, int64_t, int64_t, int64_t>(), "n"_a, "left"_a, "right"_a, "dilation"_a = 1)
            .def_static("sliding", &WindowPattern::sliding, "n"_a, "w"_a, "causal"_a = false,
                        "dilation"_a = 1)
            .def_prop_ro("left", &WindowPattern::left)
            .def_prop_ro("right", &WindowPattern::right)
            .def_prop_ro("dilation", &WindowPattern::dilation);
    pattern_common<WindowPattern>(w);
    auto b =
        nb::class_<BlockDiagonalPattern>(
            m, "BlockDiagonalPattern",
            "Padded batch: block b spans [starts[b], starts[b+1]) and its rows attend to the first "
            "valid_lengths[b] positions of the block.")
            .def(
                "__init__",
                [](BlockDiagonalPattern* self, const AnyArray& starts, const AnyArray& valid) {
                  new (self) BlockDiagonalPattern(index_vector(starts, "BlockDiagonalPattern: block_starts"),
                                                  index_vector(valid, "BlockDiagonalPattern: valid_lengths"));
                },
                "block_starts"_a, "valid_lengths"_a)
            .def_static(
                "padded_batch",
                [](int64_t seq_len, const AnyArray& valid) {
                  return BlockDiagonalPattern::padded_batch(
                      seq_len, index_vector(valid, "BlockDiagonalPattern.padded_batch: valid_lengths"));
                },
                "seq_len"_a, "valid_lengths"_a, "B sequences of seq_len positions each.")
            .def_prop_ro("num_blocks", &BlockDiagonalPattern::num_blocks)
            .def_prop_ro("block_starts",
                         [](nb::handle self) {
                           return readonly_view(nb::cast<const BlockDiagonalPattern&>(self).block_starts(),
                                                self);
                         })
            .def_prop_ro("valid_lengths", [](nb::handle self) {
              return readonly_view(nb::cast<const BlockDiagonalPattern&>(self).valid_lengths(), self);
            });
    pattern_common<BlockDiagonalPattern>(b);
    auto wg = nb::class_<WindowGlobalPattern>(m, "WindowGlobalPattern",
                                              "Sliding window of a radius plus global tokens (Longformer).")
                  .def(
                      "__init__",
                      [](WindowGlobalPattern* self, int64_t n, int64_t radius, const AnyArray& globals) {
                        new (self) WindowGlobalPattern(
                            n, radius, index_vector(globals, "WindowGlobalPattern: global_tokens"));
                      },
                      "n"_a, "radius"_a, "global_tokens"_a)
                  .def_prop_ro("radius", &WindowGlobalPattern::radius)
                  .def_prop_ro("global_tokens", [](nb::handle self) {
                    return readonly_view(nb::cast<const WindowGlobalPattern&>(self).global_tokens(), self);
                  });
    pattern_common<WindowGlobalPattern>(wg);
  }
  m.def(
      "materialize",
      [](const Pattern& p) {
        GilRelease release;
        return materialize(p);
      },
      "pattern"_a, "The explicit CSR Graph of any pattern.");
  m.def(
      "num_edges", [](const Pattern& p) { return num_edges(p); }, "pattern"_a);
  m.def(
      "density", [](const Pattern& p) { return density(p); }, "pattern"_a);
  m.def(
      "describe", [](const Pattern& p) { return describe(p); }, "pattern"_a);

  // -- Generators -------------------------------------------------------------------------------
  m.def(
      "erdos_renyi_graph",
      [](int64_t n, int64_t num_edges, uint64_t seed, const std::string& self_loops,
         const std::string& duplicates, bool symmetrize) {
        const BuildOptions o = build_options(self_loops, duplicates, symmetrize);
        GilRelease release;
        return erdos_renyi_graph(n, num_edges, seed, o);
      },
      "n"_a, "num_edges"_a, "seed"_a = 0, "self_loops"_a = "keep", "duplicates"_a = "merge",
      "symmetrize"_a = false,
      "num_edges uniform random edges on n nodes (graph/generators.hpp), built with the given policies.");
  m.def(
      "rmat_graph",
      [](int64_t n, int64_t num_edges, uint64_t seed, double a, double b, double c, double d,
         bool scramble_ids, const std::string& self_loops, const std::string& duplicates, bool symmetrize) {
        const BuildOptions o = build_options(self_loops, duplicates, symmetrize);
        const RmatParams params{.a = a, .b = b, .c = c, .d = d, .scramble_ids = scramble_ids};
        GilRelease release;
        return rmat_graph(n, num_edges, seed, params, o);
      },
      "n"_a, "num_edges"_a, "seed"_a = 0, "a"_a = 0.57, "b"_a = 0.19, "c"_a = 0.19, "d"_a = 0.05,
      "scramble_ids"_a = true, "self_loops"_a = "keep", "duplicates"_a = "merge", "symmetrize"_a = false,
      "num_edges R-MAT (Kronecker) edges on n nodes, Graph500 parameters by default.");

  // -- Neighbour sampling (graph/neighbor_sampler.hpp) -------------------------------------------
  nb::class_<Block>(m, "Block",
                    "One layer's bipartite message-passing graph in local ids (DGL's block): graph is "
                    "[num_dst x num_src], CSR by destination; edge (i <- j) is dst_nodes[i] <- src_nodes[j]. "
                    "For a square input graph src_nodes starts with dst_nodes, so x_dst = x_src[:num_dst]. "
                    "Arrays are read-only int64 views kept alive by the block.")
      .def_prop_ro(
          "graph", [](const Block& b) { return b.graph; },
          "the block's Graph [num_dst x num_src] (shares the block's CSR arrays)")
      .def_prop_ro("dst_nodes", index_member_view(&Block::dst_nodes),
                   "int64 [num_dst]: global ids of the destinations, in the order given")
      .def_prop_ro("src_nodes", index_member_view(&Block::src_nodes),
                   "int64 [num_src]: global ids of the sources (the destinations first, on a square graph)")
      .def_prop_ro("edge_ids", index_member_view(&Block::edge_ids),
                   "int64 [num_edges]: each block edge's CSR position in the input graph (PyG's e_id), for "
                   "per-edge data: block_attr = attr[edge_ids]")
      .def_prop_ro("num_dst", &Block::num_dst)
      .def_prop_ro("num_src", &Block::num_src)
      .def_prop_ro("num_edges", &Block::num_edges)
      .def("__repr__", [](const Block& b) {
        return detail::message("Block(num_dst=", b.num_dst(), ", num_src=", b.num_src(),
                               ", num_edges=", b.num_edges(), ")");
      });
  nb::class_<SampledSubgraph>(
      m, "SampledSubgraph",
      "A mini-batch: the seeds' sampled neighbourhood, one Block per layer, outermost "
      "hop first (DGL's blocks). blocks[l].dst_nodes equals blocks[l + 1].src_nodes[:num_dst]; "
      "the last block's destinations are the seeds.")
      .def_prop_ro(
          "blocks",
          [](nb::handle self) {
            nb::list out;
            for (const Block& b : nb::cast<const SampledSubgraph&>(self).blocks)
              out.append(nb::cast(&b, nb::rv_policy::reference_internal, self));
            return out;
          },
          "list of Block, outermost hop first (each kept alive by the subgraph)")
      .def_prop_ro("input_nodes", index_member_view(&SampledSubgraph::input_nodes),
                   "int64: global ids whose features the first layer reads (blocks[0].src_nodes)")
      .def_prop_ro("seeds", index_member_view(&SampledSubgraph::seeds),
                   "int64: the seeds, in the order given (the last layer's output rows)")
      .def("__len__", [](const SampledSubgraph& s) { return s.blocks.size(); })
      .def("__repr__", [](const SampledSubgraph& s) {
        std::string r = detail::message("SampledSubgraph(seeds=", s.seeds.size(), ", blocks=[");
        for (size_t l = 0; l < s.blocks.size(); ++l)
          r += detail::message(l ? ", " : "", s.blocks[l].num_dst(), "x", s.blocks[l].num_src(), ":",
                               s.blocks[l].num_edges());
        return r + "])";
      });
  {
    // seeds / dst_nodes: an int32/int64 array (NumPy, or a tensor through DLPack) or a list of ints.
    auto sample = [](const Graph& graph, const std::vector<int64_t>& ids, const std::vector<int64_t>& fanouts,
                     bool replace, uint64_t seed, const std::string& order,
                     const std::optional<AnyArray>& weights) {
      NeighborSamplerOptions o{
          .fanouts = fanouts, .replace = replace, .seed = seed, .order = parse_source_order(order)};
      if (weights) {
        const ConstView w = float_view(*weights, "sample_neighbors: weights", 1);
        o.weights = std::span<const float>(w.data(), static_cast<size_t>(w.numel()));
      }
      GilRelease release;
      return sample_neighbors(graph, ids, o);
    };
    const char* sample_doc =
        "Samples len(fanouts) hops of in-neighbours around the seeds (int32/int64 array or list, "
        "distinct, < num_dst): fanouts[h] neighbours of each node at hop h + 1 from the seeds, as PyG's "
        "num_neighbors ([15, 10, 5]: 15 per seed; DGL lists the same as [5, 10, 15]); -1 takes every "
        "in-edge. Without replacement a node keeps min(fanout, in-degree) distinct in-edges; with it, "
        "exactly fanout draws (repeats kept as parallel edges). Draws are a pure function of (seed, hop, "
        "node): the same for any thread count, batch or order; vary seed per batch. Each block's sources "
        "start with its destinations; order numbers the rest: 'appearance' (first appearance, as DGL and "
        "PyG) or 'ascending' (by node id: blocks keep the graph's locality). Returns a SampledSubgraph; "
        "gather features with x[sub.input_nodes]. weights (float32 [num_edges] by CSR position, as "
        "Dataset.edge_weight; DGL's prob, PyG's weight_attr): each node's in-edges are sampled in proportion "
        "to their weights, weight 0 never (without replacement: successive picks among those left). "
        "Raises GraphError for a seed out of range or repeated, InvalidArgument for another order, for "
        "weights not one per edge, or for a negative, NaN or infinite weight the sampling reads.";
    m.def(
        "sample_neighbors",
        [sample](const Graph& graph, const AnyArray& seeds, const std::vector<int64_t>& fanouts, bool replace,
                 uint64_t seed, const std::string& order, const std::optional<AnyArray>& weights) {
          return sample(graph, index_vector(seeds, "sample_neighbors: seeds"), fanouts, replace, seed, order,
                        weights);
        },
        "graph"_a, "seeds"_a, "fanouts"_a, "replace"_a = false, "seed"_a = 0, "order"_a = "appearance",
        "weights"_a = nb::none(), sample_doc);
    m.def("sample_neighbors", sample, "graph"_a, "seeds"_a, "fanouts"_a, "replace"_a = false, "seed"_a = 0,
          "order"_a = "appearance", "weights"_a = nb::none(), sample_doc);
    auto full = [](const Graph& graph, const std::vector<int64_t>& ids) {
      GilRelease release;
      return full_neighborhood_block(graph, ids);
    };
    const char* full_doc =
        "Every in-edge of each of dst_nodes (int32/int64 array or list, distinct, < num_dst) as one Block: "
        "a layer of layer-wise full-neighbourhood inference (PyG's and DGL's evaluation path).";
    m.def(
        "full_neighborhood_block",
        [full](const Graph& graph, const AnyArray& dst_nodes) {
          return full(graph, index_vector(dst_nodes, "full_neighborhood_block: dst_nodes"));
        },
        "graph"_a, "dst_nodes"_a, full_doc);
    m.def("full_neighborhood_block", full, "graph"_a, "dst_nodes"_a, full_doc);
    const auto gather = [](const AnyArray& features, const std::vector<int64_t>& rows) {
      const ConstView x = float_view(features, "gather_rows: features");
      Tensor out;
      {
        GilRelease release;
        out = gather_rows(x, rows);
      }
      return to_numpy(std::move(out));
    };
    const char* gather_doc =
        "features[ids] as a new float32 array (features: float32, C-contiguous, rank >= 1, NumPy or a torch "
        "tensor; ids: int32/int64 array or list) copied by the library in parallel without the GIL, a "
        "mini-batch's input rows several times faster than numpy.take or an index_select. Raises "
        "InvalidArgument naming an id outside [0, len(features)).";
    m.def(
        "gather_rows",
        [gather](const AnyArray& features, const AnyArray& ids) {
          return gather(features, index_vector(ids, "gather_rows: ids"));
        },
        "features"_a, "ids"_a, gather_doc);
    m.def("gather_rows", gather, "features"_a, "ids"_a, gather_doc);
  }
  m.def(
      "attention_dropout_factors",
      [](const AnyArray& src, const AnyArray& dst, int64_t heads, float p, uint64_t seed) {
        if (heads < 1)
          raise<InvalidArgument>("attention_dropout_factors: heads is ", heads, ", expected >= 1");
        if (!(p >= 0.f && p < 1.f))
          raise<InvalidArgument>("attention_dropout_factors: p is ", p, ", expected in [0, 1)");
        const std::vector<int64_t> s = index_vector(src, "attention_dropout_factors: src");
        const std::vector<int64_t> d = index_vector(dst, "attention_dropout_factors: dst");
        if (s.size() != d.size())
          raise<ShapeError>("attention_dropout_factors: src has ", s.size(), " ids and dst ", d.size(),
                            ", expected one of each per edge");
        const auto edges = static_cast<int64_t>(s.size());
        Tensor out = Tensor::uninitialized({edges, heads});
        {
          GilRelease release;
          const float keep_scale = p > 0.f ? 1.f / (1.f - p) : 1.f;  // as the kernels compute it
          float* o = out.data();
          parallel_for(0, edges, 4096, [&](int64_t e0, int64_t e1) {
            for (int64_t e = e0; e < e1; ++e)
              dropout_keep_heads(seed, d[static_cast<size_t>(e)], s[static_cast<size_t>(e)], heads, p,
                                 keep_scale, o + e * heads);
          });
        }
        return to_numpy(std::move(out));
      },
      "src"_a, "dst"_a, "heads"_a, "p"_a, "seed"_a,
      "The factors attention dropout applies to the weights of edges src[e] -> dst[e] in a kernel called "
      "with dropout=p and seed=seed (core/rng.hpp's dropout_keep: a pure function of (seed, dst, src, "
      "head)): "
      "float32 [E, heads], 0 where dropped and 1/(1-p) where kept. attention_forward returns weights before "
      "dropout; times these factors they are the weights the output was computed with (what PyG's GATConv "
      "returns while training).");
  // -- Locality orderings (graph/ordering.hpp) ---------------------------------------------------
  {
    const auto ordering = [&m](const char* name, std::vector<int64_t> (*f)(const Graph&), const char* doc) {
      m.def(
          name,
          [f](const Graph& g) {
            std::vector<int64_t> order;
            {
              GilRelease release;
              order = f(g);
            }
            return vector_to_numpy(std::move(order));
          },
          "graph"_a, doc);
    };
    ordering("rcm_ordering", &rcm_ordering,
             "Reverse Cuthill-McKee (Boost.Graph; each component from a pseudo-peripheral node) of a square "
             "graph's symmetrized pattern: int64 [N] new_of_old (new_of_old[i] is old node i's new id), for "
             "Graph.permute or Dataset.reorder. Raises GraphError unless square.");
    ordering("amd_ordering", &amd_ordering,
             "SuiteSparse AMD (approximate minimum degree) of the symmetrized pattern: int64 [N] new_of_old. "
             "Raises GraphError unless square.");
    ordering("degree_ordering", &degree_ordering,
             "Nodes by decreasing total degree (in + out, self-loops ignored), ties by id: int64 [N] "
             "new_of_old, hubs first. Raises GraphError unless square.");
    ordering(
        "degree_group_ordering", &degree_group_ordering,
        "Degree-based grouping (Faldu et al., IISWC 2019): nodes by degree group (powers of two of the "
        "mean total degree), highest first, ids ascending within a group: int64 [N] new_of_old. Packs the "
        "hubs together as degree_ordering does while a group keeps its input order. What `edgeattn train "
        "--reorder dbg` (and auto, where advise_ordering says so) trains on. Raises GraphError unless "
        "square.");
    m.def(
        "advise_ordering",
        [](const Graph& g, int64_t row_bytes) {
          OrderingAdvice a;
          {
            GilRelease release;
            a = advise_ordering(g, row_bytes);
          }
          nb::dict d;
          d["reorder"] = a.reorder;
          d["reason"] = a.reason;
          d["gathered_bytes"] = a.gathered_bytes;
          d["skew"] = a.skew;
          d["spread"] = a.spread;
          return d;
        },
        "graph"_a, "row_bytes"_a,
        "Whether renumbering by degree_group_ordering should speed up attention over this graph when each "
        "node's gathered row takes row_bytes (heads x channels x 4): {'reorder': bool, 'reason': str, "
        "'gathered_bytes', 'skew' (mean / median degree), 'spread' (mean |i - j| / N)}. True when the rows "
        "exceed 32 MiB, skew > 1.3 and spread >= 1/6 (skew-aware selective reordering, Balaji & Lucia, "
        "IISWC 2018), what `edgeattn train --reorder auto` follows. Raises InvalidArgument when "
        "row_bytes < 1.");
    m.def(
        "partition_ordering",
        [](const Graph& g, int64_t part_size) {
          std::vector<int64_t> order;
          {
            GilRelease release;
            order = partition_ordering(g, part_size);
          }
          return vector_to_numpy(std::move(order));
        },
        "graph"_a, "part_size"_a = 4096,
        "Nodes grouped by METIS part (ceil(N / part_size) edge-cut parts; ascending ids within a part): "
        "int64 [N] new_of_old, a graph's communities as id ranges (mini-batch training keeps them: its "
        "blocks number new sources by ascending id). Raises GraphError unless square, InvalidArgument "
        "without METIS or for part_size < 1.");
    m.def(
        "locality",
        [](const Graph& g) {
          const Locality l = locality(g);
          nb::dict d;
          d["bandwidth"] = l.bandwidth;
          d["mean_edge_distance"] = l.mean_edge_distance;
          return d;
        },
        "graph"_a,
        "{'bandwidth': max |i - j|, 'mean_edge_distance': mean |i - j|} over the edges i <- j of a square "
        "graph (0 without edges).");
  }

  // -- Attention kernels ------------------------------------------------------------------------
  nb::class_<PyAttentionResult>(
      m, "AttentionResult",
      "What attention_forward returns; pass it to attention_backward. Its arrays are "
      "views owned by this object (row_stats read-only).")
      .def_prop_ro(
          "out",
          [](nb::handle self) { return tensor_view(nb::cast<PyAttentionResult&>(self).result.out, self); },
          "concat: [num_dst, H, Dv]; mean: [num_dst, Dv] (writable view; attention_backward reads it, so "
          "do not modify it before the backward pass)")
      .def_prop_ro(
          "row_stats",
          [](nb::handle self) {
            return readonly_tensor_view(nb::cast<const PyAttentionResult&>(self).result.row_stats, self);
          },
          "softmax: row log-sum-exp [num_dst, H]; relu: None")
      .def_prop_ro(
          "attention",
          [](nb::handle self) {
            return tensor_view(nb::cast<PyAttentionResult&>(self).result.attention, self);
          },
          "[E, H] attention weights (before dropout) when requested, in attention_order; else None")
      .def_prop_ro("attention_order", [](const PyAttentionResult& r) { return r.attention_order; })
      .def_prop_ro(
          "path", [](const PyAttentionResult& r) { return std::string(to_string(r.result.path)); },
          "the path that ran: sparse, dense or reference");

  auto operands = [](std::optional<AnyArray> query, std::optional<AnyArray> key,
                     std::optional<AnyArray> value, std::optional<AnyArray> score_dst,
                     std::optional<AnyArray> score_src, std::optional<AnyArray> weight,
                     std::optional<AnyArray> key_weight, std::optional<AnyArray> att,
                     std::optional<AnyArray> edge_bias, std::optional<AnyArray> score_edge,
                     std::optional<AnyArray> edge_attr, std::optional<AnyArray> edge_proj,
                     std::optional<AnyArray> att_dst, std::optional<AnyArray> att_src) {
    return Operands{query, key,       value,      score_dst, score_src, weight,  key_weight,
                    att,   edge_bias, score_edge, edge_attr, edge_proj, att_dst, att_src};
  };
  m.def(
      "attention_forward",
      [operands](const Pattern& pattern, std::optional<AnyArray> query, std::optional<AnyArray> key,
                 std::optional<AnyArray> value, std::optional<AnyArray> score_dst,
                 std::optional<AnyArray> score_src, std::optional<AnyArray> weight,
                 std::optional<AnyArray> key_weight, std::optional<AnyArray> att,
                 std::optional<AnyArray> edge_bias, std::optional<AnyArray> score_edge,
                 std::optional<AnyArray> edge_attr, std::optional<AnyArray> edge_proj,
                 std::optional<AnyArray> att_dst, std::optional<AnyArray> att_src, const std::string& score,
                 const std::string& normalization, const std::string& combine, double scale,
                 double negative_slope, double dropout, uint64_t seed, bool return_attention,
                 const std::string& attention_order, const std::string& path, double dense_threshold) {
        const AttentionConfig c = make_config(score, normalization, combine, scale, negative_slope, dropout,
                                              seed, return_attention, path, dense_threshold);
        return py_attention_forward(pattern,
                                    operands(query, key, value, score_dst, score_src, weight, key_weight, att,
                                             edge_bias, score_edge, edge_attr, edge_proj, att_dst, att_src),
                                    c, attention_order);
      },
      "pattern"_a, nb::kw_only(), "query"_a = nb::none(), "key"_a = nb::none(), "value"_a = nb::none(),
      "score_dst"_a = nb::none(), "score_src"_a = nb::none(), "weight"_a = nb::none(),
      "key_weight"_a = nb::none(), "att"_a = nb::none(), "edge_bias"_a = nb::none(),
      "score_edge"_a = nb::none(), "edge_attr"_a = nb::none(), "edge_proj"_a = nb::none(),
      "att_dst"_a = nb::none(), "att_src"_a = nb::none(), "score"_a = "dot_product",
      "normalization"_a = "softmax", "combine"_a = "concat", "scale"_a = 0.0, "negative_slope"_a = 0.2,
      "dropout"_a = 0.0, "seed"_a = 0, "return_attention"_a = false, "attention_order"_a = "csr",
      "path"_a = "automatic", "dense_threshold"_a = kDefaultDenseThreshold,
      "Graph-masked multi-head attention (kernels/attention.hpp). Operands are float32 C-contiguous CPU "
      "arrays, used without copying: query [num_dst, H, Dk], key [num_src, H, Dk], value [num_src, H, Dv], "
      "score_dst [num_dst, H], score_src [num_src, H], weight, key_weight, att, edge_bias [E, H] (CSR "
      "order), score_edge [E, H] (CSR order; additive: inside the LeakyReLU, GAT's edge features), "
      "edge_attr [E, F_e] (CSR order) with edge_proj [H, Dk, F_e] (gatv2, perceptron: the projected edge "
      "attributes inside the activation, GATv2's edge features), att_dst and att_src [H, Dv] (additive, "
      "instead of score_dst and score_src: the scores taken from value, destination i being source i, "
      "so num_dst <= num_src). "
      "score: dot_product | additive | gatv2 | bilinear | perceptron; normalization: softmax | relu; "
      "combine: "
      "concat | mean; path: automatic | sparse | dense | reference | cuda (the GPU: DeviceError without one; "
      "see cuda_device()). attention_order='input' returns the "
      "attention weights in the order of the edge list the Graph was built from.");
  m.def(
      "attention_backward",
      [operands](const Pattern& pattern, const PyAttentionResult& forward, const AnyArray& grad_out,
                 std::optional<AnyArray> query, std::optional<AnyArray> key, std::optional<AnyArray> value,
                 std::optional<AnyArray> score_dst, std::optional<AnyArray> score_src,
                 std::optional<AnyArray> weight, std::optional<AnyArray> key_weight,
                 std::optional<AnyArray> att, std::optional<AnyArray> edge_bias,
                 std::optional<AnyArray> score_edge, std::optional<AnyArray> edge_attr,
                 std::optional<AnyArray> edge_proj, std::optional<AnyArray> att_dst,
                 std::optional<AnyArray> att_src) {
        return py_attention_backward(
            pattern,
            operands(query, key, value, score_dst, score_src, weight, key_weight, att, edge_bias, score_edge,
                     edge_attr, edge_proj, att_dst, att_src),
            forward, grad_out);
      },
      "pattern"_a, "forward"_a, "grad_out"_a, nb::kw_only(), "query"_a = nb::none(), "key"_a = nb::none(),
      "value"_a = nb::none(), "score_dst"_a = nb::none(), "score_src"_a = nb::none(), "weight"_a = nb::none(),
      "key_weight"_a = nb::none(), "att"_a = nb::none(), "edge_bias"_a = nb::none(),
      "score_edge"_a = nb::none(), "edge_attr"_a = nb::none(), "edge_proj"_a = nb::none(),
      "att_dst"_a = nb::none(), "att_src"_a = nb::none(),
      "Gradients of attention_forward's output: pass the same pattern and operands and the forward result. "
      "Returns a dict name -> float32 array with the shape of each given operand.");

  // -- Datasets ---------------------------------------------------------------------------------
  nb::class_<data::Dataset>(
      m, "Dataset",
      "A node-classification dataset. Array properties are read-only views owned by the "
      "dataset.")
      .def_ro("name", &data::Dataset::name)
      .def_ro("format", &data::Dataset::format)
      .def_ro("graph", &data::Dataset::graph)
      .def_prop_ro("num_nodes", &data::Dataset::num_nodes)
      .def_prop_ro("num_edges", &data::Dataset::num_edges)
      .def_prop_ro("num_features", &data::Dataset::num_features)
      .def_prop_ro("num_classes", &data::Dataset::num_classes)
      .def_prop_ro("features_are_sparse", [](const data::Dataset& d) { return d.features.is_sparse(); })
      .def_prop_ro(
          "features_are_mapped", [](const data::Dataset& d) { return d.features.is_mapped(); },
          "True when the dense features are read in place from the file (load_dataset_path(..., "
          "map_features=True)): rows are paged in as training reads them, so they may exceed memory")
      .def_prop_ro(
          "dense_features",
          [](nb::handle self) -> nb::object {
            const auto& d = nb::cast<const data::Dataset&>(self);
            if (d.features.is_sparse()) return to_numpy(d.features.to_dense());
            return readonly_tensor_view(d.features.dense(), self);
          },
          "float32 [N, F]: a view of dense features, or a new dense copy of sparse ones")
      .def_prop_ro(
          "sparse_features",
          [](nb::handle self) -> nb::object {
            const auto& d = nb::cast<const data::Dataset&>(self);
            if (!d.features.is_sparse()) return nb::none();
            const CsrMatrix& s = d.features.sparse();
            return nb::make_tuple(readonly_view(s.indptr(), self), readonly_view(s.indices(), self),
                                  readonly_view(std::span<const float>(s.values()), self),
                                  nb::make_tuple(s.rows(), s.cols()));
          },
          "(indptr, indices, values, (rows, cols)) views of sparse features; None when dense")
      .def_prop_ro(
          "labels",
          [](nb::handle self) -> nb::object {
            const auto& d = nb::cast<const data::Dataset&>(self);
            if (d.labels.multi_label()) return readonly_tensor_view(d.labels.multi_hot, self);
            return nb::cast(readonly_view(std::span<const int32_t>(d.labels.classes), self));
          },
          "int32 [N] class ids (-1: unlabelled), or float32 [N, C] multi-hot")
      .def_prop_ro(
          "metric", [](const data::Dataset& d) { return d.labels.metric(); },
          "how predictions are scored: 'accuracy', 'micro_f1' or 'rocauc' (OGB's, for ogbn-proteins)")
      .def_prop_ro(
          "edge_attr",
          [](nb::handle self) -> nb::object {
            const auto& d = nb::cast<const data::Dataset&>(self);
            if (d.edge_attr.absent()) return nb::none();
            return readonly_tensor_view(d.edge_attr, self);
          },
          "float32 [E, edge_dim] edge features in the graph's CSR order (graph.edge_index() order; OGB "
          "edge-feat, TUDataset edge attributes + one-hot edge labels); None when the dataset has none")
      .def_prop_ro(
          "edge_weight",
          [](nb::handle self) -> nb::object {
            const auto& d = nb::cast<const data::Dataset&>(self);
            if (d.edge_weight.empty()) return nb::none();
            return nb::cast(readonly_view(std::span<const float>(d.edge_weight), self));
          },
          "float32 [E] edge weights in the graph's CSR order (npz adj_data, weighted edge lists, Matrix "
          "Market values); None when every weight is 1. sample_neighbors(..., weights=) and fit(..., "
          "sample_weights=True) sample by them")
      .def_prop_ro("num_graphs", &data::Dataset::num_graphs)
      .def_prop_ro(
          "graph_ptr",
          [](nb::handle self) -> nb::object {
            const auto& d = nb::cast<const data::Dataset&>(self);
            if (d.graph_ptr.empty()) return nb::none();
            return nb::cast(readonly_view(std::span<const int64_t>(d.graph_ptr), self));
          },
          "int64 [num_graphs + 1]: graph g owns nodes graph_ptr[g]:graph_ptr[g+1] (TUDataset); None for one "
          "graph")
      .def_prop_ro(
          "graph_labels",
          [](nb::handle self) -> nb::object {
            const auto& d = nb::cast<const data::Dataset&>(self);
            if (d.graph_labels.classes.empty()) return nb::none();
            return nb::cast(readonly_view(std::span<const int32_t>(d.graph_labels.classes), self));
          },
          "int32 [num_graphs] graph classes 0..K-1 (TUDataset); None otherwise")
      .def_prop_ro("split_names",
                   [](const data::Dataset& d) {
                     std::vector<std::string> names;
                     for (const auto& [k, v] : d.splits) names.push_back(k);
                     return names;
                   })
      .def_ro("default_split", &data::Dataset::default_split)
      .def(
          "add_split",
          [](data::Dataset& d, const std::string& name, const AnyArray& train, const AnyArray& val,
             const AnyArray& test) {
            add_split_to(d, "add_split", name, [&] {
              data::Split s{index_vector(train, "add_split: train"), index_vector(val, "add_split: val"),
                            index_vector(test, "add_split: test")};
              for (auto* ids : {&s.train, &s.val, &s.test}) std::sort(ids->begin(), ids->end());
              data::validate_split("add_split: dataset '" + d.name + "'", name, s, d.num_nodes());
              return s;
            });
          },
          "name"_a, "train"_a, "val"_a, "test"_a,
          "Adds split `name` from node ids (int32/int64 arrays, any order; sorted here), and makes it the "
          "default when the dataset has none (what a featureless or custom dataset trains on). Raises "
          "InvalidArgument for an id out of [0, num_nodes), a node in two parts or twice, or a name "
          "already taken.")
      .def(
          "add_random_split",
          [](data::Dataset& d, const std::string& name, int64_t per_class, int64_t num_val, int64_t num_test,
             uint64_t seed) {
            add_split_to(d, "add_random_split", name,
                         [&] { return data::random_split(d.labels, per_class, num_val, num_test, seed); });
          },
          "name"_a, "per_class"_a, "num_val"_a, "num_test"_a, "seed"_a = 0,
          "Adds split `name` drawn from the labels as PyG's RandomNodeSplit(split='random'): per_class "
          "training nodes of each class, then num_val validation and num_test test nodes "
          "(data/splits.hpp; deterministic for a seed), and makes it the default when the dataset has "
          "none. Raises InvalidArgument when a class has fewer than per_class nodes or too few remain.")
      .def(
          "split",
          [](nb::handle self, const std::string& name) {
            const data::Split& s = nb::cast<const data::Dataset&>(self).split(name);
            nb::dict out;
            out["train"] = readonly_view(std::span<const int64_t>(s.train), self);
            out["val"] = readonly_view(std::span<const int64_t>(s.val), self);
            out["test"] = readonly_view(std::span<const int64_t>(s.test), self);
            return out;
          },
          "name"_a = "",
          "{'train','val','test'}: sorted int64 node ids (the default split when name is empty)")
      .def(
          "masks",
          [](const data::Dataset& d, const std::string& name) {
            const data::Split& s = d.split(name);
            nb::dict out;
            const std::pair<const char*, const std::vector<int64_t>*> parts[] = {
                {"train", &s.train}, {"val", &s.val}, {"test", &s.test}};
            for (const auto& [k, ids] : parts) {
              std::vector<uint8_t> mask = data::to_mask(*ids, d.num_nodes());
              auto* owned = new std::vector<uint8_t>(std::move(mask));
              nb::capsule owner(owned,
                                [](void* p) noexcept { delete static_cast<std::vector<uint8_t>*>(p); });
              out[k] = nb::ndarray<nb::numpy, bool>(reinterpret_cast<bool*>(owned->data()), {owned->size()},
                                                    owner);
            }
            return out;
          },
          "name"_a = "", "{'train','val','test'}: bool [N] masks")
      .def_ro("notes", &data::Dataset::notes)
      .def(
          "save_npz",
          [](const data::Dataset& d, const std::string& path) {
            GilRelease release;
            data::write_npz(d, path);
          },
          "path"_a,
          "Writes the dataset as an .npz that numpy.load and load_dataset_path read back "
          "(data/npz_writer.hpp; "
          "written atomically): the graph and edge weights, features (sparse ones stay sparse), labels, node "
          "and class names, the name, and every split (the default as idx_train/val/test, the others as "
          "split<k>_*, all named in split_names). A dataset with edge attributes or many graphs raises "
          "InvalidArgument (the layout does not hold them). Every member's data is 64-byte aligned, so "
          "load_dataset_path(path, map_features=True) reads dense features in place.")
      .def(
          "reorder",
          [](const data::Dataset& d, const AnyArray& new_of_old) {
            const std::vector<int64_t> order = index_vector(new_of_old, "Dataset.reorder: new_of_old");
            GilRelease release;
            return data::reorder(d, order);
          },
          "new_of_old"_a,
          "A new dataset with node i renamed new_of_old[i] everywhere: graph, features, labels, names and "
          "splits (e.g. ds.reorder(degree_ordering(ds.graph)), what `edgeattn train --reorder degree` "
          "trains on). Raises GraphError unless new_of_old is a permutation of [0, num_nodes).")
      .def(
          "to_undirected", &without_gil<data::to_undirected>,
          "A new dataset with the reverse of every edge (duplicates merged; an added reverse edge copies its "
          "mirror's weight and edge attributes), as PyG's ToUndirected: e.g. for an adjacency list that "
          "networkx wrote with each undirected edge once. A note records it.")
      .def("with_self_loops", &without_gil<data::with_self_loops>,
           "A new dataset with exactly one self-loop per node (added loops weigh 1, edge attributes 0).")
      .def("without_self_loops", &without_gil<data::without_self_loops>,
           "A new dataset without self-loops (the other edges keep their weights and attributes).")
      .def("largest_component", &without_gil<data::largest_component>,
           "A new dataset restricted to the largest weakly connected component (gnn-benchmark's "
           "standardize): nodes keep their relative order and are renumbered; features, labels, names, "
           "weights and splits follow.")
      .def(
          "normalize_features", [](data::Dataset& d) { data::normalize_features(d.features); },
          "Row-normalises the features in place (each row sums to 1; GAT's Cora preprocessing).")
      .def("__repr__", [](const data::Dataset& d) {
        return "Dataset(name=" + d.name + ", num_nodes=" + std::to_string(d.num_nodes()) +
               ", num_edges=" + std::to_string(d.num_edges()) +
               ", num_features=" + std::to_string(d.num_features()) +
               ", num_classes=" + std::to_string(d.num_classes()) + ")";
      });
  auto load_options = [](const std::string& root, const std::string& format, bool verify, bool download,
                         std::optional<bool> offline) {
    data::LoadOptions o;
    o.root = root;
    o.format = format;
    o.verify = verify;
    o.download = download;
    if (offline) o.download_options.offline = *offline;
    return o;
  };
  m.def(
      "load_dataset",
      [load_options](const std::string& name, const std::string& root, const std::string& format, bool verify,
                     bool download, std::optional<bool> offline) {
        const data::LoadOptions o = load_options(root, format, verify, download, offline);
        GilRelease release;
        return data::load_dataset(name, o);
      },
      "name"_a, "root"_a = "", "format"_a = "", "verify"_a = true, "download"_a = true,
      "offline"_a = nb::none(),
      "A named dataset (dataset_names()), checksummed against the compiled-in manifest. Files are looked "
      "for in root, else $EDGEATTN_DATA, else the bundled datasets/ and the download cache "
      "(~/.cache/edgeattn); missing ones are downloaded from their official URLs (resumed, retried, "
      "verified, placed atomically) unless download=False or offline (default: $EDGEATTN_OFFLINE). "
      "Raises DownloadError when a file cannot be had.");
  m.def(
      "fetch_dataset",
      [load_options](const std::string& name, const std::string& root, const std::string& format,
                     std::optional<bool> offline) {
        const data::LoadOptions o = load_options(root, format, true, true, offline);
        GilRelease release;
        return data::fetch_dataset(name, o).string();
      },
      "name"_a, "root"_a = "", "format"_a = "", "offline"_a = nb::none(),
      "Downloads what a named dataset lacks (as load_dataset would) and returns the data root holding it.");
  m.def(
      "load_dataset_path",
      [](const std::string& path, bool map_features) {
        GilRelease release;
        return data::load_dataset_path(path, map_features);
      },
      "path"_a, "map_features"_a = false,
      "A dataset file or directory in any supported format. map_features: read an .npz's dense float32 "
      "attr_matrix in place (memory-mapped) instead of into memory, for features larger than RAM "
      "(mini-batch training: fit(..., batch_size=B)); they are used as stored (normalize_features "
      "refuses them), and unverified: neither the member's CRC-32 nor its values are checked at load (a "
      "corrupt or NaN row shows as fit's 'the ... loss became nan' error). Other features are checked: "
      "a NaN or infinite value raises InvalidArgument naming its row and column.");
  m.def(
      "ogb_binary_info",
      [](const std::string& path) {
        data::OgbBinaryInfo info;
        {
          GilRelease release;
          info = data::ogb_binary_info(path);
        }
        nb::dict d;
        d["path"] = info.path;
        d["num_nodes"] = info.num_nodes;
        d["num_edges"] = info.num_edges;
        d["num_features"] = info.num_features;
        d["feature_dtype"] = info.feature_dtype;
        d["node_arrays"] = info.node_arrays;
        d["labelled"] = info.labelled;
        d["num_classes"] = info.num_classes;
        d["compressed_bytes"] = info.compressed_bytes;
        d["bytes_to_load"] = info.bytes_to_load(false);
        nb::dict splits;
        for (const auto& [name, sizes] : info.splits)
          splits[name.c_str()] = nb::make_tuple(sizes[0], sizes[1], sizes[2]);
        d["splits"] = splits;
        return d;
      },
      "path"_a,
      "Metadata of a dataset in OGB's binary layout (raw/data.npz; ogbn-papers100M) without loading it: "
      "num_nodes, num_edges, num_features, feature_dtype, labelled, num_classes, splits {name: (train, "
      "valid, "
      "test)}, bytes_to_load (what load_dataset_path would need).");
  m.def(
      "cuda_device",
      []() -> nb::object {
        const std::optional<CudaDevice> d = cuda_device();
        if (!d) return nb::none();
        nb::dict r;
        r["name"] = d->name;
        r["compute_capability"] = nb::make_tuple(d->compute_major, d->compute_minor);
        r["memory_bytes"] = d->memory_bytes;
        r["multiprocessors"] = d->multiprocessors;
        return r;
      },
      "The GPU that path='cuda' runs on, as a dict (name, compute_capability, memory_bytes, "
      "multiprocessors), or None: built without CUDA, no driver or no device (cuda_unavailable_reason() "
      "says which).");
  m.def(
      "blas_info",
      []() {
        const kernels::BlasInfo info = kernels::blas_info();
        nb::dict r;
        r["core"] = info.core;
        r["config"] = info.config;
        return r;
      },
      "The BLAS under the dense attention path and wide products, as a dict: core (the kernel set "
      "OpenBLAS runs, e.g. 'SkylakeX'; edgeattn chooses again at import where OpenBLAS took a "
      "pre-AVX2 core on an AVX2 CPU and OPENBLAS_CORETYPE is unset) and config (OpenBLAS's build).");
  m.def("cuda_built", &cuda_built, "True when this edgeattn was compiled with its CUDA backend.");
  m.def("cuda_unavailable_reason", &cuda_unavailable_reason, "Why cuda_device() is None, in words.");
  m.def("dataset_names", &data::dataset_names);
  m.def("default_data_root", []() { return data::default_data_root().string(); });
  m.def(
      "sbm_dataset",
      [](int64_t num_nodes, int64_t num_classes, double expected_in_degree, double expected_out_degree,
         int64_t feature_dim, double signal, double noise, int64_t train_per_class, int64_t num_val,
         int64_t num_test, bool shuffle_nodes, uint64_t seed) {
        data::SbmConfig c{.num_nodes = num_nodes,
                          .num_classes = num_classes,
                          .block_sizes = {},
                          .expected_in_degree = expected_in_degree,
                          .expected_out_degree = expected_out_degree,
                          .feature_dim = feature_dim,
                          .signal = static_cast<float>(signal),
                          .noise = static_cast<float>(noise),
                          .train_per_class = train_per_class,
                          .num_val = num_val,
                          .num_test = num_test,
                          .shuffle_nodes = shuffle_nodes,
                          .seed = seed};
        GilRelease release;
        return data::sbm_dataset(c);
      },
      "num_nodes"_a = 3000, "num_classes"_a = 5, "expected_in_degree"_a = 8.0, "expected_out_degree"_a = 2.0,
      "feature_dim"_a = 16, "signal"_a = 1.0, "noise"_a = 1.0, "train_per_class"_a = 20, "num_val"_a = 500,
      "num_test"_a = 1000, "shuffle_nodes"_a = true, "seed"_a = 0,
      "A stochastic-block-model dataset with class-correlated Gaussian features (data/synthetic.hpp).");

  // -- Models -----------------------------------------------------------------------------------
  nb::class_<PyModel> model_cls(
      m, "Model",
      "A node-classification model (nn/model.hpp): gat, gatv2, transformer or graph_transformer. "
      "Parameters carry PyTorch Geometric's names and shapes (conv1.lin.weight, conv1.att_src, ...). "
      "add_self_loops defaults to PyG's choice for the kind (none for transformer, as PyG's "
      "TransformerConv and `edgeattn train`); edge_dim > 0 reads a dataset's edge attributes "
      "(Dataset.edge_attr) in every layer, as `edgeattn train --edge-features`.");
  bind_parameter_access<PyModel>(
      model_cls, "Model.set_parameter: ",
      "A writable float32 view of the named parameter (in-place edits change the model).");
  model_cls
      .def(
          "__init__",
          [](PyModel* self, const std::string& kind, int64_t in_channels, int64_t num_classes, int64_t hidden,
             int64_t heads, int64_t out_heads, int64_t layers, double dropout, double attention_dropout,
             double negative_slope, bool residual, std::optional<bool> add_self_loops, bool share_weights,
             bool beta, bool pre_norm, int64_t ffn_hidden, const std::string& pe, int64_t pe_dim,
             int64_t edge_dim, uint64_t seed) {
            new (self)
                PyModel(model_config(kind, in_channels, num_classes, hidden, heads, out_heads, layers,
                                     dropout, attention_dropout, negative_slope, residual, add_self_loops,
                                     share_weights, beta, pre_norm, ffn_hidden, pe, pe_dim, edge_dim, seed));
          },
          nb::kw_only(), "kind"_a = "gat", "in_channels"_a, "num_classes"_a, "hidden"_a = 8, "heads"_a = 8,
          "out_heads"_a = 1, "layers"_a = 2, "dropout"_a = 0.6, "attention_dropout"_a = 0.6,
          "negative_slope"_a = 0.2, "residual"_a = false, "add_self_loops"_a = nb::none(),
          "share_weights"_a = false, "beta"_a = false, "pre_norm"_a = false, "ffn_hidden"_a = 0,
          "pe"_a = "none", "pe_dim"_a = 0, "edge_dim"_a = 0, "seed"_a = 0)
      .def_static(
          "from_json", [](const std::string& json) { return new PyModel(nn::ModelConfig::from_json(json)); },
          "json"_a, nb::rv_policy::take_ownership, "A model from ModelConfig JSON (Model.config_json).")
      .def_prop_ro("config_json", [](const PyModel& m) { return m.model.config().to_json(); })
      .def_prop_ro(
          "normalize_features", [](const PyModel& m) { return m.normalize_features; },
          "Whether the model file says its training features were row-normalised (`edgeattn train`'s "
          "default; Model.save(normalize_features=...)): call Dataset.normalize_features() before "
          "evaluate() or logits() to give it the same inputs. False for a model built here.")
      .def_prop_ro("num_parameters", [](PyModel& m) { return m.model.num_parameters(); })
      .def(
          "logits",
          [](PyModel& m, const data::Dataset& ds, bool training, uint64_t seed) {
            Tensor t;
            {
              GilRelease release;
              t = model_logits(m, ds.graph, ds.features, ds.edge_attr, training, seed, nullptr);
            }
            return to_numpy(std::move(t));
          },
          "dataset"_a, "training"_a = false, "seed"_a = 0,
          "Logits [N, num_classes] on a dataset's graph and features (training=False: no dropout).")
      .def(
          "logits",
          [](PyModel& m, const Graph& graph, const AnyArray& features, bool training, uint64_t seed,
             const std::optional<AnyArray>& edge_attr) {
            data::Features x = features_from_array(features);
            const Tensor attr = edge_attr ? tensor_copy(*edge_attr, "Model.logits: edge_attr") : Tensor();
            Tensor t;
            {
              GilRelease release;
              t = model_logits(m, graph, x, attr, training, seed, nullptr);
            }
            return to_numpy(std::move(t));
          },
          "graph"_a, "features"_a, "training"_a = false, "seed"_a = 0, "edge_attr"_a = nb::none(),
          "Logits on a graph and float32 features [N, F] (copied into the model's input); edge_attr "
          "[num_edges, edge_dim] in the graph's CSR order for a model with edge_dim.")
      .def(
          "save",
          [](PyModel& m, const std::string& path, bool normalize_features) {
            // The preprocessing line the CLI's eval and predict read (and repeat).
            train::save_parameters(path, m.model.parameters(),
                                   m.model.config().to_json() +
                                       "\nnormalize_features=" + (normalize_features ? "1" : "0") + "\n");
          },
          "path"_a, "normalize_features"_a = false,
          "Writes the model file (config JSON + weights, checksummed; same format as the CLI). "
          "normalize_features: whether the features it was trained on were row-normalised "
          "(Dataset.normalize_features()), which `edgeattn eval` and `predict` then repeat; by default "
          "they use the dataset's features as stored, as fit() did.")
      .def_static(
          "load",
          [](const std::string& path) {
            const train::Checkpoint c = train::load_checkpoint(path);
            const size_t nl = c.metadata.find('\n');
            auto* m = new PyModel(nn::ModelConfig::from_json(c.metadata.substr(0, nl)));
            m->normalize_features =
                nl != std::string::npos && c.metadata.find("normalize_features=1", nl) != std::string::npos;
            try {
              train::load_parameters(c, m->model.parameters());
            } catch (...) {
              delete m;
              throw;
            }
            return m;
          },
          "path"_a, nb::rv_policy::take_ownership,
          "Loads a model file written by Model.save or `edgeattn train --save`.")
      .def("__repr__", [](PyModel& m) { return m.model.describe(); });
  {
    auto gat = nb::class_<PyConv<nn::GATConv>>(
        m, "GATConv",
        "PyTorch Geometric's GATConv (nn/gat_conv.hpp), forward only: parameters lin.weight [H*C, in], "
        "att_src / "
        "att_dst [1, H, C], bias, res.weight, readable and writable as arrays.");
    gat.def(
        "__init__",
        [](PyConv<nn::GATConv>* self, int64_t in_channels, int64_t out_channels, int64_t heads, bool concat,
           double negative_slope, double dropout, bool add_self_loops, bool bias, bool residual,
           uint64_t seed) {
          nn::GATConvOptions o{.in_channels = in_channels,
                               .out_channels = out_channels,
                               .heads = heads,
                               .concat = concat,
                               .negative_slope = static_cast<float>(negative_slope),
                               .dropout = static_cast<float>(dropout),
                               .add_self_loops = add_self_loops,
                               .bias = bias,
                               .residual = residual};
          new (self) PyConv<nn::GATConv>(o, seed, add_self_loops);
        },
        "in_channels"_a, "out_channels"_a, "heads"_a = 1, "concat"_a = true, "negative_slope"_a = 0.2,
        "dropout"_a = 0.0, "add_self_loops"_a = true, "bias"_a = true, "residual"_a = false, "seed"_a = 0);
    bind_conv_methods<nn::GATConv>(gat);
    auto gat2 = nb::class_<PyConv<nn::GATv2Conv>>(
        m, "GATv2Conv",
        "PyTorch Geometric's GATv2Conv (nn/gatv2_conv.hpp), forward only: lin_l / lin_r (weight, bias), att "
        "[1, H, C], bias, res.weight.");
    gat2.def(
        "__init__",
        [](PyConv<nn::GATv2Conv>* self, int64_t in_channels, int64_t out_channels, int64_t heads, bool concat,
           double negative_slope, double dropout, bool add_self_loops, bool bias, bool share_weights,
           bool residual, uint64_t seed) {
          nn::GATv2ConvOptions o{.in_channels = in_channels,
                                 .out_channels = out_channels,
                                 .heads = heads,
                                 .concat = concat,
                                 .negative_slope = static_cast<float>(negative_slope),
                                 .dropout = static_cast<float>(dropout),
                                 .add_self_loops = add_self_loops,
                                 .bias = bias,
                                 .share_weights = share_weights,
                                 .residual = residual};
          new (self) PyConv<nn::GATv2Conv>(o, seed, add_self_loops);
        },
        "in_channels"_a, "out_channels"_a, "heads"_a = 1, "concat"_a = true, "negative_slope"_a = 0.2,
        "dropout"_a = 0.0, "add_self_loops"_a = true, "bias"_a = true, "share_weights"_a = false,
        "residual"_a = false, "seed"_a = 0);
    bind_conv_methods<nn::GATv2Conv>(gat2);
    auto tr = nb::class_<PyConv<nn::TransformerConv>>(
        m, "TransformerConv",
        "PyTorch Geometric's TransformerConv (nn/transformer_conv.hpp), forward only: lin_query, lin_key, "
        "lin_value, lin_skip (weight, bias), lin_beta. Adds no self-loops (as PyG).");
    tr.def(
        "__init__",
        [](PyConv<nn::TransformerConv>* self, int64_t in_channels, int64_t out_channels, int64_t heads,
           bool concat, bool beta, double dropout, bool bias, bool root_weight, uint64_t seed) {
          nn::TransformerConvOptions o{.in_channels = in_channels,
                                       .out_channels = out_channels,
                                       .heads = heads,
                                       .concat = concat,
                                       .beta = beta,
                                       .dropout = static_cast<float>(dropout),
                                       .bias = bias,
                                       .root_weight = root_weight};
          new (self) PyConv<nn::TransformerConv>(o, seed, false);
        },
        "in_channels"_a, "out_channels"_a, "heads"_a = 1, "concat"_a = true, "beta"_a = false,
        "dropout"_a = 0.0, "bias"_a = true, "root_weight"_a = true, "seed"_a = 0);
    bind_conv_methods<nn::TransformerConv>(tr);
  }
  m.def(
      "fit", &py_fit, "model"_a, "dataset"_a, "split"_a = "", "epochs"_a = 1000, "patience"_a = 100,
      "lr"_a = 0.005, "weight_decay"_a = 5e-4, "seed"_a = 0, "criterion"_a = "loss_or_accuracy",
      "batch_size"_a = 0, "fanout"_a = std::vector<int64_t>{}, "replace"_a = false,
      "source_order"_a = nb::none(), "sample_weights"_a = false, "eval_every"_a = 1,
      "Training (train/trainer.hpp) with Adam and early stopping; keeps the best weights. It starts from "
      "the model's current weights (a second fit continues the first) with a fresh optimiser (Adam's "
      "moments at zero). Full batch, or "
      "with "
      "batch_size > 0 mini-batches of training nodes over sampled neighbourhoods (fanout: neighbours per hop "
      "from the seeds, one per layer, -1 = all, default 10 each; replace: with replacement; source_order: "
      "how each block numbers its new sources, 'ascending' by node id (None: the default) or 'appearance' as "
      "DGL and PyG, see sample_neighbors; sample_weights: in-edges sampled in proportion to "
      "Dataset.edge_weight, uniform "
      "when the dataset has none; evaluation stays exact: every node's full neighbourhood, layer by layer "
      "as Model.logits). eval_every=N evaluates (metrics, early stopping, the kept weights) every N-th "
      "epoch and the last only (history entries of the others have evaluated=False and NaN metrics; "
      "patience still counts epochs). Returns a dict with history and final metrics.");
  m.def("evaluate", &py_evaluate, "model"_a, "dataset"_a, "split"_a = "",
        "Loss and accuracy on the split's train/val/test nodes (evaluation mode).");

  // -- Distributed full-graph training (dist/; `mpirun -np P python script.py`) -----------------
  m.def(
      "mpi_available", []() { return static_cast<bool>(EDGEATTN_HAVE_MPI); },
      "Whether this build has MPI (CMake option EDGEATTN_MPI, MPI found): fit_distributed on more than one "
      "rank.");
  m.def("partition", &py_partition, "dataset"_a, "parts"_a, "out"_a, "method"_a = "", "split"_a = "",
        "seed"_a = 0,
        "Partitions the dataset's nodes into `parts` (method: metis when built with METIS, else "
        "degree_balanced; or contiguous) and writes partitions.txt and one part-<r>-of-<P>.npz per rank "
        "into `out` (the format of `edgeattn partition`): each rank then reads only its own part. "
        "Features are stored as given (normalise first if fit would see them normalised). Returns the "
        "partition's quality: parts, method, nodes, edges, halo_nodes (per part), edge_cut, edge_imbalance, "
        "node_imbalance, halo_fraction.");
  m.def(
      "mpi_rank_size",
      []() {
        return with_communicator(
            "mpi_rank_size", [](dist::Communicator& c) { return std::pair<int, int>(c.rank(), c.size()); });
      },
      "(rank, size) of this process in MPI_COMM_WORLD when started by mpirun (MPI is initialised on first "
      "use and finalised at exit), else (0, 1).");
  m.def("fit_distributed", &py_fit_distributed, "model"_a, "partitions"_a, "epochs"_a = 1000,
        "patience"_a = 100, "lr"_a = 0.005, "weight_decay"_a = 5e-4, "seed"_a = 0,
        "criterion"_a = "loss_or_accuracy", "halo_input"_a = "features", "eval_every"_a = 1,
        "Full-graph training over MPI (dist/distributed_training.hpp): run the same script under "
        "`mpirun -np P`; each rank reads its part of `partitions` (written by partition(..., parts=P) or "
        "`edgeattn partition`), exchanges halo rows between layers and sums the gradients in rank order, "
        "so every rank ends with the same weights and the result equals fit's on the whole graph (same "
        "seed; within float rounding). Started without mpirun it is rank 0 of 1 (a one-part directory). "
        "An error on one rank of several ends the job (MPI_Abort naming the rank). halo_input='projection' "
        "drops the halo nodes' features and has the first layer exchange its projected rows instead (less "
        "memory, more bytes; gat without residual). Returns fit's dict, the same on every rank, with this "
        "rank's halo_bytes_per_epoch and gradient_bytes_per_epoch (sent to other ranks in a step).");
  m.def(
      "predict_distributed", &py_predict_distributed, "model"_a, "partitions"_a, "gather"_a = false,
      "halo_input"_a = "features",
      "Logits of this rank's owned nodes under `mpirun -np P` (the part files of fit_distributed; evaluation "
      "mode): (nodes [num_owned] global ids, ascending; logits [num_owned, C]). gather=True: every rank "
      "gets all of them, (arange(N), logits [N, C]). Without mpirun, rank 0 of 1 (a one-part directory).");
#if EDGEATTN_HAVE_MPI
  nb::module_::import_("atexit").attr("register")(nb::cpp_function([]() { mpi_environment().reset(); }));
#endif
}
