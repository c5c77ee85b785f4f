"""Autotuning and the tuning database (dnnc/tune), without a GPU.

* The database: a round trip through the file; keys from the problem
  signature (one problem in two graphs is one key; another shape, stride or
  dtype is another); atomic writes that leave no temp file and keep the old
  database when a write fails; a corrupt file is a TuningError naming it;
  --import merges (the newer entry wins), --export copies.
* dnn-configure: a kernel with an entry gets its config and a ``tuned:``
  reason (shown by the plan and the manifest); a user override wins; an
  entry that no longer fits is ignored and the reason says so; ``off``.
* The JIT cache key changes when the database's entries for the arch do,
  and not for another arch's.
* The tuner, with a fake timer: the fastest candidate wins (a tie goes to
  the better ranked), a candidate that fails to compile or gives other
  results is skipped with the reason recorded, kernels already tuned,
  with one config, or named by a user override are left alone, and the
  progress callback sees every step.
* The API and the CLI: modes, ``dnnc tune`` arguments, --export/--import.

Candidates really compile (for sm_90a, on the CPU); only the timing is fake.
The GPU run is test/gpu/test_tune.py.
"""

import json
import os
import subprocess
import sys

import pytest

import dnnc
from dnnc import cache, cli, compiler
from dnnc.dialect.types import data_type as dt
from dnnc.errors import TuningError, UnsupportedError
from dnnc.tune import db, entry, signature, tuner

ARCH = "sm_90a"
GPU = "NVIDIA Test GPU"


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("DNNC_CACHE_DIR", str(directory))
    monkeypatch.delenv("DNNC_TUNING_DB", raising=False)
    monkeypatch.delenv("DNNC_DUMP_IR", raising=False)
    return directory


def matmul(name="mm", n=256, op_name=None, b_stride=None, dtype=dt.BFLOAT16):
    g = dnnc.Graph(name=name, io_data_type=dtype)
    a = g.tensor(name="a", dim=[n, n])
    b = g.tensor(name="b", dim=[n, n], stride=b_stride)
    g.matmul(a, b, name=op_name).set_output(True).set_name("y")
    return g


def softmax(name="sm", rows=64, cols=256):
    g = dnnc.Graph(name=name, io_data_type=dt.FLOAT)
    x = g.tensor(name="x", dim=[rows, cols])
    g.softmax(x, axis=1).set_output(True).set_name("y")
    return g


def kernel_config(package, name):
    """The config text (entry.config_text) kernel ``name`` was compiled with."""
    for k in package.manifest["kernels"]:
        if k["name"] == name:
            from dnnc.heuristics.config import Config

            fields = dict(k["config"])
            return entry.config_text(Config(**{f: tuple(v) if isinstance(v, list) else v
                                              for f, v in fields.items()}))
    raise AssertionError(f"no kernel {name}")


class FakeTimer:
    """Times each kernel from a table {config text: ms} (default 1.0 ms) and
    records what it timed."""

    def __init__(self, table=None, default=1.0):
        self.table, self.default, self.timed = table or {}, default, []

    def __call__(self, package, inputs):
        assert inputs and all(abs(a).min() > 0 for a in inputs), "timed on zeros"
        times = {}
        for k in package.manifest["kernels"]:
            text = kernel_config(package, k["name"])
            self.timed.append((k["name"], text))
            times[k["name"]] = self.table.get(text, self.default)
        return times


def ranked(graph):
    """{kernel name: [config text, ...]} of the heuristics' ranking."""
    return {k.name: [entry.config_text(c) for c in k.configs]
            for k in tuner.kernels(graph, ARCH)}


def tune(graph, table=None, **options):
    options.setdefault("gpu", GPU)
    options.setdefault("runner", None)
    timer = FakeTimer(table)
    report = tuner.Tuner(ARCH, timer=timer, **options).tune(graph)
    return report, timer


# -- the database file ---------------------------------------------------------

