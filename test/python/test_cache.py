"""The JIT cache (dnnc/cache.py) and the CUDA entry points above it
(dnnc.compiler.compile_cuda, Graph.compile(target="cuda")), without a GPU.

* The key changes with each thing it hashes (graph text, options that change
  the output, arch, dnnc version, compiler sources, MLIR version) and is the
  same in every process (a Graph's key: test_cache_key.py).
* A hit returns the bytes that were stored; writes are atomic (a writer that
  dies before its replace leaves a temp file that readers never open);
  truncated, corrupt and foreign entries are misses that get rewritten.
* Four processes compiling one graph at once all succeed and leave one entry.
* A hit in a fresh process imports no MLIR (nor importlib.metadata), from
  the cache read to the runtime's Executable: its time is printed (run with
  -s). The MLIR bindings' version in the key comes from a directory name.
* Graph.compile(target="cuda") with no GPU raises a clear UnsupportedError.

Every test points DNNC_CACHE_DIR at its own tmp_path.
"""

import hashlib
import io
import json
import multiprocessing
import os
import subprocess
import sys
import zipfile

import pytest

import dnnc
from dnnc import artifact, cache, compiler, env, graph_mlir
from dnnc.dialect.types import data_type as dt
from dnnc.errors import UnsupportedError

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("DNNC_CACHE_DIR", str(directory))
    monkeypatch.delenv("DNNC_DUMP_IR", raising=False)
    return directory


def small_graph(n=16, name="main"):
    """matmul + relu, f32: compiles for the GPU in a fraction of a second."""
    g = dnnc.Graph(name=name, io_data_type=dt.FLOAT)
    x = g.tensor(name="x", dim=[4, 8])
    w = g.tensor(name="w", dim=[8, n])
    g.relu(g.matmul(x, w)).set_output(True)
    return g


def fake_package_bytes(key=None, graph="g"):
    """A valid .dnnpkg with no kernels: for cache tests that need no compiler."""
    manifest = {"format_version": artifact.FORMAT_VERSION, "dnnc_version": "0",
                "mlir_version": "0", "arch": "sm_80", "graph": graph, "inputs": [],
                "outputs": [], "workspace_bytes": 0, "buffers": [], "kernels": []}
    return cache.package_bytes(artifact.Package(manifest, "// ptx\n", "module {}\n"), key)


def cuda_opts(arch="sm_80", **kw):
    return compiler.Options(target="cuda", arch=arch, **kw)


def entries(directory):
    """The entries and temp files of a cache directory (not its memo of the
    sources' digest, cache.SOURCE_MEMO_DIR)."""
    if not os.path.isdir(directory):
        return []
    return sorted(n for n in os.listdir(directory) if n != cache.SOURCE_MEMO_DIR)


KEY_A, KEY_B = "a" * 64, "b" * 64

# -----------------------------------------------------------------------------
# The key


def test_key_changes_with_what_it_hashes(monkeypatch):
    text = graph_mlir.to_mlir(small_graph())
    base = cache.key_for(text, cuda_opts())
    assert len(base) == 64 and base == cache.key_for(text, cuda_opts())
    changed = {
        "graph text": cache.key_for(graph_mlir.to_mlir(small_graph(n=32)), cuda_opts()),
        "graph name": cache.key_for(graph_mlir.to_mlir(small_graph(name="other")), cuda_opts()),
        "arch": cache.key_for(text, cuda_opts("sm_90a")),
        "options": cache.key_for(text, cuda_opts(stop_after="gpu")),
    }
    with monkeypatch.context() as m:
        m.setattr(cache, "source_digest", lambda: "0" * 64)
        changed["sources"] = cache.key_for(text, cuda_opts())
    with monkeypatch.context() as m:
        m.setattr(cache, "mlir_bindings_version", lambda: "0.0.0")
        changed["mlir"] = cache.key_for(text, cuda_opts())
    with monkeypatch.context() as m:
        m.setattr(dnnc.version, "__version__", "999")
        changed["dnnc version"] = cache.key_for(text, cuda_opts())
    for what, key in changed.items():
        assert key != base, f"the key ignores the {what}"
    assert len(set(changed.values())) == len(changed)
    # Where IR is dumped does not change what is compiled.
    assert cache.key_for(text, cuda_opts(dump_ir="/tmp/x")) == base


