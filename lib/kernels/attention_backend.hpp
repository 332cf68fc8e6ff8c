// Internal contract between the attention dispatch (lib/kernels/attention.cpp) and its backends:
//   reference/  serial, obviously correct, the test oracle          (reference_attention.cpp)
//   parallel/   fused online-softmax kernels over any pattern        (parallel_attention_*.cpp)
//   dense/      blocked BLAS GEMM with a mask, dot-product scores    (dense_attention.cpp)
//   cuda/       the same forms on a GPU, built with EDGEATTN_CUDA     (cuda_attention.cu)
//
// The dispatch has already validated shapes and reduced every public score to one of four
// per-edge forms (bilinear and perceptron are projected to these with GEMMs first):
//   dot          s = scale * <q_i, k_j>                   q [Nd,H,Dk], k [Ns,H,Dk]
//   additive     s = leaky(sd_i + ss_j [+ se_e])          sd [Nd,H], ss [Ns,H], se [E,H] optional
//   vector_leaky s = sum_c a_c * leaky(q_ic + k_jc)       q [Nd,H,Dk], k [Ns,H,Dk], a [H,Dk]
//   vector_tanh  s = sum_c a_c * tanh(q_ic + k_jc)        same
// then s += bias[e, h] if bias is given. Heads are always kept separate here: out [Nd,H,Dv].
#pragma once

#include <cstdint>

#include "edgeattn/graph/pattern.hpp"
#include "edgeattn/kernels/attention.hpp"

