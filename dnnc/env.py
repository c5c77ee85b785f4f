"""The environment variables dnnc reads, all in one place.

DNNC_DUMP_IR    a directory: write every compilation stage's IR there, as
                ``--dump-ir`` does (``<graph>.<stage>.mlir``).
DNNC_PTXAS      the ptxas executable to check and inspect PTX with (else the
                nvidia-cuda-nvcc wheel's, else the one on PATH).
DNNC_CUBIN      ``0``: packages carry no cubin (ptxas is not run when
                compiling; the runtime, which reads this variable itself,
                loads the PTX even from a package that has one); unset or
                anything else: a cubin for the package's arch beside the
                PTX whenever ptxas is found.
DNNC_PTXAS_THREADS
                a count N > 1: ptxas makes a package's cubin on N threads
                (``--split-compile N``), its entries compiled side by side.
                The cubin's bytes depend on N (the same for a given N on any
                machine), not on the machine's cores; unset, 0 or 1: one
                thread, the cubin ptxas has always made.
DNNC_CUOBJDUMP  the cuobjdump executable to disassemble cubins to SASS with
                (else the nvidia-cuda-cuobjdump wheel's, else the one on PATH).
DNNC_CACHE_DIR  the directory of the JIT cache of compiled ``.dnnpkg``
                artifacts (dnnc/cache.py); default ``~/.cache/dnnc``.
DNNC_TUNING_DB  the tuning database file (dnnc/tune/db.py): where autotuning
                writes the winning kernel configs and where compiles read
                them; default ``tuning.json`` in the cache directory; ``off``:
                compile without one.
DNNC_GRAPH_REPLAY
                ``1``: loaded executables replay a CUDA graph of their
                launches for calls whose addresses repeat a recent call's
                (read by the runtime itself, dnnc_runtime/replay.py; the
                property ``Executable.graph_replay``); unset or anything
                else: off.
DNNC_FRONTEND_REPORTED_VERSION
                a version string (``9.19.0``) that dnnc.frontend's
                ``backend_version`` / ``backend_version_string`` report
                instead of dnnc's, for code that gates features on cuDNN
                versions; unset: dnnc's version.
"""

import os


def dump_ir_dir():
    """The directory named by DNNC_DUMP_IR, or None."""
    return os.environ.get("DNNC_DUMP_IR") or None


def ptxas():
    """The path named by DNNC_PTXAS, or None."""
    return os.environ.get("DNNC_PTXAS") or None


def cubin_enabled():
    """False when DNNC_CUBIN is ``0``: compile packages without a cubin."""
    return os.environ.get("DNNC_CUBIN", "").strip() != "0"


def ptxas_threads():
    """The thread count DNNC_PTXAS_THREADS names (1 when unset); a value
    that is not a whole number is refused with a ValueError naming it."""
    text = os.environ.get("DNNC_PTXAS_THREADS", "").strip()
    if not text:
        return 1
    try:
        count = int(text)
    except ValueError:
        raise ValueError(f"DNNC_PTXAS_THREADS: expected a whole number of threads, "
                         f"got {text!r}") from None
    if count < 0:
        raise ValueError(f"DNNC_PTXAS_THREADS: expected 0 or more threads, got {count}")
    return max(count, 1)


def cuobjdump():
    """The path named by DNNC_CUOBJDUMP, or None."""
    return os.environ.get("DNNC_CUOBJDUMP") or None


def cache_dir():
    """The JIT cache directory: DNNC_CACHE_DIR, else ``~/.cache/dnnc``."""
    return os.path.expanduser(os.environ.get("DNNC_CACHE_DIR") or "~/.cache/dnnc")


def tuning_db():
    """The tuning database named by DNNC_TUNING_DB ("off" included), or None."""
    return os.environ.get("DNNC_TUNING_DB") or None


def frontend_reported_version():
    """The version string named by DNNC_FRONTEND_REPORTED_VERSION, or None."""
    return os.environ.get("DNNC_FRONTEND_REPORTED_VERSION") or None