def test_options_hash_is_the_same_in_every_process():
    opts = cuda_opts("sm_90a")
    fields = opts.key_fields()
    assert fields["target"] == "cuda" and fields["arch"] == "sm_90a" and "dump_ir" not in fields
    assert opts.hash() == cuda_opts("sm_90a", dump_ir="d").hash() != cuda_opts().hash()
    script = ("from dnnc import cache, compiler; o = compiler.Options(target='cuda', "
              "arch='sm_90a'); print(o.hash(), cache.key_for('module {}', o))")
    outs = set()
    for seed in ("1", "2"):  # str hashes are salted per process; the key must not be
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONHASHSEED=seed), check=True)
        outs.add(run.stdout.strip())
    assert outs == {f"{opts.hash()} {cache.key_for('module {}', opts)}"}


def test_bindings_version_comes_from_the_dist_info_name(tmp_path, monkeypatch):
    import importlib.metadata

    assert cache.mlir_bindings_version() == importlib.metadata.version(cache.BINDINGS_DIST)
    lookup = cache.mlir_bindings_version.__wrapped__  # past the per-process cache
    site = tmp_path / "site"
    site.mkdir()
    for name in ("xtc_mlir_python_bindings-1.2.3.dist-info",
                 "xtc_mlir_python_bindings_extra-9.0.dist-info",  # another package
                 "xtc_mlir_python_bindings-1.2.2.egg-info", "numpy-2.0.0.dist-info"):
        (site / name).mkdir()
    monkeypatch.setattr(cache._bootstrap, "mlir_spec", lambda: None)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "absent"), str(site)])
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "from metadata")
    assert lookup() == "1.2.3"
    # Two versions side by side (a stale install): importlib.metadata decides.
    (site / "XTC_mlir.python_bindings-1.2.4.dist-info").mkdir()
    assert sorted(cache._dist_info_versions(str(site), "xtc_mlir_python_bindings")) == [
        "1.2.3", "1.2.4"]
    assert lookup() == "from metadata"


def test_source_digest_covers_every_py_file(tmp_path):
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__pycache__").mkdir()
    (root / "a.py").write_text("A = 1\n")
    (root / "sub" / "b.py").write_text("B = 2\n")
    base = cache.digest_sources(str(root))
    (root / "notes.txt").write_text("not source")
    (root / "__pycache__" / "a.py").write_text("compiled")
    assert cache.digest_sources(str(root)) == base
    (root / "sub" / "b.py").write_text("B = 3\n")
    edited = cache.digest_sources(str(root))
    assert edited != base
    os.rename(root / "sub" / "b.py", root / "sub" / "c.py")
    assert cache.digest_sources(str(root)) not in (base, edited)
    # dnnc's own digest is computed once per process.
    assert cache.source_digest() is cache.source_digest()


