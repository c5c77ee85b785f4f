"""The fuzzer's folders (tools/fuzz build) run under pytest on a GPU: set
``DNNC_FUZZ_PACKAGES`` to one or more folders (separated by ``:``); each
folder's failures fail its test, with their repro lines. Needs only
dnnc_runtime, torch and NumPy, like ``tools/fuzz run``."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

FOLDERS = [f for f in os.environ.get("DNNC_FUZZ_PACKAGES", "").split(":") if f]


@pytest.mark.gpu
@pytest.mark.skipif(not FOLDERS, reason="DNNC_FUZZ_PACKAGES names no folder of tools/fuzz build")
@pytest.mark.parametrize("folder", FOLDERS or [None])
def test_fuzz_folder_passes(folder):
    from tools.fuzzing.runner import run

    lines = []
    rows = run(folder, log=lines.append)
    print("\n".join(lines))
    failed = [line for line in lines if line.startswith("FAIL")]
    assert not any(r["failed"] for r in rows.values()), "\n".join(failed[:40])