def an_entry(signature_="0" * 32, arch=ARCH, gpu=GPU, date="2026-01-01T00:00:00Z",
             config="strategy:simt-generic,block:128", ms=1.0):
    return {"arch": arch, "gpu": gpu, "signature": signature_, "config": config, "ms": ms,
            "heuristic": {"config": "strategy:simt-generic,block:256", "ms": 2.0},
            "candidates": [], "date": date, "dnnc": "0"}


def test_database_round_trip(tmp_path):
    path = tmp_path / "db.json"
    d = db.load(str(path))
    assert d.entries == {}
    key = d.put(an_entry())
    assert key == f"{ARCH}/NVIDIA_Test_GPU/{'0' * 32}"
    d.save()
    again = db.load(str(path))
    assert again.entries == {key: an_entry()}
    assert json.loads(path.read_text())["format"] == db.FORMAT
    # One entry per line, keys sorted.
    d.put(an_entry("1" * 32))
    d.save()
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and lines[1].startswith(f'"{key}"')
    assert again.find(ARCH, "0" * 32, "another GPU") == an_entry()  # any GPU of the arch
    assert again.find("sm_80", "0" * 32) is None


def test_find_prefers_this_gpu_then_the_newest(tmp_path):
    d = db.Database(str(tmp_path / "db.json"), {})
    d.put(an_entry(gpu="GPU A", date="2026-01-02T00:00:00Z",
                   config="strategy:simt-generic,block:64"))
    d.put(an_entry(gpu="GPU B", date="2026-01-01T00:00:00Z"))
    assert d.find(ARCH, "0" * 32, "GPU B")["gpu"] == "GPU B"
    assert d.find(ARCH, "0" * 32, "GPU C")["gpu"] == "GPU A"
    assert d.find(ARCH, "0" * 32)["gpu"] == "GPU A"
    assert d.has(ARCH, "0" * 32, "GPU B") and not d.has(ARCH, "0" * 32, "GPU C")


def test_writes_are_atomic(tmp_path, monkeypatch):
    path = tmp_path / "db.json"
    d = db.load(str(path))
    d.put(an_entry())
    d.save()
    before = path.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["db.json", "db.json.lock"]

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    d.put(an_entry("1" * 32))
    with pytest.raises(OSError, match="disk full"):
        d.save()
    assert path.read_bytes() == before  # the old database, whole
    assert sorted(os.listdir(tmp_path)) == ["db.json", "db.json.lock"]  # no temp left


def test_save_keeps_entries_another_process_wrote(tmp_path):
    path = str(tmp_path / "db.json")
    mine, theirs = db.load(path), db.load(path)
    theirs.put(an_entry("1" * 32))
    theirs.save()
    mine.put(an_entry("2" * 32))
    mine.save()
    assert sorted(e["signature"] for e in db.load(path).entries.values()) == ["1" * 32, "2" * 32]


@pytest.mark.parametrize("text, message", [
    ("{not json", "not JSON"),
    ("[]", "expected an object with 'format' and 'entries'"),
    ('{"format": 99, "entries": {}}', "format: expected 1, got 99"),
    ('{"format": 1, "entries": {"k": {"arch": "sm_90a"}}}', "entry 'k': field 'gpu'"),
])
def test_corrupt_database_is_a_typed_error_naming_the_file(tmp_path, text, message):
    path = tmp_path / "db.json"
    path.write_text(text)
    with pytest.raises(TuningError, match=message) as err:
        db.load(str(path))
    assert str(path) in str(err.value) and err.value.path == str(path)
    # A compile through the JIT cache reads it too (for the key) and says the same.
    with pytest.raises(TuningError, match=str(path)):
        compiler.compile_cuda(matmul(), ARCH, tuning_db=str(path))


def test_merge_keeps_the_newer_entry(tmp_path):
    d = db.Database(str(tmp_path / "a.json"), {})
    d.put(an_entry(date="2026-01-02T00:00:00Z", ms=1.0))
    old = an_entry(date="2026-01-01T00:00:00Z", ms=5.0)
    new = an_entry("1" * 32)
    key = db.entry_key(ARCH, GPU, "0" * 32)
    assert d.merge({key: old, db.entry_key(ARCH, GPU, "1" * 32): new}) == (1, 0)
    assert d.entries[key]["ms"] == 1.0
    assert d.merge({key: an_entry(date="2026-02-01T00:00:00Z", ms=0.5)}) == (0, 1)
    assert d.entries[key]["ms"] == 0.5


