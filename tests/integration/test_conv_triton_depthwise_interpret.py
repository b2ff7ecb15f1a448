"""The depthwise kernels, run by Triton's interpreter on the CPU (TRITON_INTERPRET=1) through
the solvers' own launches (arguments, grid, constexprs of the job, the reduce follow-up),
against the float64 reference (solvers/reference.py): every direction, type and layout,
filters 3/5/7, strides 1/2, dilations 1/2, odd sizes and a split backward-weights reduction.

The interpreter takes tensors with torch's interface; `_HostTensor` gives a numpy array that
interface (bfloat16 kept as its bits), so neither torch nor a GPU is needed. Triton 3.6's
interpreter turns a scalar into an index with int() of a one-element array, which numpy 2
refuses: the script reads the element instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.integration

pytest.importorskip("triton")
pytest.importorskip("miopenkernels.kernels.conv_triton_depthwise_spec")

# (C, H, W, filter, stride, pad, dilation, N, SPLIT_K or 0 for the default)
GEOMETRIES = [
    (5, 9, 7, 3, 1, 1, 1, 2, 0),
    (5, 11, 8, 5, 2, 2, 1, 2, 0),
    (3, 13, 9, 7, 1, 3, 2, 1, 0),
    (16, 9, 10, 3, 2, 0, 2, 2, 4),
]
TOLERANCE = {"FP32": 1e-5, "FP16": 3e-3, "BF16": 2e-2}

SCRIPT = textwrap.dedent('''
    import json, sys
    import numpy as np
    import triton.runtime.interpreter as interpreter

    _patch = interpreter._patch_lang_tensor

    def _patch_index(tensor, scope):
        _patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    interpreter._patch_lang_tensor = _patch_index

    from miopenkernels.kernels import conv_triton, conv_triton_depthwise
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
                out[name] = int(value)
        return out

    def run(kernel, launch, job, tensors):
        fn = getattr(kernel, launch.kernel_name)
        args = []
        for arg in launch.args:
            if arg.name in ("global_scratch", "profile_scratch"):
                continue
            args.append(tensors[arg.tensor] if arg.is_pointer else int(arg.value))
        fn[launch.grid](*args, **constexprs(job))

    direction, cases = json.loads(sys.argv[1])
    suffix = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[direction]
    solver = get_solver("ConvTritonDepthwise" + suffix)
    rng = np.random.default_rng(0)
    errors = []
    for layout, data_type, (c, h, w, f, st, pad, dil, n, split) in cases:
        p = ConvProblem(n=n, c=c, k=c, groups=c, in_spatial=(h, w), filter=(f, f),
                        pad=(pad, pad), stride=(st, st), dilation=(dil, dil),
                        direction=direction, in_type=data_type, wei_type=data_type,
                        out_type=data_type, in_layout=layout, wei_layout=layout,
                        out_layout=layout)
        assert solver.is_applicable(p, SM90), p.key()
        params = solver.default_params(p, SM90)
        if split and direction == "W":
            params = params[:4] + (split,) + params[5:]
        assert solver.params_valid(p, SM90, params), params
        shapes = conv_tensor_shapes(p)
        launch = solver.launch(p, params)
        output = {"F": "y", "B": "dx", "W": "dw"}[direction]
        host = {name: rng.standard_normal(shape) for name, shape in shapes.items()
                if name != output}
        tensors = {name: to_device(v, data_type) for name, v in host.items()}
        # What the kernels compute from: the inputs as the element type holds them.
        exact = {name: to_host(t) for name, t in tensors.items()}
        tensors[output] = to_device(np.full(shapes[output], np.nan), data_type)
        tensors["workspace"] = _HostTensor(
            np.full(max(launch.workspace_bytes // 4, 1), np.nan, np.float32), "float32")
        run(conv_triton_depthwise, launch, solver.compile_job(p, params, SM90), tensors)
        for job, step in solver.follow_ups(p, params, SM90):
            run(conv_triton, step, job, tensors)
        ref = conv_reference(p, exact)
        got = to_host(tensors[output])
        errors.append(float(np.linalg.norm(got - ref) / np.linalg.norm(ref)))
    print(json.dumps(errors))
''')


@pytest.mark.parametrize("direction", ["F", "B", "W"])
def test_interpreted_kernels_match_float64(direction: str) -> None:
    cases = [(layout, data_type, g) for layout in ("NCHW", "NHWC")
             for data_type in ("FP32", "FP16", "BF16") for g in GEOMETRIES]
    env = dict(os.environ, TRITON_INTERPRET="1", MIOPENKERNELS_TRITON="1")
    run = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps([direction, cases])],
                         capture_output=True, text=True, env=env, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    errors = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(errors) == len(cases)
    bad = [(case, e) for case, e in zip(cases, errors, strict=True)
           if not e < TOLERANCE[case[1]]]  # a NaN left in the output fails too
    assert not bad, bad
