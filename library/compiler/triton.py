"""Triton: a `@triton.jit` kernel in `kernels/*.py`, compiled ahead of time for any target.

Triton compiles without a GPU: `triton.compile(ASTSource(fn, signature, constexprs, attrs),
target=GPUTarget(...), options=...)` gives a cubin (NVIDIA, its own ptxas) or an AMDGPU code
object (its own LLVM and AMD's device bitcode). The job's options say everything that shapes
the result, and so form the kdb row's `kernel_args`:

    -D<NAME>=<value>          a constexpr (int, True/False, or a name)
    --signature=a:*fp16,...    the non-constexpr arguments in order, with Triton's types
    --assume=a:16,K:16         divisibility/alignment assumptions (tt.divisibility)
    --kernel=<symbol>          the @triton.jit function (so that a kdb row names it)
    --<option>=<value>         a Triton compile option: num-warps, num-stages,
                               dot-precision (default_dot_input_precision), ...

The options name every argument flat, as launches and spec tables do. A kernel may take some
of them as tuple arguments (Triton passes a tuple's members as separate parameters, in order):
its file then maps each tuple argument to the flat names of its members in a module-level
`TUPLE_ARGS` dict, and `source_arguments` builds the tuples' signature, constexprs and
assumptions from the flat names, the one place that does.

The result is the code object with its `LaunchMetadata` attached as a kdb trailer
(`codeobject.attach_launch_metadata`): the runtime launches it with no Triton installed.
Triton is imported on first use only, and writes its own cache into a temporary folder, never
under the home directory.
"""

from __future__ import annotations

import importlib.util
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from ..codeobject import LaunchMetadata, attach_launch_metadata
from ..config import scoped_env, triton_importable
from ..errors import CompileError
from .triton_ir import compile_through_ir_cache, target_dependent

__all__ = ["TritonCompiler", "TRITON", "TritonOptions", "parse_options", "mma_env", "available",
           "gpu_target", "source_arguments", "launch_arguments", "ast_source", "every_option"]

_ALIASES = {"dot-precision": "default_dot_input_precision"}
_INT_OPTIONS = {"num_warps", "num_stages", "num_ctas", "waves_per_eu", "matrix_instr_nonkdim",
                "kpack", "maxnreg"}


def available() -> bool:
    """Whether Triton can be imported here (the JIT fallback needs it; launches do not)."""
    return triton_importable()


def _triton() -> Any:
    try:
        import triton
    except ImportError:
        raise CompileError("Triton is not installed: pip install 'miopenkernels[build]' "
                           "(or triton) to compile Triton kernels") from None
    return triton


def _value(text: str) -> int | bool | str:
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text, 0)
    except ValueError:
        return text


class TritonOptions:
    """A Triton job's options, parsed: constexprs, signature, assumptions, compile options."""

    def __init__(self, options: Sequence[str]) -> None:
        self.constexprs: dict[str, int | bool | str] = {}
        self.signature: list[tuple[str, str]] = []
        self.assumptions: list[tuple[str, int]] = []
        # Triton's overflow checks feed only assertions, which `debug` off drops: they cost the
        # code generator and the passes time and leave the same bytes (tests/integration/
        # test_triton_ir.py), so they are off unless a job asks for them.
        self.compile: dict[str, Any] = {"sanitize_overflow": False}
        self.kernel = ""
        self.mma = 0  # 0: the target's own matrix instruction; 2: mma.sync on sm90
        for opt in options:
            if opt.startswith("-D") and "=" in opt:
                name, _, value = opt[2:].partition("=")
                self.constexprs[name] = _value(value)
            elif opt.startswith("--signature="):
                for item in filter(None, opt.split("=", 1)[1].split(",")):
                    name, _, kind = item.partition(":")
                    if not name or not kind:
                        raise CompileError(f"Triton signature entry {item!r} is not name:type")
                    self.signature.append((name, kind))
            elif opt.startswith("--assume="):
                for item in filter(None, opt.split("=", 1)[1].split(",")):
                    name, _, div = item.partition(":")
                    if not div.isdigit() or int(div) < 1:
                        raise CompileError(f"Triton assumption {item!r} is not name:divisor")
                    self.assumptions.append((name, int(div)))
            elif opt.startswith("--kernel="):
                self.kernel = opt.split("=", 1)[1]
            elif opt.startswith("--mma="):
                value = opt.split("=", 1)[1]
                if value not in ("0", "2"):
                    raise CompileError(f"Triton job option {opt!r}: --mma is 0 (the target's "
                                       "own matrix instruction) or 2 (mma.sync)")
                self.mma = int(value)
            elif opt.startswith("--") and "=" in opt:
                name, _, value = opt[2:].partition("=")
                key = _ALIASES.get(name, name.replace("-", "_"))
                self.compile[key] = int(value) if key in _INT_OPTIONS else _value(value)
            else:
                raise CompileError(f"Triton job option {opt!r} is not -DNAME=V, "
                                   "--signature=, --assume= or --option=V")


