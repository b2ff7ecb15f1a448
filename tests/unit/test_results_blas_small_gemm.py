"""bench/results/blas_small_gemm_h100.json: the figures bench/results/README.md states."""

from __future__ import annotations

import json
from pathlib import Path

RUN = Path(__file__).resolve().parents[2] / "bench" / "results" / "blas_small_gemm_h100.json"


def _rows() -> list[dict]:
    return json.loads(RUN.read_text())["rows"]


def test_the_slow_shape_is_cublas_own_in_every_entry_point() -> None:
    rows = _rows()
    assert len(rows) == 66
    spread = max(max(r["strided_batched_us"], r["gemm_ex_us"], r["torch_mm_us"]) /
                 min(r["strided_batched_us"], r["gemm_ex_us"], r["torch_mm_us"]) - 1
                 for r in rows)
    assert spread < 0.025
    assert max(max(r["strided_batched_err"], r["gemm_ex_err"]) for r in rows) < 1.7e-7
    slow = {(r["rows"], r["C"], r["K"]): round(r["strided_batched_us"], 1) for r in rows
            if r["strided_batched_us"] > 2 * r["cudnn_us"]}
    assert slow == {(32, 6, 144): 28.6, (64, 6, 144): 28.6, (128, 6, 144): 18.1}
    (se,) = [r for r in rows if (r["rows"], r["C"], r["K"]) == (32, 6, 144)]
    assert round(se["cudnn_us"], 1) == 5.2


def test_the_other_squeeze_shapes() -> None:
    rows = [r for r in _rows() if 32 <= r["rows"] <= 128 and (r["C"], r["K"]) != (6, 144)]
    blas = [r["strided_batched_us"] for r in rows if r["C"] != 10]
    assert (round(min(blas), 1), round(max(blas), 1)) == (6.7, 9.5)
    cudnn = [r["cudnn_us"] for r in rows]
    assert (round(min(cudnn), 1), round(max(cudnn), 1)) == (4.1, 13.1)
