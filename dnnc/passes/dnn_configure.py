"""dnn-configure: the heuristics choose a config for every kernel (the
``configured`` stage).

Runs on the fused stage. For every function marked ``dnn.kernel`` it builds
the kernel's Problem (dnnc/heuristics), takes the best ranked config, applies
the user's override, and records it as ``dnn.config`` with the reason as
``dnn.config_reason``. Nothing downstream guesses: the GPU lowering reads
the config (dnn-default-config only fills in kernels made after this stage,
and keeps these), and the artifact's manifest records strategy and reason.
A kernel's ``dnn.fusion_note`` (why dnn-fuse left ops out of it) ends its
reason.

A kernel that already has a ``dnn.config`` (written by hand, or a module
that was configured before) keeps it, unless the override names it.

Options:

* ``arch`` (``sm_80``, ``sm_90a``; default ``sm_90a``): the target the
  heuristics rank for.
* ``override``: ``KERNEL=key:value[,key:value][;KERNEL=...]``, ``*`` for
  every kernel (dnnc/heuristics/override.py), e.g.
  ``dnn-configure{arch=sm_80 override=main_k0_softmax=block:128}``. The
  syntax is checked when the pipeline is parsed; a kernel name that is not
  in the module is a PipelineError naming the kernels that are.
* ``db``: a tuning database file (dnnc/tune/db.py; the path percent-quoted,
  ``%20`` for a space). A kernel whose problem signature has an entry for
  ``arch`` gets the entry's config instead of the heuristics' first choice,
  and a reason that starts ``tuned:``; a kernel the override names keeps the
  override (the user wins). An entry whose config no longer fits its
  strategy is ignored, and the reason says so. A missing file is no entries;
  one that is not a tuning database is a TuningError naming it.
* ``gpu``: the GPU (its name, non-alphanumerics as ``_``) whose entries to
  prefer; without it, or when it has none, the newest entry of the arch.

Before::

    func.func private @main_k0_softmax(%x: tensor<8x1024xf32>) -> tensor<8x1024xf32>
        attributes {dnn.anchor = "softmax", dnn.kernel}

After::

    func.func private @main_k0_softmax(%x: tensor<8x1024xf32>) -> tensor<8x1024xf32>
        attributes {dnn.anchor = "softmax",
                    dnn.config = {block = [128, 1, 1], strategy = "simt-generic"},
                    dnn.config_reason = "simt-reduce not implemented yet (softmax: 8 rows
                        of 1024); block 128: few points (8): ...", dnn.kernel}

With a tuning database entry::

    dnn.config_reason = "tuned: tc-sm90 block=384x1x1 tile=128x128x64 stages=6 0.19 ms
        vs 0.21 ms heuristic (tuning DB: NVIDIA H200, 4 candidates, 2026-11-21);
        heuristics: ranked first: tc-sm90 block=384x1x1 tile=128x256x64 stages=4 (...)"

Lit test: test/lit/passes/dnn_configure.mlir (the database: test/python/test_tune.py).
"""

from dataclasses import dataclass

from mlir import ir

from dnnc import heuristics
from dnnc.archs import ARCHS
from dnnc.codegen.gpu import irutil
from dnnc.errors import PipelineError
from dnnc.heuristics import config as config_mod, override as override_mod
from dnnc.passes import DnncPass, register

KEPT_REASON = "config given in the input IR"
# Why dnn-fuse left ops out of a kernel (dnn_fuse.Group.note): the reason
# ends with it, so that the plan says why the ops are a kernel of their own.
FUSION_NOTE = "dnn.fusion_note"


@register
@dataclass
class DnnConfigure(DnncPass):
    NAME = "dnn-configure"
    arch: str = "sm_90a"
    override: str = ""
    db: str = ""
    gpu: str = ""

    def __post_init__(self):
        if self.arch not in ARCHS:
            raise PipelineError(f"pass '{self.NAME}' option 'arch': expected one of "
                                f"{', '.join(ARCHS)}, got '{self.arch}'")
        self._overrides = override_mod.parse(self.override)

    def run(self, module):
        with module.context:
            kernels = irutil.kernel_functions(module)
            names = [irutil.symbol(fn) for fn in kernels]
            override_mod.check_kernels(self._overrides, names)
            tuned = self._tuning_db(module)
            for fn, name in zip(kernels, names):
                fields = override_mod.fields_for(self._overrides, name)
                if config_mod.ATTR in fn.attributes:
                    config = self._existing(fn, fields)
                else:
                    problem = heuristics.problem_of(fn, self.arch)
                    config = None
                    if tuned is not None and not fields:
                        config = self._tuned(tuned, name, problem)
                    if config is None:
                        config = heuristics.choose(problem, override=fields or None)
                reason = config.reason
                if FUSION_NOTE in fn.attributes:
                    reason = f"{reason}; {ir.StringAttr(fn.attributes[FUSION_NOTE]).value}"
                fn.attributes[config_mod.ATTR] = config.to_attr()
                fn.attributes[config_mod.REASON_ATTR] = ir.StringAttr.get(reason)

    def _tuning_db(self, module):
        """(Database, kernel layouts) when ``db`` names a database with
        entries for the arch, else None."""
        if not self.db:
            return None
        from urllib.parse import unquote

        from dnnc.tune import db, signature

        database = db.load(unquote(self.db))
        if not database.of_arch(self.arch):
            return None
        return database, signature.kernel_layouts(module)

    def _tuned(self, tuned, name, problem):
        """The Config of the database's entry for the kernel's problem, with
        its ``tuned:`` reason; None when there is no entry."""
        from dnnc.tune import entry as entry_mod, signature

        database, layouts = tuned
        digest = signature.digest(signature.signature(problem, layouts.get(name)))
        found = database.find(self.arch, digest, self.gpu or None)
        if found is None:
            return None
        best = heuristics.rank(problem)[0]
        try:
            return entry_mod.config_of(found["config"]).replace(
                reason=entry_mod.reason(found, best))
        except PipelineError as err:  # written by another dnnc, or edited by hand
            return best.replace(reason=f"tuning DB entry ignored ({err}); {best.reason}")

    def _existing(self, fn, fields):
        """The config a kernel came with (checked), with the override applied."""
        reason = KEPT_REASON
        if config_mod.REASON_ATTR in fn.attributes:
            reason = ir.StringAttr(fn.attributes[config_mod.REASON_ATTR]).value
        config = config_mod.Config.from_attr(fn.attributes[config_mod.ATTR], reason=reason)
        return override_mod.apply(config, fields)
