"""Rules for pointwise-chain kernels (anchor ``pointwise``).

simt-pointwise (dnn-vectorize-pointwise) loads and stores 16-byte vectors
along the innermost dim: ``vector`` elements of the kernel's widest element
type. It needs every innermost dim that is not broadcast (size 1) to be a
multiple of the vector, so the width halves until it divides them all; at
one element there is nothing to gain over simt-generic, which then runs the
kernel one thread per element (block sizes: generic.block_choices).

A thread handles ``unroll`` vectors, all loaded before any is computed.
When the grid is many waves deep, more bytes in flight per thread pay: two
vectors for a chain of cheap ops, four (in 128-thread blocks) when the chain
calls a transcendental function, whose math would otherwise leave the loads
waiting (measured on an H200: GELU on 16384x8192 bf16 at 73% of copy
bandwidth with one vector per thread, 79% with four). A grid of a few waves
keeps one vector per thread, to spread over every SM, in 256-thread blocks
(128 when the vectors are few).
"""

from dnnc.heuristics.config import Config
from dnnc.heuristics.generic import rank_tensor as simt_tensor, simt_generic, tensor_facts

VECTOR_BYTES = 16
# Ops that move data rather than compute it.
TENSOR_OPS = frozenset({"transpose", "reshape", "slice", "concat"})
# Vectors per SM beyond which each thread handles two: 8 full waves of
# 2048-thread SMs.
UNROLL_VECTORS_PER_SM = 8 * 2048

# Ops whose scalar code is a polynomial or more (dnnc/codegen/gpu/math/approx.py).
TRANSCENDENTAL = frozenset({
    "gelu", "silu", "swish", "sigmoid", "tanh", "elu", "softplus", "exp", "log", "sin",
    "cos", "erf", "pow", "gelu_backward", "silu_backward", "sigmoid_backward",
    "tanh_backward", "swish_backward", "elu_backward", "softplus_backward", "log_softmax",
})


def widest_bytes(problem):
    """Bytes of the widest element of the kernel's tensors but its scalars
    (rank 0: an f32 scale of a bf16 or fp8 result is read once, not as
    vectors); all of them when there is nothing else. (Per-row f32 values,
    a norm's statistics, still count: their 16 bytes of bf16 rows measured
    slower in a norm backward's row-and-column program.)"""
    tensors = problem.inputs + problem.outputs
    shaped = [t for t in tensors if t.shape]
    return max((t.element_bytes for t in shaped or tensors), default=4)


