// A first look at edgeattn's C++ API: build a graph from an edge list, run multi-head attention
// forward and backward, and read the attention weights back in the order the edges were given.
#include <cstdio>
#include <vector>

#include "edgeattn/graph/build.hpp"
#include "edgeattn/kernels/attention.hpp"

int main() {
  // Edge k is src[k] -> dst[k]: node dst[k] attends to node src[k]. Node 3 has no in-edges.
  const std::vector<int64_t> src = {0, 1, 2, 3, 1};
  const std::vector<int64_t> dst = {1, 2, 1, 1, 0};
  const int64_t n = 4, heads = 2, dim = 4;
  const edgeattn::Graph g = edgeattn::build_graph(n, n, src, dst);  // CSR by destination

  // Query, key and value: [n, heads, dim], filled with a simple deterministic pattern.
  edgeattn::Tensor q({n, heads, dim}), k({n, heads, dim}), v({n, heads, dim});
  for (int64_t i = 0; i < q.numel(); ++i) {
    q.data()[i] = 0.1f * static_cast<float>(i % 7);
    k.data()[i] = 0.2f * static_cast<float>(i % 5) - 0.4f;
    v.data()[i] = static_cast<float>(i % 3);
  }
  edgeattn::AttentionInputs in;  // views, not copies; the score decides which operands are needed
  in.query = q;
  in.key = k;
  in.value = v;
  edgeattn::AttentionConfig config;  // scaled dot-product score, softmax over each node's in-edges
  config.return_attention = true;    // also return the weights alpha: [num_edges, heads]

  const edgeattn::AttentionResult fwd = edgeattn::attention_forward(g, in, config);  // out: [n, heads, dim]
  const edgeattn::Tensor grad_out(fwd.out.shape(), 1.f);  // d loss / d out for loss = sum(out)
  const edgeattn::AttentionGrads grads = edgeattn::attention_backward(g, in, config, fwd, grad_out);

  // The weights come in the graph's CSR order; map them back to the order of src/dst above.
  const edgeattn::Tensor alpha = edgeattn::to_input_edge_order(g, fwd.attention);  // [5, heads]
  for (int64_t e = 0; e < alpha.dim(0); ++e)
    std::printf("edge %lld: %lld -> %lld  alpha = %.3f (head 0), %.3f (head 1)\n", static_cast<long long>(e),
                static_cast<long long>(src[e]), static_cast<long long>(dst[e]), alpha(e, 0), alpha(e, 1));
  std::printf("out[1, 0, :] = %.3f %.3f %.3f %.3f\n", fwd.out(1, 0, 0), fwd.out(1, 0, 1), fwd.out(1, 0, 2),
              fwd.out(1, 0, 3));
  std::printf("d loss / d query[1, 0, 0] = %.4f\n", grads.query(1, 0, 0));
}