def parse_options(options: Sequence[str]) -> TritonOptions:
    return TritonOptions(options)


def gpu_target(arch: str) -> Any:
    """Triton's GPUTarget for a DbId: ('cuda', 90, 32), ('hip', 'gfx942', 64)."""
    from triton.backends.compiler import GPUTarget

    if arch.startswith("sm"):
        return GPUTarget("cuda", int(arch[2:]), 32)
    # CDNA (gfx9) runs 64-wide wavefronts; RDNA's wmma kernels run 32-wide.
    return GPUTarget("hip", arch, 64 if arch.startswith("gfx9") else 32)


@lru_cache(maxsize=16)
def _load_module(path: str, digest: str) -> ModuleType:
    """Import a kernel file as a module of a package made for its folder, so that relative
    imports of its sibling files (`from .conv_triton_spec import ...`) work wherever the
    folder is (the installed package or MIOPENKERNELS_KERNELS_DIR)."""
    import sys

    file = Path(path)
    package = "_miopenkernels_triton_" + digest[:16]
    if package not in sys.modules:
        pkg = ModuleType(package)
        pkg.__path__ = [str(file.parent)]
        sys.modules[package] = pkg
    name = f"{package}.{file.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise CompileError(f"cannot import Triton kernel file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - a broken kernel file is a compile failure
        del sys.modules[name]
        raise CompileError(f"importing {path} failed: {type(exc).__name__}: {exc}") from None
    return module


def kernel_function(source: Path, symbol: str) -> Any:
    """The `@triton.jit` function `symbol` of the kernel file `source`."""
    from ..kernel_sources import source_digest

    digest = source_digest(source.name, source.parent)
    module = _load_module(str(source.resolve()), digest)
    fn = getattr(module, symbol, None)
    if fn is None or not hasattr(fn, "arg_names"):
        raise CompileError(f"{source.name} has no @triton.jit function {symbol!r}")
    return fn


def _tuple_args(fn: Any) -> dict[str, tuple[str, ...]]:
    """The tuple arguments of a kernel's file (its `TUPLE_ARGS`): name -> member names. `fn`
    is a JITFunction, or an InterpretedFunction under TRITON_INTERPRET=1; both wrap the Python
    function as `.fn`."""
    tuples = getattr(getattr(fn, "fn", fn), "__globals__", {}).get("TUPLE_ARGS", {})
    return {name: tuple(members) for name, members in tuples.items() if name in fn.arg_names}


def _paths(fn: Any, what: str) -> dict[str, tuple[int, ...]]:
    """Where each flat argument stands among a kernel's parameters, in their order: (i,) for
    parameter i, (i, j) for member j of tuple parameter i."""
    tuples = _tuple_args(fn)
    paths: dict[str, tuple[int, ...]] = {}
    for i, name in enumerate(fn.arg_names):
        for j, flat in enumerate(tuples.get(name, (name,))):
            if flat in paths:
                raise CompileError(f"{what}: {fn.__name__} takes {flat!r} twice (TUPLE_ARGS "
                                   "of its file); give each argument one name")
            paths[flat] = (i, j) if name in tuples else (i,)
    return paths


