"""run_suite.py --rounds and report.py's per-round ratios (bench/peers), without running a peer."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

PEERS = Path(__file__).resolve().parents[1]


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"peers_{name}", PEERS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


suite = load("run_suite")
report = load("report")


def record(lib: str, rnd: int, seconds: list[float], run: str = "2026-12-07T06:00:00Z", group: str = "train",
           status: str = "ok", rounds: int = 3) -> dict:
    key = f"{lib}|train|rmat_1m_10m_f128|H8|D8|E2|T2" if group == "train" else \
        f"{lib}|minibatch|sbm_products_250k|H8|D8|B1024|F15-10-5|E3|T2"
    r = {"key": key, "group": group, "library": lib, "workload": group, "status": status, "suite_run": run,
         "round": rnd, "rounds": rounds, "epoch_seconds": seconds, "warmup_epochs": 0,
         "suite_command": "build/peers-venv/bin/python bench/peers/run_suite.py --rounds 3"}
    if status == "ok":
        r["seconds_per_epoch"] = sum(seconds) / len(seconds)
    return r


def test_round_robin_runs_every_job_once_per_round_in_turn():
    jobs = [suite.Job(k, "train", lib, "train", [], 1.0, 1.0) for k, lib in (("a", "edgeattn"), ("b", "dgl2"))]
    order = [(rnd, job.key) for rnd, job in suite.round_robin(jobs, 3)]
    assert order == [(1, "a"), (1, "b"), (2, "a"), (2, "b"), (3, "a"), (3, "b")]
    assert [(rnd, job.key) for rnd, job in suite.round_robin(jobs, 1)] == [(1, "a"), (1, "b")]


def test_rounds_run_every_job_and_must_be_positive(capsys):
    s = suite.parse_args(["--rounds", "2"])
    assert s.rounds == 2 and s.stale({"key": "x"})  # a recorded job runs again in every round
    assert not suite.parse_args([]).stale({"key": "x"})
    with pytest.raises(SystemExit):
        suite.parse_args(["--rounds", "0"])
    assert "--rounds is 0, expected at least 1" in capsys.readouterr().err


def test_each_round_pairs_a_peer_with_edgeattns_run_of_the_same_round():
    recs = []
    for rnd, (ea, dgl) in enumerate(((2.0, 16.0), (4.0, 20.0), (2.5, 15.0)), 1):
        recs += [record("edgeattn", rnd, [ea + 1.0, ea]), record("dgl2", rnd, [dgl, dgl])]
    lines = report.rounds_section(recs)
    rows = [x for x in lines if x.startswith("| train |")]
    assert len(rows) == 2  # the mean of the epochs, and the epochs after the first
    mean_row = next(x for x in rows if "| s / epoch |" in x)
    # means: edgeattn 2.5, 4.5, 3.0 against DGL 16, 20, 15: 6.40, 4.44, 5.00
    assert "| 6.40, 4.44, 5.00 | **5.00** | 4.44–6.40 |" in mean_row
    later_row = next(x for x in rows if "after the first" in x)
    assert "| 8.00, 5.00, 6.00 | **6.00** | 5.00–8.00 |" in later_row


def test_a_failed_round_is_shown_and_left_out_of_the_median():
    recs = [record("edgeattn", 1, [2.0]), record("dgl2", 1, [10.0]),
            record("edgeattn", 2, [2.0], status="timeout"), record("dgl2", 2, [12.0]),
            record("edgeattn", 3, [2.0]), record("dgl2", 3, [14.0])]
    row = next(x for x in report.rounds_section(recs) if x.startswith("| train |") and "| s / epoch |" in x)
    assert "| 5.00, —, 7.00 | **6.00** | 5.00–7.00 |" in row


def test_only_the_latest_rounds_invocation_of_a_configuration_counts():
    old = [record("edgeattn", n, [1.0], run="2026-12-06T00:00:00Z") for n in (1, 2, 3)] + \
          [record("dgl2", n, [100.0], run="2026-12-06T00:00:00Z") for n in (1, 2, 3)]
    new = [record("edgeattn", n, [2.0]) for n in (1, 2, 3)] + [record("dgl2", n, [10.0]) for n in (1, 2, 3)]
    rows = [x for x in report.rounds_section(old + new) if x.startswith("| train |") and "| s / epoch |" in x]
    assert len(rows) == 1 and "| 5.00, 5.00, 5.00 | **5.00** |" in rows[0]


def test_options_of_edgeattn_are_compared_with_each_peer_and_single_runs_give_no_table():
    recs = []
    for n in (1, 2):
        recs += [record("edgeattn", n, [4.0], group="minibatch", rounds=2),
                 record("edgeattn-metis", n, [2.0], group="minibatch", rounds=2),
                 record("dgl2", n, [20.0], group="minibatch", rounds=2)]
    rows = [x for x in report.rounds_section(recs) if x.startswith("| minibatch |")]
    assert [x.split(" | ")[4] for x in rows] == ["edgeattn", "edgeattn, --reorder metis"]
    assert "| 5.00, 5.00 |" in rows[0] and "| 10.00, 10.00 |" in rows[1]
    single = [dict(r, rounds=1) for r in recs]
    assert report.rounds_section(single) == []


def test_the_report_section_holds_the_rounds_table(tmp_path):
    recs = [record("edgeattn", n, [2.0, 2.0]) for n in (1, 2, 3)] + [record("dgl2", n, [16.0, 16.0]) for n in (1, 2, 3)]
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in recs))
    text = report.build_section(raw, tmp_path, "", tmp_path / "report.md")
    assert "### Ratios round by round" in text and "| 8.00, 8.00, 8.00 | **8.00** | 8.00–8.00 |" in text
    assert "come from `run_suite.py --rounds` invocations (3 rounds): the tables below show each job's last round" in text


def test_the_report_names_the_defaults_renumbering_and_compares_it_with_the_input_order(tmp_path):
    auto = dict(record("edgeattn", 1, [2.0, 1.8], rounds=1), reorder="dbg", reorder_seconds=0.61,
                reorder_reason="skewed degrees (mean / median degree 19.4)")
    none = dict(record("edgeattn-none", 1, [2.4, 2.0], rounds=1), reorder="none")
    dgl = record("dgl2", 1, [16.0, 15.2], rounds=1)
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in (auto, none, dgl)))
    text = report.build_section(raw, tmp_path, "", tmp_path / "report.md")
    assert "| edgeattn (--reorder auto: dbg) | 1.9 |" in text  # the default's row names its choice
    assert "| edgeattn, --reorder none | 2.2 |" in text
    assert ("the default `--reorder auto` renumbered the nodes by degree groups (dbg: skewed degrees (mean / "
            "median degree 19.4)) in 0.61 s before the first epoch") in text
    assert "0.86× the time with `--reorder none` (2.2 s) (epochs after the first: 1.8 s, 0.90×)" in text
    assert "/ `--reorder none` 7.09×" in text
    assert "| 8.21 |" in text  # DGL against the default in the table
    # Records from before --reorder auto (no "reorder" field) are the input's order: no such line.
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in (record("edgeattn", 1, [2.0, 1.8], rounds=1), dgl)))
    assert "renumbered the nodes" not in report.build_section(plain, tmp_path, "", tmp_path / "plain.md")
