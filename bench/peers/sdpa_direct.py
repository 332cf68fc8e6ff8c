#!/usr/bin/env python3
"""PyTorch 2 scaled_dot_product_attention on the structured patterns, against `edgeattn bench
attention` on the same shapes, in one sitting: the quick check of the tiled (flash) kernel that
the full suite (run_suite.py --only sdpa, ~90 minutes) makes at every size.

For each case (pattern, N, H) it runs, alternating, edgeattn's implicit pattern and SDPA as
peer.py does (q = k = v, [1, H, N, d], float32; forward without autograd, forward + backward with
every input gradient; the complete graph without a mask, causal with is_causal=True, a sliding
window with a boolean attn_mask), each --repeat times after a warm-up, in its own process, and
prints one JSON object per run and a table of medians with SDPA / edgeattn (above 1: edgeattn
is faster).

    build/peers-torch2/bin/python bench/peers/sdpa_direct.py --edgeattn build/release/bin/edgeattn \\
        --cases complete:1024:1,complete:4096:1,causal:4096:1,complete:4096:8,window256:16384:1
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def sdpa_once(pattern: str, n: int, heads: int, d: int, threads: int, repeat: int) -> dict:
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(1)
    q = torch.randn(1, heads, n, d, requires_grad=True)
    mask, causal = None, False
    if pattern == "causal":
        causal = True
    elif pattern.startswith("window"):
        w = int(pattern[len("window"):])
        i = torch.arange(n)
        mask = (i[:, None] - i[None, :]).abs() <= w  # j within w of i, both sides (edgeattn's window)
    grad = torch.ones(1, heads, n, d)

    def run(backward: bool) -> None:
        with torch.set_grad_enabled(backward):
            out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask, is_causal=causal)
            if backward:
                q.grad = None
                out.backward(grad)

    def median_ms(backward: bool) -> float:
        run(backward)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            run(backward)
            times.append(1e3 * (time.perf_counter() - t0))
        return statistics.median(times)

    return {"library": f"torch {torch.__version__} SDPA", "forward_ms": median_ms(False),
            "forward_backward_ms": median_ms(True)}


def edgeattn_once(binary: str, pattern: str, n: int, heads: int, d: int, threads: int, repeat: int) -> dict:
    cmd = [binary, "bench", "attention", "--nodes", str(n), "--heads", str(heads), "--head-dim", str(d),
           "--threads", str(threads), "--no-dense", "--repeat", str(repeat), "--pattern",
           "window:" + pattern[len("window"):] if pattern.startswith("window") else pattern]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rec = json.loads(out.strip().splitlines()[-1])
    return {"library": "edgeattn", "forward_ms": rec["forward_ms"], "forward_backward_ms": rec["forward_backward_ms"],
            "command": " ".join(cmd)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edgeattn", default="build/release/bin/edgeattn")
    ap.add_argument("--cases", default="complete:1024:1,complete:4096:1,causal:1024:1,causal:4096:1,"
                                       "complete:1024:8,complete:4096:8,causal:4096:8,window256:16384:1")
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2, help="alternations of the two libraries per case")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: one SDPA run in a fresh process
    args = ap.parse_args()
    if args.one:
        pattern, n, h = args.one.split(":")
        print(json.dumps(sdpa_once(pattern, int(n), int(h), args.head_dim, args.threads, args.repeat)))
        return 0
    rows = []
    for case in args.cases.split(","):
        pattern, n, h = case.split(":")
        got: dict[str, list[dict]] = {"edgeattn": [], "sdpa": []}
        for _ in range(args.rounds):
            e = edgeattn_once(args.edgeattn, pattern, int(n), int(h), args.head_dim, args.threads, args.repeat)
            got["edgeattn"].append(e)
            out = subprocess.run([sys.executable, __file__, "--one", case, "--head-dim", str(args.head_dim),
                                  "--threads", str(args.threads), "--repeat", str(args.repeat)],
                                 check=True, capture_output=True, text=True, env=os.environ).stdout
            got["sdpa"].append(json.loads(out.strip().splitlines()[-1]))
            for lib in ("edgeattn", "sdpa"):
                print(json.dumps({"case": case, **got[lib][-1]}), flush=True)
        med = {lib: {k: statistics.median(r[k] for r in runs) for k in ("forward_ms", "forward_backward_ms")}
               for lib, runs in got.items()}
        rows.append((case, got["sdpa"][0]["library"], med))
    print("\n| case (pattern:N:H), d = %d, %d threads | edgeattn fwd ms | SDPA fwd ms | SDPA / edgeattn "
          "| edgeattn fwd+bwd ms | SDPA fwd+bwd ms | SDPA / edgeattn |" % (args.head_dim, args.threads))
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for case, lib, m in rows:
        e, s = m["edgeattn"], m["sdpa"]
        print(f"| {case} | {e['forward_ms']:.2f} | {s['forward_ms']:.2f} | {s['forward_ms'] / e['forward_ms']:.2f} "
              f"| {e['forward_backward_ms']:.1f} | {s['forward_backward_ms']:.1f} "
              f"| {s['forward_backward_ms'] / e['forward_backward_ms']:.2f} |")
    print(f"\nSDPA: {rows[0][1] if rows else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
