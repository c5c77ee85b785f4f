"""The tuning database: the measured best config of each tuned kernel problem.

One JSON file (``$DNNC_TUNING_DB``, else ``tuning.json`` in the JIT cache
directory, dnnc.env), one entry per line (shown wrapped here)::

    {"format": 1,
     "entries": {
       "sm_90a/NVIDIA_H200/9c1f...e2": {
         "arch": "sm_90a", "gpu": "NVIDIA H200", "signature": "9c1f...e2",
         "problem": {"anchor": "matmul", "ops": ["matmul"], "inputs": [...], ...},
         "summary": "matmul: 2048x2048xbf16, 2048x2048xbf16 -> 2048x2048xbf16",
         "config": "strategy:tc-sm90,block:384,tile:128x256x64,stages:4,split:1",
         "ms": 0.190,
         "heuristic": {"config": "strategy:tc-sm90,...", "ms": 0.210},
         "candidates": [{"config": "...", "ms": 0.190},
                        {"config": "...", "skipped": "LoweringError: ..."}],
         "kernel": "mm_k0_matmul", "date": "2026-11-21T10:02:11Z", "dnnc": "0.1.0"}}}

An entry's key is ``<arch>/<GPU name, non-alphanumerics as _>/<signature>``:
the signature is the digest of the kernel's canonical problem
(dnnc/tune/signature.py: anchor op, fused ops, shapes, element types,
strides, anchor attributes; never the kernel's name), so one problem met in
two graphs is one entry. ``config`` is the winner as override fields
(dnnc/heuristics/override.py's ``key:value`` text), every field its
strategy reads spelt out, so that it means the same config whatever the
heuristics rank first later.

Writes go to a temp file in the same directory, fsynced and ``os.replace``d
onto the file (dnnc/atomic_file.py; readers see the old or the new database,
never a part), after re-reading what is on disk under an exclusive lock and
merging into it, so that two tuners writing at once both keep their entries.
A missing file is an empty database; a file that is not a tuning database is
a TuningError naming it. This module never imports MLIR: the JIT's cache key
reads the database (``digest``) on every lookup.
"""

import hashlib
import json
import os
import re
import time

from dnnc import atomic_file, env
from dnnc.errors import TuningError

FORMAT = 1
DEFAULT_NAME = "tuning.json"
OFF = "off"  # DNNC_TUNING_DB / Options(tuning_db=...) value: compile without a database
REQUIRED = {"arch": str, "gpu": str, "signature": str, "config": str, "ms": (int, float)}


def resolve(option=None):
    """The database file to use: ``option`` (a path, or "off"), else
    $DNNC_TUNING_DB, else ``tuning.json`` in the cache directory; None for
    "off"."""
    chosen = option if option is not None else env.tuning_db()
    if chosen == OFF:
        return None
    if chosen:
        return os.path.abspath(os.path.expanduser(chosen))
    return os.path.abspath(os.path.join(env.cache_dir(), DEFAULT_NAME))


def gpu_token(name):
    """A GPU name as keys and pass options spell it: ``NVIDIA H200`` ->
    ``NVIDIA_H200`` (None or "" -> "")."""
    return re.sub(r"[^A-Za-z0-9.\-]+", "_", (name or "").strip()).strip("_")


def entry_key(arch, gpu, signature):
    """The key of the entry of problem ``signature`` tuned on ``gpu`` of ``arch``."""
    return f"{arch}/{gpu_token(gpu) or 'unknown'}/{signature}"


def _check_entry(path, key, entry):
    if not isinstance(entry, dict):
        raise TuningError(f"tuning database {path}: entry '{key}': expected an object, "
                          f"got {type(entry).__name__}", path=path)
    for name, kind in REQUIRED.items():
        if not isinstance(entry.get(name), kind) or isinstance(entry.get(name), bool):
            raise TuningError(f"tuning database {path}: entry '{key}': field '{name}': "
                              f"expected {getattr(kind, '__name__', 'a number')}, got "
                              f"{entry.get(name)!r:.60}", path=path)


def parse(text, path="<text>"):
    """The entries ({key: entry}) of a database's JSON text; TuningError
    naming ``path`` when it is not one."""
    try:
        data = json.loads(text)
    except ValueError as err:
        raise TuningError(f"tuning database {path}: not JSON ({err}); fix or delete the file",
                          path=path) from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        raise TuningError(f"tuning database {path}: expected an object with 'format' and "
                          f"'entries', got {type(data).__name__}", path=path)
    if data.get("format") != FORMAT:
        raise TuningError(f"tuning database {path}: format: expected {FORMAT}, got "
                          f"{data.get('format')!r}", path=path)
    for key, entry in data["entries"].items():
        _check_entry(path, key, entry)
    return data["entries"]


