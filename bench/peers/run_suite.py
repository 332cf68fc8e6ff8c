#!/usr/bin/env python3
"""The peer benchmark suite: edgeattn against PyTorch, PyTorch Geometric, DGL and GraphBLAS.

One command (after bench/peers/setup.sh and a release build of the `edgeattn` tool):

    build/peers-venv/bin/python bench/peers/run_suite.py            # full matrix
    build/peers-venv/bin/python bench/peers/run_suite.py --quick    # small sizes, ~5 minutes
    build/peers-venv/bin/python bench/peers/run_suite.py --only kernel,train --dry-run
    build/peers-venv/bin/python bench/peers/run_suite.py --only sdpa,minibatch   # PyTorch 2 SDPA, sampled epochs

The peers run in three virtual environments (bench/peers/setup.sh): build/peers-venv (Debian's
PyTorch 1.13 with PyG 2.6.1 and DGL 1.1.2: libraries torch, pyg, dgl), build/peers-torch2 (the
newest PyTorch 2.x with PyG 2.8.1: torch2, pyg2) and build/peers-dgl2 (PyTorch 2.2.1 with DGL
2.1.0: dgl2). Every peer record carries the exact torch, torch_geometric and dgl versions it ran
with. Before the measurements of a full-size run the suite waits (up to --quiet-wait minutes) for
the 1-minute load average to drop below --quiet-load, and marks the records `busy_machine` when
it never did.

It writes the inputs with `edgeattn bench write-inputs` into build/peers/inputs/ (reused when
present), measures `edgeattn bench limits`, picks the fastest OPENBLAS_CORETYPE for PyTorch's
matmul, runs every workload of the selected groups for every library in its own process (same
thread count, a timeout and an address-space limit each), appends one JSON line per run to
bench/results/peers/raw.jsonl (quick mode: raw-quick.jsonl), and finally runs report.py (quick
mode: into bench/results/peers/quick.md, so development numbers stay out of bench/RESULTS.md).

Resumable: a run whose key (library, workload, input, sizes, threads) is already in the raw file
is skipped unless --rerun. Failures, timeouts and out-of-memory runs are records, not crashes.

Rounds: on a shared host one library's run can fall in a slow minute and the next library's in a
fast one, so a single run of each can misstate their ratio by more than the effect measured.
`--rounds N` runs the selected jobs N times, round-robin (every job once, then every job again),
so that the runs of the libraries interleave in time; each record carries its round, and the
report gives every ratio round by round with the median and the range:

    build/peers-venv/bin/python bench/peers/run_suite.py --only train,minibatch --libraries edgeattn,dgl2 --rounds 3
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parents[2]
GROUPS = ("kernel", "dense", "layer", "train", "sdpa", "minibatch")
# Peer libraries → the virtual environment (interpreter) they run in and peer.py's --library.
PEER_ENV = {"torch": "old", "pyg": "old", "dgl": "old", "torch2": "torch2", "pyg2": "torch2", "dgl2": "dgl2"}
PEER_BASE = {"torch": "torch", "pyg": "pyg", "dgl": "dgl", "torch2": "torch", "pyg2": "pyg", "dgl2": "dgl"}
# The error file setup.sh leaves when an environment (or one library of it) did not install.
ENV_ERROR = {"dgl": "dgl_error.txt", "torch2": "torch2_error.txt", "pyg2": "torch2_error.txt",
             "dgl2": "dgl2_error.txt"}
ALL_LIBRARIES = "edgeattn,graphblas,torch,pyg,dgl,torch2,pyg2,dgl2"
CORETYPES = ("auto", "Haswell", "SkylakeX", "Cooperlake", "Zen")


@dataclass(frozen=True)
class InputSpec:
    """One input file: `edgeattn bench write-inputs` arguments."""

    name: str
    graph: str  # uniform | rmat | cora | complete | causal | window:W | sbm (bench/peers/sbm_input.py)
    nodes: int = 0
    edges: int = 0
    features: int = 64
    heads: int = 8
    classes: int = 8

    def write_command(self, edgeattn: Path, out: Path, threads: int) -> list[str]:
        """The command writing this input: `edgeattn bench write-inputs`, or sbm_input.py for sbm."""
        if self.graph == "sbm":  # edgeattn's stochastic block model through its Python module
            return [sys.executable, str(ROOT / "bench/peers/sbm_input.py"), "--out", str(out), "--nodes",
                    str(self.nodes), "--features", str(self.features), "--classes", str(self.classes)]
        return [str(edgeattn), *self.write_args(out), "--threads", str(threads)]

    def write_args(self, out: Path) -> list[str]:
        """The write-inputs command-line arguments (cora takes no sizes)."""
        args = ["bench", "write-inputs", "--out", str(out), "--graph", self.graph, "--heads", str(self.heads)]
        if self.graph != "cora":
            args += ["--nodes", str(self.nodes), "--features", str(self.features), "--classes", str(self.classes)]
            if self.graph in ("uniform", "rmat"):
                args += ["--edges", str(self.edges)]
        return args


@dataclass
class Job:
    """One measurement: a command whose last stdout line is one JSON object."""

    key: str
    group: str
    library: str
    workload: str
    command: list[str]
    timeout_s: float
    estimate_s: float
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Settings:
    """What the command line chose."""

    quick: bool
    threads: int
    groups: tuple[str, ...]
    edgeattn: Path
    python: Path
    python_torch2: Path
    python_dgl2: Path
    inputs_dir: Path
    raw: Path
    results: Path
    rerun: bool
    dry_run: bool
    timeout_scale: float
    mem_limit_gb: float
    libraries: tuple[str, ...]
    max_peer_edges: int
    targets: bool = False
    quiet_load: float = 0.8
    quiet_wait_min: float = 20.0
    argv: tuple[str, ...] = ()
    rerun_after: str = ""
    rounds: int = 1

    def stale(self, rec: dict[str, Any] | None) -> bool:
        """True when a job must run: no record, --rerun, --rounds above 1, or --rerun-after covers its latest
        record."""
        if rec is None or self.rerun or self.rounds > 1:
            return True
        return bool(self.rerun_after) and (rec.get("time", "") >= self.rerun_after or bool(rec.get("busy_machine")))

    def interpreter(self, library: str) -> Path:
        """The Python of a peer library's virtual environment."""
        env = PEER_ENV[library]
        return {"old": self.python, "torch2": self.python_torch2, "dgl2": self.python_dgl2}[env]


