"""docs/ops.md is generated from the op definitions and must match them.
docs/performance.md and docs/performance-history.md cite files that exist:
every results file under bench/results/ they name is there, every file there
is cited by docs/performance.md, the results files the history names that
have been removed say so, and their relative links resolve. The README's
documentation table lists every document under docs/."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs")
RESULTS = os.path.join(ROOT, "bench", "results")
PERFORMANCE = ("performance.md", "performance-history.md")


def _read(name):
    with open(os.path.join(DOCS, name)) as f:
        return f.read()


def test_op_reference_is_current():
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_op_docs.py"),
                           "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_op_is_documented():
    import dnnc.dialect as dialect

    text = open(os.path.join(ROOT, "docs", "ops.md")).read()
    for d in dialect.all_ops():
        assert f"### `dnn.{d.name}`" in text
        assert d.doc, f"dnn.{d.name} has no docstring"


def test_cited_results_exist():
    for name in PERFORMANCE:
        for path in re.findall(r"bench/results/[\w.-]+\.json", _read(name)):
            assert os.path.isfile(os.path.join(ROOT, path)), f"docs/{name} cites {path}"


def test_every_result_is_cited():
    text = _read("performance.md")
    kept = os.listdir(RESULTS)
    assert kept
    for f in kept:
        assert f"bench/results/{f}" in text, f"docs/performance.md does not cite bench/results/{f}"


def test_removed_results_say_so():
    # Results files from before bench/results/ are in git history only.
    for name in PERFORMANCE:
        text = _read(name)
        for m in re.finditer(r"bench/results-[\w.-]+\.json", text):
            assert not os.path.exists(os.path.join(ROOT, m.group(0)))
            assert "removed; see git history at" in text[m.end():m.end() + 200], \
                f"docs/{name} cites {m.group(0)} without saying it was removed"


def test_relative_links_resolve():
    for name in PERFORMANCE:
        for target in re.findall(r"\]\(([^)\s]+)\)", _read(name)):
            path = target.split("#")[0]
            if not path or "://" in path:
                continue
            assert os.path.exists(os.path.join(DOCS, path)), f"docs/{name} links to {target}"


def test_readme_lists_every_document():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    listed = set(re.findall(r"\]\(docs/([\w.-]+\.md)\)", readme.split("## Documentation", 1)[1]))
    documents = {n for n in os.listdir(DOCS) if n.endswith(".md")}
    assert documents - listed == set(), f"README's Documentation lacks {sorted(documents - listed)}"
    assert listed - documents == set(), f"README lists missing documents {sorted(listed - documents)}"