def test_default_location_and_env(tmp_path, cache_dir, monkeypatch):
    assert db.resolve() == str(cache_dir / "tuning.json")
    monkeypatch.setenv("DNNC_TUNING_DB", str(tmp_path / "t.json"))
    assert db.resolve() == str(tmp_path / "t.json")
    assert db.resolve(str(tmp_path / "u.json")) == str(tmp_path / "u.json")  # the argument wins
    monkeypatch.setenv("DNNC_TUNING_DB", "off")
    assert db.resolve() is None


# -- keys ----------------------------------------------------------------------

def digests(graph):
    return [k.digest for k in tuner.kernels(graph, ARCH)]


def test_one_problem_in_two_graphs_has_one_key():
    assert digests(matmul("first")) == digests(matmul("second", op_name="proj"))
    assert digests(softmax("a")) == digests(softmax("b"))


@pytest.mark.parametrize("change", [dict(n=128), dict(b_stride=[1, 256]),
                                    dict(dtype=dt.HALF)])
def test_another_shape_stride_or_dtype_is_another_key(change):
    assert digests(matmul(**change)) != digests(matmul())


def test_signature_is_built_from_the_problem_not_the_names():
    (k,) = tuner.kernels(matmul(op_name="proj", b_stride=[1, 256]), ARCH)
    sig = k.signature
    assert "kernel" not in sig and "arch" not in sig
    assert "mm" not in json.dumps(sig) and "proj" not in json.dumps(sig)
    assert sig["anchor"] == "matmul" and sig["ops"] == ["matmul"]
    assert [t["strides"] for t in sig["inputs"]] == [[256, 1], [1, 256]]
    assert sig["outputs"][0] == {"shape": [256, 256], "dtype": "bf16", "strides": [256, 1]}
    assert k.digest == signature.digest(sig) and len(k.digest) == 32


# -- the tuner -----------------------------------------------------------------

def test_the_fastest_candidate_wins_and_is_recorded(cache_dir):
    configs = ranked(matmul())["mm_k0_matmul"]
    assert len(configs) > 2
    report, timer = tune(matmul(), {configs[0]: 2.0, configs[1]: 0.5, configs[2]: 1.0})
    (result,) = report.results
    assert [c.ms for c in result.candidates][:3] == [2.0, 0.5, 1.0]
    assert result.winner.text == configs[1]
    assert len(result.candidates) == tuner.DEFAULT_TOP == len(timer.timed)
    (e,) = db.load(str(cache_dir / "tuning.json")).entries.values()
    assert (e["config"], e["ms"], e["heuristic"]) == (configs[1], 0.5,
                                                      {"config": configs[0], "ms": 2.0})
    assert e["gpu"] == GPU and e["arch"] == ARCH and e["kernel"] == "mm_k0_matmul"
    assert [c["config"] for c in e["candidates"]] == configs[:4]
    assert e["dnnc"] == dnnc.__version__ and e["date"].endswith("Z")
    assert e["summary"] == "matmul: 256x256xbf16, 256x256xbf16 -> 256x256xbf16"
    # Every candidate was compiled with its own config.
    assert [t for _, t in timer.timed] == configs[:4]


def test_a_tie_goes_to_the_better_ranked():
    report, _ = tune(matmul(), top=3)
    assert report.results[0].winner is report.results[0].candidates[0]


