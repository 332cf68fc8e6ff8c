#!/usr/bin/env python3
"""Markdown table of a Google Benchmark JSON from the edgeattn suites (bench/RESULTS.md).

    python3 bench/gbench_table.py bench/results/attention.json [--old OLD.json]

One row per benchmark: time per call (ms), edges/s, GB/s under the traffic model and the fraction
of the STREAM triad measured in the same run (the run's context). With --old, a last column gives
old / new time per benchmark present in both files (> 1: the new run is faster).
"""
import argparse
import json
import sys


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"gbench_table.py: cannot read {path}: {e}")
    if "benchmarks" not in data:
        sys.exit(f"gbench_table.py: {path} has no 'benchmarks' (not a Google Benchmark JSON?)")
    rows = {}
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration" or "error_occurred" in b:
            continue
        scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
        rows[b["name"]] = dict(ms=b["real_time"] * scale, eps=b.get("edges_per_s"), gbps=b.get("GBps"),
                               stream=b.get("stream_fraction"))
    return data.get("context", {}), rows


def fmt_ms(ms):
    return f"{ms:.3g}" if ms < 1000 else f"{ms:,.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json")
    ap.add_argument("--old", help="an earlier run of the same suite, for old/new ratios")
    args = ap.parse_args()
    ctx, rows = load(args.json)
    old = load(args.old)[1] if args.old else None
    print(f"STREAM triad {ctx.get('edgeattn_stream_triad_gbps', '?')} GB/s, random gather "
          f"{ctx.get('edgeattn_random_gather_gbps', '?')} GB/s, FMA peak {ctx.get('edgeattn_fma_peak_gflops', '?')} "
          f"GFLOP/s, {ctx.get('edgeattn_threads', '?')} threads, {ctx.get('date', '')}\n")
    head = "| benchmark | ms | edges/s | GB/s (model) | of STREAM |" + (" old / new |" if old else "")
    print(head)
    print("| --- | ---: | ---: | ---: | ---: |" + (" ---: |" if old else ""))
    for name, r in rows.items():
        cells = [f"`{name.removesuffix('/real_time')}`", fmt_ms(r["ms"]),
                 f"{r['eps'] / 1e6:.1f} M" if r["eps"] else "",
                 f"{r['gbps']:.2f}" if r["gbps"] else "",
                 f"{100 * r['stream']:.0f}%" if r["stream"] else ""]
        if old:
            cells.append(f"{old[name]['ms'] / r['ms']:.2f}" if name in old else "")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
