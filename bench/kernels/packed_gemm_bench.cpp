// The layer-sized products of kernels/packed_gemm.hpp against one BLAS call per row block, at the
// shape of a sampled step's first layer (issue 23): x [240000, 100] times W^T [100, 64] forward,
// and the weight gradient dy^T x, [64, 240000] x [240000, 100], summed in chunks of 8192 rows in
// parallel (as dropout_linear's backward does) with the chunks' partials added in order.
//
//   packed_gemm/forward/<packed|blas>            y = x W^T, row blocks of kPackedBlockRows
//   packed_gemm/weight_grad/<packed|blas>        dW = dy^T x
//
// Counters: GFLOPps and fma_fraction (2 * rows * 100 * 64 flops a call) against the measured FMA
// peak. Written to weigh the packed weight gradient against BLAS at this shape: it had trailed
// BLAS by 10-20% until its broadcast operand was packed per slab (bench/RESULTS.md, 2026-12-07,
// forty-first session), and its panel operand is prefetched as that pack runs (forty-second).
// Run: build/release/bench/kernels_packed_gemm_bench --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_context.hpp"
#include "edgeattn/core/parallel.hpp"
#include "kernels/blas.hpp"
#include "kernels/packed_gemm.hpp"

namespace edgeattn::bench {
namespace {

constexpr int64_t kRows = 240000, kIn = 100, kOut = 64, kChunkRows = 8192;
constexpr int64_t kBlock = kernels::kPackedBlockRows;

void forward(benchmark::State& state, bool packed) {
  const Tensor x = random_tensor({kRows, kIn}, 1);
  const Tensor w = random_tensor({kOut, kIn}, 2);
  Tensor y({kRows, kOut});
  const kernels::PackedRight right(w.data(), kIn, /*trans_b=*/true, kIn, kOut);
  const int64_t blocks = (kRows + kBlock - 1) / kBlock;
  LoopClock clock;
  for (auto _ : state) {
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t r0 = b * kBlock, rows = std::min(kRows, r0 + kBlock) - r0;
        if (packed)
          right.multiply(rows, x.data() + r0 * kIn, kIn, y.data() + r0 * kOut, kOut, false, nullptr);
        else
          kernels::gemm(false, true, rows, kOut, kIn, 1.f, x.data() + r0 * kIn, kIn, w.data(), kIn, 0.f,
                        y.data() + r0 * kOut, kOut);
      }
    });
    benchmark::DoNotOptimize(y.data());
  }
  set_flop_counters(state, 2.0 * kRows * kIn * kOut, clock.seconds());
}

void weight_grad(benchmark::State& state, bool packed) {
  const Tensor x = random_tensor({kRows, kIn}, 1);
  const Tensor dy = random_tensor({kRows, kOut}, 3);
  const int64_t chunks = (kRows + kChunkRows - 1) / kChunkRows;
  std::vector<float> partial(static_cast<size_t>(chunks * kOut * kIn));
  Tensor dw({kOut, kIn});
  LoopClock clock;
  for (auto _ : state) {
    parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
      kernels::TransposeAccumulator acc(kOut, kIn);
      for (int64_t c = c0; c < c1; ++c) {
        float* part = partial.data() + c * kOut * kIn;
        const int64_t end = std::min(kRows, (c + 1) * kChunkRows);
        acc.reset();
        if (!packed) std::fill_n(part, kOut * kIn, 0.f);
        for (int64_t r0 = c * kChunkRows; r0 < end; r0 += kBlock) {
          const int64_t rows = std::min(end, r0 + kBlock) - r0;
          if (packed)
            acc.add(rows, dy.data() + r0 * kOut, kOut, x.data() + r0 * kIn, kIn);
          else
            kernels::gemm(true, false, kOut, kIn, rows, 1.f, dy.data() + r0 * kOut, kOut, x.data() + r0 * kIn,
                          kIn, 1.f, part, kIn);
        }
        if (packed) acc.write(part, kIn, false);
      }
    });
    std::copy_n(partial.data(), kOut * kIn, dw.data());
    for (int64_t c = 1; c < chunks; ++c)
      for (int64_t i = 0; i < kOut * kIn; ++i)
        dw.data()[i] += partial[static_cast<size_t>(c * kOut * kIn + i)];
    benchmark::DoNotOptimize(dw.data());
  }
  set_flop_counters(state, 2.0 * kRows * kIn * kOut, clock.seconds());
}

void register_all() {
  for (const bool packed : {true, false}) {
    const char* path = packed ? "packed" : "blas";
    benchmark::RegisterBenchmark((std::string("packed_gemm/forward/") + path).c_str(),
                                 [packed](benchmark::State& s) { forward(s, packed); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark((std::string("packed_gemm/weight_grad/") + path).c_str(),
                                 [packed](benchmark::State& s) { weight_grad(s, packed); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
}

[[maybe_unused]] const bool registered = (register_all(), true);

}  // namespace
}  // namespace edgeattn::bench
