#!/usr/bin/env bash
# Packs the CUDA path's test and benchmark from a build with EDGEATTN_CUDA (default build/release),
# with the shared libraries they load and the PyG peer script, into build/cudarun/, so they can run
# on a GPU machine that has a driver but not this project's dependencies (the lent `device`
# machine; glibc as new as the build host's).
#
# usage: scripts/cuda_run.sh [BUILD_DIR]
# then, on the GPU machine, from the repository root:
#   bash build/cudarun/run.sh [OUT_DIR]
# or, where only a small upload fits (the lent machine takes 64 MiB with the working tree; the
# folder is ~70 MB, mostly OpenBLAS), from build/cudarun.tar.xz (~10 MB), written beside it:
#   tar -xJf build/cudarun.tar.xz -C /tmp && bash /tmp/cudarun/run.sh [OUT_DIR]
# which records the GPU and its measured limits (copy bandwidth, fp32 and bf16 matrix rates,
# through PyTorch when present), runs kernels_cuda_attention_test (the CUDA path against the
# reference), kernels_cuda_attention_bench (kernel times, operands resident) and, where PyTorch
# Geometric is installed, bench/peers/cuda_attention_peer.py (PyG's attention on the same GPU),
# writing gpu.txt, test.log, bench.json and pyg.jsonl into OUT_DIR (default build/cudarun/out).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=${1:-build/release}
out=build/cudarun
programs=("$build/tests/kernels_cuda_attention_test" "$build/bench/kernels_cuda_attention_bench")
grep -q "EDGEATTN_CUDA:BOOL=ON" "$build/CMakeCache.txt" ||
  { echo "cuda_run: $build was configured without CUDA (no nvcc found?)" >&2; exit 1; }
for p in "${programs[@]}"; do
  [ -x "$p" ] || { echo "cuda_run: $p is not built (ninja -C $build $(basename "$p"))" >&2; exit 1; }
done

rm -rf "$out"
mkdir -p "$out/lib"
for p in "${programs[@]}"; do
  cp "$p" "$out/"
  strip "$out/$(basename "$p")"
done
# Every shared library they load but the C library itself (the target machine has its own).
ldd "${programs[@]}" | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' | xargs -r -I{} cp -L {} "$out/lib/"
cp bench/peers/cuda_attention_peer.py "$out/"

cat >"$out/run.sh" <<'EOF'
#!/usr/bin/env bash
# Runs what scripts/cuda_run.sh packed; exits non-zero when the tests fail.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${1:-$here/out}"
mkdir -p "$dest"
export LD_LIBRARY_PATH="$here/lib"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv | tee "$dest/gpu.txt"
grep -m1 "model name" /proc/cpuinfo | tee -a "$dest/gpu.txt"
if python3 -c "import torch" 2>/dev/null; then
  python3 - <<'PY' | tee -a "$dest/gpu.txt"
import torch
x = torch.empty(2**30, dtype=torch.float32, device="cuda"); y = torch.empty_like(x)
def best(fn, reps=10):
    fn(); torch.cuda.synchronize(); t = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); t.append(a.elapsed_time(b))
    return min(t)
ms = best(lambda: y.copy_(x))
print(f"device-to-device copy: {2 * x.numel() * 4 / ms / 1e6:.0f} GB/s (bytes read + written, 4 GiB, best of 10)")
del x, y
torch.backends.cuda.matmul.allow_tf32 = False
for dt, name in ((torch.float32, "fp32 (no TF32)"), (torch.bfloat16, "bf16")):
    a = torch.rand(8192, 8192, device="cuda", dtype=dt); b = torch.rand(8192, 8192, device="cuda", dtype=dt)
    ms = best(lambda: a @ b)
    print(f"{name} 8192^3 matmul: {2 * 8192**3 / ms / 1e9:.1f} TFLOP/s (best of 10)")
PY
fi
status=0
"$here/kernels_cuda_attention_test" --gtest_brief=1 2>&1 | tee "$dest/test.log" | tail -40 || status=1
"$here/kernels_cuda_attention_bench" --benchmark_out="$dest/bench.json" --benchmark_out_format=json 2>&1 | tail -30
if python3 -c "import torch_geometric" 2>/dev/null; then
  python3 "$here/cuda_attention_peer.py" | tee "$dest/pyg.jsonl"
fi
exit "$status"
EOF
chmod +x "$out/run.sh"
tar -C "$(dirname "$out")" -cf - "$(basename "$out")" | xz -T0 -6 >"$out.tar.xz"
echo "cuda_run: $(du -sh "$out" | cut -f1) in $out ($(du -sh "$out.tar.xz" | cut -f1) as $out.tar.xz);" \
  "run: bash $out/run.sh (on a GPU machine)"