def parse_args(argv: list[str] | None = None) -> Settings:
    """Command line → Settings."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes for development (about 5 minutes)")
    p.add_argument("--threads", type=int, default=2, help="threads for every library (default 2)")
    p.add_argument("--only", default=",".join(GROUPS), help=f"comma-separated groups of {', '.join(GROUPS)}")
    p.add_argument("--libraries", default=ALL_LIBRARIES,
                   help="comma-separated libraries (torch, pyg, dgl: Debian's PyTorch 1.13 venv; torch2, pyg2: "
                        "PyTorch 2.x + PyG 2.8.1; dgl2: DGL 2.1.0 + PyTorch 2.2.1)")
    p.add_argument("--edgeattn", type=Path, default=ROOT / "build/release/bin/edgeattn")
    p.add_argument("--python", type=Path, default=ROOT / "build/peers-venv/bin/python",
                   help="interpreter of torch, pyg, dgl (PyTorch 1.13)")
    p.add_argument("--python-torch2", type=Path, default=ROOT / "build/peers-torch2/bin/python",
                   help="interpreter of torch2 and pyg2 (PyTorch 2.x, PyG 2.8.1)")
    p.add_argument("--python-dgl2", type=Path, default=ROOT / "build/peers-dgl2/bin/python",
                   help="interpreter of dgl2 (DGL 2.1.0, PyTorch 2.2.1)")
    p.add_argument("--quiet-load", type=float, default=0.8,
                   help="before measuring (not --quick), wait for the 1-minute load average to fall below this")
    p.add_argument("--quiet-wait", type=float, default=20.0,
                   help="minutes to wait for --quiet-load (then run anyway, records marked busy_machine); 0: no wait")
    p.add_argument("--inputs-dir", type=Path, default=ROOT / "build/peers/inputs")
    p.add_argument("--raw", type=Path, help="JSON lines file (default bench/results/peers/raw[-quick].jsonl)")
    p.add_argument("--results", type=Path,
                   help="markdown file of the report (default bench/RESULTS.md; quick: bench/results/peers/quick.md)")
    p.add_argument("--targets", action="store_true",
                   help="only the runs behind the issue's four targets (Cora and 1M-node training, complete "
                        "N=1024/4096 vs PyTorch, 10M-edge d=64 kernel vs GraphBLAS): about 15 minutes")
    p.add_argument("--rerun", action="store_true", help="measure again runs already in the raw file")
    p.add_argument("--rerun-after", default="",
                   help="measure again runs whose latest record is from this UTC time on (ISO, e.g. "
                        "2026-11-25T14:55:00Z: runs disturbed by a compiler), or marked busy_machine")
    p.add_argument("--rounds", type=int, default=1,
                   help="run the selected jobs this many times, round-robin, so that each library's runs "
                        "interleave with the others'; the report gives each ratio per round, its median and range "
                        "(default 1; with more, every job runs, as with --rerun)")
    p.add_argument("--dry-run", action="store_true", help="list the runs and the time estimate, run nothing")
    p.add_argument("--timeout-scale", type=float, default=1.0, help="multiply every run's timeout")
    p.add_argument("--max-peer-edges", type=float, default=5e7,
                   help="run GraphBLAS, PyG and DGL kernels only on inputs with at most this many edges "
                        "(default 5e7: the N=16384 complete and causal graphs are edgeattn and dense only)")
    p.add_argument("--mem-limit-gb", type=float, default=0.0,
                   help="address-space limit per run (default: 85%% of MemAvailable at start)")
    a = p.parse_args(argv)
    groups = tuple(g for g in a.only.split(",") if g)
    bad = [g for g in groups if g not in GROUPS]
    if bad:
        p.error(f"--only: unknown group(s) {bad}; expected {GROUPS}")
    raw = a.raw or ROOT / "bench/results/peers" / ("raw-quick.jsonl" if a.quick else "raw.jsonl")
    results = a.results or (raw.parent / "quick.md" if a.quick else ROOT / "bench/RESULTS.md")
    if a.rounds < 1:
        p.error(f"--rounds is {a.rounds}, expected at least 1")
    libs = tuple(x for x in a.libraries.split(",") if x)
    bad = [x for x in libs if x not in ALL_LIBRARIES.split(",")]
    if bad:
        p.error(f"--libraries: unknown {bad}; expected some of {ALL_LIBRARIES}")
    return Settings(a.quick, a.threads, groups, a.edgeattn, a.python, a.python_torch2, a.python_dgl2, a.inputs_dir,
                    raw, results, a.rerun, a.dry_run, a.timeout_scale, a.mem_limit_gb, libs, int(a.max_peer_edges),
                    a.targets, a.quiet_load, a.quiet_wait, tuple(argv if argv is not None else sys.argv[1:]),
                    a.rerun_after, a.rounds)


# The runs behind the targets (report.py's target_lines reads exactly these).
TARGET_DENSE_INPUTS = ("complete_1024_f64", "complete_4096_f64")  # two sizes: does memory grow as N²?
TARGET_KERNEL_INPUT = "uniform_10m_f512"


def is_target_job(job: "Job") -> bool:
    """True for the runs --targets keeps."""
    name = job.meta.get("input_name")
    if job.group == "train":
        return True
    if job.group == "dense":
        return name in TARGET_DENSE_INPUTS and job.library in ("edgeattn", "edgeattn-dense", "edgeattn-pattern",
                                                              "torch")
    if job.group == "kernel":
        return name == TARGET_KERNEL_INPUT and job.meta.get("score") == "dot" and \
            job.library in ("edgeattn", "graphblas")
    return False


# ----------------------------------------------------------------------------------------------
# The matrix


# The input of the OpenMP wait-policy calibration (also the first kernel input).
PROBE_INPUT = InputSpec("uniform_cora_f64", "uniform", 2708, 10556, features=64)


def kernel_inputs(quick: bool) -> list[tuple[InputSpec, int]]:
    """(input, head_dim) pairs of the kernel group: F = 8 * d so q = k = v = features as [N, 8, d]."""
    if quick:  # one size, both families, both head dims, but not every combination
        return [(InputSpec("uniform_cora_f64", "uniform", 2708, 10556, features=64), 8),
                (InputSpec("rmat_cora_f512", "rmat", 2708, 10556, features=512), 64)]
    out = []
    for label, n, e in (("cora", 2708, 10556), ("1m", 100_000, 1_000_000), ("10m", 1_000_000, 10_000_000)):
        for graph in ("uniform", "rmat"):
            for d in (8, 64):
                out.append((InputSpec(f"{graph}_{label}_f{8 * d}", graph, n, e, features=8 * d), d))
    return out


def dense_inputs(quick: bool) -> list[InputSpec]:
    """Dense vs sparse: N ∈ {1k, 4k, 16k}, densities 0.1 %–100 %, causal and window; H = 1, d = 64."""
    sizes = (1024,) if quick else (1024, 4096, 16384)
    densities = (0.01, 1.0) if quick else (0.001, 0.01, 0.1, 1.0)
    out = []
    for n in sizes:
        for rho in densities:
            if rho == 1.0:
                out.append(InputSpec(f"complete_{n}_f64", "complete", n, features=64, heads=1))
            elif round(rho * n * n) >= n:
                out.append(InputSpec(f"uniform_{n}_p{rho:g}_f64", "uniform", n, round(rho * n * n), 64, heads=1))
        out.append(InputSpec(f"causal_{n}_f64", "causal", n, features=64, heads=1))
        w = 32 if quick else 256
        out.append(InputSpec(f"window{w}_{n}_f64", f"window:{w}", n, features=64, heads=1))
    return out


def layer_inputs(quick: bool) -> list[InputSpec]:
    """Layer group: real Cora (1433 features) and a 1M-edge R-MAT graph with 128 features (quick: Cora)."""
    big = InputSpec("rmat_1m_f128", "rmat", 100_000, 1_000_000, 128)
    return [InputSpec("cora", "cora", heads=8)] if quick else [InputSpec("cora", "cora", heads=8), big]


def train_inputs(quick: bool) -> list[tuple[InputSpec, int]]:
    """(input, epochs): Cora for 200 epochs (quick: 20) and the 1M-node/10M-edge R-MAT graph."""
    big = InputSpec("rmat_10k_100k_f128", "rmat", 10_000, 100_000, 128) if quick else \
        InputSpec("rmat_1m_10m_f128", "rmat", 1_000_000, 10_000_000, 128)
    return [(InputSpec("cora", "cora", heads=8), 20 if quick else 200), (big, 2)]


def sdpa_inputs(quick: bool) -> list[tuple[InputSpec, int]]:
    """(input, heads) of the sdpa group: PyTorch 2's scaled_dot_product_attention against edgeattn.

    N ∈ {1024, 4096} (quick: 512), H ∈ {1, 8}, d = 64 (F = 64 H): complete (SDPA without a mask),
    causal (is_causal=True), sliding window w = 256 and uniform random graphs at 1 % and 10 %
    density (a boolean attn_mask); plus the window at N = 16384 (quick: 2048). The H = 1 inputs are
    the dense group's files (same names, same keys)."""
    sizes = (512,) if quick else (1024, 4096)
    w = 32 if quick else 256
    out = []
    for h in (1, 8):
        f = 64 * h
        for n in sizes:
            out.append((InputSpec(f"complete_{n}_f{f}", "complete", n, features=f, heads=h), h))
            out.append((InputSpec(f"causal_{n}_f{f}", "causal", n, features=f, heads=h), h))
            out.append((InputSpec(f"window{w}_{n}_f{f}", f"window:{w}", n, features=f, heads=h), h))
            for rho in ((0.01,) if quick else (0.01, 0.1)):
                out.append((InputSpec(f"uniform_{n}_p{rho:g}_f{f}", "uniform", n, round(rho * n * n), f, heads=h), h))
        n = 2048 if quick else 16384
        out.append((InputSpec(f"window{w}_{n}_f{f}", f"window:{w}", n, features=f, heads=h), h))
    return out


