"""Loading bench/'s modules in tests: bench/ is a folder of scripts, not a
package, and its modules import each other by their plain names."""

import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")


def load(name, filename):
    """bench/``filename`` as a module named ``name``, with bench/ on sys.path."""
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, filename))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
