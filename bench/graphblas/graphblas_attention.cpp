#include "graphblas_attention.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

extern "C" {
#include <GraphBLAS.h>
}

#include "edgeattn/core/error.hpp"

namespace edgeattn::bench {
namespace {

void check(GrB_Info info, const char* what) {
  if (info != GrB_SUCCESS && info != GrB_NO_VALUE)
    raise<Error>("GraphBLAS: ", what, " failed with GrB_Info ", static_cast<int>(info));
}

void ensure_initialized() {
  static std::once_flag once;
  std::call_once(once, [] { check(GrB_init(GrB_NONBLOCKING), "GrB_init"); });
}

template <class T>
T* malloc_array(size_t count) {
  void* p = std::malloc(std::max<size_t>(count, 1) * sizeof(T));
  if (p == nullptr) raise<Error>("GraphBLAS: out of memory allocating ", count * sizeof(T), " bytes");
  return static_cast<T*>(p);
}

}  // namespace

std::string graphblas_version() {
  return std::string(GxB_IMPLEMENTATION_NAME) + " " + std::to_string(GxB_IMPLEMENTATION_MAJOR) + "." +
         std::to_string(GxB_IMPLEMENTATION_MINOR) + "." + std::to_string(GxB_IMPLEMENTATION_SUB);
}

struct GraphblasAttention::State {
  GrB_Index n = 0, heads = 0, dim = 0;
  float scale = 1.f;
  GrB_Matrix mask = nullptr, scores = nullptr;
  std::vector<GrB_Matrix> x, out;  // [heads] of [n, dim]
  GrB_Vector row = nullptr;
  GrB_Semiring plus_rminus = nullptr, plus_rdiv = nullptr;
  GrB_Descriptor sddmm = nullptr;

