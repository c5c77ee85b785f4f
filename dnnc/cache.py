"""The JIT cache: compiled ``.dnnpkg`` artifacts on disk, one file per key.

    key = cache.key_for_graph(graph, options)   # sha256 hex digest
    data = cache.get(key)                        # bytes, or None on a miss
    if data is None:
        data = cache.package_bytes(compile(...), key)
        cache.put(key, data)

An entry is a whole package, so it holds the cubin beside the PTX where the
compile made one (dnnc/targets/cuda.py): a hit in a new process hands the
runtime machine code, and the driver compiles nothing.

The key hashes everything that decides the artifact: the graph, the compile
options that change the output (``Options.key_fields``), the arch, dnnc's
version, a digest of the compiler's own sources (every ``.py`` under
``dnnc/``, so an edited pass invalidates old entries without a version bump)
and the version of the MLIR bindings. A ``dnnc.Graph`` stands in the key as
``Graph.serialize()``, canonical JSON made without MLIR, so that a hit needs
no MLIR at all (``key_for_graph``); a dnn module stands in it as the text the
MLIR bindings print (``key_for``). The two forms never give one key, so one
graph passed once as a Graph and once as a module has two entries.

An entry is ``<dir>/<key>.dnnpkg``; its manifest records the key under
``cache_key``. Writers write a temp file (``.<key prefix>-*.tmp``, a name
``get`` never opens) in the same directory, fsync it and ``os.replace`` it
onto the entry (dnnc/atomic_file.py): readers see the old file or the new
one, never a part, and processes compiling one key at once are safe (the
last replace wins; every writer wrote the same bytes). A truncated, corrupt or foreign entry (not a
zip, a bad CRC, a manifest that does not validate, another key recorded) is
a miss: the caller recompiles and the put overwrites it.

The directory is ``$DNNC_CACHE_DIR``, else ``~/.cache/dnnc`` (dnnc.env).
Deleting it is always safe. This module never imports MLIR. Its
``sources/`` subdirectory remembers the digest of dnnc's sources per state
of the files (``memoized_digest``), so that a hit in a new process reads
one entry, not the compiler's two megabytes of source.
"""

import functools
import hashlib
import io
import json
import os
import re
import sys
import time
import zipfile
from dataclasses import dataclass

from dnnc import _bootstrap, atomic_file, env, version

# Bump when the key's recipe or the entry layout changes.
CACHE_FORMAT = 2
KEY_FIELD = "cache_key"
ENTRY_SUFFIX = ".dnnpkg"
TEMP_SUFFIX = atomic_file.TEMP_SUFFIX
# A temp file this old belongs to a writer that died between write and replace.
STALE_TEMP_SECONDS = 3600

_KEY = re.compile(r"^[0-9a-f]{64}$")


# -- the key ------------------------------------------------------------------

def digest_sources(root):
    """sha256 over every ``.py`` file under ``root``: relative path and
    contents, in sorted path order (so independent of where it is installed)."""
    h = hashlib.sha256()
    for rel in _source_files(root):
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read()
        # Length-prefixed, so no two trees hash alike by shifting bytes across files.
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _source_files(root):
    """The relative paths ("/"-separated, sorted) of every ``.py`` file under
    ``root``, __pycache__ left out: the files ``digest_sources`` reads.
    (``os.scandir`` with the paths joined as text: ``os.walk`` and
    ``os.path.relpath`` cost several times as much, which a cache hit in a
    new process pays.)"""
    files = []
    pending = [""]
    while pending:
        rel = pending.pop()
        with os.scandir(os.path.join(root, rel) if rel else root) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        pending.append(rel + entry.name + "/")
                elif entry.name.endswith(".py"):
                    files.append(rel + entry.name)
    return sorted(files)


def source_signature(root):
    """sha256 over what ``stat`` says of every ``.py`` file under ``root``:
    relative path, size, inode, modification and change times (ns).

    Writing a file sets its change time (ctime) to the clock's now; no
    system call sets it back, and a file copied or checked out anew is a
    new inode. So two trees, or one tree at two moments, of one signature
    hold the same bytes, provided no file was written within one tick of
    the (coarse) clock that stamps ctimes after the signature was taken:
    ``memoized_digest`` keeps no memo of a tree written that recently."""
    return _signature(root)[0]


def _signature(root):
    """(source_signature, the newest ctime in ns)."""
    h = hashlib.sha256(root.encode() + b"\0")
    newest = 0
    base = root + os.sep
    for rel in _source_files(root):
        st = os.stat(base + rel)
        h.update(f"{rel}\0{st.st_size}\0{st.st_ino}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0"
                 .encode())
        newest = max(newest, st.st_ctime_ns)
    return h.hexdigest(), newest


