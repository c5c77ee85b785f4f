"""The environment variables dnnc reads, all in one place.

DNNC_DUMP_IR   a directory: write every compilation stage's IR there, as
               ``--dump-ir`` does (``<graph>.<stage>.mlir``).
"""

import os


def dump_ir_dir():
    """The directory named by DNNC_DUMP_IR, or None."""
    return os.environ.get("DNNC_DUMP_IR") or None