# The sampled-training workload (issue 23): a products-like stochastic-block-model graph (47 classes,
# 100 features, mean degree 50, 8 % of the nodes for training), a 3-layer GAT (8 heads × 8, the
# output layer 1 head), fan-outs 15,10,5 (hop 1 = the seeds), batches of 1024 training nodes.
MINIBATCH = {"batch_size": 1024, "fanout": "15,10,5", "heads": 8, "hidden": 8, "dropout": 0.2, "lr": 0.01}


def minibatch_inputs(quick: bool) -> list[tuple[InputSpec, int]]:
    """(input, epochs): the SBM graph at 250k nodes / ~12.5M edges, 3 epochs (quick: 20k nodes, 2)."""
    if quick:
        return [(InputSpec("sbm_products_20k", "sbm", 20_000, features=100, classes=47), 2)]
    return [(InputSpec("sbm_products_250k", "sbm", 250_000, features=100, classes=47), 3)]


# Rough throughputs on 2 cores of the development machine (edge × feature per second of a forward),
# for the time estimate and the timeouts only.
EDGE_RATE = {"edgeattn": 1.5e9, "edgeattn-pattern": 1.5e9, "graphblas": 2e8, "pyg": 1.5e8, "dgl": 3e8,
             "pyg2": 1.5e8, "dgl2": 3e8}


def work_scale(edges: int, width: int, library: str = "pyg") -> float:
    """Seconds of one forward + backward of a sparse kernel (rough; estimates and timeouts)."""
    return 4.0 * edges * max(width, 8) / EDGE_RATE.get(library, 1.5e8)


def dense_scale(nodes: int, heads: int, d: int) -> float:
    """Seconds of one dense forward + backward: GEMMs at ~40 GFLOP/s plus ~10 passes over [H, N, N]."""
    return 3.0 * (4.0 * heads * nodes * nodes * d / 4e10 + 10.0 * heads * nodes * nodes / 1e9)


def input_load_s(spec: InputSpec) -> float:
    """Seconds to start a process and read the input (about 300 MB/s of npz)."""
    e = spec.edges or spec.nodes * spec.nodes
    return 2.0 + (4.0 * e + 4.0 * spec.nodes * spec.features) / 3e8


