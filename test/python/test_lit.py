"""The FileCheck suite under test/lit passes (dialect round trip, invalid IR,
one lit test per pass).

lit has no ``__main__`` module, so it runs as ``python -c`` calling
``lit.main.main``, with the Python running pytest: lit.cfg.py uses that same
interpreter for ``dnnc-opt``.
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIT_DIR = os.path.join(ROOT, "test", "lit")
RUN_LIT = "import sys, lit.main; sys.argv[0] = 'lit'; sys.exit(lit.main.main())"


def test_lit_suite():
    pytest.importorskip("lit", reason="lit is not installed: pip install -e .[test]")
    # -s: one line for the summary; -v: the commands and output of a failing test.
    proc = subprocess.run([sys.executable, "-c", RUN_LIT, "-sv", LIT_DIR], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"lit failed:\n{proc.stdout}\n{proc.stderr}"