def test_source_digest_memo_follows_every_write(tmp_path, monkeypatch):
    """The memo of the sources' digest is used while no file changes, and
    never after one does: an edit of the same size within the same
    modification time (set back with utime), a new file, a removed one."""
    root, memos = tmp_path / "pkg", tmp_path / "memos"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text("A = 1\n")
    (root / "sub" / "b.py").write_text("B = 2\n")
    # Files written a moment ago: no memo (a write in the same clock tick
    # would not change the signature).
    digest = cache.memoized_digest(str(root), str(memos))
    assert digest == cache.digest_sources(str(root)) and not memos.exists()
    monkeypatch.setattr(cache, "SOURCE_SETTLE_NS", 0)   # the tree has settled
    assert cache.memoized_digest(str(root), str(memos)) == digest
    assert os.listdir(memos) == [cache.source_signature(str(root))]

    real_digest = cache.digest_sources
    monkeypatch.setattr(cache, "digest_sources", lambda r: pytest.fail("read the sources"))
    assert cache.memoized_digest(str(root), str(memos)) == digest   # the memo, no reading
    monkeypatch.setattr(cache, "digest_sources", real_digest)

    def changed(edit):
        before = cache.source_signature(str(root))
        edit()
        assert cache.source_signature(str(root)) != before
        again = cache.memoized_digest(str(root), str(memos))
        assert again == cache.digest_sources(str(root))
        return again

    b = root / "sub" / "b.py"
    st = os.stat(b)

    def same_size_same_mtime():
        b.write_text("B = 3\n")
        os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert changed(same_size_same_mtime) != digest
    assert changed(lambda: (root / "c.py").write_text("C = 1\n")) != digest
    assert changed(lambda: os.unlink(root / "c.py")) != digest
    # A memo that is not a digest is a miss, computed again and rewritten.
    (memos / cache.source_signature(str(root))).write_text("garbage")
    assert cache.memoized_digest(str(root), str(memos)) == cache.digest_sources(str(root))
    # Only the newest memos are kept.
    for i in range(cache.SOURCE_MEMOS_KEPT + 3):
        (root / "a.py").write_text(f"A = {i}\n")
        cache.memoized_digest(str(root), str(memos))
    assert len(os.listdir(memos)) == cache.SOURCE_MEMOS_KEPT


