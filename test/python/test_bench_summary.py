"""bench/summary.py on synthetic bench/run.py results: each group's geometric
mean and range of the dnnc / PyTorch ratios, its torch.compile mean, the run
a row comes from (the last file that measured the group, or the files a
``FILE:GROUPS`` argument names), the commit from the file or its name, and
the markdown it prints. Also: every group of bench/cases.py names its PyTorch
side, and bench/run.py's default commit is None outside a git repository."""

import json
import math

import pytest

import benchutil


summary = benchutil.load("bench_summary", "summary.py")
cases = benchutil.load("bench_cases", "cases.py")


def row(case, group, dnnc_ms, torch_ms, **extra):
    return {"case": case, "group": group, "dnnc_ms": dnnc_ms, "torch_ms": torch_ms,
            "ratio": dnnc_ms / torch_ms, **extra}


def report(rows, date="2026-01-02", commit=None, errors=()):
    out = {"device": "NVIDIA H200", "torch": "2.11", "copy_tbs": 4.1, "arch": "sm_90a",
           "date": date, "rows": list(rows), "errors": list(errors)}
    if commit:
        out["commit"] = commit
    return out


OLD = report([row("a", "pointwise", 1.0, 2.0), row("b", "pointwise", 4.0, 2.0),
              row("m", "matmul", 3.0, 1.0)], date="2026-01-01", commit="aaaaaaa")
NEW = report([row("m1", "matmul", 1.0, 1.0, compile_ms=2.0),
              row("m2", "matmul", 4.0, 1.0),
              row("m3", "matmul", 2.0, 1.0, compile_ms=0.5)],
             date="2026-01-02", commit="bbbbbbb",
             errors=[{"case": "x", "group": "matmul", "stage": "dnnc", "error": "boom"},
                     {"case": "c", "group": "conv", "stage": "package", "error": "not built"}])


def test_geomean():
    assert summary.geomean([0.5, 2.0]) == pytest.approx(1.0)
    assert summary.geomean([1.0, 2.0, 4.0]) == pytest.approx(2.0)
    assert summary.geomean([3.0]) == pytest.approx(3.0)


def test_group_row():
    r = summary.group_row(NEW, "matmul")
    # ratios 1, 4, 2: geomean 2; against torch.compile 0.5 and 4: geomean sqrt(2)
    assert r["geomean"] == pytest.approx(2.0)
    assert (r["low"], r["high"], r["cases"]) == (1.0, 4.0, 3)
    assert r["compile_geomean"] == pytest.approx(math.sqrt(2.0))
    assert r["compile_cases"] == 2
    assert (r["device"], r["date"], r["commit"]) == ("NVIDIA H200", "2026-01-02", "bbbbbbb")
    assert r["backend"] == "cuBLAS"
    assert summary.group_row(NEW, "conv") is None  # error rows only


def test_later_runs_replace_earlier_ones_per_group():
    rows = summary.summarize([(OLD, None, "old.json"), (NEW, None, "new.json")])
    assert [r["group"] for r in rows] == ["pointwise", "matmul"]  # cases.GROUPS order
    pointwise, matmul = rows
    assert (pointwise["commit"], pointwise["geomean"]) == ("aaaaaaa", pytest.approx(1.0))
    assert (pointwise["low"], pointwise["high"]) == (0.5, 2.0)
    assert (matmul["commit"], matmul["geomean"]) == ("bbbbbbb", pytest.approx(2.0))
    # The other order: the old run's matmul (one case, ratio 3) wins.
    rows = summary.summarize([(NEW, None, "new.json"), (OLD, None, "old.json")])
    assert rows[1]["geomean"] == pytest.approx(3.0) and rows[1]["cases"] == 1


def test_groups_named_per_file():
    rows = summary.summarize([(OLD, None, "old.json"), (NEW, {"pointwise"}, "new.json")])
    assert {r["group"]: r["commit"] for r in rows} == {"pointwise": "aaaaaaa",
                                                       "matmul": "aaaaaaa"}
    assert summary._argument("x.json:matmul,tensor") == ("x.json", {"matmul", "tensor"})
    assert summary._argument("x.json") == ("x.json", None)


def test_commit_from_the_file_name():
    bare = report([row("a", "pointwise", 1.0, 1.0)])
    assert summary.commit_of(bare, "bench/results/h200-2026-11-22-50dc0ee-all-cases.json") \
        == "50dc0ee"
    assert summary.commit_of(bare, "results-h200-2026-11-21-final.json") is None
    assert summary.commit_of(OLD, "h200-2026-11-22-50dc0ee-all-cases.json") == "aaaaaaa"


def test_markdown():
    lines = summary.markdown(summary.summarize([(OLD, None, "o"), (NEW, None, "n")]))
    assert lines[0].startswith("| group | PyTorch side |")
    assert lines[1] == "|" + "---|" * len(summary.COLUMNS)
    assert lines[2] == ("| pointwise | PyTorch's own kernels | 1.00 | 0.50–2.00 | 2 | — "
                        "| NVIDIA H200 | 2026-01-01 | aaaaaaa |")
    assert lines[3] == ("| matmul | cuBLAS | 2.00 | 1.00–4.00 | 3 | 1.41 (2) "
                        "| NVIDIA H200 | 2026-01-02 | bbbbbbb |")
    assert [summary.ratio_text(x) for x in (0.0456, 0.77, 1.024, 23.14, 553.2)] == \
        ["0.046", "0.77", "1.02", "23.1", "553"]


def test_main_prints_the_table(tmp_path, capsys):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(OLD))
    new.write_text(json.dumps(NEW))
    assert summary.main([str(old), f"{new}:matmul"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and "| matmul | cuBLAS | 2.00 |" in out[3]


def test_every_group_names_its_pytorch_side():
    assert set(cases.BACKENDS) == set(cases.GROUPS)


def test_run_commit_outside_git(tmp_path):
    runner = benchutil.load("bench_run", "run.py")
    assert runner.head_commit(str(tmp_path)) is None
