"""`miopenkernels matrix`: the CI build matrix from dbs/targets.toml."""

from __future__ import annotations

import typer
from rich.table import Table

from ._options import JsonFlag, WideFlag, globs, targets_option
from ._output import note, print_json, print_table


def register(app: typer.Typer) -> None:
    @app.command("matrix")
    def matrix_cmd(
        targets_given: list[str] | None = targets_option(
            "Comma-separated globs against target name, arch or basename ('gfx9*,sm90-*'); "
            "default: all."),
        as_json: JsonFlag = False,
        wide: WideFlag = False,
    ) -> None:
        """Print the CI build matrix: one entry per (arch, CU) target.

        The matrix column names the matrix-core instructions of a target's tensor-core
        solvers ('-': portable kernels only). --wide adds the CI runners; --json prints
        {"include": [...]} for a GitHub Actions matrix. An arch no compiler knows is refused;
        one not in dbs/targets.toml gets a note of what it lacks.
        """
        from miopenkernels.builder.matrix import build_matrix, unlisted_notes
        from miopenkernels.target import Target

        entries = build_matrix(globs(targets_given) or "*")
        for line in unlisted_notes([Target(e.arch, e.cu) for e in entries]):
            note(line)
        if as_json:
            print_json({"include": [e.to_dict() for e in entries]})
            return
        table = Table(show_header=True)
        # Names stay whole; the runners (long label lists) only with --wide.
        cols = ["target", "basename", "package", "compiler", "matrix"]
        cols += ["runner", "tune runner"] if wide else []
        for col in cols:
            table.add_column(col, no_wrap=True)
        for e in entries:
            row = [e.target, e.basename, e.package, e.compiler, e.matrix or "-"]
            row += [e.runner, ", ".join(e.tune_runner)] if wide else []
            table.add_row(*row)
        print_table(table, wide=wide)
