"""docs/ops.md is generated from the op definitions and must match them."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