def dumps(entries):
    """The JSON text of a database holding ``entries``: one entry per line,
    keys sorted (a diff or grep shows whole entries)."""
    lines = [f"{json.dumps(k)}: {json.dumps(entries[k], sort_keys=True)}" for k in sorted(entries)]
    return f'{{"format": {FORMAT}, "entries": {{\n' + ",\n".join(lines) + "\n}}\n"


def newer(a, b):
    """True when entry ``a`` was tuned after ``b`` (ISO dates compare as text)."""
    return str(a.get("date", "")) > str(b.get("date", ""))


class Database:
    """The entries of one database file, read when made."""

    def __init__(self, path, entries=None):
        self.path = os.path.abspath(path)
        self.entries = dict(entries) if entries is not None else _read(self.path)

    # -- reading --------------------------------------------------------------

    def find(self, arch, signature, gpu=None):
        """The entry of problem ``signature`` on ``arch``: the one tuned on
        ``gpu`` when there is one, else the newest from any GPU of ``arch``
        (None: no entry)."""
        exact = self.entries.get(entry_key(arch, gpu, signature)) if gpu else None
        if exact is not None:
            return exact
        found = None
        for entry in self.entries.values():
            if entry["arch"] == arch and entry["signature"] == signature:
                if found is None or newer(entry, found):
                    found = entry
        return found

    def has(self, arch, signature, gpu):
        """True when ``gpu`` itself has an entry for the problem."""
        return entry_key(arch, gpu, signature) in self.entries

    def of_arch(self, arch):
        """{key: entry} of every entry for ``arch``."""
        return {k: e for k, e in self.entries.items() if e["arch"] == arch}

    # -- writing --------------------------------------------------------------

    def put(self, entry):
        """Add or replace ``entry`` (a dict with at least REQUIRED's fields);
        return its key. Not written until ``save``."""
        key = entry_key(entry["arch"], entry["gpu"], entry["signature"])
        _check_entry(self.path, key, entry)
        self.entries[key] = entry
        return key

    def merge(self, entries):
        """Merge ``entries`` ({key: entry}): a key already here keeps the
        newer entry. Return (added, replaced) counts."""
        added = replaced = 0
        for key, entry in entries.items():
            _check_entry(self.path, key, entry)
            mine = self.entries.get(key)
            if mine is None:
                added += 1
            elif newer(entry, mine) or entry.get("date") == mine.get("date"):
                replaced += mine != entry
            else:
                continue
            self.entries[key] = entry
        return added, replaced

    def save(self):
        """Write the database atomically, merged over what is on disk now
        (another process may have added entries since this one read it)."""
        directory = os.path.dirname(self.path)
        os.makedirs(directory, exist_ok=True)
        with _locked(self.path + ".lock"):
            mine, self.entries = self.entries, _read(self.path)
            self.merge(mine)
            _write(self.path, dumps(self.entries))
        _forget(self.path)
        return self.path


def export(path, entries):
    """Write ``entries`` as the database file ``path`` (replacing it, atomically)."""
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _write(path, dumps(entries))
    _forget(path)
    return path


def load(path):
    """The Database of file ``path`` (empty when it does not exist)."""
    return Database(path)


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (FileNotFoundError, NotADirectoryError):  # no database there
        return {}
    except (OSError, UnicodeDecodeError) as err:
        raise TuningError(f"tuning database {path}: cannot read it: {err}", path=path) from None
    return parse(text, path)


def _write(path, text):
    atomic_file.write(path, text.encode("utf-8"), prefix=f".{os.path.basename(path)}-")


class _locked:
    """An exclusive advisory lock on ``path`` (a no-op where fcntl is missing)."""

    def __init__(self, path):
        self.path, self.fd = path, None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:
            return self
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)  # closing releases the lock
        return False


# -- what the compile cache key hashes ----------------------------------------

_digests = {}


def _forget(path):
    for k in [k for k in _digests if k[0] == path]:
        del _digests[k]


def digest(path, arch):
    """A digest of every entry for ``arch`` in database ``path`` (None when
    there is none, or no database): what the JIT cache key includes, so that
    tuning a problem again invalidates artifacts compiled with the old
    entries. Every entry of the arch counts, not only those of the graph's
    kernels: the key of a dnnc.Graph is made without MLIR, before its
    kernels are known. Memoized per file state (inode, mtime, size)."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):  # no database there
        return None
    except OSError as err:
        raise TuningError(f"tuning database {path}: cannot read it: {err}", path=path) from None
    memo = (path, arch, st.st_ino, st.st_mtime_ns, st.st_size)
    if memo not in _digests:
        entries = {k: e for k, e in _read(path).items() if e["arch"] == arch}
        _digests[memo] = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest() \
            if entries else None
    return _digests[memo]


def now():
    """The date an entry records: UTC, ISO 8601, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