def test_failing_and_wrong_candidates_are_skipped_with_the_reason():
    configs = ranked(matmul())["mm_k0_matmul"]

    def compile_(source, arch, config):
        if config.endswith(configs[1]):
            raise dnnc.LoweringError("the tile does not fit")
        return tuner.compile_candidate(source, arch, config)

    calls = []

    def runner(package, inputs):
        calls.append(kernel_config(package, "mm_k0_matmul"))
        return [inputs[0] * (2 if len(calls) == 2 else 1)]  # the third config (second run)

    report, _ = tune(matmul(), {configs[3]: 0.1}, compile=compile_, runner=runner,
                     top=4)
    c = report.results[0].candidates
    assert c[1].skipped == "LoweringError: the tile does not fit" and c[1].ms is None
    assert c[2].skipped.startswith("UnsupportedError: wrong results: output 'y'")
    assert report.results[0].winner is c[3]
    recorded = db.load(db.resolve()).entries
    (e,) = recorded.values()
    assert e["candidates"][1] == {"config": configs[1],
                                  "skipped": "LoweringError: the tile does not fit"}


def test_no_candidate_ran_records_nothing():
    def compile_(source, arch, config):
        raise dnnc.LoweringError("no")

    report, _ = tune(softmax(), compile=compile_)
    assert report.results[0].winner is None
    assert not os.path.exists(db.resolve())


def test_progress_reports_every_step():
    events = []
    ticks = iter(range(1000))
    report, _ = tune(softmax(), top=2, progress=events.append, clock=lambda: next(ticks))
    steps = [(p.kernel, p.kernels, p.candidate, p.candidates, p.phase) for p in events]
    assert steps == [(1, 1, 1, 2, "compile"), (1, 1, 1, 2, "timed"),
                     (1, 1, 2, 2, "compile"), (1, 1, 2, 2, "timed")]
    assert events[0].name == "sm_k0_softmax" and events[1].ms == 1.0
    assert [p.elapsed for p in events] == sorted(p.elapsed for p in events)
    assert report.elapsed > events[-1].elapsed


def test_kernels_left_alone():
    tune(matmul())
    g = dnnc.Graph(name="two", io_data_type=dt.BFLOAT16)
    a, b = g.tensor(name="a", dim=[256, 256]), g.tensor(name="b", dim=[256, 256])
    g.matmul(a, b).set_output(True).set_name("y")
    g.matmul(b, a).set_output(True).set_name("z")
    g.softmax(g.tensor(name="x", dim=[64, 256], data_type=dt.FLOAT), axis=1) \
        .set_output(True).set_name("s")
    t = tuner.Tuner(ARCH, gpu=GPU, config="two_k2_softmax=block:64")
    todo, skipped = t.plan(g)
    assert todo == []
    assert skipped["two_k0_matmul"].startswith("in the tuning database")
    assert skipped["two_k1_matmul"] == "the same problem as two_k0_matmul" or \
        skipped["two_k1_matmul"].startswith("in the tuning database")
    assert skipped["two_k2_softmax"] == "user override"
    # Another GPU of the arch has no entry of its own: it tunes.
    todo, _ = tuner.Tuner(ARCH, gpu="Another GPU").plan(matmul())
    assert [k.name for k in todo] == ["mm_k0_matmul"]
    todo, _ = tuner.Tuner(ARCH, gpu=GPU, retune=True).plan(matmul())
    assert [k.name for k in todo] == ["mm_k0_matmul"]


def test_random_inputs_are_never_zero():
    from dnnc.tune import measure

    manifest = {"inputs": [{"name": "a", "dims": [64, 64], "dtype": "bf16"},
                           {"name": "m", "dims": [8], "dtype": "i1"},
                           {"name": "p", "dims": [8], "dtype": "f32"}]}
    a, m, p = measure.random_inputs(manifest)
    assert str(a.dtype) == "bfloat16" and (abs(a.astype("float32")) >= 0.25).all()
    assert m.dtype == bool and (p < 0).any() and (abs(p) >= 0.5).all()
    assert (measure.random_inputs(manifest, positive=True)[2] > 0).all()


def test_outputs_mismatch():
    import numpy as np

    from dnnc.tune import measure

    manifest = {"outputs": [{"name": "y", "dtype": "f32"}]}
    want = [np.ones((4, 4), np.float32)]
    assert measure.mismatch(manifest, [want[0] + 1e-5], want) is None
    assert "output 'y': max |difference| 0.5" in measure.mismatch(manifest, [want[0] * 1.5],
                                                                  want)


