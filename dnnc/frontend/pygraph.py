"""``pygraph``: cudnn-frontend's graph object, on dnnc.

    import dnnc.frontend as cudnn
    g = cudnn.pygraph(io_data_type=cudnn.data_type.HALF,
                      compute_data_type=cudnn.data_type.FLOAT)
    X = g.tensor(name="X", dim=[8, 64], stride=[64, 1])
    ...
    g.validate(); g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A]); g.check_support(); g.build_plans()
    g.execute({X: x, Y: y}, workspace, handle=handle)

Ops are recorded as they are added (the mixins in ``ops_*.py``) and lowered
to a ``dnnc.Graph`` when the graph is validated (``lowering.py``). The
lifecycle maps onto dnnc so:

- ``validate`` / ``build_operation_graph``: lower; errors come out as
  ``InvalidGraphError`` (a ValueError) or ``cudnnGraphNotSupportedError``.
- ``create_execution_plans(heur_modes)``: dnnc has one engine, its
  heuristics (dnnc/heuristics/); every mode names it. One plan.
- ``check_support`` / ``build_plans``: compile, for the GPU through the JIT
  and its cache (``Graph.compile(target="cuda")``), else for the CPU back end.
  Pass-by-value scalars (epsilon, a scale) whose values come only with
  ``execute`` are dnnc runtime scalars (f32 kernel arguments) where dnnc
  takes them (a pointwise operand, the epsilon of layernorm and rmsnorm):
  one plan serves every value. A scalar dnnc compiles in (sdpa's
  attn_scale, an activation's slope, batchnorm's epsilon; or every scalar,
  when the compiler refuses a runtime one for a kernel: see ``_plan_for``)
  makes the graph compile at the first ``execute`` with each new set of its
  values (a JIT cache hit when seen before).
- ``execute``: ``execute.Plan.run`` on the caller's buffers and stream.

Which back end: ``target=`` ("cuda" or "cpu", a dnnc addition), else the
GPU when there is one, else the CPU.
"""

import base64
import functools
import io
import itertools
import json
import zipfile

from dnnc.errors import DnncError, GraphError, ScalarArgumentError, UnsupportedError
from dnnc.frontend import enums, handle as _handle
from dnnc.frontend.enums import (behavior_note, build_plan_policy, data_type, heur_mode,
                                 tensor_reordering)
from dnnc.frontend.errors import (InvalidGraphError, InvalidVariantPackError,
                                  cudnnGraphNotSupportedError)
from dnnc.frontend.execute import Plan, Steady, scalar_value
from dnnc.frontend.lowering import Lowering, Node, unsupported
from dnnc.frontend.ops_attention import AttentionOps
from dnnc.frontend.ops_core import CoreOps
from dnnc.frontend.ops_norm import NormOps
from dnnc.frontend.ops_pointwise import PointwiseOps
from dnnc.frontend.tensor import tensor as Tensor

_SERIAL_FORMAT = "dnnc.frontend/1"


def default_target():
    """"cuda" when a supported GPU is present, else "cpu"."""
    from dnnc import compiler

    try:
        compiler.detect_gpu()
    except UnsupportedError:
        return "cpu"
    return "cuda"