def vector_width(problem):
    """Elements per 16-byte access of the widest-element tensor of the kernel."""
    return max(1, VECTOR_BYTES // widest_bytes(problem))


def usable_width(problem):
    """The widest vector (a power of two, at most ``vector_width``) that
    divides the vector dim of every output and of every input that is not
    broadcast along it; 1 when none does. The vector dim is the innermost,
    or, where the outputs' innermost dims are one element (cudnn-frontend's
    ``[rows, hidden, 1, 1]``), the last dim longer than one
    (dnn-vectorize-pointwise reads such buffers through views without their
    trailing unit dims)."""
    width = vector_width(problem)
    if any(not t.shape for t in problem.outputs):
        return 1  # a rank-0 result: one element
    axis = _vector_axis(problem)
    inner = [t.shape[axis] for t in problem.outputs]
    inner += [t.shape[axis] for t in problem.inputs if t.shape and t.shape[axis] != 1]
    while width > 1 and any(d % width for d in inner):
        width //= 2
    return width


def _vector_axis(problem):
    """The dim vectors run along: the outputs' last dim longer than one when
    their innermost are one element and every tensor has their rank, else
    the innermost (-1)."""
    shapes = [t.shape for t in problem.outputs]
    if not shapes or not shapes[0]:
        return -1
    rank = len(shapes[0])
    if any(s[-1] != 1 for s in shapes) or \
            any(len(t.shape) != rank for t in problem.inputs + problem.outputs if t.shape):
        return -1
    longer = [d for d in range(rank) if any(s[d] > 1 for s in shapes)]
    return longer[-1] if longer else -1


def chain_length(problem):
    """The ops a thread runs (constants are free)."""
    return max(1, sum(1 for op in problem.ops if op != "constant"))


def rank(problem):
    work = problem.output_elements
    n = chain_length(problem)
    facts = f"{n} pointwise op{'s' if n != 1 else ''} over {work} elements"
    width = usable_width(problem)
    if width == 1:
        inner = problem.outputs[0].shape[_vector_axis(problem)] \
            if problem.outputs and problem.outputs[0].shape else 1
        why = (f"simt-pointwise needs a vector dim that is a multiple of 2 elements at "
               f"least, got {inner} ({facts})")
        return simt_generic(work, problem.sms, None, facts, ops=n, head=why)
    return vector_configs(problem, facts, width) + simt_generic(work, problem.sms, None, facts,
                                                                  ops=n)


def vector_configs(problem, facts, width):
    """The simt-pointwise configs of ``problem``, by vectors of ``width``."""
    vectors = problem.output_elements // width
    block = 256 if vectors >= 2 * 256 * problem.sms else 128
    unroll = 1
    if vectors >= UNROLL_VECTORS_PER_SM * problem.sms:
        heavy = any(op in TRANSCENDENTAL for op in problem.ops)
        block, unroll = (128, 4) if heavy else (256, 2)
    nbytes = width * widest_bytes(problem)
    head = (f"{facts}: vectors of {width} ({nbytes} bytes), {unroll} per thread, "
            f"block {block}")
    best = Config("simt-pointwise", (block, 1, 1), vector=width, unroll=unroll, reason=head)
    other = best.replace(unroll=1 if unroll > 1 else 2,
                         reason=f"{facts}: {1 if unroll > 1 else 2} vectors per thread")
    return [best, other]


def rank_tensor(problem):
    """reshape / transpose / slice / concat kernels: copies. 16-byte vectors
    along the innermost dim where every innermost dim allows them and the
    anchor's attributes do not rule them out (_breaks_vectors), else one
    thread per output element. dnn-vectorize-pointwise checks the kernel's
    maps and views, and hands a kernel none of whose ops qualifies to
    simt-generic, with the reason. A transpose that moves the innermost dim
    takes simt-transpose (64 x 64 tiles through shared memory, any shape)."""
    moved = _moves_innermost(problem)
    if moved:
        facts = tensor_facts(problem)
        return [Config("simt-transpose", (256, 1, 1),
                       reason=f"{facts}: {moved}, so its tiles go through shared memory; "
                              "block 256")] + \
            simt_generic(problem.output_elements, problem.sms, None, facts,
                         ops=len(problem.ops), fallback_of="simt-transpose")
    width = usable_width(problem)
    if width == 1:
        return simt_tensor(problem)
    facts = tensor_facts(problem)
    why = _breaks_vectors(problem, width)
    if why:
        return simt_generic(problem.output_elements, problem.sms, None, facts,
                            ops=len(problem.ops),
                            head=f"simt-pointwise does not apply ({why}; {facts})")
    return vector_configs(problem, facts, width) + simt_tensor(problem)


def _moves_innermost(problem):
    """"the transpose P moves the innermost dim" when the kernel is one
    transpose whose permutation P does (of a dim longer than 1), with the
    pointwise ops dnn-fuse joins to it; "" else."""
    names = [o for o in problem.ops if o != "constant"]
    if not names or names[0] != "transpose" or set(names[1:]) & TENSOR_OPS \
            or len(problem.inputs) != 1 or not problem.outputs \
            or not problem.outputs[0].shape:
        return ""
    perm = tuple(problem.attr("permutation", ()))
    shape = problem.outputs[0].shape
    if not perm or perm[-1] == len(perm) - 1 or shape[-1] == 1:
        return ""
    return f"the transpose {list(perm)} moves the innermost dim"


def _breaks_vectors(problem, width):
    """Why the anchor copy of a one-op tensor kernel cannot move vectors of
    ``width`` along its innermost dim, from its attributes; "" when it can
    (or when only its maps will tell: dnn-vectorize-pointwise checks)."""
    if len(problem.ops) != 1:
        return ""
    (op,) = problem.ops
    if op == "slice":
        start, step = problem.attr("start", ()), problem.attr("step", ())
        if step and step[-1] != 1:
            return f"a slice with step {step[-1]} along the innermost dim"
        if start and start[-1] % width:
            return f"a slice that starts at {start[-1]}, inside a vector of {width}"
    return ""