# -- compiles that use the database -------------------------------------------

def tuned_matmul():
    """Tune matmul() so that its second ranked config wins; return the configs."""
    configs = ranked(matmul())["mm_k0_matmul"]
    tune(matmul(), {configs[0]: 0.21, configs[1]: 0.19})
    return configs


def test_a_later_compile_uses_the_entry_and_says_so():
    configs = tuned_matmul()
    package = compiler.compile_cuda(matmul("other"), ARCH, gpu=GPU)
    assert kernel_config(package, "other_k0_matmul") == configs[1]
    (k,) = package.manifest["kernels"]
    assert k["reason"].startswith(f"tuned: {entry.config_of(configs[1])} 0.19 ms vs 0.21 ms "
                                  f"heuristic (tuning DB: {GPU}, 4 candidates, ")
    assert "heuristics: ranked first: " + str(entry.config_of(configs[0])) in k["reason"]
    assert "tuned: " in package.describe()
    # Any GPU of the arch (ahead of time: none known) uses it too.
    package = compiler.compile_cuda(matmul("other"), ARCH)
    assert kernel_config(package, "other_k0_matmul") == configs[1]


def test_configured_stage_shows_the_tuned_reason():
    tuned_matmul()
    module = compiler.compile_cuda(matmul(), ARCH, stop_after="configured")
    assert 'dnn.config_reason = "tuned: ' in str(module)


def test_heuristics_choice_confirmed():
    configs = ranked(softmax())["sm_k0_softmax"]
    tune(softmax(), {configs[0]: 0.01})
    (k,) = compiler.compile_cuda(softmax(), ARCH).manifest["kernels"]
    assert k["reason"].startswith("tuned: the heuristics' choice was the fastest, 0.01 ms")


def test_a_user_override_wins_over_the_entry():
    configs = tuned_matmul()
    override = "mm_k0_matmul=" + configs[2]
    package = compiler.compile_cuda(matmul(), ARCH, config=override)
    assert kernel_config(package, "mm_k0_matmul") == configs[2]
    assert package.manifest["kernels"][0]["reason"].startswith("user override")


def test_off_and_other_databases():
    configs = tuned_matmul()
    package = compiler.compile_cuda(matmul(), ARCH, tuning_db="off")
    assert kernel_config(package, "mm_k0_matmul") == configs[0]
    assert not package.manifest["kernels"][0]["reason"].startswith("tuned")


def test_a_path_with_spaces_and_commas(tmp_path):
    path = str(tmp_path / "my dir, (tuned)" / "t.json")
    configs = ranked(matmul())["mm_k0_matmul"]
    tune(matmul(), {configs[1]: 0.1}, db=path)
    package = compiler.compile_cuda(matmul(), ARCH, tuning_db=path)
    assert kernel_config(package, "mm_k0_matmul") == configs[1]


def test_an_entry_that_no_longer_fits_is_ignored(cache_dir):
    tuned_matmul()
    path = db.resolve()
    d = db.load(path)
    for e in d.entries.values():
        e["config"] = "strategy:simt-generic,tile:4"  # simt-generic has no tile
    db.export(path, d.entries)
    package = compiler.compile_cuda(matmul(), ARCH)
    reason = package.manifest["kernels"][0]["reason"]
    assert reason.startswith("tuning DB entry ignored (config override: strategy "
                             "'simt-generic' has no field 'tile'")


# -- the JIT cache key ---------------------------------------------------------

def test_cache_key_follows_the_entries_of_the_arch(tmp_path):
    def key(arch=ARCH, **options):
        return cache.key_for_graph(matmul(), compiler.Options(target="cuda", arch=arch,
                                                              **options))

    before, before_80 = key(), key("sm_80")
    assert compiler.Options(target="cuda", arch=ARCH).key_fields()["tuning"] is None
    configs = tuned_matmul()
    after = key()
    assert after != before and key("sm_80") == before_80
    assert key(tuning_db="off") == before
    # The entry changes: so does the key.
    tune(matmul(), {configs[2]: 0.01}, retune=True)
    assert key() not in (before, after)
    # Where the database is does not matter, what is in it does.
    copy = str(tmp_path / "copy.json")
    db.export(copy, db.load(db.resolve()).entries)
    assert key(tuning_db=copy) == key()