class Matrix:
    """Builds the jobs of the selected groups."""

    def __init__(self, s: Settings, coretype: str) -> None:
        self.s = s
        self.coretype = coretype

    def path(self, spec: InputSpec) -> Path:
        return self.s.inputs_dir / f"{spec.name}.npz"

    def ea(self, *args: str) -> list[str]:
        return [str(self.s.edgeattn), *args, "--threads", str(self.s.threads)]

    def peer(self, library: str, workload: str, spec: InputSpec, *args: str) -> list[str]:
        """peer.py under the interpreter of the library's virtual environment (torch2 → torch in peers-torch2)."""
        cmd = [str(self.s.interpreter(library)), str(ROOT / "bench/peers/peer.py"), "--library", PEER_BASE[library],
               "--workload", workload,
               "--input", str(self.path(spec)), "--threads", str(self.s.threads), *args]
        if self.coretype != "auto":
            cmd += ["--openblas-coretype", self.coretype]
        return cmd

    def job(self, group: str, library: str, workload: str, spec: InputSpec, parts: Iterable[str],
            command: list[str], estimate_s: float, **meta: Any) -> Job | None:
        if library.split("-")[0] not in self.s.libraries:
            return None
        key = "|".join([library, workload, spec.name, *parts, f"T{self.s.threads}"])
        timeout = min(1800.0, max(300.0, 20 * estimate_s)) * self.s.timeout_scale
        if library in PEER_ENV:
            meta = dict(meta, venv=PEER_ENV[library])
        return Job(key, group, library, workload, command, timeout, estimate_s,
                   dict(meta, input_name=spec.name, graph=spec.graph, input_file=str(self.path(spec))))

    def kernel_jobs(self, spec: InputSpec, heads: int, d: int, scores: tuple[str, ...], group: str,
                    repeat: int) -> list[Job | None]:
        """Every library's attention kernel on one input."""
        jobs: list[Job | None] = []
        e = spec.edges or spec.nodes * spec.nodes
        dense_ok = spec.nodes <= 16384
        runs, load = repeat + 1, input_load_s(spec)
        est = {lib: load + runs * work_scale(e, heads * d, lib) for lib in EDGE_RATE}
        est["graphblas"] = load + runs * work_scale(e, heads * d, "graphblas") / 4  # forward only
        if 16.0 * e * heads * d > 16 * 2**30:  # PyG's [E, H, d] gathers cannot fit: fails at once
            est["pyg"] = load + 5.0
        big = e > self.s.max_peer_edges  # the sparse peers are not run on inputs over the cap
        dense_est = load + runs * dense_scale(spec.nodes, heads, d) if dense_ok else load
        for score in scores:
            parts = [f"H{heads}", f"d{d}", score]
            ea_args = ["bench", "attention", "--input", str(self.path(spec)), "--heads", str(heads),
                       "--head-dim", str(d), "--score", score, "--repeat", str(repeat), "--no-dense"]
            jobs.append(self.job(group, "edgeattn", "kernel", spec, parts, self.ea(*ea_args), est["edgeattn"],
                                 score=score))
            if dense_ok and score == "dot":
                jobs.append(self.job(group, "edgeattn-dense", "kernel", spec, parts,
                                     self.ea(*ea_args, "--path", "dense"), dense_est / 2, score=score))
            if score == "dot" and not big:
                jobs.append(self.job(group, "graphblas", "kernel", spec, parts,
                                     self.ea("bench", "graphblas", "--input", str(self.path(spec)), "--heads",
                                             str(heads), "--head-dim", str(d), "--repeat", str(repeat)),
                                     est["graphblas"], score=score))
            common = ["--heads", str(heads), "--head-dim", str(d), "--score", score, "--repeat", str(repeat)]
            jobs.append(self.job(group, "torch", "kernel", spec, parts, self.peer("torch", "kernel", spec, *common),
                                 dense_est, score=score))
            if score == "dot" and group == "dense":  # where PyTorch's fused attention would matter
                jobs.append(self.job(group, "torch", "sdpa", spec, parts, self.peer("torch", "sdpa", spec, *common),
                                     load, score=score))
            for lib in () if big else ("pyg", "dgl", "pyg2", "dgl2"):
                jobs.append(self.job(group, lib, "kernel", spec, parts, self.peer(lib, "kernel", spec, *common),
                                     est[lib], score=score))
        return jobs

    def sdpa_jobs(self, spec: InputSpec, heads: int, repeat: int) -> list[Job | None]:
        """One sdpa-group input: edgeattn (explicit edges, implicit pattern, dense path) and PyTorch 2's
        scaled_dot_product_attention (complete: no mask; causal: is_causal; else a boolean mask)."""
        e = spec.edges or spec.nodes * spec.nodes
        d, n = 64, spec.nodes
        parts = [f"H{heads}", f"d{d}", "dot"]
        load, runs = input_load_s(spec), repeat + 1
        jobs: list[Job | None] = []
        common = ["--heads", str(heads), "--head-dim", str(d), "--repeat", str(repeat)]
        ea_args = ["bench", "attention", "--input", str(self.path(spec)), *common, "--score", "dot", "--no-dense"]
        jobs.append(self.job("sdpa", "edgeattn", "kernel", spec, parts, self.ea(*ea_args),
                             load + runs * work_scale(e, heads * d, "edgeattn"), score="dot"))
        if spec.graph in ("complete", "causal") or spec.graph.startswith("window:"):
            jobs.append(self.job("sdpa", "edgeattn-pattern", "kernel", spec, parts, self.ea(
                "bench", "attention", "--pattern", spec.graph, "--nodes", str(n), *common, "--score", "dot",
                "--no-dense"), 1.0 + runs * work_scale(e, heads * d, "edgeattn"), score="dot"))
        if n <= 4096:
            jobs.append(self.job("sdpa", "edgeattn-dense", "kernel", spec, parts,
                                 self.ea(*ea_args, "--path", "dense"), load + runs * dense_scale(n, heads, d) / 2,
                                 score="dot"))
        mode = "none" if spec.graph == "complete" else ("causal" if spec.graph == "causal" else "bool")
        jobs.append(self.job("sdpa", "torch2", "sdpa", spec, parts, self.peer(
            "torch2", "sdpa", spec, *common, "--score", "dot", "--sdpa-mask", mode),
            load + 5.0 + runs * dense_scale(n, heads, d), score="dot", sdpa_mask=mode))
        return jobs

    def minibatch_jobs(self, spec: InputSpec, epochs: int) -> list[Job | None]:
        """Sampled training epochs: edgeattn train --batch-size/--fanout, DGL 2.1 and PyG 2.8.1 samplers."""
        m = MINIBATCH
        layers = len(m["fanout"].split(","))
        parts = [f"H{m['heads']}", f"D{m['hidden']}", f"B{m['batch_size']}", f"F{m['fanout'].replace(',', '-')}",
                 f"E{epochs}"]
        train_nodes = 0.08 * spec.nodes
        steps = max(1.0, train_nodes / m["batch_size"])
        per_step = {"edgeattn": 0.3, "dgl2": 2.0, "pyg2": 6.0}  # seconds, rough (estimates and timeouts)
        jobs: list[Job | None] = [self.job("minibatch", "edgeattn", "minibatch", spec, parts, self.ea(
            "train", "--dataset", str(self.path(spec)), "--batch-size", str(m["batch_size"]), "--fanout",
            m["fanout"], "--layers", str(layers), "--heads", str(m["heads"]), "--hidden", str(m["hidden"]),
            "--dropout", str(m["dropout"]), "--lr", str(m["lr"]), "--epochs", str(epochs), "--patience", "0",
            "--no-normalize", "--json", "--quiet"), input_load_s(spec) + epochs * (steps * per_step["edgeattn"] + 5),
            epochs=epochs, **m)]
        # The same training with the nodes renumbered by METIS parts (edgeattn train --reorder metis;
        # METIS's time before the first epoch is not in the epoch): a user's option, reported beside the
        # dataset's own order, not instead of it.
        jobs.append(self.job("minibatch", "edgeattn-metis", "minibatch", spec, parts, self.ea(
            "train", "--dataset", str(self.path(spec)), "--reorder", "metis", "--batch-size", str(m["batch_size"]),
            "--fanout", m["fanout"], "--layers", str(layers), "--heads", str(m["heads"]), "--hidden",
            str(m["hidden"]), "--dropout", str(m["dropout"]), "--lr", str(m["lr"]), "--epochs", str(epochs),
            "--patience", "0", "--no-normalize", "--json", "--quiet"),
            input_load_s(spec) + 60 + epochs * (steps * per_step["edgeattn"] + 5), epochs=epochs, reorder="metis", **m))
        for lib in ("dgl2", "pyg2"):
            jobs.append(self.job("minibatch", lib, "minibatch", spec, parts, self.peer(
                lib, "minibatch", spec, "--epochs", str(epochs), "--warmup", "0", "--heads", str(m["heads"]),
                "--hidden", str(m["hidden"]), "--batch-size", str(m["batch_size"]), "--fanout", m["fanout"],
                "--dropout", str(m["dropout"]), "--lr", str(m["lr"])),
                input_load_s(spec) + 10 + epochs * steps * per_step[lib], epochs=epochs, **m))
        return jobs

    def pattern_jobs(self, spec: InputSpec, repeat: int) -> list[Job | None]:
        """edgeattn on the implicit pattern (no explicit N² edge list in memory): complete/causal/window."""
        if spec.graph not in ("complete", "causal") and not spec.graph.startswith("window:"):
            return []
        args = ["bench", "attention", "--pattern", spec.graph, "--nodes", str(spec.nodes), "--heads", "1",
                "--head-dim", "64", "--score", "dot", "--repeat", str(repeat), "--no-dense"]
        e = spec.edges or spec.nodes * spec.nodes
        return [self.job("dense", "edgeattn-pattern", "kernel", spec, ["H1", "d64", "dot"], self.ea(*args),
                         1.0 + (repeat + 1) * work_scale(e, 64, "edgeattn"), score="dot")]

    def jobs(self) -> tuple[list[InputSpec], list[Job]]:
        """All inputs needed and all jobs, in run order."""
        q = self.s.quick
        specs: list[InputSpec] = []
        jobs: list[Job | None] = []
        if "kernel" in self.s.groups:
            for spec, d in kernel_inputs(q):
                specs.append(spec)
                repeat = 10 if spec.edges < 100_000 else (5 if spec.edges < 5_000_000 else 3)
                jobs += self.kernel_jobs(spec, 8, d, ("dot", "additive"), "kernel", 3 if q else repeat)
        if "dense" in self.s.groups:
            for spec in dense_inputs(q):
                specs.append(spec)
                repeat = 3 if q or spec.nodes > 4096 else 5
                jobs += self.kernel_jobs(spec, 1, 64, ("dot",), "dense", repeat)
                jobs += self.pattern_jobs(spec, repeat)
        if "layer" in self.s.groups:
            for spec in layer_inputs(q):
                specs.append(spec)
                e = 10556 if spec.graph == "cora" else spec.edges
                per = {lib: input_load_s(spec) + 12 * work_scale(e, 64, lib)
                       for lib in ("edgeattn", "pyg", "dgl", "pyg2", "dgl2")}
                for layer in ("gat", "gatv2", "transformer"):
                    parts = ["H8", "D8", layer]
                    repeat = "3" if q else "5"
                    jobs.append(self.job("layer", "edgeattn", "layer", spec, parts, self.ea(
                        "bench", "layer", "--input", str(self.path(spec)), "--layer", layer, "--heads", "8",
                        "--hidden", "8", "--repeat", repeat), per["edgeattn"], layer=layer))
                    for lib in ("pyg", "dgl", "pyg2", "dgl2"):
                        if lib.startswith("dgl") and layer == "transformer":
                            continue  # DGL has no TransformerConv
                        jobs.append(self.job("layer", lib, "layer", spec, parts, self.peer(
                            lib, "layer", spec, "--layer", layer, "--heads", "8", "--hidden", "8",
                            "--repeat", repeat), per[lib], layer=layer))
        if "train" in self.s.groups:
            for spec, epochs in train_inputs(q):
                specs.append(spec)
                e = 10556 if spec.graph == "cora" else spec.edges
                per_epoch = {lib: 0.01 + 3 * work_scale(e, 64, lib) for lib in ("edgeattn", "pyg", "dgl", "pyg2", "dgl2")}
                parts = ["H8", "D8", f"E{epochs}"]
                jobs.append(self.job("train", "edgeattn", "train", spec, parts, self.ea(
                    "train", "--dataset", str(self.path(spec)), "--epochs", str(epochs), "--patience", "0",
                    "--json", "--quiet"), input_load_s(spec) + per_epoch["edgeattn"] * epochs, epochs=epochs))
                # The default renumbers where advise_ordering expects it to pay (--reorder auto): the
                # input's own numbering as well, on inputs beyond Cora's size.
                if spec.graph != "cora":
                    jobs.append(self.job("train", "edgeattn-none", "train", spec, parts, self.ea(
                        "train", "--dataset", str(self.path(spec)), "--epochs", str(epochs), "--patience", "0",
                        "--reorder", "none", "--json", "--quiet"),
                        input_load_s(spec) + per_epoch["edgeattn"] * epochs, epochs=epochs, reorder="none"))
                # The same training with the nodes renumbered hubs first (edgeattn train --reorder):
                # a user's option, reported beside the dataset's own order, not instead of it.
                jobs.append(self.job("train", "edgeattn-degree", "train", spec, parts, self.ea(
                    "train", "--dataset", str(self.path(spec)), "--epochs", str(epochs), "--patience", "0",
                    "--reorder", "degree", "--json", "--quiet"),
                    input_load_s(spec) + per_epoch["edgeattn"] * (epochs + 1), epochs=epochs, reorder="degree"))
                for lib in ("pyg", "dgl", "pyg2", "dgl2"):
                    warm = "1" if spec.graph == "cora" else "0"
                    jobs.append(self.job("train", lib, "train", spec, parts, self.peer(
                        lib, "train", spec, "--epochs", str(epochs), "--warmup", warm, "--heads", "8",
                        "--hidden", "8"), input_load_s(spec) + per_epoch[lib] * (epochs + 2), epochs=epochs))
        if "sdpa" in self.s.groups:
            for spec, heads in sdpa_inputs(q):
                specs.append(spec)
                jobs += self.sdpa_jobs(spec, heads, 3 if q or spec.nodes > 4096 else 5)
        if "minibatch" in self.s.groups:
            for spec, epochs in minibatch_inputs(q):
                specs.append(spec)
                jobs += self.minibatch_jobs(spec, epochs)
        seen: set[str] = set()  # the sdpa group shares its H = 1 runs with the dense group: once each
        jobs = [j for j in jobs if j is not None and not (j.key in seen or seen.add(j.key))]
        kept = [j for j in jobs if j is not None and (not self.s.targets or is_target_job(j))]
        used = {j.meta["input_name"] for j in kept}
        unique = [x for x in {s.name: s for s in specs}.values() if x.name in used]
        return unique, kept


