"""The Triton kernels' tuple arguments: the compile step builds them from the flat names that
launches, kdb options and spec tables use (`compiler.triton.source_arguments`), so that a kernel
taking (dims, conv, strides) tuples keeps the launch ABI of its flat argument list."""

from __future__ import annotations

import pytest

pytest.importorskip("triton")

from miopenkernels.compiler.triton import (  # noqa: E402
    TritonOptions,
    launch_arguments,
    source_arguments,
)
from miopenkernels.errors import CompileError  # noqa: E402
from miopenkernels.kernels import conv_triton as ct  # noqa: E402
from miopenkernels.kernels import conv_triton_3d as c3  # noqa: E402
from miopenkernels.kernels import conv_triton_3d_spec as spec3  # noqa: E402

CONV_KERNELS = [k for k, d in ct.KERNELS.items() if d["args"] == "CONV_ARGS"]


def _flat(kernel: str, aligned: bool = True) -> tuple[list, dict, list]:
    sig, cx = ct.triton_signature(kernel, "FP16", ct.default_config(kernel, "FP16"), True)
    names = ct.align16_args(kernel, True) if aligned else ()
    return ([(n, t) for n, t in sig.items() if t != "constexpr"], cx,
            [(n, 16) for n in names])


@pytest.mark.parametrize("kernel", CONV_KERNELS)
def test_tuples_flatten_to_the_spec_argument_list(kernel: str) -> None:
    """Every convolution kernel takes the size, geometry and stride tuples, and their members
    in order are CONV_ARGS's i32 arguments: the parameters Triton passes are the same."""
    fn = ct.JIT[kernel]
    assert [n for n in fn.arg_names if n in ct.TUPLE_ARGS] == ["dims", "conv", "strides"]
    sig, cx, attrs = source_arguments(fn, *_flat(kernel))
    flat = []
    for name in fn.arg_names:
        if isinstance(sig[name], tuple):
            assert sig[name] == ("i32",) * len(ct.TUPLE_ARGS[name])
            flat += ct.TUPLE_ARGS[name]
        else:
            flat.append(name)
    assert flat == [n for n, _ in ct.CONV_ARGS]
    # Each assumed argument's attribute sits at its place in its tuple, and nothing else has
    # one: the unit channel stride sxc never, and a few-channel kernel's C or x's strides not.
    where = {n: (fn.arg_names.index(t), i) for t in ("dims", "conv", "strides")
             for i, n in enumerate(ct.TUPLE_ARGS[t])}
    assumed = set(ct.align16_args(kernel, True))
    for name, place in where.items():
        if name in assumed:
            assert attrs[place] == [["tt.divisibility", 16]], name
        else:
            assert place not in attrs, name
    assert "sxc" not in assumed and ("C" in assumed) != bool(ct.KERNELS[kernel].get(
        "few_channels"))
    assert attrs[(0,)] == [["tt.divisibility", 16]]  # x_ptr
    assert cx[(fn.arg_names.index("BLOCK_M"),)] == ct.default_config(kernel, "FP16")["BLOCK_M"]


@pytest.mark.parametrize("direction", sorted(spec3.KERNEL))
def test_3d_tuples_flatten_to_the_spec_argument_list(direction: str) -> None:
    """The 3-D kernels take the 3-D spec's tuples (TUPLES, their file's TUPLE_ARGS): their
    members in order are the spec's i32 arguments, the channels-last assumptions by path."""
    kernel = spec3.KERNEL[direction]
    fn = c3.JIT[kernel]
    assert c3.TUPLE_ARGS is spec3.TUPLES
    assert [n for n in fn.arg_names if n in spec3.TUPLES] == ["dims", "conv", "strides"]
    tile = spec3.usual_tile("FP16", direction, "FP16", "sm90")
    signature, cx = spec3.signature(direction, "FP16", tile, True, "ieee")
    sig, constexprs, attrs = source_arguments(
        fn, [(n, t) for n, t in signature.items() if t != "constexpr"], cx,
        [(n, 16) for n in spec3.ALIGN16[kernel]])
    flat = [m for name in fn.arg_names for m in spec3.TUPLES.get(name, (name,))]
    optional = ["TAPS", "TAP_AXIS"] if direction == "W" else []  # defaults: one tap a program
    assert flat == [n for n, _ in spec3.ARGS[kernel]] + optional
    assert sig["strides"] == ("i32",) * 15 and sig["dims"] == ("i32",) * 13
    strides = fn.arg_names.index("strides")
    assert attrs[(strides, 0)] == [["tt.divisibility", 16]]  # sxn
    assert (strides, 1) not in attrs and (strides, 6) not in attrs  # sxc, swc: unit in NDHWC
    assert constexprs[(fn.arg_names.index("CHANNELS_LAST"),)] == 1