def test_a_compile_after_tuning_is_no_stale_hit():
    first = compiler.compile_cuda(matmul(), ARCH)
    configs = tuned_matmul()
    assert kernel_config(first, "mm_k0_matmul") == configs[0]
    second = compiler.compile_cuda(matmul(), ARCH)
    assert kernel_config(second, "mm_k0_matmul") == configs[1]
    assert cache.default().stats.hits == 0


LOOKUP_WITH_A_DATABASE = """
import sys
import dnnc
from dnnc import compiler
g = dnnc.Graph(name="main", io_data_type=dnnc.data_type.FLOAT)
x = g.tensor(name="x", dim=[4, 8])
g.relu(x).set_output(True)
key, data = compiler.lookup(g, "sm_90a")
print(sorted(m for m in sys.modules if m == "mlir" or m.startswith("mlir.")))
"""


def test_the_key_reads_the_database_without_mlir(cache_dir):
    d = db.load(db.resolve())
    d.put(an_entry())
    d.save()
    run = subprocess.run([sys.executable, "-c", LOOKUP_WITH_A_DATABASE], capture_output=True,
                         text=True, check=True)
    assert run.stdout.strip() == "[]"


# -- the API and the CLI -------------------------------------------------------

def test_modes():
    with pytest.raises(UnsupportedError, match="mode 'fast': expected one of heuristic, "
                                               "autotune"):
        matmul().compile(target="cuda", arch=ARCH, mode="fast")
    with pytest.raises(UnsupportedError, match="mode 'fast': expected one of"):
        softmax().compile(target="cpu", mode="fast")
    with pytest.raises(UnsupportedError, match="mode 'autotune' times kernels on a GPU"):
        softmax().compile(target="cpu", mode="autotune")
    with pytest.raises(UnsupportedError, match="option top applies to mode 'autotune'"):
        matmul().compile(target="cuda", arch=ARCH, top=2)
    with pytest.raises(UnsupportedError, match="option tuning_db='x' applies to target 'cuda'"):
        compiler.Options(target="cpu", tuning_db="x")


def test_jit_autotune_tunes_then_compiles_with_the_winner(monkeypatch):
    configs = ranked(matmul())["mm_k0_matmul"]
    timer = FakeTimer({configs[1]: 0.1})
    real = tuner.autotune
    seen = {}

    def autotune(graph, arch, **options):
        seen.update(options)
        return real(graph, arch, timer=timer, runner=None, **{**options, "gpu": GPU})

    monkeypatch.setattr(tuner, "autotune", autotune)
    exe = matmul().compile(target="cuda", arch=ARCH, mode="autotune", top=2)
    assert seen["top"] == 2 and len(timer.timed) == 2
    assert exe.plan[0].reason.startswith("tuned: ")
    assert exe.plan[0].config_text.startswith("tc-sm90")
    # Tuned: a second autotune times nothing.
    matmul().compile(target="cuda", arch=ARCH, mode="autotune")
    assert len(timer.timed) == 2


def test_cli_arguments():
    p = cli._parser()
    args = p.parse_args(["tune", "g.mlir", "--arch", "sm_80", "--top", "8", "--db", "t.json",
                         "--retune", "--import", "a.json", "--export", "b.json"])
    assert (args.input, args.arch, args.top, args.db, args.retune, args.import_,
            args.export) == ("g.mlir", "sm_80", 8, "t.json", True, "a.json", "b.json")
    assert p.parse_args(["tune", "g.mlir"]).top == 4
    with pytest.raises(SystemExit):
        p.parse_args(["tune", "g.mlir", "--top", "0"])


