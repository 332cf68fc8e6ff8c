#!/usr/bin/env bash
# Builds the kernel tests for AVX-512 on any x86-64 build host and packs them, with the shared
# libraries they load, into build/avx512run/, so that the AVX-512 path of the tiled attention
# kernel (lib/kernels/parallel/flash_microkernel.hpp, policy Avx512) can be tested on a machine
# that has AVX-512 when the build host has not (-march=native leaves that path out there).
#
# usage: scripts/avx512_tests.sh [MARCH]      (default MARCH: sapphirerapids)
# then, on the AVX-512 machine (glibc as new as the build host's), from the repository root:
#   bash build/avx512run/run.sh
# which prints the CPU's avx512f flag and runs kernels_flash_microkernel_test (every policy,
# AVX-512 included, against the reference) and kernels_parallel_attention_test.
#
# The test binaries cannot run on a build host without AVX-512: their test discovery fails there,
# so the build is run with -k 0 and this script checks that both executables were linked.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

march=${1:-sapphirerapids}
build=build/avx512
out=build/avx512run
tests=(kernels_flash_microkernel_test kernels_parallel_attention_test)

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEDGEATTN_NATIVE=OFF \
  "-DCMAKE_CXX_FLAGS=-march=$march -mprefer-vector-width=256" -DEDGEATTN_BUILD_BENCH=OFF \
  -DEDGEATTN_BUILD_TOOLS=OFF -DEDGEATTN_MPI=OFF -DEDGEATTN_METIS=OFF -DEDGEATTN_DOWNLOAD=OFF \
  >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
rm -f "${tests[@]/#/$build/tests/}"
ninja -C "$build" -k 0 "${tests[@]}" >"$build.build.log" 2>&1 || true  # discovery fails without AVX-512
for t in "${tests[@]}"; do
  [ -x "$build/tests/$t" ] || { echo "avx512_tests: $t was not linked; see $build.build.log" >&2; exit 1; }
done

rm -rf "$out"
mkdir -p "$out/lib"
for t in "${tests[@]}"; do
  cp "$build/tests/$t" "$out/"
  strip "$out/$t"
done
# Every shared library the tests load but the C library itself (the target machine has its own).
ldd "${tests[@]/#/$build/tests/}" | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' | xargs -r -I{} cp -L {} "$out/lib/"

cat >"$out/run.sh" <<'EOF'
#!/usr/bin/env bash
# Runs the AVX-512 kernel tests packed by scripts/avx512_tests.sh; exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if ! grep -q -m1 avx512f /proc/cpuinfo; then echo "run.sh: this CPU has no AVX-512F" >&2; exit 2; fi
grep -m1 "model name" /proc/cpuinfo
export LD_LIBRARY_PATH=$PWD/lib
status=0
for t in kernels_flash_microkernel_test kernels_parallel_attention_test; do
  "./$t" --gtest_brief=1 || status=1
done
exit "$status"
EOF
chmod +x "$out/run.sh"
echo "avx512_tests: $(du -sh "$out" | cut -f1) in $out; run: bash $out/run.sh (on an AVX-512 machine)"
