"""tools/plot-rows on a synthetic bench/run.py results file: the SVG parses,
holds a line per (op, side) with its points in row-length order, the copy
bandwidth, axis labels, a legend and the title's device, date and commit;
and the names bench/cases.py gives its row-length sweep are the ones the
tool reads."""

import importlib.machinery
import importlib.util
import json
import os
import sys
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SVG = "{http://www.w3.org/2000/svg}"


def _load(name, path):
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


plot = _load("plot_rows", os.path.join(ROOT, "tools", "plot-rows"))

OPS = ("softmax", "layernorm", "rmsnorm")
LENGTHS = [1 << k for k in range(7, 19)]


def results():
    """Rows as bench/run.py writes them, in no particular order, with other
    cases, an error row and a point PyTorch did not measure among them."""
    rows = [{"case": "softmax 16384x8192 bf16", "group": "softmax", "dnnc_tbs": 4.0,
             "torch_tbs": 1.0}]
    for i, op in enumerate(OPS):
        for n in reversed(LENGTHS):
            r = (1 << 27) // n
            rows.append({"case": f"{op} row sweep 2^{n.bit_length() - 1:02d} {r}x{n} bf16",
                         "group": "softmax" if op == "softmax" else "norm",
                         "dnnc_tbs": 3.0 + 0.1 * i + n / 2 ** 20, "torch_tbs": 2.0 - 0.1 * i})
    rows[-1].pop("torch_tbs")
    return {"device": "NVIDIA H200", "torch": "2.11.0+cu130", "copy_tbs": 4.13,
            "date": "2026-11-22", "arch": "sm_90a", "rows": rows,
            "errors": [{"case": "rmsnorm row sweep 2^19 256x524288 bf16", "stage": "dnnc",
                        "error": "boom"}]}


def parse(text):
    return ET.fromstring(text)


def texts(root):
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def test_lines_points_labels_and_title():
    root = parse(plot.render(results(), commit="1a2b3c4"))
    polylines = list(root.iter(f"{SVG}polyline"))
    assert len(polylines) == 2 * len(OPS)
    names = [p.find(f"{SVG}title").text for p in polylines]
    assert names == [f"{op} {side}" for op in OPS for side in ("dnnc", "PyTorch")]
    for p, name in zip(polylines, names):
        xs = [float(pt.split(",")[0]) for pt in p.get("points").split()]
        assert xs == sorted(xs)
        # rmsnorm's PyTorch line lacks the point PyTorch did not measure.
        assert len(xs) == len(LENGTHS) - (name == "rmsnorm PyTorch")
    # PyTorch dashed, dnnc solid.
    assert [p.get("stroke-dasharray") is not None for p in polylines] == [False, True] * 3
    words = texts(root)
    title = words[0]
    assert "NVIDIA H200" in title and "2026-11-22" in title and "1a2b3c4" in title
    assert "row length (elements, log2 scale)" in words
    assert "achieved TB/s" in words
    assert {"128", "1K", "256K"} <= set(words)
    assert "device copy 4.13 TB/s" in words
    assert {f"{op} {side}" for op in OPS for side in ("dnnc", "PyTorch")} <= set(words)


def test_copy_line_is_inside_the_axis():
    root = parse(plot.render(results()))
    copy = [ln for ln in root.iter(f"{SVG}line") if ln.get("stroke") == "#888888"]
    assert copy, "no copy-bandwidth line"
    y = float(copy[0].get("y1"))
    assert plot.TOP < y < plot.HEIGHT - plot.BOTTOM


def test_date_option_and_missing_commit():
    title = texts(parse(plot.render(results(), date="2027-01-02")))[0]
    assert "2027-01-02" in title and "commit" not in title


def test_nothing_to_plot():
    report = results()
    report["rows"] = report["rows"][:1]
    with pytest.raises(plot.PlotError, match="row sweep"):
        plot.render(report)


def test_main_writes_the_svg(tmp_path):
    src = tmp_path / "rows.json"
    src.write_text(json.dumps(results()))
    out = tmp_path / "rows.svg"
    assert plot.main([str(src), "-o", str(out), "--commit", "abc"]) == 0
    parse(out.read_text())
    src.write_text(json.dumps({"rows": []}))
    assert plot.main([str(src), "-o", str(tmp_path / "none.svg")]) == 2


def test_bench_sweep_names_are_read():
    bench = os.path.join(ROOT, "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    cases = _load("bench_cases_rows", os.path.join(bench, "cases.py"))
    sweep = [c for c in cases.CASES if " row sweep " in c.name]
    assert len(sweep) == 3 * len(cases.SWEEP_LENGTHS)
    for c in sweep:
        m = plot.SWEEP.match(c.name)
        assert m, c.name
        assert int(m["rows"]) * int(m["n"]) == cases.SWEEP