def test_cli_tune_needs_something_to_do(capsys):
    assert cli.main(["tune"]) == 2
    assert "expected a graph file, --import FILE or --export FILE" in capsys.readouterr().err


def test_cli_export_and_import(tmp_path, capsys):
    tuned_matmul()
    exported = tmp_path / "out" / "tuned.json"
    assert cli.main(["tune", "--export", str(exported)]) == 0
    assert "exported 1 entries" in capsys.readouterr().out
    other = tmp_path / "other.json"
    assert cli.main(["tune", "--db", str(other), "--import", str(exported)]) == 0
    assert "1 new, 0 replaced" in capsys.readouterr().out
    assert db.load(str(other)).entries == db.load(db.resolve()).entries
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert cli.main(["tune", "--import", str(bad)]) == 1
    assert f"tuning database {bad}: not JSON" in capsys.readouterr().err


GRAPH_PY = """
import dnnc

def build():
    g = dnnc.Graph(name="sm", io_data_type=dnnc.data_type.FLOAT)
    x = g.tensor(name="x", dim=[64, 256])
    g.softmax(x, axis=1).set_output(True).set_name("y")
    return g

def main():
    raise SystemExit("main must not run")

if __name__ == "__main__":
    main()
"""


def test_cli_tunes_a_python_graph(tmp_path, capsys, monkeypatch):
    src = tmp_path / "graph.py"
    src.write_text(GRAPH_PY)
    real = tuner.autotune
    monkeypatch.setattr(tuner, "autotune", lambda g, arch, **o: real(
        g, arch, timer=FakeTimer(), runner=None, **{**o, "gpu": GPU}))
    assert cli.main(["tune", str(src), "--arch", ARCH, "--top", "2"]) == 0
    captured = capsys.readouterr()
    assert "kernel 1/1 sm_k0_softmax" in captured.err and "candidate 2/2" in captured.err
    assert "sm_k0_softmax  softmax: 64x256xf32 -> 64x256xf32" in captured.out
    assert "the heuristics' choice is the fastest" in captured.out
    assert f"tuned 1 kernel on {GPU} in " in captured.out
    # Tuned already: nothing to time again.
    assert cli.main(["tune", str(src), "--arch", ARCH]) == 0
    assert "sm_k0_softmax  not tuned: in the tuning database" in capsys.readouterr().out


def test_cli_compile_takes_a_tuning_db(tmp_path, capsys):
    configs = tuned_matmul()
    src = tmp_path / "mm.mlir"
    src.write_text(matmul().to_mlir())
    assert cli.main(["compile", str(src), "--arch", ARCH]) == 0
    assert "tuned: " in capsys.readouterr().out
    assert cli.main(["compile", str(src), "--arch", ARCH, "--tuning-db", "off"]) == 0
    assert "tuned: " not in capsys.readouterr().out
    assert cli.main(["compile", str(src), "--tuning-db", "off"]) == 2
    assert configs


def test_convolutions_are_tuned_over_their_tensor_core_configs():
    """A channels-last bf16 convolution is a kernel the tuner times: its
    candidates are tc-sm90's implicit-GEMM tiles, best first, then the
    fallbacks."""
    g = dnnc.Graph(name="cv", io_data_type=dt.BFLOAT16)
    n, c, h, k = 8, 256, 14, 256
    x = g.tensor(name="x", dim=[n, c, h, h], stride=[h * h * c, 1, h * c, c])
    w = g.tensor(name="w", dim=[k, c, 3, 3], stride=[9 * c, 1, 3 * c, c])
    g.conv_fprop(x, w, padding=1).set_output(True).set_name("y")
    todo, skipped = tuner.Tuner(ARCH, gpu="Another GPU", retune=True).plan(g)
    assert [kernel.name for kernel in todo] == ["cv_k0_conv_fprop"], skipped
    strategies = [config.strategy for config in todo[0].configs]
    assert strategies[0] == "tc-sm90" and strategies.count("tc-sm90") >= 2, strategies
    assert "simt-generic" in strategies, strategies