# ----------------------------------------------------------------------------------------------
# Running


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def limit_memory(limit_bytes: int) -> None:
    """preexec_fn: cap the child's address space, so an allocation fails instead of the OOM killer."""
    if limit_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


def run_json(command: list[str], timeout_s: float, env: dict[str, str], mem_limit: int) -> dict[str, Any]:
    """Runs a command, returns its last JSON stdout line or a status record (error/timeout/oom)."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env,
                              preexec_fn=lambda: limit_memory(mem_limit), cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "message": f"no result within {timeout_s:.0f} s", "wall_s": timeout_s}
    except OSError as e:
        return {"status": "error", "message": f"cannot run {command[0]}: {e}"}
    wall = time.perf_counter() - t0
    for line in reversed(proc.stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                break
            rec.setdefault("status", "ok" if proc.returncode == 0 else "error")
            rec["wall_s"] = wall
            return rec
    err = (proc.stderr or proc.stdout).strip()[-1500:]
    oom = proc.returncode in (-9, 137) or "bad_alloc" in err or "memory" in err.lower()
    return {"status": "oom" if oom else "error", "returncode": proc.returncode, "message": err, "wall_s": wall}


def child_env(threads: int, coretype: str, wait_policy: str = "default") -> dict[str, str]:
    """The environment of every run: thread counts, the OpenBLAS core type, the OpenMP wait policy."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype != "auto":
        env["OPENBLAS_CORETYPE"] = coretype
    env.pop("OMP_WAIT_POLICY", None)
    if wait_policy != "default":
        env["OMP_WAIT_POLICY"] = wait_policy
    return env


