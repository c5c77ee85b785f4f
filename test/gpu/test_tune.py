"""Autotuning on a real GPU: ``Graph.compile(target="cuda", mode="autotune")``
times each kernel's top configs, records the fastest in the tuning database,
and returns an Executable that computes what PyTorch does; a later compile of
the same problem (another graph, plain mode) takes the database's config and
says so in its reason.

Two graphs: a 2048 x 2048 x 2048 bf16 matmul (tc-sm90 tile widths, or the
sm_80 strategies) and an f32 softmax over rows of 4096 (simt-reduce and
simt-generic blocks). Outputs are compared with torch in float64 at the
tolerances of test_jit.py; the database and the JIT cache are the test's own.

Needs the MLIR bindings, PyTorch with CUDA and a GPU; the folder's conftest
marks every test ``gpu`` and skips them all without a GPU.
"""

import math

import pytest

try:
    import mlir  # noqa: F401
except ImportError as err:
    pytest.skip(f"the MLIR bindings are not installed ({err}): the JIT compiles on this "
                "machine", allow_module_level=True)

torch = pytest.importorskip("torch")

import dnnc  # noqa: E402
from dnnc.dialect.types import data_type as dt  # noqa: E402
from dnnc.tune import db  # noqa: E402

N = 2048
ROWS, COLS = 512, 4096


def matmul(name="mm"):
    g = dnnc.Graph(name=name, io_data_type=dt.BFLOAT16)
    a = g.tensor(name="a", dim=[N, N])
    b = g.tensor(name="b", dim=[N, N])
    g.matmul(a, b).set_output(True).set_name("y")
    return g


def matmul_case(gen):
    a = torch.randn(N, N, generator=gen, dtype=torch.float64).to(torch.bfloat16)
    b = (torch.randn(N, N, generator=gen, dtype=torch.float64) / math.sqrt(N)).to(torch.bfloat16)
    return {"a": a, "b": b}, lambda a, b: a @ b, (1.6e-2, 1.6e-2)


def softmax(name="sm"):
    g = dnnc.Graph(name=name, io_data_type=dt.FLOAT)
    x = g.tensor(name="x", dim=[ROWS, COLS])
    g.softmax(x, axis=1).set_output(True).set_name("y")
    return g


def softmax_case(gen):
    x = torch.randn(ROWS, COLS, generator=gen, dtype=torch.float64).to(torch.float32) * 3
    return {"x": x}, lambda x: torch.softmax(x, dim=-1), (1e-5, 1e-6)


CASES = {"matmul_2048_bf16": (matmul, matmul_case), "softmax_f32": (softmax, softmax_case)}


@pytest.fixture
def tuning(tmp_path, monkeypatch):
    """A JIT cache and a tuning database of this test's own."""
    monkeypatch.setenv("DNNC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DNNC_TUNING_DB", str(tmp_path / "tuning.json"))
    monkeypatch.delenv("DNNC_DUMP_IR", raising=False)
    return str(tmp_path / "tuning.json")


def _check(exe, inputs, reference, tolerance):
    got = exe(**inputs)
    torch.cuda.synchronize()
    want = reference(*(t.double() for t in inputs.values()))
    rtol, atol = tolerance
    torch.testing.assert_close(got.double(), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", list(CASES))
def test_autotune_records_and_reuses_the_winner(case, tuning):
    if not torch.cuda.is_available():
        pytest.skip("PyTorch was built without CUDA")
    build, make = CASES[case]
    gen = torch.Generator().manual_seed(0)
    host, reference, tolerance = make(gen)
    inputs = {k: v.to("cuda") for k, v in host.items()}

    steps = []
    exe = build().compile(target="cuda", mode="autotune", progress=steps.append)
    assert steps and steps[-1].phase in ("timed", "skipped")
    entries = db.load(tuning).entries
    assert len(entries) == 1, entries
    (entry,) = entries.values()
    timed = [c for c in entry["candidates"] if "ms" in c]
    assert len(entry["candidates"]) >= 2 and timed, entry["candidates"]
    assert entry["ms"] == min(c["ms"] for c in timed) > 0
    assert exe.plan[0].reason.startswith("tuned: "), exe.plan
    _check(exe, inputs, reference, tolerance)

    # Another graph of the same problem, plain mode: the database's config.
    again = build(name="again").compile(target="cuda")
    assert again.plan[0].reason.startswith("tuned: "), again.plan
    assert again.plan[0].config_text == exe.plan[0].config_text
    assert db.load(tuning).entries == entries  # nothing tuned again
    _check(again, inputs, reference, tolerance)
    print(f"\n{case}: {entry['config']} {entry['ms']:.4g} ms, heuristic "
          f"{entry['heuristic'].get('ms')} ms, on {entry['gpu']}")