# Memos kept in a memo directory: one per state of the sources, the newest.
SOURCE_MEMOS_KEPT = 16
# A tree with a file changed less than this long ago gets no memo: a write
# within the same tick of the clock that stamps ctimes (a few milliseconds
# at most) would leave its signature as it was (git's "racy clean" case).
SOURCE_SETTLE_NS = 2 * 10**9


def memoized_digest(root, memo_dir):
    """``digest_sources(root)``, remembered in ``memo_dir`` under the tree's
    ``source_signature``: a process that finds its memo stats the files
    (about a millisecond for dnnc) instead of reading and hashing them (tens
    of milliseconds, which a JIT cache hit would pay in each new process).
    A memo that cannot be read is computed again; one that cannot be
    written is not kept, nor one of a tree a file of which changed within
    ``SOURCE_SETTLE_NS``. The oldest memos past ``SOURCE_MEMOS_KEPT`` go."""
    signature, newest = _signature(root)
    memo = os.path.join(memo_dir, signature)
    try:
        with open(memo, "rb") as f:
            digest = f.read().decode("ascii")
        if _KEY.match(digest):
            return digest
    except (OSError, UnicodeDecodeError):
        pass
    digest = digest_sources(root)
    if time.time_ns() - newest < SOURCE_SETTLE_NS:
        return digest   # written a moment ago: not yet safe to remember
    try:
        os.makedirs(memo_dir, exist_ok=True)
        atomic_file.write(memo, digest.encode("ascii"), prefix=f".{signature[:16]}-")
        _prune_memos(memo_dir)
    except OSError:
        pass   # a read-only cache: every process digests the sources
    return digest


def _prune_memos(memo_dir):
    memos = []
    for entry in os.scandir(memo_dir):
        if _KEY.match(entry.name):
            try:
                memos.append((entry.stat().st_mtime_ns, entry.path))
            except OSError:
                pass
    for _, path in sorted(memos)[:-SOURCE_MEMOS_KEPT]:
        try:
            os.unlink(path)
        except OSError:
            pass


SOURCE_MEMO_DIR = "sources"   # the memo directory, inside the cache directory


@functools.lru_cache(maxsize=None)
def source_digest():
    """The digest of dnnc's own sources, computed once per process (and
    remembered across processes in the cache directory: ``memoized_digest``)."""
    return memoized_digest(os.path.dirname(os.path.abspath(__file__)),
                           os.path.join(env.cache_dir(), SOURCE_MEMO_DIR))


BINDINGS_DIST = "xtc-mlir-python-bindings"
# A wheel's installed metadata directory: <name>-<version>.dist-info, the name
# with runs of "-", "_" and "." as one "_" (the wheel spec's normal form).
_DIST_INFO = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)\.dist-info$")