def repo_relative(value: Any) -> Any:
    """Paths inside the checkout written relative to it, so the committed records hold no machine paths."""
    if isinstance(value, str):
        return value.replace(str(ROOT) + os.sep, "")
    if isinstance(value, dict):
        return {k: repo_relative(v) for k, v in value.items()}
    if isinstance(value, list):
        return [repo_relative(v) for v in value]
    return value


class RawLog:
    """The JSON-lines file: existing keys (for resuming) and appending."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.records: list[dict[str, Any]] = []
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    self.records.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line cut by an interrupted run

    def latest(self, key: str) -> dict[str, Any] | None:
        found = [r for r in self.records if r.get("key") == key]
        return found[-1] if found else None

    def append(self, record: dict[str, Any]) -> None:
        record = repo_relative(record)
        self.records.append(record)
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())


def ensure_input(s: Settings, spec: InputSpec, path: Path, mem_limit: int) -> dict[str, Any] | None:
    """Writes the input unless present; returns write-inputs' record, or None when reused."""
    if path.exists():
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    rec = run_json(spec.write_command(s.edgeattn, tmp, s.threads), 3600, dict(os.environ), mem_limit)
    if rec.get("status", "ok") == "ok" and tmp.exists():
        os.replace(tmp, path)
    return rec