class pygraph(PointwiseOps, CoreOps, NormOps, AttentionOps):  # noqa: N801
    """A cudnn-frontend graph (see the module docstring)."""

    def __init__(self, name="test_graph", io_data_type=data_type.NOT_SET,
                 intermediate_data_type=data_type.NOT_SET, compute_data_type=data_type.NOT_SET,
                 handle=None, sm_count=None, sm_version=None, kernel_cache=None,
                 device_property=None, is_dynamic_shape_enabled=False,
                 is_override_shape_enabled=False, target=None):
        if is_dynamic_shape_enabled or is_override_shape_enabled:
            raise unsupported("pygraph", "dynamic shapes (is_dynamic_shape_enabled, "
                              "is_override_shape_enabled) are not supported by dnnc: a plan is "
                              "compiled for one shape")
        if sm_count is not None:
            raise unsupported("pygraph", "sm_count (limiting the SMs a plan uses) is not "
                              "supported by dnnc")
        if target not in (None, "cuda", "cpu"):
            raise InvalidGraphError(f"pygraph target: expected 'cuda' or 'cpu', got {target!r}")
        self.name = name
        self.io_data_type = enums.library_type(io_data_type)
        self.intermediate_data_type = enums.library_type(intermediate_data_type)
        self.compute_data_type = enums.library_type(compute_data_type)
        self.handle = handle
        self.arch = _arch(sm_version)
        self.target = target
        self.kernel_cache = kernel_cache  # accepted; dnnc's JIT cache plays its part
        self._tensors = []
        self._nodes = []
        self._uids = itertools.count(1)
        self._reset()

    def _reset(self):
        self._by_uid = None         # uid -> tensor, for variant packs keyed by uid
        self._lowering = None       # the Lowering of the last validate
        self._unsupported = None    # what validate found dnnc cannot run
        self._modes = None          # heuristics modes of create_execution_plans
        self._supported = False
        self._built = False
        self._plans = {}            # compiled-in scalar values key -> Plan
        self._last_plan = None
        self._steady = None         # execute.Steady of the last plan executed on the GPU
        self._compiled_in = False   # every scalar compiled in: the compiler refused one

    # -- tensors -----------------------------------------------------------------

    def tensor(self, dim, stride=None, data_type=data_type.NOT_SET, is_virtual=False,
               is_pass_by_value=False, ragged_offset=None,
               reordering_type=tensor_reordering.NONE, name="", uid=-1):
        """A graph input (or, with is_virtual, a placeholder). ``stride``
        defaults to row-major; ``data_type`` to the graph's io_data_type;
        ``ragged_offset`` makes it ragged (``tensor.set_ragged_offset``)."""
        if enums.enum_member(tensor_reordering, reordering_type, "reordering_type") \
                is not tensor_reordering.NONE:
            raise unsupported("tensor", f"'{name}': reordering_type {reordering_type} is not "
                              "supported by dnnc")
        dim = [int(d) for d in dim]
        if stride is None or not list(stride):
            from dnnc.graph import contiguous_strides

            stride = contiguous_strides(dim)
        elif len(stride) != len(dim):
            raise InvalidGraphError(f"tensor '{name}': stride: expected {len(dim)} values (the "
                                    f"rank of dim), got {len(stride)}")
        t = Tensor(self, dim=dim, stride=stride, data_type=data_type, is_virtual=is_virtual,
                   is_pass_by_value=is_pass_by_value, name=name, uid=self._new_uid(uid))
        if ragged_offset is not None:
            t.set_ragged_offset(ragged_offset)
        return self._keep(t)

    def tensor_like(self, input, name=""):
        """A graph input shaped like ``input``: a tensor (of any graph), or a
        torch tensor / DLPack or NumPy array (dims, strides, dtype). As in
        cudnn-frontend a CPU array is passed by value, here only when it
        holds one element: a scalar for ``execute`` to read."""
        if isinstance(input, Tensor):
            return self.tensor(dim=input.get_dim(), stride=input.get_stride(),
                               data_type=input.get_data_type(),
                               is_pass_by_value=input.get_is_pass_by_value(),
                               name=name or input.get_name())
        dims, strides, dtype, on_cpu = _array_layout(input)
        numel = 1
        for d in dims:
            numel *= d
        return self.tensor(dim=dims, stride=strides, data_type=dtype,
                           is_pass_by_value=on_cpu and numel == 1, name=name)

    def tensor_scalar(self, value, scalar_type=enums.scalar_type.COMPILE_TIME_CONST):
        """A scalar whose value is fixed now (compiled in, whatever the scalar_type)."""
        t = Tensor(self, dim=[1], stride=[1], data_type=data_type.FLOAT,
                   is_pass_by_value=True, uid=self._new_uid(-1), value=float(value))
        return self._keep(t)

    def _new_uid(self, uid):
        """A uid the caller gave, else None: one is assigned when first read
        (``get_uid``) or when the graph is lowered, as cuDNN assigns them at
        validation, so that uids the caller sets later do not collide."""
        if uid is not None and int(uid) != -1:
            return int(uid)
        return None

    def _assign_uid(self, t):
        self._by_uid = None
        taken = {x._uid for x in self._tensors if x._uid is not None}
        for candidate in self._uids:
            if candidate not in taken:
                t._uid = candidate
                return candidate

    def _keep(self, t):
        self._tensors.append(t)
        self._reset()
        return t

    def _uid_changed(self):
        self._reset()

    def _add(self, op, name, inputs, lower, n_out=1, present=None, dims_from_caller=False,
             labels=None):
        """Record an op; returns its output tensors (None where ``present`` says
        the op has no such output). An op given a name names its outputs as
        cuDNN does, ``<name>::<label>`` (``LN::Y``, ``mm::C``; ``OUT_<i>`` by
        default)."""
        for key, value in inputs.items():
            for t in value if isinstance(value, list) else [value]:
                if t is not None and not isinstance(t, Tensor):
                    raise InvalidGraphError(f"{op} {key}: expected a tensor, got "
                                            f"{type(t).__name__}")
        node = Node(op, name or f"{op}{len(self._nodes)}", inputs, lower, dims_from_caller)
        present = present or [True] * n_out
        for i in range(n_out):
            if not present[i]:
                node.outputs.append(None)
                continue
            label = labels[i] if labels else f"OUT_{i}"
            t = Tensor(self, is_virtual=True, uid=self._new_uid(-1), producer=(node, i),
                       name=f"{name}::{label}" if name else "")
            self._tensors.append(t)
            node.outputs.append(t)
        self._nodes.append(node)
        self._reset()
        return list(node.outputs)

    def query_tensor_attributes_of_uid(self, uid):
        for t in self._tensors:
            if t.get_uid() == uid:
                return t
        raise InvalidVariantPackError(f"uid {uid}: no tensor of this graph has it")

    # -- lowering ----------------------------------------------------------------

    def _try_infer(self):
        """Give tensors the dims, strides and type dnnc works out (placeholder
        scalars), for the getters; a graph that does not lower yet (an
        output whose dims the caller has still to set) leaves them unset,
        as cuDNN leaves them before validate."""
        try:
            Lowering(self).run()
        except DnncError:
            pass

    def _lower(self, values=None):
        for t in self._tensors:
            if t._uid is None:
                self._assign_uid(t)
        uids = [t.get_uid() for t in self._tensors]
        dup = sorted({u for u in uids if uids.count(u) > 1})
        if dup:
            raise InvalidGraphError(f"uid {dup[0]}: expected one tensor per uid, got "
                                    f"{uids.count(dup[0])}")
        return Lowering(self, values, runtime=not self._compiled_in).run()

    def to_dnnc(self, values=None):
        """The ``dnnc.Graph`` this graph lowers to. Pass-by-value scalars
        given in ``values`` (uid -> number) are compiled in; the others whose
        value is not fixed are runtime scalars where dnnc takes one (inputs
        of the dnnc graph), else compiled in as 1.0."""
        return self._lower(values).graph

    def to_mlir(self, values=None):
        """The graph's ``dnn`` module, as text (see ``to_dnnc``)."""
        return self.to_dnnc(values).to_mlir()

    # -- lifecycle ---------------------------------------------------------------

    def validate(self):
        """Lower to dnnc: every op's operands, shapes and types are checked.
        Errors come where cuDNN gives them: a graph built wrongly raises
        InvalidGraphError here, and so does an op option dnnc refuses
        (cudnnGraphNotSupportedError: cuDNN's validate checks op
        attributes); what only the lowering or the compiler finds dnnc
        cannot run (a data type, a problem) is raised by
        create_execution_plans and check_support."""
        self._unsupported = None
        try:
            self._lowering = self._lower()
        except cudnnGraphNotSupportedError as err:
            if getattr(err, "at_validate", False):
                raise
            self._lowering, self._unsupported = None, err

    def build_operation_graph(self):
        if self._lowering is None and self._unsupported is None:
            self.validate()

    def _check_supported(self):
        self.build_operation_graph()
        if self._unsupported is not None:
            raise self._unsupported

    def key(self):
        """A hash of the graph as dnnc sees it."""
        return hash(self.to_dnnc().serialize())

    def create_execution_plans(self, heur_modes=(heur_mode.A,)):
        if isinstance(heur_modes, heur_mode):
            heur_modes = [heur_modes]
        self._modes = [enums.enum_member(heur_mode, m, "heur_mode") for m in heur_modes]
        self._check_supported()

    def create_execution_plan(self, engine_id, knobs=None):
        if int(engine_id) != 0:
            raise cudnnGraphNotSupportedError(f"engine {engine_id}: dnnc has one engine, 0")
        if knobs:
            raise cudnnGraphNotSupportedError("knobs: dnnc's engine has none (its configs come "
                                              "from the heuristics and the tuning database)")
        self.create_execution_plans()

    def get_engine_count(self):
        return 1

    def get_knobs_for_engine(self, engine_id):
        return []

    def get_execution_plan_count(self):
        return 1 if self._modes is not None else 0

    def check_support(self):
        """Compile (unless scalars are still unknown): an unsupported graph
        raises cudnnGraphNotSupportedError here. Without
        create_execution_plans first, the plan is dnnc's heuristics' (there
        is no other)."""
        if self._modes is None:
            self.create_execution_plans()   # dnnc's one plan needs no engine choice
        self._check_supported()
        if not self._runtime_scalars():
            self._plan_for({})   # None when it had to compile scalars in: at execute
        self._supported = True

    def build_plans(self, policy=build_plan_policy.HEURISTICS_CHOICE):
        enums.enum_member(build_plan_policy, policy, "build_plans policy")
        if not self._supported:
            self.check_support()
        self._built = True

    def build_plan_at_index(self, index):
        _index(index)
        self.build_plans()

    def build(self, heur_modes=None):
        """validate + build_operation_graph, and with ``heur_modes`` the rest
        up to build_plans."""
        self.validate()
        self.build_operation_graph()
        if heur_modes is not None:
            self.create_execution_plans(heur_modes if isinstance(heur_modes, list)
                                        else [heur_modes])
            self.check_support()
            self.build_plans()

    def get_workspace_size(self):
        """0: dnnc's executables own their workspace."""
        return 0

    def get_workspace_size_plan_at_index(self, index):
        _index(index)
        return 0

    def get_behavior_notes(self):
        """RUNTIME_COMPILATION: dnnc compiles each plan when it is built."""
        return [behavior_note.RUNTIME_COMPILATION]

    def get_behavior_notes_for_plan_at_index(self, index):
        _index(index)
        return self.get_behavior_notes()

    def get_plan_name_at_index(self, index):
        """The kernels of the plan, each with its strategy and config."""
        _index(index)
        plan = self._last_plan or (None if self._runtime_scalars() else self._plan_for({}))
        if plan is None:
            return "not compiled yet: pass-by-value scalars arrive with execute"
        return plan.name

    def describe_plan(self):
        """The last compiled plan's launch table (kernels, strategies, grids,
        the heuristics' reasons), or why there is none yet."""
        plan = self._last_plan or (None if self._runtime_scalars() else self._plan_for({}))
        if plan is None:
            return "not compiled yet: pass-by-value scalars arrive with execute"
        return plan.describe()

    def deselect_engines(self, names):
        pass  # one engine, which no cuDNN engine name matches

    def deselect_numeric_notes(self, notes):
        pass  # dnnc's plan carries no cuDNN numeric notes

    def deselect_behavior_notes(self, notes):
        pass

    def select_numeric_notes(self, notes):
        if notes:
            raise cudnnGraphNotSupportedError("select_numeric_notes: dnnc's plan carries no "
                                              "cuDNN numeric notes")

    def select_behavior_notes(self, notes):
        if notes:
            raise cudnnGraphNotSupportedError("select_behavior_notes: dnnc's plan carries no "
                                              "cuDNN behavior notes")

    def deselect_workspace_greater_than(self, workspace):
        pass  # the caller's workspace is never used (get_workspace_size is 0)

    # -- compiling and running ----------------------------------------------------

    def _runtime_scalars(self):
        """The pass-by-value tensors whose values come with execute and are
        compiled in (a runtime scalar of dnnc needs no value to compile)."""
        if self._lowering is None:
            self._lowering = self._lower()
        return [t for t in self._lowering.scalars if t._value is None]

    def _plan_for(self, values):
        """The plan for compiled-in scalar ``values`` (uid -> number),
        compiled on first use. When the compiler refuses a runtime scalar
        (ScalarArgumentError from a kernel that cannot take it), the graph is
        lowered again with every scalar compiled in, and None is returned:
        the plan then waits for execute's values."""
        key = tuple(sorted(values.items()))
        plan = self._plans.get(key)
        if plan is None:
            try:
                plan = self._compile(values)
            except _ScalarsRefused:
                self._compiled_in = True
                self._plans, self._lowering = {}, self._lower()
                return None
            self._plans[key] = plan
        self._last_plan = plan
        return plan

    def _compile(self, values):
        lowering = self._lower(values)
        g = lowering.graph
        target = self.target or default_target()
        try:
            if target == "cuda":
                # As dnnc.jit compiles: the GPU's arch and name (the tuning
                # database is keyed by it), through the cache.
                from dnnc import compiler, env

                options = {"dump_ir": env.dump_ir_dir()}
                arch = self.arch
                if arch is None:
                    arch, gpu = compiler.detect_gpu()
                    if gpu:
                        options["gpu"] = gpu
                exe, package = compiler.compile_or_load(g, arch, True, **options)
            else:
                package = None
                exe = g.compile(target="cpu")
        except ScalarArgumentError as err:
            if lowering.runtime_scalars:
                raise _ScalarsRefused(str(err)) from err
            raise cudnnGraphNotSupportedError(str(err)) from err
        except UnsupportedError as err:
            raise cudnnGraphNotSupportedError(str(err)) from err
        by_name = {d.name: t for t, d in lowering.inputs}
        outputs = {id(d): t for t in self._tensors
                   for d in [lowering.dnnc_of(t)] if d is not None and d.is_output}
        names = exe.input_names if target == "cpu" else [s.name for s in exe.inputs]
        ins = [by_name[n] for n in names]
        outs = [outputs[id(d)] for d in g.outputs]
        return Plan(target, exe, ins, outs, dnnc_graph=g, package=package)

    def execute(self, variant_pack, workspace=None, handle=None, override_uids=None,
                override_shapes=None, override_strides=None):
        """Run the built plan on ``variant_pack`` (tensor or uid -> buffer or,
        for a pass-by-value tensor, a number) on ``handle``'s stream."""
        steady = self._steady
        if steady is not None and not (override_uids or override_shapes or override_strides):
            stream = _handle.stream_of(handle if handle is not None else self.handle)
            if steady.run(variant_pack, stream):
                return
        if override_uids or override_shapes or override_strides:
            raise unsupported("execute", "override_uids / override_shapes / override_strides "
                              "(dynamic shapes) are not supported by dnnc")
        if not self._built:
            raise GraphError("execute: expected build_plans() first")
        pack = self._pack(variant_pack)
        plan = None
        while plan is None:   # again (once) if compiling had to compile scalars in
            values = {}
            scalars = self._runtime_scalars()    # those compiled in: a plan per value
            for t in scalars:
                if t not in pack:
                    raise InvalidVariantPackError(f"variant pack: pass-by-value tensor "
                                                  f"'{t.get_name()}' (uid {t.get_uid()}) is "
                                                  "missing")
                values[t.get_uid()] = scalar_value(pack[t], t)
            plan = self._plan_for(values)
        stream = _handle.stream_of(handle if handle is not None else self.handle)
        plan.run(pack, stream)
        if plan.target == "cuda" and (steady is None or steady.plan is not plan):
            # Later calls like this one take the fast path.
            self._steady = Steady(plan, scalars, [values[t.get_uid()] for t in scalars])

    def execute_plan_at_index(self, variant_pack, workspace, index, handle=None,
                              override_uids=None, override_shapes=None, override_strides=None):
        _index(index)
        self.execute(variant_pack, workspace, handle, override_uids, override_shapes,
                     override_strides)

    def _pack(self, variant_pack):
        by_uid = self._by_uid
        if by_uid is None:
            by_uid = self._by_uid = {t.get_uid(): t for t in self._tensors}
        pack = {}
        for key, value in variant_pack.items():
            if key is None:
                continue
            if isinstance(key, Tensor):
                if key._graph is not self:
                    raise InvalidVariantPackError(f"variant pack: tensor '{key.get_name()}' is "
                                                  "not a tensor of this graph")
                pack[key] = value
            else:
                t = by_uid.get(int(key))
                if t is None:
                    raise InvalidVariantPackError(f"variant pack: uid {key}: expected a uid of "
                                                  f"this graph ({sorted(by_uid)}), got none")
                pack[t] = value
        return pack

    def populate_cuda_graph(self, handle, variant_pack, workspace, cuda_graph):
        raise unsupported("populate_cuda_graph", "building a CUDA graph natively is not "
                          "supported by dnnc: capture execute with torch.cuda.graph instead")

    def update_cuda_graph(self, handle, variant_pack, workspace, cuda_graph):
        raise unsupported("update_cuda_graph", "see populate_cuda_graph")

    # -- serialization -------------------------------------------------------------

    def serialize(self):
        """The built plan as bytes: the compiled package (.dnnpkg; the
        graph's dnn MLIR for the CPU back end) and the uid, name, dims and
        role of each of its tensors, so that ``deserialize`` can execute it
        by uid. Needs a compiled plan (after build_plans, or after the first
        execute when pass-by-value scalars arrive with it)."""
        plan = self._last_plan
        if plan is None:
            if not self._built or self._runtime_scalars():
                raise GraphError("serialize: expected a compiled plan (build_plans(), and with "
                                 "pass-by-value scalars a first execute)")
            plan = self._plan_for({})
        header = {"format": _SERIAL_FORMAT, "name": self.name, "target": plan.target,
                  "inputs": [_tensor_form(t) for t in plan.inputs],
                  "outputs": [_tensor_form(t) for t in plan.outputs]}
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("frontend.json", json.dumps(header))
            if plan.target == "cuda":
                z.writestr("graph.dnnpkg", plan.package)
            else:
                z.writestr("graph.mlir", plan.dnnc_graph.to_mlir())
        return list(buf.getvalue())

    def deserialize(self, *args):
        """Load what ``serialize`` made (``deserialize(data)`` or
        ``deserialize(handle, data)``); the graph is then built, with the
        serialized tensors' uids."""
        data = args[-1]
        if isinstance(data, str):
            data = base64.b64decode(data)
        try:
            with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
                header = json.loads(z.read("frontend.json"))
                body = z.read("graph.dnnpkg" if header.get("target") == "cuda" else "graph.mlir")
        except (zipfile.BadZipFile, KeyError, ValueError) as err:
            raise InvalidGraphError(f"deserialize: expected bytes from pygraph.serialize(), "
                                    f"got unreadable data ({err})") from None
        if header.get("format") != _SERIAL_FORMAT:
            raise InvalidGraphError(f"deserialize: expected format {_SERIAL_FORMAT}, got "
                                    f"{header.get('format')!r}")
        self.__init__(name=header["name"], handle=self.handle, target=header["target"])
        ins = [self._restore(f) for f in header["inputs"]]
        outs = [self._restore(f, output=True) for f in header["outputs"]]
        if header["target"] == "cuda":
            import dnnc_runtime

            exe = dnnc_runtime.load(body)
        else:
            from dnnc.graph import Graph

            exe = Graph.from_mlir(body.decode()).compile(target="cpu")
        plan = Plan(header["target"], exe, ins, outs, package=body)
        self._plans[()] = self._last_plan = plan
        self._modes, self._supported, self._built = [heur_mode.A], True, True
        self._lowering = _Deserialized()

    def _restore(self, form, output=False):
        t = Tensor(self, dim=form["dim"], stride=form["stride"],
                   data_type=enums.data_type[form["data_type"]], name=form["name"],
                   uid=form["uid"], is_pass_by_value=form.get("pass_by_value", False))
        t._restored_output = output
        self._tensors.append(t)
        return t

    # -- printing ----------------------------------------------------------------

    def __repr__(self):
        lines = [f"pygraph '{self.name}': io {self.io_data_type.name}, intermediate "
                 f"{self.intermediate_data_type.name}, compute {self.compute_data_type.name}"]
        restored = [t for t in self._tensors if getattr(t, "_restored_output", False)]
        for t in self._tensors:
            if t.is_input and t not in restored:
                lines.append(f"  input  {_short(t)}")
        for node in self._nodes:
            ins = ", ".join(f"{k}={_ref(v)}" for k, v in node.inputs.items() if v is not None)
            outs = ", ".join(_ref(t) for t in node.outputs)
            lines.append(f"  {node.op} '{node.name}'({ins}) -> {outs}")
        for t in self._tensors:
            if (not t.is_input and not t.get_is_virtual()) or t in restored:
                lines.append(f"  output {_short(t)}")
        if self._last_plan is not None:
            lines.append(f"  plan ({self._last_plan.target}): {self._last_plan.name}")
        return "\n".join(lines)


