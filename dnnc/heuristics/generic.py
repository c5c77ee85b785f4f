"""simt-generic block sizes, and the rules of kernels no other family claims.

simt-generic runs one thread per point of a kernel's iteration space: a grid
of ceil(points / block) blocks (dnn-distribute-loops). The block size is its
only parameter, and what it changes is how many blocks there are:

* few points (fewer than two 256-thread blocks per SM): 128 threads, so that
  twice as many blocks spread over the SMs; a thread that loops (a reduction,
  a matmul's K) makes a long block, and more, shorter blocks balance better;
* otherwise 256, the usual choice: 8 warps, 8 blocks fill an SM's 2048
  threads, and registers stay at up to 128 per thread;
* very many points of a short pointwise chain: 512 or 1024 threads, fewer
  blocks for the block scheduler to retire. Only for short chains: a
  1024-thread block caps a thread at 64 registers, 512 at 128, and ptxas
  spills past that.

The ``tensor`` family (reshape, transpose, slice, concat kernels: copies) and
kernels whose anchor is no known op are ranked here too.
"""

from dnnc.heuristics.config import Config

# A pointwise grid this large (points) runs its bigger block when the chain has
# at most ``max_ops`` ops: (points, block, max_ops), largest first.
BIG_BLOCKS = ((1 << 26, 1024, 2), (1 << 22, 512, 8))


def _ceil(a, b):
    return -(-a // b)


def block_choices(work, sms, *, ops=None):
    """(block, why) pairs, best first, for ``work`` threads; ``ops`` is the
    length of a pointwise chain (None: the kernel's threads loop, no big
    blocks)."""
    if work < 2 * 256 * sms:
        n256, n128 = _ceil(work, 256), _ceil(work, 128)
        why = (f"few points ({work}) for {sms} SMs: {n128} blocks of 128, not {n256} of 256"
               if n128 > n256 else f"few points ({work}): one block of 128 holds them")
        return [(128, why), (256, "the default"), (64, "smaller blocks still")]
    if ops is not None:
        for points, block, max_ops in BIG_BLOCKS:
            if work >= points and ops <= max_ops:
                return [(block, f"many points ({work}), {ops}-op chain: fewer, larger "
                                f"blocks"),
                        (256, "the default"),
                        (128, "smaller blocks")]
    return [(256, f"the default for {work} points"),
            (128, "smaller blocks, more of them"),
            (512, "larger blocks, fewer of them")]


def simt_generic(work, sms, faster, facts, *, ops=None, fallback_of=None, head=None):
    """simt-generic Configs, best first. ``faster`` names the strategy that
    would serve the kernel better (None: none planned), ``facts`` what the
    problem is, for the reason; ``fallback_of`` names a faster strategy
    ranked above these, which they stand in for where it does not apply;
    ``head``, given, is the reason's first part as it is (why a faster
    strategy does not apply)."""
    if head is None:
        head = f"{faster} not implemented yet ({facts})" if faster else \
            f"no faster strategy planned ({facts})"
        if fallback_of:
            head = f"for when {fallback_of} does not apply ({facts})"
    return [Config("simt-generic", (block, 1, 1), reason=f"{head}; block {block}: {why}")
            for block, why in block_choices(work, sms, ops=ops)]


def rank_tensor(problem):
    """reshape / transpose / slice / concat kernels as copies, one thread per
    output element (pointwise.rank_tensor ranks simt-pointwise above these
    where the innermost dims allow vectors)."""
    return simt_generic(problem.output_elements, problem.sms, None, tensor_facts(problem),
                        ops=len(problem.ops))


def tensor_facts(problem):
    """What a tensor kernel is, for its reason: "copy by <ops>: <n> elements"
    (a chain of k binary concats: "copy by a concat of k + 1 inputs")."""
    names = [o for o in problem.ops if o != "constant"]
    if len(names) > 1 and set(names) == {"concat"}:
        ops = f"a concat of {len(names) + 1} inputs"
    else:
        ops = ", ".join(names) or problem.anchor
    return f"copy by {ops}: {problem.output_elements} elements"


def rank(problem):
    """Any other kernel: one thread per output element."""
    work = problem.output_elements
    return simt_generic(work, problem.sms, None,
                        f"anchor '{problem.anchor or '?'}', {work} elements")
