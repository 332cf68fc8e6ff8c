#!/usr/bin/env python3
"""Writes the peer comparison section of bench/RESULTS.md from the suite's raw JSON lines.

    build/peers-venv/bin/python bench/peers/report.py                         # full results
    build/peers-venv/bin/python bench/peers/report.py --raw bench/results/peers/raw-quick.jsonl \\
        --results bench/results/peers/quick.md --plot-suffix -quick

The section lies between `<!-- peers:begin -->` and `<!-- peers:end -->` (appended when absent,
replaced otherwise; the file is written atomically). It holds the machine (CPU, cores, STREAM and
FMA peak measured in the same run), each library's version, per-workload tables of time, peak
memory and the ratio peer/edgeattn (> 1: edgeattn is faster), the issue's targets computed from the
numbers, every workload where edgeattn loses, the failed runs, and two plots (PNG, next to the
raw file): the dense-vs-sparse crossover and time vs edges. For each key the latest record counts,
except in the rounds table: for configurations measured with `run_suite.py --rounds N`, each ratio
round by round (a peer's run against edgeattn's run of the same round), with its median and range.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"
KERNEL_LIBS = ("edgeattn", "edgeattn-dense", "edgeattn-pattern", "graphblas", "torch", "torch2-sdpa", "pyg", "pyg2",
               "dgl", "dgl2")
# Column keys: the record's library, plus "-sdpa" for PyTorch's scaled_dot_product_attention runs.
LABELS = {"edgeattn": "edgeattn", "edgeattn-dense": "edgeattn dense path", "edgeattn-pattern": "edgeattn (implicit pattern)",
          "edgeattn-degree": "edgeattn, --reorder degree", "edgeattn-metis": "edgeattn, --reorder metis",
          "edgeattn-none": "edgeattn, --reorder none",
          "graphblas": "GraphBLAS", "torch": "PyTorch dense", "pyg": "PyG", "dgl": "DGL",
          "torch-sdpa": "PyTorch SDPA", "torch2": "PyTorch dense", "torch2-sdpa": "PyTorch SDPA", "pyg2": "PyG",
          "dgl2": "DGL"}
PEER_LIBS = ("graphblas", "torch", "pyg", "dgl", "torch2", "pyg2", "dgl2")
SUITE_GROUPS = ("kernel", "dense", "layer", "train", "sdpa", "minibatch")

COLORS = {"edgeattn": "tab:blue", "edgeattn-dense": "tab:orange", "edgeattn-pattern": "tab:green",
          "edgeattn-degree": "tab:blue", "edgeattn-metis": "tab:blue", "edgeattn-none": "tab:blue",
          "torch": "tab:red", "graphblas": "tab:purple", "pyg": "tab:brown", "dgl": "tab:pink",
          "torch2-sdpa": "tab:olive", "pyg2": "tab:gray", "dgl2": "tab:cyan"}


def lib_key(r: dict[str, Any]) -> str:
    """The column of a record: its library, "-sdpa" appended for scaled_dot_product_attention runs."""
    return r["library"] + ("-sdpa" if r.get("workload") == "sdpa" else "")


def record_version(r: dict[str, Any]) -> str | None:
    """The version of the measured library a record ran with (older records: the 'version' field)."""
    lib = r.get("library", "")
    short = lambda v: str(v).split("+")[0]  # noqa: E731  (2.2.1+cu121 → 2.2.1)
    if lib.startswith("pyg"):
        v = r.get("torch_geometric_version") or str(r.get("version", "")).split(" ")[0]
        t = r.get("torch_version") or str(r.get("version", "")).partition("torch ")[2].rstrip(")")
        return f"{v} (torch {short(t)})" if v else None
    if lib.startswith("dgl"):
        v = r.get("dgl_version") or str(r.get("version", "")).split(" ")[0]
        t = r.get("torch_version") or str(r.get("version", "")).partition("torch ")[2].rstrip(")")
        return f"{v} (torch {short(t)})" if v else None
    if lib.startswith("torch"):
        v = r.get("torch_version") or r.get("version")
        return short(v) if v else None
    return str(r["version"]) if r.get("version") else None


def input_order_run(c: Any) -> dict[str, Any] | None:
    """The configuration's edgeattn run in the input's own numbering: its `--reorder none` run, else the
    default's where --reorder auto kept the numbering (records from before auto have no "reorder")."""
    none = c.by_lib.get("edgeattn-none")
    if none and none.get("status") == "ok":
        return none
    base = c.base
    if base and base.get("status") == "ok" and base.get("reorder") in (None, "none"):
        return base
    return None


def label(lib: str, records: Iterable[dict[str, Any]] = ()) -> str:
    """A column's name with the version(s) its records ran with, e.g. 'PyG 2.8.1 (torch 2.15.0)'."""
    base = LABELS.get(lib, lib)
    if lib == "edgeattn":  # the default --reorder auto: name what it chose where it renumbered
        chosen = sorted({str(r["reorder"]) for r in records
                         if lib_key(r) == lib and r.get("reorder") not in (None, "none")})
        return f"{base} (--reorder auto: {' / '.join(chosen)})" if chosen else base
    if lib.startswith("edgeattn") or lib == "graphblas":
        return base
    versions = sorted({v for r in records if lib_key(r) == lib and (v := record_version(r))})
    return f"{base} {' / '.join(versions)}" if versions else base

Record = dict[str, Any]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--raw", type=Path, default=ROOT / "bench/results/peers/raw.jsonl")
    p.add_argument("--results", type=Path, default=ROOT / "bench/RESULTS.md")
    p.add_argument("--plot-dir", type=Path, help="where the PNGs go (default: beside --raw)")
    p.add_argument("--plot-suffix", default="", help="appended to the PNG names (e.g. -quick)")
    return p.parse_args(argv)


def load(raw: Path) -> tuple[list[Record], dict[str, Record]]:
    """All records, and the latest record of each key."""
    records: list[Record] = []
    for line in raw.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    latest: dict[str, Record] = {}
    for r in records:
        if "key" in r:
            latest[r["key"]] = r
    return records, latest


def fmt_ms(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.3g}" if v < 100 else f"{v:,.0f}"


def fmt_ratio(r: float | None) -> str:
    if r is None:
        return ""
    return f" ({r:.2g}×)" if r < 10 else f" ({r:.0f}×)"


def cell(rec: Record | None, field: str, base: float | None) -> str:
    """'time (ratio×)' for an ok record, its status otherwise."""
    if rec is None:
        return ""
    if rec.get("status") != "ok":
        return rec.get("status", "error")
    v = rec.get(field)
    if v is None:
        return "—"
    ratio = v / base if base and v else None
    return fmt_ms(v) + fmt_ratio(ratio)


def ratio(peer: Record | None, base: Record | None, field: str) -> float | None:
    """peer / edgeattn for one field, when both runs are ok and have it."""
    if not peer or not base or peer.get("status") != "ok" or base.get("status") != "ok":
        return None
    a, b = peer.get(field), base.get(field)
    return a / b if a and b else None