# Outputs of the ops whose refusals are deferred (1 for every other op).
_OUTPUTS = {"sdpa": 2, "sdpa_backward": 3, "sdpa_fp8": 4, "sdpa_fp8_backward": 6,
            "sdpa_mxfp8": 2, "layernorm": 3, "rmsnorm": 2, "instancenorm": 3, "batchnorm": 5,
            "layernorm_backward": 3, "rmsnorm_backward": 3, "instancenorm_backward": 3,
            "batchnorm_backward": 3, "adalayernorm": 3, "adalayernorm_backward": 3,
            "genstats": 2, "block_scale_quantize": 2}


def _deferring(method):
    """``method`` (an op), with a refusal (cudnnGraphNotSupportedError)
    recorded as an op whose lowering raises it, and placeholder outputs
    returned: cuDNN reports an op option it does not support from
    ``validate``, where cudnn-frontend code catches it to skip or fall
    back, not when the op is added."""
    n_out = _OUTPUTS.get(method.__name__, 1)

    @functools.wraps(method)
    def op(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except cudnnGraphNotSupportedError as err:
            err.at_validate = True

            def lower(ctx, node, err=err):
                raise err

            outs = self._add(method.__name__, kwargs.get("name", ""), {}, lower, n_out=n_out)
            return outs[0] if n_out == 1 else tuple(outs)

    return op


for _mixin in (PointwiseOps, CoreOps, NormOps, AttentionOps):
    for _name, _method in vars(_mixin).items():
        if callable(_method) and not _name.startswith("_"):
            setattr(pygraph, _name, _deferring(_method))


class _ScalarsRefused(Exception):
    """The compiler refused a graph's runtime scalars (ScalarArgumentError):
    ``_plan_for`` compiles their values in instead."""


class _Deserialized:
    """The lowering of a deserialized graph: it has no ops, and no scalars."""

    scalars = ()


def _index(index):
    if int(index) != 0:
        raise cudnnGraphNotSupportedError(f"plan index {index}: dnnc makes one plan, index 0")


def _arch(sm_version):
    if sm_version is None:
        return None
    from dnnc import compiler

    v = int(sm_version)
    return compiler.arch_for_capability(v // 10, v % 10)


def _array_layout(array):
    """(dims, strides in elements, dtype, on the CPU) of a torch tensor, a
    NumPy array or a DLPack/CUDA-array-interface object."""
    if hasattr(array, "stride") and callable(array.stride) and hasattr(array, "dtype"):
        device = getattr(array, "device", None)
        return (list(array.shape), list(array.stride()), array.dtype,
                getattr(device, "type", "cpu") == "cpu")
    if hasattr(array, "strides") and hasattr(array, "itemsize") and \
            not hasattr(array, "__cuda_array_interface__"):
        return list(array.shape), [s // array.itemsize for s in array.strides], array.dtype, True
    cai = getattr(array, "__cuda_array_interface__", None)
    if cai is not None:
        import numpy as np

        dt = np.dtype(cai["typestr"])
        shape = list(cai["shape"])
        strides = cai.get("strides")
        if strides is None:
            from dnnc.graph import contiguous_strides

            strides = contiguous_strides(shape)
        else:
            strides = [s // dt.itemsize for s in strides]
        return shape, strides, dt, False
    raise InvalidGraphError(f"tensor_like: expected a tensor, a torch tensor or an array, got "
                            f"{type(array).__name__}")


def _tensor_form(t):
    form = {"uid": t.get_uid(), "name": t.get_name(), "dim": t._dim, "stride": t._stride,
            "data_type": t.get_data_type().name}
    if t.get_is_pass_by_value():
        form["pass_by_value"] = True   # a runtime scalar of the plan
    return form


def _short(t):
    return (f"'{t.get_name() or '?'}' uid {t.get_uid()} dim {t._dim} stride {t._stride} "
            f"{t._data_type.name if t._data_type is not data_type.NOT_SET else ''}"
            f"{' pass-by-value' if t.get_is_pass_by_value() else ''}").rstrip()


def _ref(value):
    if value is None:
        return "-"
    if isinstance(value, list):
        return "[" + ", ".join(_ref(v) for v in value) + "]"
    return f"%{value.get_uid()}" + (f"'{value.get_name()}'" if value.get_name() else "")
