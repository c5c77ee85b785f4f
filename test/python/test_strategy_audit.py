"""The strategy audit (tools/strategy_audit.py): every kernel of the
benchmark cases and the GPU test cases compiled for sm_90a to the gpu
stage; none of a benchmark case on simt-generic, and none of a GPU test
case there unless an allow-list entry covers it. docs/performance.md holds
the allow-list as the tool prints it."""

import os
import re
import sys

import pytest

from benchutil import ROOT

# On sys.path, not loaded from its file: the audit's worker processes import
# it by name.
sys.path.insert(0, os.path.join(ROOT, "tools"))
import strategy_audit as audit  # noqa: E402


@pytest.fixture(scope="module")
def rows():
    return audit.audit(jobs=min(2, os.cpu_count() or 1))


def _show(rows):
    return "\n".join(f"{r.case}: {r.kernel.name} [{r.kernel.anchor}] {r.kernel.reason[:200]}"
                     for r in rows[:20])


def test_benchmark_cases_are_off_simt_generic(rows):
    generic = [r for r in rows if r.source == "bench" and r.kernel.strategy == audit.GENERIC]
    assert not generic, _show(generic)


def test_every_simt_generic_kernel_is_on_the_allow_list(rows):
    failing = [r for r in rows if r.failing]
    assert not failing, f"{len(failing)} simt-generic kernels outside the allow-list:\n" + \
        _show(failing)


def test_every_allow_list_entry_covers_a_kernel(rows):
    assert not audit.unused(rows), [a.name for a in audit.unused(rows)]


def test_the_audit_saw_every_case(rows):
    assert {r.case for r in rows} == {c.name for _, c in audit.cases()}


def test_an_entry_covers_only_its_anchors_and_reason():
    from dnnc.plan import KernelStrategy

    f32 = KernelStrategy("k", "conv_fprop", audit.GENERIC,
                         "no faster strategy planned (conv_fprop: 7x33x127 (M x N x K) f32, an "
                         "f32 multiply (the tensor cores take f32 as tf32: ...)); block 128", 1)
    entry = next(a for a in audit.ALLOWED if a.name == "exact f32 convolution or attention")
    assert entry.covers(f32)
    assert not entry.covers(KernelStrategy("k", "layernorm", audit.GENERIC, f32.reason, 1))
    assert not entry.covers(KernelStrategy("k", "conv_fprop", audit.GENERIC,
                                           "no faster strategy planned (conv_fprop: bf16)", 1))
    # An exact f32 matmul runs on simt-gemm: one on simt-generic is no longer
    # allowed.
    assert not entry.covers(KernelStrategy("k", "matmul", audit.GENERIC, f32.reason, 1))


def test_the_docs_list_the_allow_list():
    with open(os.path.join(ROOT, "docs", "performance.md"), encoding="utf-8") as f:
        text = f.read()
    assert audit.markdown() in text, "docs/performance.md: paste tools/audit-strategies " \
        "--markdown under 'Code-generation strategies'"
    assert re.search(r"tools/audit-strategies", text)