def _defaults(fn: Any) -> dict[str, Any]:
    """A kernel's parameters that have default values (constexprs a job may leave out)."""
    import inspect

    params = inspect.signature(getattr(fn, "fn", fn)).parameters.values()
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def launch_arguments(fn: Any, flat: Mapping[str, Any]) -> dict[str, Any]:
    """A kernel's parameters from values by flat name, a tuple argument the tuple of its
    members' values (a parameter with a default value where `flat` has none): for a launch
    through Triton's own launcher (the interpreter, benches)."""
    tuples = _tuple_args(fn)
    flat = {**_defaults(fn), **flat}
    return {name: tuple(flat[m] for m in tuples[name]) if name in tuples else flat[name]
            for name in fn.arg_names}


def source_arguments(fn: Any, signature: Sequence[tuple[str, str]],
                     constexprs: Mapping[str, Any], assumptions: Sequence[tuple[str, int]],
                     what: str = "compile",
                     ) -> tuple[dict[str, Any], dict[tuple[int, ...], Any], dict[Any, Any]]:
    """(signature, constexprs, attrs) for `ASTSource(fn, ...)` from flat names: `signature`
    the run-time arguments (name, Triton type) in the kernel's order, `constexprs` by name
    (a parameter's default value where a constexpr is left out),
    `assumptions` (name, divisor) for tt.divisibility. A tuple argument's signature is the
    tuple of its members' types; its constexpr members and assumptions go by path."""
    symbol = fn.__name__
    paths = _paths(fn, what)
    given = dict(signature)
    constexprs = {**{n: v for n, v in _defaults(fn).items() if n not in given}, **constexprs}
    types: dict[str, Any] = {}
    for name in paths:
        if name in constexprs:
            types[name] = "constexpr"
        elif name in given:
            types[name] = given[name]
        else:
            raise CompileError(f"{what}: argument {name!r} of {symbol} is neither in "
                               "--signature nor a -D constexpr")
    unknown = sorted(set(given) - set(paths)) + sorted(set(constexprs) - set(paths))
    if unknown:
        raise CompileError(f"{what}: {symbol} has no argument(s) {', '.join(unknown)}")
    order = [name for name in paths if name in given]
    if [name for name, _ in signature] != order:
        raise CompileError(f"{what}: --signature lists {symbol}'s arguments out of its order "
                           f"({', '.join(order)}); list them in the kernel's order")
    attrs = {}
    for name, div in assumptions:
        if name not in given:
            raise CompileError(f"{what}: assumption on {name!r}, not a run-time argument")
        attrs[paths[name]] = [["tt.divisibility", div]]
    return (launch_arguments(fn, types), {paths[n]: v for n, v in constexprs.items()}, attrs)


def ast_source(source: Path, symbol: str, opts: TritonOptions, what: str = "compile") -> Any:
    """`triton.compiler.ASTSource` of `symbol` in `source` as a job's options describe it
    (signature, constexprs, assumptions): what `triton.compile` starts from."""
    from triton.compiler import ASTSource

    fn = kernel_function(source, symbol)
    signature, constexprs, attrs = source_arguments(fn, opts.signature, opts.constexprs,
                                                    opts.assumptions, what)
    return ASTSource(fn, signature=signature, constexprs=constexprs, attrs=attrs)


@contextmanager
def mma_env(mma: int) -> Iterator[None]:
    """DISABLE_MMA_V3=1 while compiling an --mma=2 job (Triton then lowers tl.dot to
    mma.sync on sm90), and the environment as it was afterwards. The builder's workers are
    processes; within one process (a kdb miss compiled at run time) the lock keeps every other
    Triton compile out while the variable is set."""
    with _COMPILE_LOCK:
        if mma != 2:
            yield
            return
        with scoped_env("DISABLE_MMA_V3", "1"):
            yield


_COMPILE_LOCK = threading.Lock()


def every_option(source: Path, opts: TritonOptions) -> bool:
    """Whether the code-generator module of `source`'s kernel with these options may depend
    on the backend and every parsed Triton option (`triton_ir.target_dependent`: its sources
    or signature name FP8 types, Triton's vendor modules or its target queries), so that only
    targets whose options all agree share it."""
    from ..kernel_sources import source_files

    texts = [path.read_text(errors="replace") for path in source_files(source.name,
                                                                        source.parent)]
    return target_dependent([*texts, ",".join(kind for _, kind in opts.signature)])