def test_cache_dir_default(monkeypatch, tmp_path):
    monkeypatch.delenv("DNNC_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert env.cache_dir() == os.path.join(str(tmp_path), ".cache", "dnnc")
    monkeypatch.setenv("DNNC_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert env.cache_dir() == str(tmp_path / "elsewhere")


# -----------------------------------------------------------------------------
# Entries


def test_get_put_round_trip(cache_dir):
    assert cache.get(KEY_A) is None
    data = fake_package_bytes(KEY_A)
    path = cache.put(KEY_A, data)
    assert path == os.path.join(str(cache_dir), KEY_A + ".dnnpkg")
    assert cache.get(KEY_A) == data
    assert entries(cache_dir) == [KEY_A + ".dnnpkg"]
    # Bytes that do not record the key get it recorded.
    cache.put(KEY_B, fake_package_bytes())
    got = cache.get(KEY_B)
    assert got is not None and cache.recorded_key(got) == KEY_B
    stats = cache.default().stats
    assert (stats.hits, stats.misses, stats.writes) == (2, 1, 2)


def test_keys_must_be_hex_digests():
    for bad in ("../" + "a" * 61, "A" * 64, "a" * 63, None):
        with pytest.raises(ValueError, match="64 lowercase hex digits"):
            cache.get(bad)


def test_package_bytes_are_deterministic():
    assert fake_package_bytes(KEY_A) == fake_package_bytes(KEY_A) != fake_package_bytes(KEY_B)


CRASH_BEFORE_REPLACE = """
import os, sys
sys.path.insert(0, {here!r})
from test_cache import fake_package_bytes
from dnnc import cache
os.replace = lambda src, dst: os._exit(9)   # die after the write, before the rename
cache.put({key!r}, fake_package_bytes({key!r}))
"""


def test_writer_dying_before_replace_leaves_only_an_ignored_temp(cache_dir):
    script = CRASH_BEFORE_REPLACE.format(here=HERE, key=KEY_A)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == 9, run.stderr
    (temp,) = entries(cache_dir)
    assert temp.startswith("." + KEY_A[:16]) and temp.endswith(".tmp")
    # The temp holds the whole entry, yet no reader opens it.
    assert cache.recorded_key((cache_dir / temp).read_bytes()) == KEY_A
    assert cache.get(KEY_A) is None
    data = fake_package_bytes(KEY_A)
    cache.put(KEY_A, data)
    assert cache.get(KEY_A) == data
    assert cache.default().prune_temps(max_age=0) == 1  # stale temps are swept, entries kept
    assert entries(cache_dir) == [KEY_A + ".dnnpkg"]


def test_failed_write_removes_its_temp(cache_dir, monkeypatch):
    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        cache.put(KEY_A, fake_package_bytes(KEY_A))
    assert entries(cache_dir) == []


def _damaged(data):
    """Ways an entry goes bad, each with its bytes."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = z.getinfo(artifact.MANIFEST)
    # Past the 30-byte local header and the name: the member's compressed data.
    flipped = bytearray(data)
    flipped[info.header_offset + 30 + len(info.filename) + info.compress_size // 2] ^= 0xFF
    return {
        "empty": b"",
        "truncated": data[: len(data) // 2],
        "missing its end": data[:-10],
        "corrupt": bytes(flipped),
        "not a zip": b"PK\x03\x04 garbage" * 10,
        "foreign": fake_package_bytes(KEY_B),
        "no key recorded": fake_package_bytes(None),
    }


@pytest.mark.parametrize("how", list(_damaged(fake_package_bytes(KEY_A))))
def test_damaged_entries_are_misses(cache_dir, how):
    good = fake_package_bytes(KEY_A)
    cache_dir.mkdir()
    (cache_dir / (KEY_A + ".dnnpkg")).write_bytes(_damaged(good)[how])
    assert cache.get(KEY_A) is None
    assert cache.default().stats.bad == 1
    cache.put(KEY_A, good)
    assert cache.get(KEY_A) == good


# -----------------------------------------------------------------------------
# compile_cuda and Graph.compile through the cache


def test_hit_returns_identical_bytes(cache_dir):
    first = compiler.compile_cuda(small_graph(), "sm_80")
    stats = cache.default().stats
    assert (stats.hits, stats.misses, stats.writes) == (0, 1, 1)
    key = first.manifest[cache.KEY_FIELD]
    assert key == cache.key_for_graph(small_graph(), cuda_opts())
    stored = (cache_dir / (key + ".dnnpkg")).read_bytes()
    second = compiler.compile_cuda(small_graph(), "sm_80")
    assert (stats.hits, stats.writes) == (1, 1)
    assert second == first
    assert cache.package_bytes(second) == cache.package_bytes(first) == stored
    # A module is keyed by its text, not by the Graph's serialization: its own
    # entry, which the same graph given as text hits.
    module = compiler.compile_cuda(graph_mlir.to_module(small_graph()), "sm_80")
    assert module.manifest[cache.KEY_FIELD] == \
        cache.key_for(graph_mlir.to_mlir(small_graph()), cuda_opts()) != key
    compiler.compile_cuda(graph_mlir.to_mlir(small_graph()), "sm_80")
    assert (stats.hits, stats.writes) == (2, 2)
    assert module.ptx == first.ptx and module.manifest["kernels"] == first.manifest["kernels"]
    # Another arch is another entry; cache=False reads and writes nothing.
    compiler.compile_cuda(small_graph(), "sm_90a")
    compiler.compile_cuda(small_graph(), "sm_90a", cache=False)
    assert (stats.hits, stats.writes) == (2, 3)
    assert len(entries(cache_dir)) == 3


def test_damaged_entry_is_recompiled_and_rewritten(cache_dir):
    key = compiler.compile_cuda(small_graph(), "sm_80").manifest[cache.KEY_FIELD]
    path = cache_dir / (key + ".dnnpkg")
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 3])
    assert compiler.compile_cuda(small_graph(), "sm_80").manifest[cache.KEY_FIELD] == key
    # A foreign entry: another graph's package under this key.
    other = compiler.compile_cuda(small_graph(n=32), "sm_80").manifest[cache.KEY_FIELD]
    path.write_bytes((cache_dir / (other + ".dnnpkg")).read_bytes())
    assert compiler.compile_cuda(small_graph(), "sm_80").manifest[cache.KEY_FIELD] == key
    stats = cache.default().stats
    assert (stats.hits, stats.bad, stats.writes) == (0, 2, 4)
    assert path.read_bytes() == good


def test_jit_hit_is_read_and_checked_once(cache_dir, monkeypatch):
    """A JIT hit (compiler.compile_or_load, which jit and dnnc.frontend use)
    is read by the runtime's reader alone: the cache's own check
    (recorded_key) does not run before it, and each cubin's sha256 is taken
    once (it was taken twice, by the cache and by the runtime's load)."""
    import dnnc_runtime
    from dnnc_runtime import artifact as runtime_artifact

    exe, data = compiler.compile_or_load(small_graph(), "sm_80")   # compiles
    assert isinstance(exe, dnnc_runtime.Executable)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        cubins = [z.read(n) for n in z.namelist() if n.endswith(".cubin")]
    reads, digested = [], []
    real_read, real_sha256 = runtime_artifact.read, hashlib.sha256

    def read(source):
        reads.append(source)
        return real_read(source)

    def sha256(*args, **kwargs):
        digested.extend(a for a in args if any(a == c for c in cubins))
        return real_sha256(*args, **kwargs)

    def no_second_check(data):
        raise AssertionError("a JIT hit was checked by the cache before the runtime's reader")

    monkeypatch.setattr(runtime_artifact, "read", read)
    monkeypatch.setattr(hashlib, "sha256", sha256)
    monkeypatch.setattr(cache, "recorded_key", no_second_check)
    hit, again = compiler.compile_or_load(small_graph(), "sm_80")
    assert again == data and reads == [data]
    assert len(digested) == len(cubins)
    assert cache.default().stats.hits == 1
    assert [t.name for t in hit.inputs] == [t.name for t in exe.inputs]
    assert hit.plan == exe.plan and hit.artifact.cubins == exe.artifact.cubins


def _with_member_changed(data, suffix):
    """``data`` with one byte flipped in the middle of the member ending in
    ``suffix``, rewritten as a valid zip (its CRC matches the new bytes)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as z, zipfile.ZipFile(out, "w") as w:
        for info in z.infolist():
            member = z.read(info)
            if info.filename.endswith(suffix):
                member = bytearray(member)
                member[len(member) // 2] ^= 0xFF
                member = bytes(member)
            w.writestr(info, member)
    return out.getvalue()


def test_jit_damaged_entries_are_misses_compiled_again(cache_dir):
    """What the runtime's reader refuses in an entry (a truncated zip, a
    cubin whose sha256 is not the manifest's, another graph's package) is a
    miss for the JIT: compiled again, and the entry rewritten."""
    _, good = compiler.compile_or_load(small_graph(), "sm_80")
    key = cache.key_for_graph(small_graph(), cuda_opts())
    path = cache_dir / (key + ".dnnpkg")
    assert path.read_bytes() == good
    _, other = compiler.compile_or_load(small_graph(n=32), "sm_80")
    damaged = {"truncated": good[: len(good) // 3], "foreign": other}
    with zipfile.ZipFile(io.BytesIO(good)) as z:
        if any(n.endswith(".cubin") for n in z.namelist()):
            damaged["cubin digest"] = _with_member_changed(good, ".cubin")
    for how, data in damaged.items():
        path.write_bytes(data)
        assert cache.recorded_key(data) != key, how    # the cache's own check agrees
        exe, again = compiler.compile_or_load(small_graph(), "sm_80")
        assert again == good and path.read_bytes() == good, how
        assert [t.name for t in exe.inputs] == ["x", "w"]
    stats = cache.default().stats
    assert (stats.hits, stats.bad) == (0, len(damaged))


def test_dump_ir_compiles_even_on_a_hit(tmp_path):
    compiler.compile_cuda(small_graph(), "sm_80")
    dump = tmp_path / "ir"
    compiler.compile_cuda(small_graph(), "sm_80", dump_ir=str(dump))
    assert cache.default().stats.hits == 0
    assert (dump / "main.ptx").exists()


def test_unwritable_cache_warns_and_still_compiles(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("DNNC_CACHE_DIR", str(tmp_path / "file" / "cache"))
    with pytest.warns(RuntimeWarning, match="dnnc cache: cannot write"):
        package = compiler.compile_cuda(small_graph(), "sm_80")
    assert package.kernels


def test_graph_compile_cuda_with_arch_returns_an_executable(cache_dir):
    import dnnc_runtime

    exe = small_graph().compile(target="cuda", arch="sm_80")
    assert isinstance(exe, dnnc_runtime.Executable) and exe.arch == "sm_80"
    assert [t.name for t in exe.inputs] == ["x", "w"]
    small_graph().compile(target="cuda", arch="sm_80")
    small_graph().compile(target="cuda", arch="sm_80", cache=False)
    stats = cache.default().stats
    assert (stats.hits, stats.writes) == (1, 1)
    module = small_graph().compile(target="cuda", arch="sm_80", stop_after="gpu")
    assert "gpu.module" in str(module)
    with pytest.raises(UnsupportedError, match="applies to target 'cuda'"):
        small_graph().compile(target="cpu", arch="sm_80")


# -----------------------------------------------------------------------------
# Processes


def _compile_in_child(directory, barrier, results):
    os.environ["DNNC_CACHE_DIR"] = directory
    try:
        g = small_graph()
        barrier.wait(timeout=120)
        package = compiler.compile_cuda(g, "sm_80")
        results.put(("ok", cache.package_bytes(package)))
    except BaseException as err:  # noqa: BLE001 - reported to the parent
        results.put(("error", repr(err)))


def test_concurrent_compiles_of_one_graph(cache_dir):
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_compile_in_child, args=(str(cache_dir), barrier, results))
             for _ in range(4)]
    for p in procs:
        p.start()
    try:
        outcomes = [results.get(timeout=240) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=60)
    assert [status for status, _ in outcomes] == ["ok"] * 4, outcomes
    assert len({data for _, data in outcomes}) == 1
    (entry,) = entries(cache_dir)  # one entry, no temp left behind
    key = entry[:-len(".dnnpkg")]
    assert cache.recorded_key((cache_dir / entry).read_bytes()) == key
    assert cache.get(key) == outcomes[0][1]


# Builds small_graph() itself: importing this file would import the MLIR
# bindings, which a hit must not need. The first run fills the cache.
FRESH_HIT = """
import hashlib, json, sys, time
metadata_at_start = "importlib.metadata" in sys.modules
start = time.perf_counter()
import dnnc
from dnnc import cache, compiler
imported = time.perf_counter()
g = dnnc.Graph(name="main", io_data_type=dnnc.data_type.FLOAT)
x = g.tensor(name="x", dim=[4, 8])
w = g.tensor(name="w", dim=[8, 16])
g.relu(g.matmul(x, w)).set_output(True)
built = time.perf_counter()
key, data = compiler.lookup(g, "sm_80")
read = time.perf_counter()
if data is None:
    compiler.compile_cuda(g, "sm_80")
    print(json.dumps({"hit": False}))
    sys.exit()
mlir = lambda: sorted(m for m in sys.modules if m == "mlir" or m.startswith("mlir."))
after_lookup = mlir()
metadata_imported = "importlib.metadata" in sys.modules and not metadata_at_start
exe = g.compile(target="cuda", arch="sm_80")  # the JIT: lookup, then dnnc_runtime.load
loaded = time.perf_counter()
print(json.dumps({"hit": True, "key": key, "sha256": hashlib.sha256(data).hexdigest(),
                  "mlir_after_lookup": after_lookup, "mlir_after_jit": mlir(),
                  "metadata_imported": metadata_imported,
                  "hits": cache.default().stats.hits, "executable": type(exe).__name__,
                  "import": imported - start, "build": built - imported,
                  "lookup": read - built, "jit": loaded - read}))
"""


def test_hit_in_a_fresh_process_imports_no_mlir(cache_dir):
    def fresh():
        run = subprocess.run([sys.executable, "-c", FRESH_HIT],
                             capture_output=True, text=True, check=True)
        return json.loads(run.stdout.strip().splitlines()[-1])

    assert fresh() == {"hit": False}
    result = fresh()
    assert result["hit"], "the second process missed the entry the first one wrote"
    entry = (cache_dir / (result["key"] + ".dnnpkg")).read_bytes()
    assert result["sha256"] == hashlib.sha256(entry).hexdigest()
    assert result["mlir_after_lookup"] == [], "a cache hit imported the MLIR bindings"
    assert result["mlir_after_jit"] == [], "Graph.compile on a hit imported the MLIR bindings"
    # importlib.metadata alone costs tens of milliseconds to import.
    assert not result["metadata_imported"], "a cache hit imported importlib.metadata"
    assert result["hits"] == 2 and result["executable"] == "Executable"
    ms = {k: result[k] * 1e3 for k in ("import", "build", "lookup", "jit")}
    print(f"\ncache hit in a fresh process: import dnnc+compiler {ms['import']:.1f} ms, "
          f"build {ms['build']:.1f} ms, key+read {ms['lookup']:.1f} ms "
          f"(to the bytes {ms['import'] + ms['build'] + ms['lookup']:.1f} ms); "
          f"Graph.compile again with the runtime's load {ms['jit']:.1f} ms")
    assert result["lookup"] < 0.5


# -----------------------------------------------------------------------------
# Finding the GPU


class FakeDriver:
    """Just enough of cuda.bindings.driver to report one device's capability."""

    class CUdevice_attribute:
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = "major"
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = "minor"

    def __init__(self, capability, count=1):
        self.capability, self.count = capability, count

    def cuDeviceGetCount(self):
        return self.count

    def cuDeviceGet(self, index):
        return index

    def cuDeviceGetAttribute(self, attr, device):
        return self.capability[0 if attr == "major" else 1]


def fake_gpu(monkeypatch, capability, count=1):
    from dnnc_runtime import cuda

    fake = FakeDriver(capability, count)
    monkeypatch.setattr(cuda, "init", lambda: None)
    monkeypatch.setattr(cuda, "driver", lambda: fake)
    monkeypatch.setattr(cuda, "current_device_index", lambda: None)
    monkeypatch.setattr(cuda, "call", lambda fn, *args: fn(*args))


@pytest.mark.parametrize("capability, arch", [((9, 0), "sm_90a"), ((8, 0), "sm_80"),
                                              ((8, 6), "sm_80"), ((8, 9), "sm_80")])
def test_detect_arch(monkeypatch, capability, arch):
    fake_gpu(monkeypatch, capability)
    assert compiler.detect_arch() == arch


@pytest.mark.parametrize("capability", [(7, 5), (10, 0), (12, 0)])
def test_unsupported_gpu_names_the_supported_archs(monkeypatch, capability):
    fake_gpu(monkeypatch, capability)
    major, minor = capability
    with pytest.raises(UnsupportedError, match=rf"compute capability {major}\.{minor}: "
                                               r"expected 8\.x .*sm_80, sm_90a"):
        small_graph().compile(target="cuda")


NO_GPU = "no CUDA device found: pass arch= to compile ahead of time, or use target='cpu'"


def test_no_gpu_is_a_clear_error(monkeypatch):
    from dnnc_runtime import DeviceError, cuda

    def no_driver():
        raise DeviceError("the NVIDIA driver could not be loaded: libcuda.so not found")

    monkeypatch.setattr(cuda, "init", no_driver)
    with pytest.raises(UnsupportedError, match=NO_GPU.replace("(", r"\(").replace(")", r"\)")):
        small_graph().compile(target="cuda")
    fake_gpu(monkeypatch, (9, 0), count=0)
    with pytest.raises(UnsupportedError, match="no CUDA device found"):
        small_graph().compile(target="cuda")


def test_no_gpu_on_this_machine_is_a_clear_error():
    from dnnc_runtime import cuda

    if cuda.device_count() > 0:
        pytest.skip("this machine has a GPU")
    with pytest.raises(UnsupportedError, match="no CUDA device found: pass arch="):
        small_graph().compile(target="cuda")
    assert compiler.compile_cuda(small_graph(), "sm_90a").arch == "sm_90a"  # AOT needs none