def later_epochs(r: Record | None) -> float | None:
    """Mean seconds of the epochs after the first one a run trained (the first one also touches the
    step's memory for the first time): the timed epochs after the first timed one, or all timed
    epochs when an untimed warm-up epoch came before them. None without per-epoch times."""
    if not r or r.get("status") != "ok":
        return None
    times = r.get("epoch_seconds") or []
    later = times if r.get("warmup_epochs", 0) >= 1 else times[1:]
    return sum(later) / len(later) if later else None


@dataclass
class Config:
    """One workload configuration: the records of every library for it."""

    group: str
    input_name: str
    params: tuple[str, ...]  # e.g. ("H8", "d64", "dot")
    by_lib: dict[str, Record]

    @property
    def base(self) -> Record | None:
        return self.by_lib.get("edgeattn")

    def sort_key(self) -> tuple[Any, ...]:
        r = self.base or next(iter(self.by_lib.values()))
        return (r.get("nodes") or 0, r.get("edges") or 0, self.input_name, self.params)


def configs(latest: dict[str, Record], group: str,
            workloads: Iterable[str] = ("kernel", "sdpa", "layer", "train", "minibatch")) -> list[Config]:
    """The configurations (input, parameters) of one suite group, each with the latest record of every
    library for it, whichever group measured it (the sdpa group shares its H = 1 runs with dense)."""
    workloads = tuple(workloads)
    split = lambda key: (key.split("|")[2], tuple(key.split("|")[3:-1]))  # noqa: E731  library|workload|input|params|T
    members = {split(k) for k, r in latest.items() if r.get("group") == group and r.get("workload") in workloads}
    table: dict[tuple[str, tuple[str, ...]], dict[str, Record]] = defaultdict(dict)
    for key, r in latest.items():
        if r.get("group") in SUITE_GROUPS and r.get("workload") in workloads and split(key) in members:
            table[split(key)][lib_key(r)] = r
    return sorted((Config(group, k[0], k[1], v) for k, v in table.items()), key=Config.sort_key)


def size_text(c: Config) -> str:
    r = c.base or next(iter(c.by_lib.values()))
    n, e = r.get("nodes"), r.get("edges")
    if n and e:
        return f"{c.input_name} ({n:,} nodes, {e:,} edges)"
    return c.input_name


