"""dnnc's heuristics: a kernel's problem -> ranked configs, as plain Python.

    problem = problem_of(kernel_func, "sm_90a")   # from a dnn.kernel function
    configs = rank(problem)                       # best first, each with a reason
    config = choose(problem, override="block:128")

cuDNN calls the strategies "engines" and its heuristics rank them; here the
rules of each op family live in one module (``pointwise``, ``reduction``,
``contraction``, ``generic``) of a few functions from a ``Problem`` to
``Config``s. A config only ever names a strategy the code generator
implements (``config.IMPLEMENTED``: simt-generic today); each reason names the
faster strategy DESIGN.md plans for the problem and says it is not
implemented yet, so the plan can tell a user why a kernel is slow::

    simt-generic: simt-reduce not implemented yet (softmax: 8 rows of 1024);
        block 128: few points (8): one block of 128 holds them

(``dnnc inspect`` prints ``<strategy>: <reason>``.) Block-size rules are in
``generic``; ``override`` parses and applies the user's
``KERNEL=block:128``.

``dnn-configure`` runs ``choose`` on every kernel of the fused stage and
records the result as ``dnn.config`` (``Config.to_attr``) and
``dnn.config_reason``. ``mode="autotune"`` (dnnc/tune) compiles the top few
of ``rank``, times them on the GPU and records the fastest in the tuning
database, whose entries dnn-configure then prefers to ``choose``'s.
"""

from dnnc.errors import PipelineError
from dnnc.heuristics import contraction, generic, pointwise, reduction, window
from dnnc.heuristics import override as _override
from dnnc.heuristics.config import FIELDS, IMPLEMENTED, PLANNED, Config
from dnnc.heuristics.problem import Problem, TensorSpec, problem_of
from dnnc.heuristics.simt_gemv import STRATEGY as GEMV

__all__ = ["Config", "Problem", "TensorSpec", "IMPLEMENTED", "PLANNED", "problem_of",
           "rank", "choose", "parse_override"]

# The rules of each op family (dnnc.dialect's families, plus "generic").
RULES = {
    "pointwise": pointwise.rank,
    "tensor": pointwise.rank_tensor,
    "matmul": contraction.rank,
    "conv": contraction.rank,
    "attention": contraction.rank,
    "norm": reduction.rank,
    "softmax": reduction.rank,
    "reduction": reduction.rank,
    "pooling": window.rank,
    "generic": generic.rank,
}

parse_override = _override.parse


def rank(problem):
    """The configs for ``problem``, best first; every one is implemented and
    has a one-line reason. Deterministic: a function of the problem only."""
    configs = []
    for config in RULES.get(problem.family, generic.rank)(problem):
        if not config.implemented:  # a rule bug, not a user error
            raise AssertionError(f"heuristics ranked strategy '{config.strategy}' for "
                                 f"{problem.kernel}, which the code generator does not "
                                 f"implement")
        if config not in configs:
            configs.append(config)
    return configs


def choose(problem, override=None):
    """The config to compile ``problem`` with: the best ranked, with
    ``override`` applied. ``override`` is a dict of fields (``{"block": 128}``),
    their text (``"block:128"``, the part after ``KERNEL=`` of
    ``override.parse``'s syntax), or a whole Config."""
    ranked = rank(problem)
    best = ranked[0]
    if override is None or override == {} or override == "":
        return best
    if isinstance(override, Config):
        fields = {"block": override.block}
        if override.strategy != best.strategy:
            fields["strategy"] = override.strategy
    elif isinstance(override, str):
        fields = _override.parse(f"{problem.kernel or 'kernel'}={override}")
        fields = next(iter(fields.values()))
    elif isinstance(override, dict):
        text = ",".join(f"{k}:{'x'.join(map(str, v)) if isinstance(v, (tuple, list)) else v}"
                        for k, v in override.items())
        fields = next(iter(_override.parse(f"{problem.kernel or 'kernel'}={text}").values()))
    else:
        raise PipelineError(f"config override: expected a dict, a string or a Config, "
                            f"got {type(override).__name__}")
    return _override.apply(_base(ranked, fields), fields)


def _base(ranked, fields):
    """The ranked config an override's ``fields`` apply to. The best, but
    around simt-gemv, which took M or N <= 8 from the plans ranked after
    it: ``strategy:simt-gemv`` starts from its ranked config (its split,
    vector and unroll) wherever it is ranked; where it is ranked first, an
    override naming another strategy starts from the plan it displaced (the
    first ranked config of another strategy: ``strategy:simt-gemm`` or
    ``strategy:tc-sm90`` gets that plan as it was), and one naming fields
    it does not read (``tile:...``) from the first ranked config whose
    strategy reads them. Every other override applies to the best, as
    override.apply says."""
    best = ranked[0]
    wanted = fields.get("strategy")
    if wanted == GEMV:
        return next((c for c in ranked if c.strategy == GEMV), best)
    if wanted is not None and set(fields) == {"strategy"} and wanted != best.strategy:
        # Only the strategy named: its own best ranked plan (a tc-sm80
        # filter gradient's K split), where the heuristics rank it at all.
        theirs = next((c for c in ranked if c.strategy == wanted), None)
        if theirs is not None:
            return theirs
    if best.strategy != GEMV:
        return best
    before = next((c for c in ranked if c.strategy != GEMV), best)
    if wanted is not None:
        return before
    keys = set(fields)
    if keys <= set(FIELDS[GEMV]):
        return best
    return next((c for c in ranked if keys <= set(FIELDS.get(c.strategy, ()))), before)
