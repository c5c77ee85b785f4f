"""Replacing a file atomically: readers see the old file or the new one, never a part.

    atomic_file.write(path, data, prefix=".abc-")   # data: bytes

The bytes go to a temp file (``<prefix>*.tmp``) in the file's directory,
are fsynced, and the temp file is ``os.replace``d onto ``path``; on any
failure the temp file is removed and the error raised. Processes writing one
path at once are safe: the last replace wins. Used by the JIT cache
(dnnc/cache.py) and the tuning database (dnnc/tune/db.py). This module
never imports MLIR.
"""

import os

# The suffix of temp files, which readers of a directory skip.
TEMP_SUFFIX = ".tmp"


def write(path, data, prefix):
    """Replace file ``path`` by ``data`` (bytes) atomically, through a temp
    file named ``<prefix>*.tmp`` in the same directory. Raises OSError when
    the directory cannot be written."""
    import tempfile  # only writers need it (and the random module it imports)

    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=TEMP_SUFFIX, dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