def timing_tables(cs: list[Config], libs: list[str], fields: list[tuple[str, str]]) -> list[str]:
    """One markdown table per field: rows are configurations, columns libraries."""
    out: list[str] = []
    present = [lib for lib in libs if any(lib in c.by_lib for c in cs)]
    for field, title in fields:
        if not any(c.by_lib.get(lib, {}).get(field) is not None for c in cs for lib in present):
            continue
        recs = [r for c in cs for r in c.by_lib.values()]
        out += [f"{title}:", "", "| input | parameters | " + " | ".join(label(x, recs) for x in present) + " |",
                "| --- | --- |" + " --- |" * len(present)]
        for c in cs:
            base = (c.base or {}).get(field) if (c.base or {}).get("status") == "ok" else None
            cells = [cell(c.by_lib.get(lib), field, None if lib == "edgeattn" else base) for lib in present]
            out.append(f"| {size_text(c)} | {' '.join(c.params)} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def best_edgeattn(c: Config, field: str) -> Record | None:
    """edgeattn's fastest ok run of this configuration over its paths (sparse, dense, implicit pattern)."""
    runs = [r for lib, r in c.by_lib.items() if lib.startswith("edgeattn") and r.get("status") == "ok"
            and r.get(field) is not None]
    return min(runs, key=lambda r: r[field], default=None)


def losses(cs: list[Config], fields: list[str]) -> list[tuple[Config, str, str, float, str]]:
    """(config, peer, field, ratio, edgeattn path) wherever a peer beats edgeattn's best path (ratio < 1)."""
    out = []
    for c in cs:
        for f in fields:
            best = best_edgeattn(c, f)
            for lib, r in c.by_lib.items():
                if lib.startswith("edgeattn"):
                    continue
                q = ratio(r, best, f)
                if q is not None and q < 1.0:
                    out.append((c, lib, f, q, LABELS[lib_key(best)]))
    return out


def crossovers(cs: list[Config], field: str) -> list[tuple[Config, float]]:
    """Configurations where edgeattn's dense path beats its sparse path: (config, dense / sparse)."""
    out = []
    for c in cs:
        q = ratio(c.by_lib.get("edgeattn-dense"), c.base, field)
        if q is not None and q < 1.0:
            out.append((c, q))
    return out


# When edgeattn's tiled kernel started taking explicit graphs, masked within the rows' hulls (688ccbd).
MASKED_TILED_SINCE = "2026-11-29T03:20:00Z"


def why(c: Config, lib: str, field: str = "forward_ms", fma_peak: float | None = None) -> str:
    """A reason computed from the records, where the numbers give one. `fma_peak`: the run's measured
    FMA peak in GFLOP/s (the limits record), beside which the flash-style kernels' rates are shown."""
    base = c.base or {}
    density = (base.get("edges") or 0) / max(1, (base.get("nodes") or 1) ** 2)
    if lib.endswith("-sdpa"):
        dense = c.by_lib.get("edgeattn-dense", {})
        own = (f"; edgeattn's own dense path took {fmt_ms(dense.get('forward_ms'))} / "
               f"{fmt_ms(dense.get('forward_backward_ms'))} ms" if dense.get("status") == "ok" else "")
        best, peer = best_edgeattn(c, field), c.by_lib.get(lib, {})
        # The useful work, the same for both: the products over the graph's E entries, two in the
        # forward (S = QK^T, PV) and seven with FlashAttention-2's five-product backward.
        edges, heads, dim = base.get("edges") or 0, base.get("heads") or 0, base.get("head_dim") or 0
        flops = (4 if field == "forward_ms" else 14) * edges * heads * dim
        if best and peer.get(field) and best.get(field) and flops:
            def rate(ms: float) -> str:
                g = flops / (ms * 1e-3) / 1e9
                return f"{g:.0f} GFLOP/s" + (f" ({g / fma_peak:.0%} of the measured FMA peak)" if fma_peak else "")
            text = (f"density {density:.0%}: PyTorch's fused CPU attention kernel (flash-style: tiled GEMMs with an "
                    f"online softmax, no [N, N] buffer) did the useful work ({flops / 1e9:.2f} GFLOP) at "
                    f"{rate(peer[field])}, {LABELS[lib_key(best)]} at {rate(best[field])}{own}")
            graph = str(base.get("graph") or "")
            if graph not in ("complete", "causal") and not graph.startswith("window") and density < 1:
                # SDPA with a boolean mask computes every one of the N^2 entries. edgeattn runs an
                # explicit graph on its tiled kernel, masked within the rows' hulls, when the rows
                # are long and the hulls full enough (tiled_applies, masked_tiled_min_fill in
                # lib/kernels/parallel/tiled_attention.hpp; a uniform graph's hulls are nearly whole
                # rows, so their fill is the density), else edge by edge.
                # Records older than the masked kernel (688ccbd) ran every such graph edge by edge.
                nodes = base.get("nodes") or 1
                before = str(base.get("time") or "") < MASKED_TILED_SINCE
                masked = edges >= 64 * nodes and density >= 0.07 * math.sqrt(max(heads, 1))
                if before:
                    kernel = ("edgeattn's tiled kernel took only contiguous rows when this was measured: the graph "
                              "ran on its per-edge kernels or its unfused dense path")
                elif masked:
                    kernel = ("edgeattn's tiled kernel does the same over the rows' hulls with the non-edges masked "
                              "(a graph this full takes it)")
                else:
                    kernel = ("edgeattn ran this graph edge by edge (its rows are too short or their hulls too "
                              "empty for the masked tiled kernel)")
                text += (f". SDPA's boolean mask makes it compute all N² entries ({1 / max(density, 1e-9):.0f}× the "
                         f"useful work) at GEMM speed; {kernel}")
            return text
        return (f"density {density:.0%}: PyTorch's fused CPU attention kernel (flash-style: tiled GEMMs with an "
                f"online softmax, no [N, N] buffer) does the dense work at GEMM speed{own}")
    if (lib == "edgeattn-dense" or lib.startswith("torch")) and density >= 0.05:
        return (f"density {density:.0%}: a dense GEMM (BLAS, near the FMA peak) beats gathering rows per "
                "edge; past the crossover edgeattn's own dense path is the one to use")
    features = base.get("in_channels") or c.by_lib.get(lib, {}).get("features") or 0
    if c.group in ("layer", "train") and features >= 512:
        return (f"{features} input features: the input projection ([N, {features}] × [{features}, H·D]) is most of "
                "the work, a GEMM on both sides, so the attention kernel's speed matters little here")
    if (base.get("edges") or 0) < 50_000:
        return (f"tiny graph ({base.get('edges')} edges): fixed per-call costs (thread start-up, allocation) "
                "dominate both sides")
    gbps = base.get("achieved_gbps")
    if gbps:
        return f"edgeattn's forward moved {gbps:.1f} GB/s of modelled traffic here; not explained by the numbers alone"
    return "not explained by the numbers alone"


def limits_records(records: list[Record]) -> list[Record]:
    """The successful `edgeattn bench limits` records, in file order (the last is the latest run's)."""
    return [r for r in records if r.get("workload") == "limits" and r.get("status", "ok") == "ok"]


def machine_section(records: list[Record], latest: dict[str, Record], dgl_error: Path) -> list[str]:
    limits = limits_records(records)
    lim = limits[-1] if limits else {}
    out = ["### Machine and versions", ""]
    out.append(f"- CPU: {lim.get('cpu_model', '?')}, {lim.get('nproc', '?')} cores visible; every run used "
               f"{lim.get('threads', '?')} threads. Measured at the start of this run (`edgeattn bench limits`): "
               f"STREAM triad {lim.get('stream_triad_gbps', float('nan')):.1f} GB/s, FMA peak "
               f"{lim.get('fma_peak_gflops', float('nan')):.0f} GFLOP/s, random 256-byte gather "
               f"{lim.get('random_gather_gbps', float('nan')):.1f} GB/s ({lim.get('time', '?')}).")
    if lim.get("edgeattn_sha256"):
        out.append(f"- edgeattn binary of the latest invocation: `{os.path.relpath(lim.get('edgeattn_binary', ''), ROOT) if os.path.isabs(lim.get('edgeattn_binary', '')) else lim.get('edgeattn_binary')}`"
                   f", built {lim.get('edgeattn_binary_mtime')}, sha256 {lim['edgeattn_sha256'][:16]}….")
    if len(limits) > 1:
        streams = [r.get("stream_triad_gbps", float("nan")) for r in limits]
        out.append(f"- The records come from {len(limits)} invocations of the suite (resumed runs) between "
                   f"{min(r.get('time', '?') for r in limits)} and {max(r.get('time', '?') for r in limits)}; STREAM "
                   f"triad measured {min(streams):.1f}–{max(streams):.1f} GB/s across them. Each ratio divides the "
                   "latest record of each side, which may come from different invocations (each record has its "
                   "`time`).")
    versions: dict[str, set[str]] = defaultdict(set)
    venvs: dict[str, set[str]] = defaultdict(set)
    for r in latest.values():
        if r.get("library") in ("edgeattn", *PEER_LIBS) and r.get("group") in SUITE_GROUPS and record_version(r):
            versions[r["library"]].add(record_version(r))
            if r.get("venv"):
                venvs[r["library"]].add(r["venv"])
    names = {"edgeattn": "edgeattn", "graphblas": "GraphBLAS", "torch": "PyTorch (library `torch`)",
             "pyg": "PyG (library `pyg`)", "dgl": "DGL (library `dgl`)", "torch2": "PyTorch 2 (library `torch2`)",
             "pyg2": "PyG (library `pyg2`)", "dgl2": "DGL 2 (library `dgl2`)"}
    env_dir = {"old": "build/peers-venv", "torch2": "build/peers-torch2", "dgl2": "build/peers-dgl2"}
    for lib in ("edgeattn", *PEER_LIBS):
        if versions.get(lib):
            where = ", ".join(f"`{env_dir.get(v, v)}`" for v in sorted(venvs.get(lib, ())))
            out.append(f"- {names[lib]}: {', '.join(sorted(versions[lib]))}" + (f" in {where}" if where else ""))
    out.append("- Every column and row of the tables below names the version its figures come from (each raw record "
               "has `torch_version`, `torch_geometric_version` and `dgl_version`; records from before these fields "
               "carry them in `version`).")
    for name, what in (("dgl_error.txt", "DGL 1.x (library `dgl`)"), ("torch2_error.txt", "PyTorch 2 + PyG 2.8"),
                       ("dgl2_error.txt", "DGL 2.1 (library `dgl2`)"), ("pyglib_error.txt", "pyg-lib (PyG's sampler)")):
        f = dgl_error.parent / name
        if f.exists():
            out.append(f"- {what}: **not installed**; the error (`{f.relative_to(ROOT)}`):")
            out += ["", "```", f.read_text().strip()[-1200:], "```", ""]
    busy = [r for r in limits if r.get("busy_machine")]
    if busy:
        out.append("- **Measured on a busy machine**: " + "; ".join(
            f"`{r.get('suite_command', 'run_suite.py')}` at {r.get('time')} (1-minute load {r.get('load_avg_at_start', 0):.2f} "
            f"after waiting {r.get('quiet_wait_s', 0) / 60:.0f} min)" for r in busy) +
            ". Its records have `busy_machine: true`; the PyTorch-based peers suffer most from the contention.")
    waits = sorted((r for r in latest.values() if r.get("workload") == "omp-wait" and r.get("library") == "pyg"),
                   key=lambda r: r["key"])
    if waits:
        chosen = next((r.get("omp_wait_policy") for r in latest.values() if r.get("omp_wait_policy") and
                       r.get("group") in ("kernel", "dense", "layer", "train")), None)
        figs = ", ".join(f"{r['omp_wait_policy']} {r.get('forward_backward_ms', float('nan')):.1f} ms"
                         for r in waits if r.get("status") == "ok")
        out.append(f"- OpenMP wait policy: PyG's kernel (forward + backward) on `{waits[0]['key'].split('|')[2]}` "
                   f"with `OMP_WAIT_POLICY` = {figs}; every run used **{chosen or 'default'}** (spinning threads "
                   "stall when other processes share the cores).")
    for lib in ("pyg2", "dgl2"):
        w2 = sorted((r for r in latest.values() if r.get("workload") == "omp-wait" and r.get("library") == lib),
                    key=lambda r: r["key"])
        if w2:
            figs = ", ".join(f"{r['omp_wait_policy']} {r.get('forward_backward_ms', float('nan')):.1f} ms"
                             for r in w2 if r.get("status") == "ok")
            chosen = next((r.get("omp_wait_policy") for r in sorted(latest.values(), key=lambda r: r.get("time", ""))
                           if r.get("venv") == w2[0].get("venv") and r.get("group") in SUITE_GROUPS), None)
            out.append(f"- OpenMP wait policy in `{w2[0].get('venv')}`'s environment ({lib}'s kernel): {figs}; its runs "
                       f"used **{chosen or 'default'}**.")
    if lim.get("max_peer_edges"):
        out.append(f"- GraphBLAS, PyG and DGL kernels ran only on inputs of at most {lim['max_peer_edges']:,} edges "
                   "(`run_suite.py --max-peer-edges`); larger inputs (N = 16384 complete and causal) have edgeattn "
                   "and the dense paths only.")
    cal = sorted((r for r in latest.values() if r.get("workload") == "matmul"), key=lambda r: r["key"])
    if cal:
        chosen = next((r.get("openblas_coretype") for r in latest.values() if r.get("group") in
                       SUITE_GROUPS and r.get("library") in PEER_LIBS), None)
        figs = ", ".join(f"{r['openblas_coretype']} {r.get('gflops', 0):.0f}" for r in cal if r.get("status") == "ok")
        out.append(f"- OpenBLAS core type: PyTorch's 2048×2048 float32 `torch.mm` in GFLOP/s with "
                   f"`OPENBLAS_CORETYPE` = {figs}; every run (edgeattn's included) used the fastest, "
                   f"**{chosen or 'auto'}** (auto = OpenBLAS's own detection).")
    out.append("")
    return out


def target_lines(latest: dict[str, Record], cs_kernel: list[Config], cs_dense: list[Config],
                 cs_train: list[Config]) -> list[str]:
    """The issue's targets, each met / not met / not measured from the numbers."""
    def verdict(ok: bool | None) -> str:
        return "not measured" if ok is None else ("**met**" if ok else "**not met**")

    out = ["### Targets (issue 5; ratios from this run)", "", "| target | figures | verdict |", "| --- | --- | --- |"]
    big = next((c for c in cs_train if c.input_name == "rmat_1m_10m_f128"), None)
    if big:
        rp, rd = ratio(big.by_lib.get("pyg"), big.base, "seconds_per_epoch"), ratio(big.by_lib.get("dgl"), big.base,
                                                                                   "seconds_per_epoch")
        mem = ratio(big.base, big.by_lib.get("pyg"), "peak_rss_mb")
        fig = (f"PyG/edgeattn {rp:.2f}× " if rp else "PyG: no result ") + (f"DGL/edgeattn {rd:.2f}× " if rd else
                                                                          "DGL: no result ")
        fig += f"edgeattn/PyG peak memory {mem:.2f}" if mem else ""
        out.append(f"| 1M-node/10M-edge GAT epoch (128 features, 8×8 heads): ≥ 10× PyG, ≥ 3× DGL, ≤ 1/10 PyG's "
                   f"memory | {fig} | PyG {verdict(None if rp is None else rp >= 10)}, DGL "
                   f"{verdict(None if rd is None else rd >= 3)}, memory {verdict(None if mem is None else mem <= 0.1)} |")
    else:
        out.append("| 1M-node/10M-edge GAT epoch: ≥ 10× PyG, ≥ 3× DGL, ≤ 1/10 memory | — | not measured |")
    cora = next((c for c in cs_train if c.input_name == "cora"), None)
    rc = ratio(cora.by_lib.get("pyg"), cora.base, "seconds_per_epoch") if cora else None
    out.append(f"| Cora GAT epoch ≥ 20× faster than PyG | {f'PyG/edgeattn {rc:.2f}×' if rc else '—'} | "
               f"{verdict(None if rc is None else rc >= 20)} |")
    comp = next((c for c in cs_dense if c.input_name == "complete_4096_f64"), None)
    if comp:
        best = min((r for lib, r in comp.by_lib.items() if lib.startswith("edgeattn") and r.get("status") == "ok"),
                   key=lambda r: r.get("forward_ms", math.inf), default=None)
        rt = ratio(comp.by_lib.get("torch"), best, "forward_ms")
        growth = complete_memory_growth(cs_dense)
        speed = f"PyTorch/edgeattn ({LABELS[best['library']]}) {rt:.2f}×" if rt and best else "—"
        out.append(f"| Complete graph N=4096, d=64, H=1: ≥ 2× PyTorch dense, memory not N² | {speed}; {growth[0]} | "
                   f"speed {verdict(None if rt is None else rt >= 2)}, memory {verdict(growth[1])} |")
    else:
        out.append("| Complete graph N=4096, d=64: ≥ 2× PyTorch dense | — | not measured |")
    gb = [c for c in cs_kernel if c.input_name in ("uniform_10m_f512", "rmat_10m_f512") and "dot" in c.params]
    if gb:
        figs, oks = [], []
        for c in gb:
            q = ratio(c.by_lib.get("graphblas"), c.base, "forward_ms")
            figs.append(f"{c.input_name}: {f'{q:.2f}×' if q else 'no result'}")
            oks.append(None if q is None else q >= 5)
        ok = None if any(o is None for o in oks) else all(oks)
        out.append(f"| SDDMM + softmax + SpMM, 1M nodes/10M edges, d=64: ≥ 5× GraphBLAS | GraphBLAS/edgeattn "
                   f"{'; '.join(figs)} | {verdict(ok)} |")
    else:
        out.append("| SDDMM + softmax + SpMM, 1M/10M, d=64: ≥ 5× GraphBLAS | — | not measured |")
    out.append("")
    return out


def complete_memory_growth(cs_dense: list[Config]) -> tuple[str, bool | None]:
    """edgeattn's peak memory on complete graphs over N (implicit pattern: no N² edge list)."""
    pts = []
    for c in cs_dense:
        r = c.by_lib.get("edgeattn-pattern")
        if c.input_name.startswith("complete_") and r and r.get("status") == "ok":
            pts.append((int(r["nodes"]), float(r["peak_rss_mb"])))
    pts.sort()
    if len(pts) < 2:
        return "edgeattn peak memory over N: fewer than two complete-graph sizes", None
    (n0, m0), (n1, m1) = pts[0], pts[-1]
    n2_mb = 4.0 * (n1 * n1 - n0 * n0) / 2**20  # one float32 N×N matrix more
    text = "edgeattn (implicit pattern) peak memory " + ", ".join(f"N={n}: {m:.0f} MB" for n, m in pts)
    return text + f" (one N×N float32 matrix would add {n2_mb:.0f} MB)", (m1 - m0) < 0.25 * n2_mb


def plot_crossover(cs_dense: list[Config], path: Path) -> bool:
    """Forward time vs density, one panel per N, one line per library."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_n: dict[int, list[Config]] = defaultdict(list)
    for c in cs_dense:
        r = c.base or next(iter(c.by_lib.values()))
        if r.get("nodes"):
            by_n[int(r["nodes"])].append(c)
    if not by_n:
        return False
    fig, axes = plt.subplots(1, len(by_n), figsize=(5 * len(by_n), 4.4), squeeze=False)
    for ax, (n, cs) in zip(axes[0], sorted(by_n.items())):
        for lib in ("edgeattn", "edgeattn-dense", "edgeattn-pattern", "torch", "torch2-sdpa", "graphblas", "pyg", "dgl"):
            pts = []
            for c in cs:
                r = c.by_lib.get(lib)
                if r and r.get("status") == "ok" and r.get("forward_ms") and r.get("edges"):
                    pts.append((r["edges"] / (n * n), r["forward_ms"], c.input_name.split("_")[0]))
            if not pts:
                continue
            pts.sort()
            color = COLORS[lib]
            sweep = [p for p in pts if p[2] in ("uniform", "complete")]  # the density sweep: a line
            if sweep:
                ax.plot([p[0] for p in sweep], [p[1] for p in sweep], marker="o", color=color, label=LABELS[lib])
            for x, y, kind in pts:  # causal and window patterns: marked points
                if kind not in ("uniform", "complete"):
                    ax.scatter([x], [y], marker="s" if kind == "causal" else "^", color=color,
                               label=None if sweep else LABELS[lib])
                    ax.annotate(kind, (x, y), fontsize=6, color=color)
        ax.set(xscale="log", yscale="log", xlabel="density (edges / N²)", ylabel="forward ms",
               title=f"N = {n}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Forward time vs density, H = 1, d = 64, dot\n(lines: uniform to complete; squares: causal; "
                 "triangles: sliding window)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_edges(cs_kernel: list[Config], path: Path) -> bool:
    """Forward time vs edges for d = 64 dot, per library and graph family."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), squeeze=False)
    drew = False
    for ax, score in zip(axes[0], ("dot", "additive")):
        for lib in ("edgeattn", "graphblas", "pyg", "dgl", "torch"):
            for family, style in (("uniform", "-"), ("rmat", "--")):
                pts = []
                for c in cs_kernel:
                    r = c.by_lib.get(lib)
                    if (c.input_name.startswith(family) and "d64" in c.params and score in c.params and r
                            and r.get("status") == "ok" and r.get("forward_ms")):
                        pts.append((r["edges"], r["forward_ms"]))
                if pts:
                    pts.sort()
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", color=COLORS[lib],
                            label=f"{LABELS[lib]} ({family})")
                    drew = True
        ax.set(xscale="log", yscale="log", xlabel="edges", ylabel="forward ms", title=f"H = 8, d = 64, {score}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return drew


def busy_note(recs: Iterable[Record]) -> list[str]:
    """A warning line when any of these records was measured on a busy machine."""
    busy = [r for r in recs if r.get("busy_machine")]
    if not busy:
        return []
    return [f"**{len(busy)} of these runs were measured on a busy machine** (the 1-minute load average never fell "
            "below the threshold before the run: `busy_machine` in their records).", ""]


def suite_commands(recs: Iterable[Record]) -> str:
    cmds = sorted({r.get("suite_command") for r in recs if r.get("suite_command")})
    return "; ".join(f"`{c}`" for c in cmds) if cmds else "`run_suite.py` (an older invocation; see each record's command)"


def sdpa_section(cs: list[Config], records: list[Record]) -> list[str]:
    """PyTorch 2's scaled_dot_product_attention against edgeattn's fastest path, per input and H."""
    recs = [r for c in cs for r in c.by_lib.values()]
    sd = [r for r in recs if lib_key(r) == "torch2-sdpa"]
    out = ["### PyTorch 2 `scaled_dot_product_attention` vs edgeattn (d = 64, dot, issue 18)", "",
           f"PyTorch {' / '.join(sorted({record_version(r) or '?' for r in sd})) or '?'} "
           "(`build/peers-torch2`): the complete graph runs SDPA without a mask, the causal graph with "
           "`is_causal=True`, sliding windows and uniform random graphs with a boolean `attn_mask` [N, N] (True on "
           "the edges); q = k = v = the input's features as [1, H, N, d]. edgeattn: its fastest path of this "
           "configuration (sparse over the explicit edges, the implicit pattern without an edge list, or its dense "
           "path; the path is named). Ratio = SDPA / edgeattn: **below 1 SDPA is faster, edgeattn loses**. "
           f"Data: {suite_commands(recs)}; each run's own command is its record's `command` in the raw file.", ""]
    out += busy_note(recs)
    out += ["| input | H | SDPA mask | edgeattn fwd ms (path) | SDPA fwd ms | SDPA / edgeattn | edgeattn fwd+bwd ms "
            "(path) | SDPA fwd+bwd ms | SDPA / edgeattn | edgeattn peak MB | SDPA peak MB |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    lose: list[str] = []
    short = {"edgeattn": "sparse", "edgeattn-pattern": "pattern", "edgeattn-dense": "dense"}
    for c in sorted(cs, key=lambda c: (int(c.params[0][1:]), c.sort_key())):
        r = c.by_lib.get("torch2-sdpa")
        busy = " (busy machine)" if any(x.get("busy_machine") for x in c.by_lib.values()) else ""
        row = [size_text(c) + busy, c.params[0][1:], (r or {}).get("sdpa_mask") or (r or {}).get("meta_sdpa_mask") or ""]
        peak_ea = None
        for f in ("forward_ms", "forward_backward_ms"):
            best = best_edgeattn(c, f)
            if best is not None:
                row.append(f"{fmt_ms(best[f])} ({short.get(lib_key(best), '?')})")
                peak_ea = peak_ea or best.get("peak_rss_mb")
            else:
                row.append("—")
            if r is None:
                row += ["", ""]
                continue
            if r.get("status") != "ok":
                row += [f"{r.get('status')}: {' '.join(str(r.get('message', '')).split())[:90]}", ""]
                continue
            q = ratio(r, best, f)
            row += [fmt_ms(r.get(f)), f"**{q:.2f}**" if q is not None and q < 1 else (f"{q:.2f}" if q else "")]
            if q is not None and q < 1:
                lose.append(f"{c.input_name} H={c.params[0][1:]} {'forward' if f == 'forward_ms' else 'forward+backward'}: "
                            f"SDPA {fmt_ms(r[f])} ms vs edgeattn {fmt_ms(best[f])} ms ({short.get(lib_key(best))}), "
                            f"edgeattn {1 / q:.2f}× slower")
        row += [f"{peak_ea:.0f}" if peak_ea else "—",
                f"{r['peak_rss_mb']:.0f}" if r and r.get("peak_rss_mb") else "—"]
        out.append("| " + " | ".join(str(x) for x in row) + " |")
    out.append("")
    if lose:
        out += ["**edgeattn loses to PyTorch SDPA** in " + f"{len(lose)} of these measurements:", ""]
        out += [f"- {x}" for x in lose]
    else:
        out.append("edgeattn was faster than PyTorch SDPA in every configuration that both completed.")
    out += ["", "Peak memory is each process's `ru_maxrss`; the PyTorch 2 process carries about 700 MB of "
            "interpreter and libraries before any work (its `load_rss_mb`).", ""]
    return out


def minibatch_section(cm: list[Config]) -> list[str]:
    """Sampled mini-batch training: seconds per epoch, accuracy and memory (issue 23)."""
    recs = [r for c in cm for r in c.by_lib.values()]
    out = ["### Sampled mini-batch training (issue 23)", "",
           "A products-like stochastic-block-model graph written by `bench/peers/sbm_input.py` (edgeattn's own SBM "
           "generator, include/edgeattn/data/synthetic.hpp: 47 classes, 100 features, mean degree 50 with 80 % of the "
           "edges inside a class, 8 % of the nodes for training, the rest validation and test). The same 3-layer GAT "
           "everywhere: dropout → GATConv(8 heads × 8, ELU) → GATConv(8 × 8, ELU) → GATConv(classes, 1 head), "
           "feature and attention dropout 0.2, Adam lr 0.01, weight decay 5e-4, batches of 1024 training nodes "
           "with 15, 10, 5 neighbours sampled at hops 1 (the seeds), 2, 3 without replacement, a self-loop per "
           "destination in every block. edgeattn: `edgeattn train --batch-size 1024 --fanout 15,10,5`; DGL: "
           "`dgl.dataloading.NeighborSampler([5, 10, 15])` (DGL lists fan-outs input layer first) + `DataLoader` "
           "(no worker processes) + `dgl.nn.GATConv`; PyG: `NeighborLoader(num_neighbors=[15, 10, 5])` + `GATConv`. "
           "Seconds per epoch: the mean over the timed epochs, sampling included, no warm-up for anyone; "
           "test accuracy: a full-graph forward after the last epoch; peak memory: the process's `ru_maxrss`. "
           f"Data: {suite_commands(recs)}.", ""]
    out += busy_note(recs)
    out += ["| input | epochs | library | s / epoch | peer / edgeattn | steps / epoch | peak MB | test accuracy |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c in cm:
        for lib in sorted(c.by_lib, key=lambda x: (x != "edgeattn", x)):
            r = c.by_lib[lib]
            name = label(lib, [r])
            if r.get("status") != "ok":
                msg = " ".join(str(r.get("message", "")).split())[:300].replace("|", "\\|")
                out.append(f"| {size_text(c)} | {c.params[-1][1:]} | {name} | {r.get('status')}: {msg} | | | | |")
                continue
            if lib.startswith("edgeattn-"):  # a user's option of edgeattn: each peer's time over its time
                qs = [(other, ratio(c.by_lib[other], r, "seconds_per_epoch"))
                      for other in sorted(c.by_lib) if not other.startswith("edgeattn")]
                q_text = "; ".join(f"{label(o, [c.by_lib[o]])} / this {q:.2f}" for o, q in qs if q)
            else:
                q = ratio(r, c.base, "seconds_per_epoch") if lib != "edgeattn" else None
                q_text = f"{q:.2f}" if q else ""
            acc = r.get("test_accuracy")
            busy = " (busy machine)" if r.get("busy_machine") else ""
            out.append(f"| {size_text(c)} | {c.params[-1][1:]} | {name}{busy} | {r['seconds_per_epoch']:.3g} | "
                       f"{q_text} | {r.get('steps_per_epoch', '')} | {r.get('peak_rss_mb', 0):.0f} | "
                       f"{f'{acc:.3f}' if acc is not None else ''} |")
    accs = [r.get("test_accuracy") for r in recs if r.get("status") == "ok" and r.get("test_accuracy") is not None]
    if len(accs) > 1 and min(accs) >= 0.99:
        out += ["", f"Every library reached a test accuracy of at least {min(accs):.5f}: at this size the task is easy (a node has "
                "about 40 same-class neighbours), so the accuracy column only checks that each trains the same model "
                "correctly; the comparison is time and memory."]
    out += ["", "Commands of these runs:", ""]
    for c in cm:
        for lib, r in sorted(c.by_lib.items()):
            out.append(f"- {label(lib, [r])}: `{r.get('command', '')}`")
    out.append("")
    return out


# Per measure of a group: (record field or None for the later epochs, the measure's name, its unit).
ROUND_MEASURES = {"train": (("seconds_per_epoch", "s / epoch", "s"), (None, "s / epoch after the first", "s")),
                  "minibatch": (("seconds_per_epoch", "s / epoch", "s"),)}
KERNEL_MEASURES = (("forward_ms", "forward", "ms"), ("forward_backward_ms", "forward + backward", "ms"))


def round_value(r: Record, field: str | None) -> float | None:
    """A measure of one ok record: the field, or (None) the mean of the epochs after the first."""
    if r.get("status") != "ok":
        return None
    v = later_epochs(r) if field is None else r.get(field)
    return float(v) if v else None


def round_series(records: list[Record]) -> dict[tuple[str, str, str, tuple[str, ...]], dict[str, dict[int, Record]]]:
    """The records of --rounds invocations: (suite_run, group, input, params) -> library column ->
    round -> record. Keys are library|workload|input|params|T (run_suite.py's Job.key)."""
    out: dict[tuple[str, str, str, tuple[str, ...]], dict[str, dict[int, Record]]] = defaultdict(lambda: defaultdict(dict))
    for r in records:
        if (r.get("rounds") or 1) <= 1 or "round" not in r or r.get("group") not in SUITE_GROUPS:
            continue
        parts = r["key"].split("|")
        out[(r.get("suite_run", ""), r["group"], parts[2], tuple(parts[3:-1]))][lib_key(r)][int(r["round"])] = r
    return out


def round_rows(series: dict[str, dict[int, Record]], group: str) -> list[tuple[str, str, str, list[float | None]]]:
    """(peer column, edgeattn column, measure, ratio per round) for one configuration: every peer
    against every edgeattn column (its default and each option), paired within a round."""
    rounds = sorted({n for by_round in series.values() for n in by_round})
    measures = ROUND_MEASURES.get(group, KERNEL_MEASURES)
    rows = []
    for ea in sorted((c for c in series if c.startswith("edgeattn")), key=lambda c: (c != "edgeattn", c)):
        for peer in sorted(c for c in series if not c.startswith("edgeattn")):
            for field, name, _unit in measures:
                qs = []
                for n in rounds:
                    a, b = series[peer].get(n), series[ea].get(n)
                    va = round_value(a, field) if a else None
                    vb = round_value(b, field) if b else None
                    qs.append(va / vb if va and vb else None)
                if any(q is not None for q in qs):
                    rows.append((peer, ea, name, qs))
    return rows


def rounds_section(records: list[Record]) -> list[str]:
    """The ratios of --rounds invocations round by round, with median and range: the latest
    invocation of each configuration (group, input, parameters)."""
    series = round_series(records)
    if not series:
        return []
    latest_run: dict[tuple[str, str, tuple[str, ...]], str] = {}
    for run, group, name, params in series:
        k = (group, name, params)
        latest_run[k] = max(latest_run.get(k, ""), run)
    out = ["### Ratios round by round", "",
           "Runs of `run_suite.py --rounds N`: every job ran N times, round-robin, so that the libraries' runs "
           "interleave in time. Each ratio is a peer's run over edgeattn's run of the same round (above 1 "
           "edgeattn is faster); the median and the range are over the rounds. Data: "
           f"{suite_commands(r for r in records if r.get('rounds', 1) > 1)}.", ""]
    out += ["| group | input | parameters | peer | against | measure | per round | median | range |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (group, name, params), run in sorted(latest_run.items(), key=lambda kv: (SUITE_GROUPS.index(kv[0][0]), kv[0])):
        by_lib = series[(run, group, name, params)]
        for peer, ea, measure, qs in round_rows(by_lib, group):
            got = [q for q in qs if q is not None]
            per = ", ".join(f"{q:.2f}" if q is not None else "—" for q in qs)
            peer_recs = list(by_lib[peer].values())
            out.append(f"| {group} | {name} | {' '.join(params)} | {label(peer, peer_recs)} | {label(ea)} | {measure} | "
                       f"{per} | **{statistics.median(got):.2f}** | {min(got):.2f}–{max(got):.2f} |")
    out.append("")
    return out


def build_section(raw: Path, plot_dir: Path, suffix: str, results: Path) -> str:
    records, latest = load(raw)
    ck, cd = configs(latest, "kernel"), configs(latest, "dense")
    cl, ct = configs(latest, "layer"), configs(latest, "train")
    cs_sdpa, cm = configs(latest, "sdpa"), configs(latest, "minibatch")
    rel = lambda p: os.path.relpath(p, results.parent)  # noqa: E731
    quick = any(r.get("quick") for r in records if r.get("workload") == "limits")
    out = [BEGIN, "## Peers: PyTorch, PyTorch Geometric, DGL and GraphBLAS (issues 5, 18, 23)", ""]
    if quick:
        out += ["**Quick mode** (small sizes, development only; not the published comparison).", ""]
    out += ["```sh", "bench/peers/setup.sh        # peers into build/peers-venv, build/peers-torch2, build/peers-dgl2",
            "cmake --build build/release --target edgeattn_tool",
            f"build/peers-venv/bin/python bench/peers/run_suite.py{' --quick' if quick else ''}   # then this report",
            f"build/peers-venv/bin/python bench/peers/run_suite.py --only sdpa,minibatch{' --quick' if quick else ''}"
            "   # PyTorch 2 SDPA, sampled epochs",
            f"build/peers-venv/bin/python bench/peers/report.py --raw {os.path.relpath(raw, ROOT)}"
            f"{' --results ' + os.path.relpath(results, ROOT) + ' --plot-suffix=' + suffix if suffix else ''}",
            "```", "",
            f"Raw records (one JSON object per run, with its command): `{os.path.relpath(raw, ROOT)}`. Times are "
            "medians of repeated runs after a warm-up, in ms; forward runs without autograd, forward + backward "
            "computes all input gradients. Ratios are peer / edgeattn: above 1 edgeattn is faster. Peak memory is "
            "each process's own `ru_maxrss` (it includes the interpreter and PyTorch, about 250 MB with PyTorch 1.13 and "
            "600–800 MB in the PyTorch 2 environments, and the loaded input). All libraries read the same `.npz` "
            "written by `edgeattn bench write-inputs` (the minibatch group's by `bench/peers/sbm_input.py`). PyTorch dense attention masks with -inf off the graph and materialises [H, N, N].", ""]
    out += machine_section(records, latest, ROOT / "build/peers/dgl_error.txt")
    rounds = sorted({int(r["rounds"]) for r in latest.values() if (r.get("rounds") or 1) > 1})
    if rounds:
        out += [f"Some of the latest records come from `run_suite.py --rounds` invocations ({', '.join(map(str, rounds))} "
                "rounds): the tables below show each job's last round; \"Ratios round by round\" at the end gives "
                "every round's ratio with the median and range.", ""]
    out += target_lines(latest, ck, cd, ct)

    dense_keys = {(c.input_name, c.params) for c in cd}
    lost = losses(ck + cd + [c for c in cs_sdpa if (c.input_name, c.params) not in dense_keys],
                  ["forward_ms", "forward_backward_ms"]) + losses(cl, ["forward_ms", "forward_backward_ms"]) \
        + losses(ct + cm, ["seconds_per_epoch"])
    out += ["### Where edgeattn loses", "",
            "Every configuration where a peer beat edgeattn's fastest path (sparse, dense or implicit pattern):", ""]
    if lost:
        out += ["| workload | input | parameters | faster library | measure | peer / edgeattn | edgeattn path | why |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        limits = limits_records(records)
        fma_peak = limits[-1].get("fma_peak_gflops") if limits else None
        for c, lib, f, q, path in lost:
            out.append(f"| {c.group} | {c.input_name} | {' '.join(c.params)} | {label(lib, c.by_lib.values())} | {f} | "
                       f"{q:.2f} | {path} | {why(c, lib, f, fma_peak)} |")
    else:
        out.append("Nowhere in this run: every peer result that completed was slower than edgeattn.")
    out.append("")
    cross = crossovers(ck + cd, "forward_ms")
    if cross:
        out += ["Where edgeattn's own dense path beat its sparse path (forward; the tables' ratios are against "
                "the sparse path): " + "; ".join(f"{c.input_name} {' '.join(c.params)} ({q:.2f}×)" for c, q in cross)
                + ".", ""]

    fields = [("forward_ms", "Forward, ms (peer / edgeattn)"), ("forward_backward_ms", "Forward + backward, ms"),
              ("peak_rss_mb", "Peak resident memory, MB")]
    if ck:
        out += ["### Kernel: attention over the graph (H = 8; q = k = v = the features)", ""]
        out += timing_tables(ck, list(KERNEL_LIBS), fields)
    if cd:
        out += ["### Dense vs sparse (H = 1, d = 64, dot)", "",
                "Uniform graphs at densities 0.1 %–100 % (complete), causal and sliding-window patterns. "
                "'edgeattn (implicit pattern)' runs the same pattern without an explicit edge list.", ""]
        out += timing_tables(cd, list(KERNEL_LIBS), fields)
        png = plot_dir / f"dense_vs_sparse{suffix}.png"
        if plot_crossover(cd, png):
            out += [f"![dense vs sparse crossover]({rel(png)})", "",
                    f"Figure: `build/peers-venv/bin/python bench/peers/report.py --raw {os.path.relpath(raw, ROOT)}` "
                    f"(data: `run_suite.py --only dense{' --quick' if quick else ''}`).", ""]
    if ck:
        png = plot_dir / f"time_vs_edges{suffix}.png"
        if plot_edges(ck, png):
            out += [f"![time vs edges]({rel(png)})", "",
                    f"Figure: `build/peers-venv/bin/python bench/peers/report.py --raw {os.path.relpath(raw, ROOT)}` "
                    f"(data: `run_suite.py --only kernel{' --quick' if quick else ''}`).", ""]
    if cl:
        out += ["### Layer: GATConv, GATv2Conv, TransformerConv (8 heads × 8, concatenated, self-loops added)", ""]
        out += timing_tables(cl, ["edgeattn", "pyg", "pyg2", "dgl", "dgl2"], fields)
    if cs_sdpa:
        out += sdpa_section(cs_sdpa, records)
    if ct:
        out += ["### End to end: the GAT paper's 2-layer model (8 × 8 heads, dropout 0.6, Adam)", "",
                "s / epoch is the mean over every timed epoch (the protocol of the targets); \"later\" is the "
                "mean over the epochs after the first one each library trained (edgeattn's first epoch also "
                "touches its step's memory for the first time, which its tensor cache then reuses), blank "
                "for runs recorded before per-epoch times were kept.", "",
                "| input | epochs | library | s / epoch | peer / edgeattn | later s / epoch | peer / edgeattn, later "
                "| peak MB | test accuracy |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for c in ct:
            for lib in ("edgeattn", "edgeattn-none", "edgeattn-degree", "pyg", "dgl", "pyg2", "dgl2"):
                r = c.by_lib.get(lib)
                if not r:
                    continue
                if r.get("status") != "ok":
                    out.append(f"| {size_text(c)} | {c.params[-1][1:]} | {label(lib, [r])} | {r.get('status')} | | | | | |")
                    continue
                q = ratio(r, c.base, "seconds_per_epoch") if not lib.startswith("edgeattn") else None
                later, base_later = later_epochs(r), later_epochs(c.base)
                q_later = later / base_later if later and base_later and not lib.startswith("edgeattn") else None
                acc = r.get("test_accuracy")
                busy = " (busy machine)" if r.get("busy_machine") else ""
                out.append(f"| {size_text(c)} | {c.params[-1][1:]} | {label(lib, [r])}{busy} | {r['seconds_per_epoch']:.4g} | "
                           f"{f'{q:.2f}' if q else ''} | {f'{later:.4g}' if later else ''} | "
                           f"{f'{q_later:.2f}' if q_later else ''} | {r.get('peak_rss_mb', 0):.0f} | "
                           f"{f'{acc:.3f}' if acc is not None else ''} |")
        out.append("")
        for c in ct:  # the default's renumbering, against the input's own order
            base, own_order = c.base, input_order_run(c)
            if not base or base.get("status") != "ok" or base.get("reorder") in (None, "none") or not own_order:
                continue
            own = ratio(base, own_order, "seconds_per_epoch")
            peers = [(lib, ratio(c.by_lib.get(lib), own_order, "seconds_per_epoch"))
                     for lib in ("pyg", "dgl", "pyg2", "dgl2")]
            later, own_later = later_epochs(base), later_epochs(own_order)
            out.append(f"{c.input_name}: the default `--reorder auto` renumbered the nodes by degree groups "
                       f"({base['reorder']}: {base.get('reorder_reason', 'advise_ordering')}) in "
                       f"{base.get('reorder_seconds', float('nan')):.2f} s before the first epoch (not in the "
                       f"epoch times, as no library's graph construction is); its epoch took "
                       f"{base['seconds_per_epoch']:.4g} s"
                       + (f", {own:.2f}× the time with `--reorder none` ({own_order['seconds_per_epoch']:.4g} s)"
                          if own else "")
                       + (f" (epochs after the first: {later:.4g} s, {later / own_later:.2f}×)"
                          if later and own_later else "")
                       + "".join(f"; {label(lib, [c.by_lib[lib]])} / `--reorder none` {q:.2f}×" for lib, q in peers if q)
                       + ".")
            out.append("")
        for c in ct:  # the peers against the renumbered run too
            deg = c.by_lib.get("edgeattn-degree")
            own_order = input_order_run(c)
            if not deg or deg.get("status") != "ok":
                continue
            own = ratio(deg, own_order, "seconds_per_epoch") if own_order else None
            peers = [(lib, ratio(c.by_lib.get(lib), deg, "seconds_per_epoch")) for lib in ("pyg", "dgl", "pyg2", "dgl2")]
            later, base_later = later_epochs(deg), (later_epochs(own_order) if own_order else None)
            out.append(f"{c.input_name}: with `--reorder degree` (nodes renumbered hubs first before training) "
                       f"edgeattn's epoch took {deg['seconds_per_epoch']:.4g} s"
                       + (f", {own:.2f}× the time in the input's own order" if own else "")
                       + (f" (epochs after the first: {later:.4g} s, {later / base_later:.2f}×)"
                          if later and base_later else "")
                       + "".join(f"; {label(lib, [c.by_lib[lib]])} / this {q:.2f}×" for lib, q in peers if q)
                       + ". The peers ran in the input's order (DGL has `dgl.reorder_graph`, not used by its GATConv "
                       "example).")
            out.append("")
        newer = sorted({r.get("suite_command") for c in ct for r in c.by_lib.values()
                        if r.get("library") in ("pyg2", "dgl2") and r.get("suite_command")})
        if newer:
            out += ["PyG 2.8 / DGL 2.1 rows (and the edgeattn rows measured with them): " +
                    "; ".join(f"`{x}`" for x in newer) + ". Each run's own command is its record's `command`.", ""]
    if cm:
        out += minibatch_section(cm)
    out += rounds_section(records)
    bad = [r for r in latest.values() if r.get("status", "ok") != "ok" and r.get("group") in
           ("kernel", "dense", "layer", "train", "sdpa", "minibatch", "inputs")]
    if bad:
        out += ["### Runs without a number", "", "| run | status | message |", "| --- | --- | --- |"]
        for r in sorted(bad, key=lambda r: r["key"]):
            msg = " ".join(str(r.get("message", "")).split())[:200].replace("|", "\\|")
            key = r["key"].replace("|", "\\|")
            out.append(f"| `{key}` | {r['status']} | {msg} |")
        out.append("")
    out.append(END)
    return "\n".join(out) + "\n"


def replace_section(results: Path, section: str) -> None:
    """Puts the section between the markers (appended when absent); atomic replace."""
    text = results.read_text() if results.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        new = head + section + tail
    else:
        new = text + ("\n" if text and not text.endswith("\n") else "") + ("\n" if text else "") + section
    results.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=results.parent, prefix=results.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(new)
    # mkstemp creates the file 0600; give the report the mode of the file it replaces (or the
    # umask's default for a new one), as a plain write would.
    if results.exists():
        os.chmod(tmp, results.stat().st_mode & 0o777)
    else:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, results)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    plot_dir = a.plot_dir or a.raw.parent
    plot_dir.mkdir(parents=True, exist_ok=True)
    section = build_section(a.raw, plot_dir, a.plot_suffix, a.results)
    replace_section(a.results, section)
    print(f"report: wrote the peers section of {a.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
