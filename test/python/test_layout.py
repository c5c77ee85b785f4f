"""The tests mirror the source: every pass has a lit test named after its file,
every op is round-tripped and rejected in the dialect's lit tests, and every op
has a NumPy reference."""

import os
import re

import pytest

import dnnc.dialect as dialect
from dnnc import reference

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PASSES_DIR = os.path.join(ROOT, "dnnc", "passes")
LIT_DIR = os.path.join(ROOT, "test", "lit")
OP_NAMES = sorted(d.name for d in dialect.all_ops())


def _pass_modules():
    return sorted(f[:-3] for f in os.listdir(PASSES_DIR)
                  if f.endswith(".py") and not f.startswith("_"))


def _read(*parts):
    with open(os.path.join(LIT_DIR, *parts)) as f:
        return f.read()


@pytest.mark.parametrize("module", _pass_modules())
def test_pass_has_lit_test(module):
    path = os.path.join(LIT_DIR, "passes", f"{module}.mlir")
    assert os.path.exists(path), f"dnnc/passes/{module}.py has no lit test {path}"


def test_every_op_round_trips():
    text = _read("dialect", "ops.mlir")
    missing = [n for n in OP_NAMES if f'"dnn.{n}"(' not in text]
    assert not missing, f"ops never written in test/lit/dialect/ops.mlir: {missing}"


def test_every_op_has_invalid_case():
    # An op counts once invalid.mlir checks one of its own errors, not merely uses it.
    checked = set(re.findall(r"// CHECK: .*error: 'dnn\.(\w+)' op", _read("dialect", "invalid.mlir")))
    missing = [n for n in OP_NAMES if n not in checked]
    assert not missing, f"ops with no checked error in test/lit/dialect/invalid.mlir: {missing}"


def test_every_op_has_reference():
    implemented = reference.supported_ops()
    missing = [n for n in OP_NAMES if n not in implemented]
    assert not missing, f"ops with no entry in dnnc.reference: {missing}"
    stale = sorted(implemented - set(OP_NAMES))
    assert not stale, f"dnnc.reference implements ops the dialect lacks: {stale}"
