"""What the interpreter tests of the Triton families share: a script prelude that runs a
solver's launches under Triton's interpreter on the CPU (TRITON_INTERPRET=1) with numpy arrays
as tensors, and reads the results back as float64.

The interpreter takes tensors with torch's interface; `_HostTensor` gives a numpy array that
interface (bfloat16 kept as its bits), so neither torch nor a GPU is needed. Triton 3.6's
interpreter turns a scalar into an index with int() of a one-element array, which numpy 2
refuses: the prelude reads the element instead. A test's script is HARNESS followed by its
own lines, run in a child process with TRITON_INTERPRET=1 set before Triton is imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

__all__ = ["HARNESS", "interpreted"]

HARNESS = textwrap.dedent('''
    import json, sys
    import numpy as np
    import triton.runtime.interpreter as interpreter

    _patch = interpreter._patch_lang_tensor

    def _patch_index(tensor, scope):
        _patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    interpreter._patch_lang_tensor = _patch_index

    from miopenkernels.compiler.triton import launch_arguments
    from miopenkernels.kernels import conv_triton
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers import get_solver
    from miopenkernels.solvers.reference import conv_reference, conv_tensor_shapes
    from miopenkernels.target import Target

    SM90 = Target("sm90", 132)
    NUMPY = {"FP32": np.float32, "FP16": np.float16}

    class _Dtype:
        def __init__(self, name):
            self.name = name

        def __str__(self):
            return self.name

    # One dtype object per type for the whole run: Triton keeps the type it read off a dtype
    # object by the object's address, so a new one at a freed one's address took its type
    # (an FP32 tensor passed as FP16 after a few cases).
    DTYPES = {name: _Dtype(name) for name in ("float32", "float16", "bfloat16")}

    class _HostTensor:
        """A numpy array as the interpreter wants a tensor: its storage is itself."""

        def __init__(self, array, name):
            self.array, self.dtype = array, DTYPES[name]

        def data_ptr(self):
            return self.array.ctypes.data

        def untyped_storage(self):
            return self

        def cpu(self):
            return self

        def new_empty(self, *args, **kwargs):
            return self

        def set_(self, *args):
            return self

        def copy_(self, other):
            return self

        def storage_offset(self):
            return 0

        def size(self):
            return self.array.shape

        def stride(self):
            return tuple(s // self.array.itemsize for s in self.array.strides)

    def to_device(values, data_type):
        if data_type == "BF16":
            bits = values.astype(np.float32).view(np.uint32)
            bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
            return _HostTensor(np.ascontiguousarray(bits), "bfloat16")
        array = np.ascontiguousarray(values.astype(NUMPY[data_type]))
        return _HostTensor(array, "float32" if data_type == "FP32" else "float16")

    def to_host(tensor):
        if tensor.dtype.name == "bfloat16":
            return (tensor.array.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return tensor.array.astype(np.float64)

    def constexprs(job):
        out = {}
        for option in job.options:
            if option.startswith("-D"):
                name, value = option[2:].split("=", 1)
                out[name] = int(value) if value.lstrip("-").isdigit() else value
        return out

    def run(kernel, launch, job, tensors):
        """One launch through the interpreter, its flat arguments grouped into the kernel's
        tuple arguments where it takes some (compiler.triton.launch_arguments)."""
        fn = getattr(kernel, launch.kernel_name)
        flat = {arg.name: tensors[arg.tensor] if arg.is_pointer else int(arg.value)
                for arg in launch.args if arg.name not in ("global_scratch", "profile_scratch")}
        fn[launch.grid](**launch_arguments(fn, {**flat, **constexprs(job)}))

    def clear_first(launch, tensors):
        """Zero the tensors a main launch has the runtime clear first (`Launch.zero_first`)."""
        for name in launch.zero_first:
            tensors[name].array[...] = 0

    def layer_tensors(p, direction, data_type, rng):
        """(the layer's tensors on the device, random inputs and the output NaN; the inputs'
        exact values as the element type holds them, what the kernels compute from; the
        output's name)."""
        shapes = conv_tensor_shapes(p)
        output = {"F": "y", "B": "dx", "W": "dw"}[direction]
        host = {name: rng.standard_normal(shape) for name, shape in shapes.items()
                if name != output}
        tensors = {name: to_device(v, data_type) for name, v in host.items()}
        exact = {name: to_host(t) for name, t in tensors.items()}
        tensors[output] = to_device(np.full(shapes[output], np.nan), data_type)
        return tensors, exact, output

    class Parts(dict):
        """The run's tensors and the parts its launches name: "x@<bytes>" (a chunk's first
        image on) and the workspace's slots ("ws_c1": a chunk's partials)."""

        def __init__(self, tensors, slots):
            super().__init__(tensors)
            self.slots = slots

        def __missing__(self, name):
            from miopenkernels.solvers.base import split_offset

            whole, offset = split_offset(name)
            if name in self.slots:
                whole, offset = "workspace", self.slots[name]
            tensor = dict.__getitem__(self, whole)
            data = tensor.array.reshape(-1).view(np.uint8)[offset:]
            return _HostTensor(data.view(tensor.array.dtype), tensor.dtype.name)

    def workspace_parts(tensors, solver, p, params, nbytes, element):
        """The workspace as NaN bytes into `tensors` ("workspace", FP32) with a view per part
        of the solver's (`workspace_slots`): the FP32 partials' parts (ws_part; a batch chunk's
        ws_c<i>) and the copies' in the element type (numpy dtype, Triton name). A copy that
        left a padded channel unwritten shows in the result."""
        ws = np.full(max(nbytes, 4), 0xFF, np.uint8)
        tensors["workspace"] = _HostTensor(ws.view(np.float32), "float32")
        for slot, offset in solver.workspace_slots(p, params).items():
            partials = slot == "ws_part" or slot.startswith("ws_c")  # a chunk's partials
            dtype, name = (np.float32, "float32") if partials else element
            tensors[slot] = _HostTensor(ws[offset:].view(dtype), name)

    def job_module(job):
        """The kernel module a job's object comes from."""
        import importlib

        return importlib.import_module("miopenkernels.kernels." + job.kernel_file[:-3])

    def launches_error(solver, p, params, target, tensors, exact, output):
        """Run `solver`'s lead-ins, main launch and follow-ups of `p` with `params` on
        `tensors` (each from the kernel module its job names); the relative error of
        `output` against the float64 reference (NaN where any is left)."""
        main = solver.launch(p, params)
        steps = [*solver.lead_ins(p, params, target),
                 (solver.compile_job(p, params, target), main),
                 *solver.follow_ups(p, params, target)]
        for job, step in steps:
            if step is main:
                clear_first(main, tensors)
            run(job_module(job), step, job, tensors)
        ref = conv_reference(p, exact)
        got = to_host(tensors[output])
        return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))

    def fp32_defaults_errors(cases):
        """`launches_error` of each (solver name, FindDb key) at the solver's default
        parameters on its FP32 problem, output and workspace NaN first, the workspace's parts
        FP32 (`Parts`): the list of errors."""
        rng = np.random.default_rng(0)
        errors = []
        for name, key in cases:
            solver = get_solver(name)
            p = ConvProblem.from_key(key)
            assert solver.is_applicable(p, SM90), (name, key)
            params = solver.default_params(p, SM90)
            tensors, exact, output = layer_tensors(p, p.direction, "FP32", rng)
            workspace_parts(tensors, solver, p, params, solver.workspace_for(p, params),
                            (np.float32, "float32"))
            tensors = Parts(tensors, solver.workspace_slots(p, params))
            errors.append(launches_error(solver, p, params, SM90, tensors, exact, output))
        return errors

    def default_launches_error(solver, p, split, rng):
        """`launches_error` of `solver`'s default parameters (SPLIT_K `split` where not 0) on
        the FP16 problem `p`, its output and workspace parts NaN first: (params, error)."""
        assert solver.is_applicable(p, SM90), p.key()
        params = solver.default_params(p, SM90)
        if split:
            params = params[:4] + (split,) + params[5:]
        assert solver.params_valid(p, SM90, params), params
        tensors, exact, output = layer_tensors(p, p.direction, "FP16", rng)
        workspace_parts(tensors, solver, p, params, solver.workspace_for(p, params),
                        (np.float16, "float16"))
        return params, launches_error(solver, p, params, SM90, tensors, exact, output)

    def relative_error(solver, kernel, p, params, target, rng):
        """Run `solver`'s launches of `p` with `params` (the main one from the kernel module
        `kernel`, follow-ups from conv_triton) on random inputs, the output poisoned with NaN
        first; the relative error against the float64 reference (NaN where any is left)."""
        launch = solver.launch(p, params)
        tensors, exact, output = layer_tensors(p, p.direction, p.in_type, rng)
        tensors["workspace"] = _HostTensor(
            np.full(max(launch.workspace_bytes // 4, 1), np.nan, np.float32), "float32")
        clear_first(launch, tensors)
        run(kernel, launch, solver.compile_job(p, params, target), tensors)
        for job, step in solver.follow_ups(p, params, target):
            run(conv_triton, step, job, tensors)
        ref = conv_reference(p, exact)
        got = to_host(tensors[output])
        return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))

    def default_error(solver, p, split, rng):
        """`relative_error` of `solver`'s default parameters on `p` (SPLIT_K `split` where
        not 0), its main launch from the kernel file its job names."""
        import importlib

        assert solver.is_applicable(p, SM90), p.key()
        params = solver.default_params(p, SM90)
        if split:
            params = params[:4] + (split,) + params[5:]
        assert solver.params_valid(p, SM90, params), params
        kernel = importlib.import_module(
            "miopenkernels.kernels." + solver.compile_job(p, params, SM90).kernel_file[:-3])
        return relative_error(solver, kernel, p, params, SM90, rng)

''')


def interpreted(script: str, payload: Any, cases: int) -> list[float]:
    """Run `script` (HARNESS and a test's lines, which print one JSON list of errors last) with
    `payload` as its JSON argument under the interpreter in a child process; its `cases`
    errors."""
    env = dict(os.environ, TRITON_INTERPRET="1", MIOPENKERNELS_TRITON="1")
    run = subprocess.run([sys.executable, "-c", script, json.dumps(payload)],
                         capture_output=True, text=True, env=env, timeout=1200, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    errors = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(errors) == cases
    return [float(e) for e in errors]