def pick_coretype(s: Settings, raw: RawLog, mem_limit: int) -> str:
    """Times torch.mm under each OPENBLAS_CORETYPE (recorded), returns the fastest."""
    best, best_ms = "auto", float("inf")
    for ct in CORETYPES:
        key = f"torch|matmul|n2048|{ct}|T{s.threads}"
        rec = None if s.rerun else raw.latest(key)
        if rec is None:
            cmd = [str(s.python), str(ROOT / "bench/peers/peer.py"), "--library", "torch", "--workload", "matmul",
                   "--nodes", "2048", "--repeat", "5", "--threads", str(s.threads), "--openblas-coretype",
                   "" if ct == "auto" else ct]
            rec = run_json(cmd, 300, child_env(s.threads, "auto"), mem_limit)
            rec.update(key=key, group="calibration", library="torch", workload="matmul", openblas_coretype=ct,
                       time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            raw.append(rec)
        log(f"torch matmul 2048 OPENBLAS_CORETYPE={ct}: {rec.get('gflops', float('nan')):.1f} GFLOP/s "
            f"({rec.get('status')})")
        if rec.get("status") == "ok" and rec["forward_ms"] < best_ms:
            best, best_ms = ct, rec["forward_ms"]
    log(f"OPENBLAS_CORETYPE for every BLAS-backed run: {best}")
    return best


def pick_wait_policy(s: Settings, raw: RawLog, coretype: str, probe: Path, mem_limit: int,
                     library: str = "pyg") -> str:
    """Times PyG's kernel (forward + backward) under OMP_WAIT_POLICY unset and passive, returns the faster.

    PyTorch's OpenMP threads spin at barriers by default; when anything else competes for the cores
    a spinning thread can hold up the others for a scheduler slice, and small kernels get 10-20x
    slower. On a quiet machine spinning is usually as fast or faster. Measured, recorded, chosen."""
    best, best_ms = "default", float("inf")
    for policy in ("default", "passive"):
        key = f"{library}|omp-wait|{probe.stem}|{policy}|{coretype}|T{s.threads}"
        rec = None if s.rerun else raw.latest(key)
        if rec is None:
            cmd = [str(s.interpreter(library)), str(ROOT / "bench/peers/peer.py"), "--library", PEER_BASE[library],
                   "--workload", "kernel",
                   "--input", str(probe), "--heads", "8", "--head-dim", "8", "--repeat", "10",
                   "--threads", str(s.threads)]
            rec = run_json(cmd, 300, child_env(s.threads, coretype, policy), mem_limit)
            rec.update(key=key, group="calibration", library=library, workload="omp-wait", omp_wait_policy=policy,
                       venv=PEER_ENV[library],
                       time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            raw.append(rec)
        log(f"{library} kernel on {probe.name} with OMP_WAIT_POLICY={policy}: forward+backward "
            f"{rec.get('forward_backward_ms', float('nan')):.2f} ms ({rec.get('status')})")
        if rec.get("status") == "ok" and rec["forward_backward_ms"] < best_ms:
            best, best_ms = policy, rec["forward_backward_ms"]
    log(f"OMP_WAIT_POLICY for the runs in {PEER_ENV[library]}'s environment: {best}")
    return best


def load_average() -> tuple[float, int]:
    """(1-minute load average, runnable processes now) from /proc/loadavg."""
    try:
        parts = Path("/proc/loadavg").read_text().split()
        return float(parts[0]), int(parts[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return float("nan"), -1


def busy_cores(seconds: float = 2.0) -> float:
    """Cores kept busy by the whole machine over `seconds` (/proc/stat). Sampled between runs, while
    the suite itself sleeps, it is the load of other processes: a compiler, another benchmark."""
    def sample() -> tuple[int, int]:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        return sum(v[:8]), idle
    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
    except (OSError, ValueError, IndexError):
        return float("nan")
    total = t1 - t0
    return (os.cpu_count() or 1) * (1.0 - (i1 - i0) / total) if total > 0 else float("nan")


class QuietGate:
    """Before each full-size run: wait while other processes keep more than `max_busy` cores busy,
    polling every 30 s, within a budget of `minutes` for the whole invocation (then run anyway and
    mark the record busy_machine)."""

    def __init__(self, enabled: bool, max_busy: float, minutes: float) -> None:
        self.enabled, self.max_busy, self.budget_s = enabled, max_busy, minutes * 60

    def wait(self) -> tuple[bool, float, float]:
        """(quiet, busy cores of others when the run starts, seconds waited)."""
        t0 = time.monotonic()
        busy = busy_cores()
        while self.enabled and not busy < self.max_busy and self.budget_s > 0:
            log(f"other processes keep {busy:.2f} cores busy (>= {self.max_busy}): waiting 30 s "
                f"({self.budget_s / 60:.1f} min of waiting left)")
            time.sleep(28)
            self.budget_s -= time.monotonic() - t0
            t0 = time.monotonic()
            busy = busy_cores()
        return busy < self.max_busy, busy, 0.0


def wait_for_quiet(threshold: float, minutes: float) -> tuple[bool, float, float]:
    """Polls the 1-minute load average every 30 s until below threshold, at most `minutes`.
    Returns (quiet, load when it stopped waiting, seconds waited)."""
    t0 = time.monotonic()
    load, _ = load_average()
    while not load < threshold and time.monotonic() - t0 < minutes * 60:
        log(f"waiting for a quiet machine: 1-minute load {load:.2f} >= {threshold} "
            f"({(time.monotonic() - t0) / 60:.1f} of {minutes:g} min)")
        time.sleep(30)
        load, _ = load_average()
    return load < threshold, load, time.monotonic() - t0


def round_robin(jobs: list[Job], rounds: int) -> list[tuple[int, Job]]:
    """(round, job) in run order: every job once per round, rounds 1..N in turn, so that each
    library's runs interleave with the others' instead of following one another."""
    return [(rnd, job) for rnd in range(1, rounds + 1) for job in jobs]


def main(argv: list[str] | None = None) -> int:
    s = parse_args(argv)
    avail = 0.0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                avail = float(line.split()[1]) * 1024
    mem_limit = int(s.mem_limit_gb * 2**30) if s.mem_limit_gb > 0 else int(0.85 * avail)
    raw = RawLog(s.raw)

    if s.dry_run:
        specs, jobs = Matrix(s, "auto").jobs()
        for j in jobs:
            print(f"{j.key}  ~{j.estimate_s:.1f}s (timeout {j.timeout_s:.0f}s)")
        todo = [j for j in jobs if s.stale(raw.latest(j.key))]
        print(f"{len(jobs)} runs, {len(todo)} to do{f' in each of {s.rounds} rounds' if s.rounds > 1 else ''}, "
              f"{len(specs)} inputs; estimate {s.rounds * sum(j.estimate_s for j in todo) / 60:.0f} min plus writing "
              f"the inputs")
        return 0

    if not s.edgeattn.exists():
        log(f"missing {s.edgeattn}: build the tool (cmake --build build/release --target edgeattn_tool)")
        return 2
    # Peer libraries whose virtual environment is missing are left out (run bench/peers/setup.sh).
    missing = sorted({PEER_ENV[x] for x in s.libraries if x in PEER_ENV and not s.interpreter(x).exists()})
    for env in missing:
        dropped = [x for x in s.libraries if PEER_ENV.get(x) == env]
        log(f"no interpreter for the '{env}' environment: leaving out {', '.join(dropped)} "
            f"(bench/peers/setup.sh --only {env})")
    s.libraries = tuple(x for x in s.libraries if PEER_ENV.get(x) not in missing)

    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    quiet, load0, waited = True, load_average()[0], 0.0
    if not s.quick and s.quiet_wait_min > 0:
        quiet, load0, waited = wait_for_quiet(s.quiet_load, s.quiet_wait_min)
        log(f"1-minute load average {load0:.2f} after waiting {waited:.0f} s: "
            f"{'quiet' if quiet else 'BUSY: the records are marked busy_machine'}")
    suite_command = "build/peers-venv/bin/python bench/peers/run_suite.py " + " ".join(s.argv)
    limits = run_json([str(s.edgeattn), "bench", "limits", "--threads", str(s.threads)], 600, dict(os.environ), 0)
    limits.update(key=f"limits|{stamp}", group="machine", library="edgeattn", workload="limits", time=stamp,
                  quick=s.quick, mem_limit_gb=mem_limit / 2**30, nproc=os.cpu_count(),
                  max_peer_edges=s.max_peer_edges, load_avg_at_start=load0, quiet_wait_s=waited,
                  busy_machine=not quiet, suite_command=suite_command.strip(), groups=list(s.groups),
                  libraries=list(s.libraries), edgeattn_binary=str(s.edgeattn), edgeattn_binary_mtime=time.strftime(
                      "%Y-%m-%dT%H:%M:%SZ", time.gmtime(s.edgeattn.stat().st_mtime)),
                  edgeattn_sha256=hashlib.sha256(s.edgeattn.read_bytes()).hexdigest())
    raw.append(limits)
    log(f"limits: {json.dumps({k: limits.get(k) for k in ('cpu_model', 'stream_triad_gbps', 'fma_peak_gflops')})}")

    old_peers = bool({"torch", "pyg", "dgl"} & set(s.libraries)) and s.python.exists()
    coretype = pick_coretype(s, raw, mem_limit) if old_peers else "auto"
    specs, jobs = Matrix(s, coretype).jobs()
    todo = [j for j in jobs if s.stale(raw.latest(j.key))]
    log(f"{len(jobs)} runs, {len(todo)} to do{f' in each of {s.rounds} rounds' if s.rounds > 1 else ''}; "
        f"estimate {s.rounds * sum(j.estimate_s for j in todo) / 60:.0f} min "
        f"plus writing {len(specs)} inputs (mem limit per run {mem_limit / 2**30:.1f} GiB)")

    # The OpenMP wait policy, chosen per environment on the probe input (PyG's kernel where the
    # environment has PyG, DGL's in the DGL 2 environment).
    probe = PROBE_INPUT
    envs_used = sorted({j.meta["venv"] for j in todo if "venv" in j.meta})
    probe_lib = {"old": "pyg", "torch2": "pyg2", "dgl2": "dgl2"}
    envs_used = [e for e in envs_used if not (ROOT / "build/peers" / ENV_ERROR.get(probe_lib[e], "-")).exists()]
    needed = {j.meta["input_name"] for j in todo} | ({probe.name} if envs_used else set())
    write_errors: dict[str, str] = {}  # input name -> why writing it failed, for its runs' records
    for spec in [probe, *(x for x in specs if x.name != probe.name)]:
        if spec.name in needed:
            path = Matrix(s, coretype).path(spec)
            rec = ensure_input(s, spec, path, mem_limit)
            if rec is not None:
                log(f"wrote {path.name}: {rec.get('status', 'ok')} {rec.get('nodes', '')} nodes "
                    f"{rec.get('edges', '')} edges {rec.get('message', '')}")
                rec.update(key=f"write-inputs|{spec.name}|{stamp}", group="inputs", library="edgeattn",
                           workload="write-inputs", input_name=spec.name, time=stamp)
                raw.append(rec)
                if rec.get("status", "ok") != "ok":
                    write_errors[spec.name] = " ".join(str(rec.get("message", "")).split())[-600:]

    policy = {e: pick_wait_policy(s, raw, coretype, Matrix(s, coretype).path(probe), mem_limit, probe_lib[e])
              for e in envs_used}
    # The budget left of --quiet-wait after the initial wait; the per-run threshold is the same load
    # figure (cores busy), taken between runs while the suite sleeps, so its own runs do not count.
    gate = QuietGate(not s.quick and s.quiet_wait_min > 0, s.quiet_load, max(0.0, s.quiet_wait_min - waited / 60))
    schedule = round_robin(todo, s.rounds)
    for i, (rnd, job) in enumerate(schedule, 1):
        job_quiet, others, _ = gate.wait()
        venv = job.meta.get("venv")
        wait_policy = policy.get(venv, "default") if venv else "default"
        env = child_env(s.threads, coretype, wait_policy)
        err_file = ROOT / "build/peers" / ENV_ERROR.get(job.library, "-")
        load, runnable = load_average()
        if job.library in ENV_ERROR and err_file.exists():
            rec: dict[str, Any] = {"status": "error", "message": f"{job.library} is not installed "
                                   f"({err_file.relative_to(ROOT)}): " + err_file.read_text()[-1500:]}
        elif not Path(job.meta["input_file"]).exists():
            why = write_errors.get(job.meta["input_name"])
            rec = {"status": "error", "message": f"input {job.meta['input_name']} was not written"
                   + (f": {why}" if why else "")}
        else:
            rec = run_json(job.command, job.timeout_s, env, mem_limit)
        if job.library == "pyg2" and job.workload == "minibatch" and rec.get("status") == "unsupported":
            pyglib = ROOT / "build/peers/pyglib_error.txt"
            if pyglib.exists():
                rec["message"] = (rec.get("message") or "") + "; pyg-lib: " + " ".join(pyglib.read_text().split())[-400:]
        rec.update(job.meta)
        rec.update(key=job.key, group=job.group, library=job.library, workload=job.workload,
                   threads=s.threads, time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   command=" ".join(job.command), openblas_coretype=coretype, omp_wait_policy=wait_policy,
                   quick=s.quick, load_avg_1m_before=load, runnable_before=runnable,
                   other_busy_cores_before=others, busy_machine=not (quiet and job_quiet),
                   suite_command=suite_command.strip())
        if s.rounds > 1:  # which invocation and round: report.py's per-round ratios
            rec.update(suite_run=stamp, round=rnd, rounds=s.rounds)
        raw.append(rec)
        t = rec.get("forward_ms", rec.get("seconds_per_epoch"))
        log(f"[{i}/{len(schedule)}] {job.key}: {rec['status']} {t if t is not None else ''} "
            f"{(rec.get('message') or '')[:120]}")

    report = [sys.executable, str(ROOT / "bench/peers/report.py"), "--raw", str(s.raw), "--results", str(s.results),
              "--plot-dir", str(s.raw.parent)]
    if s.quick:  # development numbers stay out of bench/RESULTS.md
        report += ["--plot-suffix=-quick"]
    return subprocess.call(report, cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main())