  ~State() {
    for (GrB_Matrix* m : {&mask, &scores}) GrB_Matrix_free(m);
    for (GrB_Matrix& m : x) GrB_Matrix_free(&m);
    for (GrB_Matrix& m : out) GrB_Matrix_free(&m);
    GrB_Vector_free(&row);
    GrB_Semiring_free(&plus_rminus);
    GrB_Semiring_free(&plus_rdiv);
    GrB_Descriptor_free(&sddmm);
  }
};

GraphblasAttention::GraphblasAttention(const Graph& graph, ConstView x, int threads)
    : state_(std::make_unique<State>()) {
  if (x.rank() != 3 || x.dim(0) != graph.num_src() || graph.num_dst() != graph.num_src())
    raise<ShapeError>(
        "GraphblasAttention: expected a square graph and x [num_nodes, heads, head_dim], got a ",
        graph.num_dst(), " x ", graph.num_src(), " graph and x of rank ", x.rank());
  ensure_initialized();
  check(GxB_Global_Option_set(GxB_GLOBAL_NTHREADS, threads), "GxB_set(GxB_NTHREADS)");
  State& s = *state_;
  s.n = static_cast<GrB_Index>(x.dim(0));
  s.heads = static_cast<GrB_Index>(x.dim(1));
  s.dim = static_cast<GrB_Index>(x.dim(2));
  s.scale = 1.f / std::sqrt(static_cast<float>(s.dim));

  // The pattern as an iso boolean CSR matrix: row i lists the sources j of edges j -> i.
  const auto rp = graph.row_ptr();
  const auto ci = graph.col_idx();
  GrB_Index* ap = malloc_array<GrB_Index>(rp.size());
  GrB_Index* aj = malloc_array<GrB_Index>(ci.size());
  bool* ax = malloc_array<bool>(1);
  for (size_t i = 0; i < rp.size(); ++i) ap[i] = static_cast<GrB_Index>(rp[i]);
  for (size_t k = 0; k < ci.size(); ++k) aj[k] = static_cast<GrB_Index>(ci[k]);
  ax[0] = true;
  check(
      GxB_Matrix_import_CSR(&s.mask, GrB_BOOL, s.n, s.n, &ap, &aj, reinterpret_cast<void**>(&ax),
                            rp.size() * sizeof(GrB_Index), std::max<size_t>(ci.size(), 1) * sizeof(GrB_Index),
                            sizeof(bool), /*iso=*/true, /*jumbled=*/false, nullptr),
      "GxB_Matrix_import_CSR (mask)");

  // Each head's [n, dim] slice, row-major, as a full matrix.
  for (GrB_Index h = 0; h < s.heads; ++h) {
    float* values = malloc_array<float>(s.n * s.dim);
    for (GrB_Index i = 0; i < s.n; ++i)
      std::memcpy(values + i * s.dim, x.data() + (i * s.heads + h) * s.dim, s.dim * sizeof(float));
    GrB_Matrix m = nullptr;
    check(GxB_Matrix_import_FullR(&m, GrB_FP32, s.n, s.dim, reinterpret_cast<void**>(&values),
                                  std::max<GrB_Index>(s.n * s.dim, 1) * sizeof(float), false, nullptr),
          "GxB_Matrix_import_FullR (x)");
    s.x.push_back(m);
    GrB_Matrix o = nullptr;
    check(GrB_Matrix_new(&o, GrB_FP32, s.n, s.dim), "GrB_Matrix_new (out)");
    s.out.push_back(o);
  }
  check(GrB_Matrix_new(&s.scores, GrB_FP32, s.n, s.n), "GrB_Matrix_new (scores)");
  check(GrB_Vector_new(&s.row, GrB_FP32, s.n), "GrB_Vector_new");
  check(GrB_Semiring_new(&s.plus_rminus, GrB_PLUS_MONOID_FP32, GxB_RMINUS_FP32), "GrB_Semiring_new (rminus)");
  check(GrB_Semiring_new(&s.plus_rdiv, GrB_PLUS_MONOID_FP32, GxB_RDIV_FP32), "GrB_Semiring_new (rdiv)");
  check(GrB_Descriptor_new(&s.sddmm), "GrB_Descriptor_new");
  check(GrB_Descriptor_set(s.sddmm, GrB_INP1, GrB_TRAN), "GrB_Descriptor_set (INP1)");
  check(GrB_Descriptor_set(s.sddmm, GrB_MASK, GrB_STRUCTURE), "GrB_Descriptor_set (MASK)");
  check(GrB_Descriptor_set(s.sddmm, GrB_OUTP, GrB_REPLACE), "GrB_Descriptor_set (OUTP)");
}

GraphblasAttention::~GraphblasAttention() = default;

void GraphblasAttention::forward() {
  State& s = *state_;
  for (GrB_Index h = 0; h < s.heads; ++h) {
    GrB_Matrix xh = s.x[h];
    check(GrB_mxm(s.scores, s.mask, nullptr, GrB_PLUS_TIMES_SEMIRING_FP32, xh, xh, s.sddmm), "SDDMM GrB_mxm");
    check(GrB_Matrix_apply_BinaryOp2nd_FP32(s.scores, nullptr, nullptr, GrB_TIMES_FP32, s.scores, s.scale,
                                            nullptr),
          "scale GrB_apply");
    check(GrB_Matrix_reduce_Monoid(s.row, nullptr, nullptr, GrB_MAX_MONOID_FP32, s.scores, nullptr),
          "row max GrB_reduce");
    GrB_Matrix diag = nullptr;
    check(GrB_Matrix_diag(&diag, s.row, 0), "GrB_Matrix_diag (max)");
    check(GrB_mxm(s.scores, nullptr, nullptr, s.plus_rminus, diag, s.scores, nullptr),
          "subtract max GrB_mxm");
    GrB_Matrix_free(&diag);
    check(GrB_Matrix_apply(s.scores, nullptr, nullptr, GxB_EXP_FP32, s.scores, nullptr), "exp GrB_apply");
    check(GrB_Matrix_reduce_Monoid(s.row, nullptr, nullptr, GrB_PLUS_MONOID_FP32, s.scores, nullptr),
          "row sum GrB_reduce");
    check(GrB_Matrix_diag(&diag, s.row, 0), "GrB_Matrix_diag (sum)");
    check(GrB_mxm(s.scores, nullptr, nullptr, s.plus_rdiv, diag, s.scores, nullptr), "normalise GrB_mxm");
    GrB_Matrix_free(&diag);
    check(GrB_mxm(s.out[h], nullptr, nullptr, GrB_PLUS_TIMES_SEMIRING_FP32, s.scores, xh, nullptr),
          "SpMM GrB_mxm");
    check(GrB_Matrix_wait(s.out[h], GrB_MATERIALIZE), "GrB_Matrix_wait");
  }
}

Tensor GraphblasAttention::output() const {
  const State& s = *state_;
  Tensor out({static_cast<int64_t>(s.n), static_cast<int64_t>(s.heads), static_cast<int64_t>(s.dim)});
  for (GrB_Index h = 0; h < s.heads; ++h) {
    GrB_Index nvals = 0;
    check(GrB_Matrix_nvals(&nvals, s.out[h]), "GrB_Matrix_nvals");
    std::vector<GrB_Index> rows(nvals), cols(nvals);
    std::vector<float> vals(nvals);
    check(GrB_Matrix_extractTuples_FP32(rows.data(), cols.data(), vals.data(), &nvals, s.out[h]),
          "GrB_Matrix_extractTuples");
    for (GrB_Index k = 0; k < nvals; ++k) out.data()[(rows[k] * s.heads + h) * s.dim + cols[k]] = vals[k];
  }
  return out;
}

}  // namespace edgeattn::bench