def _normal_name(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def _dist_info_versions(directory, name):
    """The versions of ``name`` that ``directory`` has a .dist-info for."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return []
    versions = []
    for entry in entries:
        match = _DIST_INFO.match(entry)
        if match and _normal_name(match["name"]) == name:
            versions.append(match["version"])
    return versions


@functools.lru_cache(maxsize=None)
def mlir_bindings_version():
    """The full version of the xtc-mlir-python-bindings package (or "unknown").

    Read from the name of its ``.dist-info`` directory beside the ``mlir``
    package (found without importing it), else in the first ``sys.path``
    entry that has one. Importing importlib.metadata takes tens of
    milliseconds, which a cache hit in a fresh process would pay for this one
    string, so it is asked only when the search finds no single version."""
    name = _normal_name(BINDINGS_DIST)
    spec = _bootstrap.mlir_spec()
    places = []
    if spec is not None and spec.submodule_search_locations:
        places += [os.path.dirname(p) for p in spec.submodule_search_locations]
    places += [p or os.curdir for p in sys.path]
    for place in places:
        versions = _dist_info_versions(place, name)
        if len(versions) == 1:
            return versions[0]
        if versions:  # stale copies of the metadata: let importlib.metadata choose
            break
    from importlib import metadata

    try:
        return metadata.version(BINDINGS_DIST)
    except metadata.PackageNotFoundError:
        return "unknown"


def key_for(module_text, options):
    """The cache key (64 hex digits) of compiling ``module_text`` (the dnn
    module as printed by the bindings) with ``options`` (compiler.Options)."""
    return _key("module", module_text, options)


def key_for_graph(graph, options):
    """The cache key (64 hex digits) of compiling the dnnc.Graph ``graph``
    with ``options`` (compiler.Options), from ``graph.serialize()``: no MLIR."""
    return _key("graph", graph.serialize(), options)


def _key(form, text, options):
    recipe = {
        "cache_format": CACHE_FORMAT,
        "form": form,  # "graph" or "module": which of the two texts "graph" holds
        "graph": text,
        "options": options.key_fields(),
        "arch": options.arch,
        "dnnc": version.__version__,
        "sources": source_digest(),
        "mlir": mlir_bindings_version(),
    }
    text = json.dumps(recipe, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


# -- entries ------------------------------------------------------------------

def package_bytes(package, key=None):
    """The ``.dnnpkg`` bytes of ``package`` (same members as artifact.write),
    with ``key`` recorded in the manifest when given. Deterministic: one
    package always gives the same bytes."""
    from dnnc import artifact

    return artifact.to_bytes(package, {KEY_FIELD: key} if key is not None else None)


def recorded_key(data):
    """The key an entry's manifest records, or None when ``data`` is not a
    complete, valid .dnnpkg (truncated, bad CRC, bad manifest, no key)."""
    # Imported here, as in package_bytes and put: a JIT hit (Cache.read with
    # the runtime's reader) needs none of the compiler's package code.
    from dnnc import artifact

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for name in (artifact.PTX, artifact.SOURCE):
                z.read(name).decode("utf-8")  # reading checks the CRC
            manifest = json.loads(z.read(artifact.MANIFEST).decode("utf-8"))
            artifact.validate(manifest)
            for entry in manifest.get("cubins", []):  # its digest, as the runtime checks it
                artifact.check_cubin(manifest, entry, z.read(entry["file"]), "cache entry")
    except Exception:  # noqa: BLE001 - whatever is wrong with an entry, it is a miss
        return None
    key = manifest.get(KEY_FIELD)
    return key if isinstance(key, str) else None


@dataclass
class Stats:
    """What one Cache did in this process."""

    hits: int = 0
    misses: int = 0
    bad: int = 0      # entries found but unreadable or foreign (counted as misses too)
    writes: int = 0


class Cache:
    """The cache in one directory; see the module docstring."""

    def __init__(self, directory):
        self.directory = os.path.abspath(directory)
        self.stats = Stats()

    def path(self, key):
        """The entry file of ``key``."""
        _check_key(key)
        return os.path.join(self.directory, key + ENTRY_SUFFIX)

    def get(self, key):
        """The entry's bytes, or None on a miss (absent, unreadable, corrupt,
        or recording another key)."""
        path = self.path(key)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            self.stats.misses += 1
            return None
        if recorded_key(data) != key:
            self.stats.bad += 1
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        return data

    def read(self, key, reader):
        """``(bytes, reader's value)`` of the entry of ``key``, or None on a
        miss. ``reader(data)`` parses and checks the entry as its user needs
        it and returns ``(the key its manifest records, value)``; whatever
        it raises makes the entry bad (a miss), as does another key
        recorded. ``get`` checks an entry with ``recorded_key`` and its user
        then parses it again; a user that checks every member anyway (the
        JIT, through the runtime's artifact reader: every member read, so
        every CRC, the manifest, each cubin's size and sha256) reads a hit
        once this way."""
        path = self.path(key)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            self.stats.misses += 1
            return None
        try:
            recorded, value = reader(data)
        except Exception:  # noqa: BLE001 - whatever is wrong with an entry, it is a miss
            recorded = None
        if recorded != key:
            self.stats.bad += 1
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        return data, value

    def put(self, key, data):
        """Store ``data`` (.dnnpkg bytes) as the entry of ``key``, atomically;
        return the entry's path. Bytes that do not record ``key`` are
        rewritten with it recorded. Raises OSError when the directory cannot
        be written."""
        path = self.path(key)
        if recorded_key(data) != key:
            from dnnc import artifact

            data = package_bytes(artifact.read(data), key)
        os.makedirs(self.directory, exist_ok=True)
        atomic_file.write(path, data, prefix=f".{key[:16]}-")
        self.stats.writes += 1
        self.prune_temps()
        return path

    def prune_temps(self, max_age=STALE_TEMP_SECONDS):
        """Delete temp files older than ``max_age`` seconds (left by writers
        that died before their replace); return how many went."""
        removed = 0
        now = time.time()
        try:
            names = os.listdir(self.directory)
        except OSError:
            return 0
        for name in names:
            if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)):
                continue
            path = os.path.join(self.directory, name)
            try:
                if now - os.stat(path).st_mtime > max_age:
                    os.unlink(path)
                    removed += 1
            except OSError:  # another process removed or replaced it first
                pass
        return removed


def _check_key(key):
    # Keys become file names: accept nothing that could leave the directory.
    if not isinstance(key, str) or not _KEY.match(key):
        raise ValueError(f"cache key: expected 64 lowercase hex digits, got {key!r:.80}")


_caches = {}


def default():
    """The Cache of the directory dnnc.env.cache_dir() names now (one object
    per directory per process, so its stats add up)."""
    directory = os.path.abspath(env.cache_dir())
    cache = _caches.get(directory)
    if cache is None:
        cache = _caches[directory] = Cache(directory)
    return cache


def get(key):
    """``default().get(key)``: the entry's bytes or None."""
    return default().get(key)


def put(key, data):
    """``default().put(key, data)``: store an entry atomically."""
    return default().put(key, data)
