"""Rules for pointwise-chain kernels (anchor ``pointwise``).

The faster strategy is simt-pointwise (DESIGN.md): 16-byte vector loads and
stores, a grid-stride loop, broadcasting operands read once per vector. Until
it exists, simt-generic runs one thread per output element; its block size
follows the element count (generic.block_choices): 128 for small chains,
256 by default, 512 or 1024 for very large, short chains.
"""

from dnnc.heuristics.generic import simt_generic

VECTOR_BYTES = 16


def vector_width(problem):
    """Elements per 16-byte access of the widest-element tensor of the
    kernel: what simt-pointwise would load at once."""
    widest = max((t.element_bytes for t in problem.inputs + problem.outputs), default=4)
    return max(1, VECTOR_BYTES // widest)


def chain_length(problem):
    """The ops a thread runs (constants are free)."""
    return max(1, sum(1 for op in problem.ops if op != "constant"))


def rank(problem):
    work = problem.output_elements
    n = chain_length(problem)
    facts = f"{n} pointwise op{'s' if n != 1 else ''} over {work} elements"
    faster = f"simt-pointwise (x{vector_width(problem)} vectors)"
    return simt_generic(work, problem.sms, faster, facts, ops=n)
