"""The one error hierarchy of the compiler.

Library code raises these and never prints or exits; the command-line tools map
them to messages and exit codes. Messages name the op, the operand or tensor,
the dimension, and say ``expected X, got Y``.
"""


class DnncError(Exception):
    """Base class of every error dnnc raises on purpose."""


class GraphError(DnncError):
    """A graph was built or used wrongly (unknown tensor, missing input, ...).

    A wrong argument of a CPU executable is a GraphError of its own class,
    ``dnnc.targets.cpu_arguments.ArgumentError``, which is also the runtime's
    ``dnnc_runtime.ArgumentError`` (defined there: this module is below the
    runtime's users), so one ``except`` catches it on either back end.
    """


class VerificationError(DnncError):
    """An op's operands, results or attributes break the op's rules.

    ``op`` is the op name (``dnn.matmul``), ``location`` the source location
    when the op came from MLIR text.
    """

    def __init__(self, message, *, op=None, location=None):
        super().__init__(message)
        self.op = op
        self.location = location


class UnsupportedError(DnncError):
    """The request is valid but this version of dnnc does not implement it."""


class ScalarArgumentError(UnsupportedError):
    """A kernel's strategy cannot take a runtime scalar (``Graph.scalar``) as
    a kernel argument (dnn-scalar-args). ``kernel`` and ``scalar`` name them;
    compiling the value in (``Graph.constant``) is the way around, which
    dnnc.frontend takes by itself."""

    def __init__(self, message, *, kernel=None, scalar=None):
        super().__init__(message)
        self.kernel = kernel
        self.scalar = scalar


class LoweringError(DnncError):
    """A pass failed to transform IR it accepted."""


class PipelineError(DnncError):
    """A pass pipeline string names an unknown pass or has bad syntax."""


class TuningError(DnncError):
    """The tuning database cannot be used: unreadable, not JSON, or not a
    tuning database (dnnc/tune/db.py). ``path`` is the file at fault."""

    def __init__(self, message, *, path=None):
        super().__init__(message)
        self.path = path


class ToolError(DnncError):
    """An external tool (ptxas, the MLIR parser, ...) failed.

    ``stderr`` carries what the tool said.
    """

    def __init__(self, message, *, stderr=""):
        super().__init__(message if not stderr else f"{message}\n{stderr}")
        self.stderr = stderr
