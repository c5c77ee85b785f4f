"""The graphs of examples/, each a case as it is."""

import os

import dnnc

from .case import Case

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def example(name):
    def build():
        with open(os.path.join(ROOT, "examples", name)) as f:
            return dnnc.Graph.from_mlir(f.read())
    return build


CASES = [
    *(Case(f"example_{os.path.splitext(n)[0]}", example(n))
      for n in sorted(os.listdir(os.path.join(ROOT, "examples"))) if n.endswith(".mlir")),
]