def _compile(src: Any, target: Any, opts: TritonOptions, ir_cache: Path | None, tmp: Path,
             source: Path) -> Any:
    """`triton.compile` of `src`, through the IR cache where one is given."""
    options = dict(opts.compile)
    if ir_cache is None:
        return _triton().compile(src, target=target, options=options)
    return compile_through_ir_cache(src, target, options, f"mma={opts.mma}", ir_cache, tmp,
                                    every_option(source, opts))


class TritonCompiler:
    """Triton from PyPI, used as a cross-compiler for every matrix-core target."""

    name = "triton"
    vendor = "any"

    def compile_kernel(self, source: Path, symbol: str, options: Sequence[str], arch: str,
                       what: str = "compile", ir_cache: Path | None = None) -> bytes:
        """Compile `symbol` of `source` for `arch` (DbId); the code object + LaunchMeta.
        `ir_cache`: a folder of Triton IR that other targets' compiles of the same job left
        (`triton_ir`), read and added to."""
        triton = _triton()
        opts = TritonOptions(options)
        if opts.kernel and opts.kernel != symbol:
            raise CompileError(f"{what}: options name kernel {opts.kernel}, the job {symbol}")
        src = ast_source(source, symbol, opts, what)
        target = gpu_target(arch)
        if opts.mma and not (target.backend == "cuda" and target.arch == 90):
            raise CompileError(f"{what}: --mma={opts.mma} (mma.sync in place of wgmma) is for "
                               f"sm90 only, not {arch}")
        try:
            # A private cache directory per compile: Triton's cache key does not hold
            # DISABLE_MMA_V3, which its C++ passes read from the environment.
            with triton.knobs.cache.scope(), triton.knobs.compilation.scope(), \
                    tempfile.TemporaryDirectory(prefix="mk-tt-") as tmp, mma_env(opts.mma):
                triton.knobs.cache.home_dir = tmp
                triton.knobs.cache.dir = tmp
                # No line tables: they (and the PTX text that ptxas embeds with them) are most
                # of a cubin, and every byte is decompressed and loaded on a first call.
                triton.knobs.compilation.disable_line_info = True
                kernel = _compile(src, target, opts, ir_cache, Path(tmp), source)
        except Exception as exc:  # noqa: BLE001 - Triton raises many types; all mean "failed"
            raise CompileError(f"{what} failed: {type(exc).__name__}: {str(exc)[:2000]}",
                               log=str(exc)) from None
        md = kernel.metadata
        blob = kernel.asm["cubin" if target.backend == "cuda" else "hsaco"]
        meta = LaunchMetadata.from_triton({
            # Triton's kernels take both scratch pointers on every backend; its AMD metadata
            # names only the profile one.
            "global_scratch_size": 0, "global_scratch_align": 1, **md._asdict(),
            "target": {"warp_size": target.warp_size},
            "assumptions": [f"{n} % {d} == 0" for n, d in opts.assumptions],
        })
        if any(size for _, size, _ in meta.scratch_args):
            raise CompileError(f"{what}: the kernel needs Triton scratch memory "
                               f"{meta.scratch_args}, which the runtime does not provide")
        if int(md.num_ctas) != 1:
            raise CompileError(f"{what}: num_ctas={md.num_ctas}; only single-CTA kernels launch")
        return attach_launch_metadata(bytes(blob), meta)

    def compile(self, source: Path, options: Sequence[str], arch: str,
                include_dirs: Sequence[Path] = (), what: str = "compile") -> bytes:
        raise CompileError(f"{what}: a Triton job names its kernel symbol; use compile_kernel")

    def identity(self) -> str:
        """`triton <version>`, the debug-info and overflow-check settings: what of the
        compiler shapes the output."""
        return f"triton {_triton().__version__} no-line-info no-overflow-checks"


TRITON = TritonCompiler()
