"""The summary table of docs/performance.md, from bench/run.py results files.

    python bench/summary.py bench/results/RUN.json [MORE.json ...]
    python bench/summary.py OLD.json NEW.json:matmul,tensor

Prints one markdown row per group of bench/cases.py: the PyTorch side it is
compared with (``cases.BACKENDS``), the geometric mean over the group's
measured cases of dnnc's time divided by PyTorch's (the rows' ``ratio``;
below 1, dnnc is faster) and the range of those ratios, the number of cases,
the geometric mean against ``torch.compile`` over the cases that also time
it (``compile_ms``), and the run's device, date and commit.

Each group's row comes from one run: the last file named that measured the
group, so list files oldest first. ``FILE:GROUP,GROUP`` takes only those
groups from FILE. Error rows (cases that could not be measured) are left out.
The commit is the file's ``commit`` (``bench/run.py run --commit``); files
written before that field existed get it from their name where the name
follows ``bench/results/``'s ``device-date-commit-what.json``.
"""

import argparse
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from cases import BACKENDS, GROUPS  # noqa: E402  (after the path is set)

# device-YYYY-MM-DD-commit-what.json
_NAME = re.compile(r"^[a-z0-9]+-\d{4}-\d{2}-\d{2}-([0-9a-f]{7,40})-")

COLUMNS = ("group", "PyTorch side", "dnnc / PyTorch (geomean)", "range", "cases",
           "dnnc / torch.compile", "device", "date", "commit")


def geomean(values):
    """The geometric mean of positive ``values``."""
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def commit_of(report, path=None):
    """The run's commit: the report's own, else the one its file name gives,
    else None."""
    if report.get("commit"):
        return report["commit"]
    match = _NAME.match(os.path.basename(path or ""))
    return match.group(1) if match else None


def group_row(report, group, path=None):
    """The summary of ``group`` in one run (a bench/run.py report), or None
    where the run measured none of its cases."""
    rows = [r for r in report["rows"] if r.get("group") == group and "error" not in r]
    if not rows:
        return None
    ratios = [r["ratio"] for r in rows]
    compiled = [r["dnnc_ms"] / r["compile_ms"] for r in rows if r.get("compile_ms")]
    return {"group": group, "backend": BACKENDS.get(group, "?"),
            "geomean": geomean(ratios), "low": min(ratios), "high": max(ratios),
            "cases": len(rows), "compile_geomean": geomean(compiled) if compiled else None,
            "compile_cases": len(compiled), "device": report.get("device"),
            "date": report.get("date"), "commit": commit_of(report, path), "path": path}


def summarize(runs):
    """Summary rows, in ``GROUPS`` order (then any other group by name).
    ``runs``: ``(report, groups, path)`` tuples, oldest first; ``groups``
    limits what a run may give (None: every group it measured). A later run
    replaces an earlier one's row for a group."""
    chosen = {}
    for report, groups, path in runs:
        measured = {r.get("group") for r in report["rows"] if "error" not in r}
        for group in measured:
            if groups is not None and group not in groups:
                continue
            row = group_row(report, group, path)
            if row is not None:
                chosen[group] = row
    order = [g for g in GROUPS if g in chosen] + sorted(set(chosen) - set(GROUPS))
    return [chosen[g] for g in order]


def ratio_text(x):
    """A ratio as the table prints it: 0.046, 0.77, 1.02, 23.1, 553."""
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 0.1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def markdown(rows):
    """The table's lines: header, separator, one line per summary row."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        compiled = (f"{ratio_text(r['compile_geomean'])} ({r['compile_cases']})"
                    if r["compile_geomean"] is not None else "—")
        cells = [r["group"], r["backend"], ratio_text(r["geomean"]),
                 f"{ratio_text(r['low'])}–{ratio_text(r['high'])}", str(r["cases"]), compiled,
                 r["device"] or "?", r["date"] or "?", r["commit"] or "?"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _argument(text):
    """``FILE`` or ``FILE:GROUP,GROUP`` -> (path, groups or None)."""
    path, sep, groups = text.rpartition(":")
    if sep and not os.path.exists(text) and groups and "/" not in groups:
        return path, {g.strip() for g in groups.split(",") if g.strip()}
    return text, None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", metavar="FILE[:GROUPS]",
                   help="bench/run.py --json files, oldest first; ':g1,g2' takes only "
                        "those groups from a file")
    args = p.parse_args(argv)
    runs = []
    for text in args.results:
        path, groups = _argument(text)
        with open(path) as f:
            runs.append((json.load(f), groups, path))
    for line in markdown(summarize(runs)):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