def test_kernels_without_tuples_keep_their_positions() -> None:
    fn = ct.JIT["conv2d_bwd_weight_reduce"]
    sig, cx, attrs = source_arguments(fn, [("ws_ptr", "*fp32"), ("w_ptr", "*fp16"),
                                           *((n, "i32") for n in ("TOTAL", "C", "R", "S", "swk",
                                                                  "swc", "swr", "sws"))],
                                      {"SPLIT_K": 4, "BLOCK": 1024}, [("C", 16)])
    assert list(sig) == list(fn.arg_names) and sig["C"] == "i32"
    # PARTS at its default (the usual reduce object), a constexpr of its own position.
    assert cx == {(10,): 4, (11,): 1024, (12,): 1} and attrs == {(3,): [["tt.divisibility", 16]]}


def test_a_constexpr_member_goes_by_its_path() -> None:
    fn = ct.JIT["conv2d_fwd"]
    signature, cx, assumptions = _flat("conv2d_fwd", aligned=False)
    sig, constexprs, _ = source_arguments(fn, [(n, t) for n, t in signature if n != "R"],
                                          {**cx, "R": 3}, assumptions)
    dims = fn.arg_names.index("dims")
    assert sig["dims"][7] == "constexpr" and constexprs[(dims, 7)] == 3


def test_job_options_compile_to_tuples() -> None:
    """A kdb row's options (flat names) give the tuples: the same options as before."""
    signature, cx, assumptions = _flat("conv2d_bwd_data")
    options = ["--signature=" + ",".join(f"{n}:{t}" for n, t in signature),
               *(f"-D{n}={v}" for n, v in cx.items()),
               "--assume=" + ",".join(f"{n}:{d}" for n, d in assumptions)]
    opts = TritonOptions(options)
    sig, _, attrs = source_arguments(ct.JIT["conv2d_bwd_data"], opts.signature,
                                     opts.constexprs, opts.assumptions)
    assert sig["conv"] == ("i32",) * 6 and len(attrs) == len(assumptions)


@pytest.mark.parametrize("change, message", [
    (lambda s, c: (s[::-1], c), "out of its order"),
    (lambda s, c: (s + [("D", "i32")], c), "has no argument"),
    (lambda s, c: ([x for x in s if x[0] != "sxw"], c), "'sxw'"),
])
def test_bad_argument_lists_are_one_line_errors(change, message: str) -> None:  # noqa: ANN001
    signature, cx, assumptions = _flat("conv2d_fwd", aligned=False)
    signature, cx = change(signature, cx)
    with pytest.raises(CompileError, match=message) as err:
        source_arguments(ct.JIT["conv2d_fwd"], signature, cx, assumptions)
    assert "\n" not in str(err.value)


def test_launch_arguments_group_values_by_parameter() -> None:
    fn = ct.JIT["conv2d_fwd"]
    flat = {n: i for i, (n, _) in enumerate(ct.CONV_ARGS)}
    args = launch_arguments(fn, flat)
    assert list(args) == list(fn.arg_names)
    assert args["dims"] == tuple(range(4, 14)) and args["conv"] == tuple(range(14, 20))
    assert args["strides"] == tuple(range(20, 32)) and args["PRECISION"] == 38


def test_a_name_in_two_places_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    fn = ct.JIT["conv2d_fwd"]
    monkeypatch.setitem(fn.fn.__globals__, "TUPLE_ARGS", {**ct.TUPLE_ARGS, "conv": ("N",)})
    signature, cx, assumptions = _flat("conv2d_fwd", aligned=False)
    with pytest.raises(CompileError, match="takes 'N' twice"):
        source_arguments(fn, signature, cx, assumptions)


def test_a_constexpr_with_a_default_may_be_left_out() -> None:
    """conv3d_bwd_weight's TAPS and TAP_AXIS default to one tap a program: a job without them
    compiles with the defaults (the one-tap objects keep their keys), one with them takes its
    values; Triton's launcher gets the defaults where a launch leaves them out."""
    fn = c3.JIT[spec3.KERNEL["W"]]
    tile = spec3.usual_tile("FP16", "W", "FP16", "sm90")
    names = list(fn.arg_names)
    at = {n: (names.index(n),) for n in ("TAPS", "TAP_AXIS")}
    for config, want in ((tile, (1, 2)), ({**tile, "TAPS": 3, "TAP_AXIS": 0}, (3, 0))):
        signature, cx = spec3.signature("W", "FP16", config, True, "ieee")
        assert ("TAPS" in cx) == (want != (1, 2))  # left out of the job at one tap
        _, constexprs, _ = source_arguments(
            fn, [(n, t) for n, t in signature.items() if t != "constexpr"], cx, [])
        assert (constexprs[at["TAPS"]], constexprs[at["TAP_AXIS"]]) == want
    flat = {m: 0 for name in fn.arg_names for m in spec3.TUPLES.get(name, (name,))
            if name not in ("TAPS", "TAP_AXIS")}
    args = launch_arguments(fn, flat)
    assert (args["TAPS"], args["TAP_AXIS"]) == (1, 2)
    with pytest.raises(KeyError):  # a parameter without a default stays required
        launch_arguments(fn, {k: v for k, v in flat.items() if k != "BLOCK_M"})