namespace edgeattn::kernels {

enum class EdgeScore { dot, additive, vector_leaky, vector_tanh };

struct ScoreArgs {
  EdgeScore kind = EdgeScore::dot;
  float scale = 1.f;           // dot
  float slope = 0.2f;          // additive, vector_leaky
  int64_t dk = 0;              // dot, vector_*: feature length per head of q and k
  const float* q = nullptr;    // [Nd, H, dk]
  const float* k = nullptr;    // [Ns, H, dk]
  const float* sd = nullptr;   // [Nd, H]
  const float* ss = nullptr;   // [Ns, H]
  const float* att = nullptr;  // [H, dk]
  const float* se = nullptr;   // [E, H] or null: additive only, a per-edge term inside the activation
  // additive with one head, or null: a_src [dv] with ss_j = <a_src, v_j> (head_score's bits). The
  // parallel kernels may then compute an edge's source term from the value row they gather for it
  // instead of gathering ss as well; ss must hold the same terms (other passes read it).
  const float* ss_att = nullptr;
  // vector_* only: a per-edge vector term inside the activation, ve_e = we . ea_e computed on the
  // fly (GATv2's lin_edge(edge_attr)): ea [E, fe] edge attributes, we [H, dk, fe]. Null: none.
  const float* ea = nullptr;
  const float* we = nullptr;
  int64_t fe = 0;
};

struct KernelArgs {
  int64_t heads = 0;
  int64_t dv = 0;
  ScoreArgs score;
  const float* v = nullptr;     // [Ns, H, dv]
  const float* bias = nullptr;  // [E, H] or null
  Normalization norm = Normalization::softmax;
  float dropout = 0.f;
  uint64_t seed = 0;
  // A dot score's q, k or v (or, in the backward, the output gradient) holds an inf or NaN and
  // the pattern masks some pairs: only the per-edge kernels keep it out of the rows and sources
  // that no edge links it to (tiled_applies is false).
  bool masked_non_finite = false;
};

struct ForwardBuffers {
  float* out = nullptr;    // [Nd, H, dv], written fully
  float* lse = nullptr;    // [Nd, H], softmax only: written fully (-inf for empty rows)
  float* alpha = nullptr;  // [E, H] or null: normalised weights before dropout
  // [Nd, 2, H, dv] (H = 8 or 1) or null (parallel_dst_terms_apply): per row, the per-head output O_i again
  // and V_i = U_i - G_i O_i, with g = LeakyReLU'(z), U_i = sum_j alpha_ij g_ij keep_ij v_j and
  // G_i = sum_j alpha_ij g_ij (per head). Then the destination-side score gradient is
  // dsd_i = <dO_i, V_i> per head, and the backward needs no pass over each row's edges.
  float* dst_terms = nullptr;
};

/// Gradient buffers, zero-filled by the caller (but see parallel_backward_writes_each_dv_once); a
/// null pointer means "not needed".
struct BackwardBuffers {
  float* dq = nullptr;     // [Nd, H, dk]
  float* dk = nullptr;     // [Ns, H, dk]
  float* dv = nullptr;     // [Ns, H, dv]
  float* dsd = nullptr;    // [Nd, H]
  float* dss = nullptr;    // [Ns, H]
  float* datt = nullptr;   // [H, dk]
  float* dbias = nullptr;  // [E, H]
  float* dse = nullptr;    // [E, H]: additive with ScoreArgs::se, d(loss)/d se = ds * leaky'(z)
  float* dea = nullptr;    // [E, fe]: vector scores with ScoreArgs::ea, d(loss)/d ea
  float* dwe = nullptr;    // [H, dk, fe]: d(loss)/d we (accumulated, like datt)
  // Additive scores taken from v (AttentionInputs::att_dst/att_src: sd_i = <a_dst, v_i>,
  // ss_j = <a_src, v_j>, destination i being source i). When fold_att_src is set, dv_j also
  // receives dss_j a_src, and for j < Nd dsd_j a_dst; datt_src += sum_j dss_j v_j and
  // datt_dst += sum_{j<Nd} dsd_j v_j (accumulated, like datt). dsd and dss must be given (they
  // still receive the score gradients), and so must dv.
  const float* fold_att_src = nullptr;  // [H, dv]
  const float* fold_att_dst = nullptr;  // [H, dv]
  float* datt_src = nullptr;            // [H, dv]
  float* datt_dst = nullptr;            // [H, dv]
};

struct BackwardInputs {
  const float* dout = nullptr;       // [Nd, H, dv]
  const float* lse = nullptr;        // [Nd, H] from forward (softmax only)
  const float* out = nullptr;        // [Nd, H, dv] per-head forward output, or null (e.g. heads were
                                     // averaged): lets a backend get D_i = <dO_i, O_i> without a sweep
  const float* dst_terms = nullptr;  // ForwardBuffers::dst_terms of the forward, or null
};

// Serial oracle. Works on the materialised CSR of the pattern.
void reference_forward(const Graph& g, const KernelArgs& a, const ForwardBuffers& out);
void reference_backward(const Graph& g, const KernelArgs& a, const BackwardInputs& in,
                        const BackwardBuffers& grads);

// Fused parallel kernels, any pattern.
void parallel_forward(const Pattern& p, const KernelArgs& a, const ForwardBuffers& out);
void parallel_backward(const Pattern& p, const KernelArgs& a, const BackwardInputs& in,
                       const BackwardBuffers& grads);
/// Whether the sparse backward's destination pass keeps per-edge records (kept weight and score
/// gradient) for its source pass to read instead of recomputing them (parallel_backward.cpp):
/// `automatic` lets its memory budget decide. Results are bit-identical either way; tests force
/// each. Not thread-safe: set it while no kernel runs.
enum class EdgeRecords { automatic, never, always };
void set_edge_records(EdgeRecords mode);
/// Whether parallel_forward can fill ForwardBuffers::dst_terms for parallel_backward: additive
/// softmax scores with no edge bias or per-edge term and a non-negative slope, over an explicit
/// graph whose gathered source rows exceed the last-level cache (below it the records' source pass
/// is the cheaper one), with 8 heads of 8 (GAT's hidden layers; only where the edge records would
/// fit their budget: the terms replace them, parallel_backward_impl.hpp) or one head of any width
/// (GAT's output layer: 2 dv floats a row; only where the records would not fit, and both passes
/// would recompute every edge). set_edge_records(never) turns them off, always turns them on
/// wherever the shape allows (tests).
bool parallel_dst_terms_apply(const Pattern& p, const KernelArgs& a);
/// True when parallel_backward writes every element of grads.dv exactly once (no zero-fill
/// needed), in the task that reads v_j for the last time, after every other read of v: then dv
/// may overwrite v itself. Then it also writes every element of dq, dk, dsd, dss, dbias and dse
/// exactly once, so those need no zero-fill either (datt is accumulated: zero it). False for the
/// tiled form: it does write dq, dk and dv once each and reads v only while packing it, before
/// any dv write, but it is not held to this contract (no test runs it with dv over v).
bool parallel_backward_writes_each_dv_once(const Pattern& p, const KernelArgs& a);

// Dense blocked-GEMM path; a.score.kind must be EdgeScore::dot.
void dense_forward(const Pattern& p, const KernelArgs& a, const ForwardBuffers& out);
void dense_backward(const Pattern& p, const KernelArgs& a, const BackwardInputs& in,
                    const BackwardBuffers& grads);

// CUDA kernels (cuda/cuda_attention.cu): every canonical score, softmax or relu, dropout, an edge
// bias, the additive per-edge term and fold_att_*; not edge attributes (ea/we: InvalidArgument).
// Operands and buffers are host memory: each call uploads and downloads. The backward adds into
// the caller's zero-filled buffers, like the reference. DeviceError without a GPU; built without
// CUDA (cuda/cuda_unavailable.cpp), every entry raises DeviceError.
void cuda_forward(const Graph& g, const KernelArgs& a, const ForwardBuffers& out);
void cuda_backward(const Graph& g, const KernelArgs& a, const BackwardInputs& in,
                   const BackwardBuffers& grads);

}  // namespace edgeattn::kernels
