"""`miopenkernels matrix`: the CI build matrix from dbs/targets.toml."""

from __future__ import annotations

import typer
from rich.table import Table

from ._options import JsonFlag, targets_option
from ._output import console, print_json


def register(app: typer.Typer) -> None:
    @app.command("matrix")
    def matrix_cmd(
        targets: str = targets_option(
            "Comma-separated globs against target name, arch or basename ('gfx9*,sm90-*').",
            "*"),
        as_json: JsonFlag = False,
    ) -> None:
        """Print the CI build matrix: one entry per (arch, CU) target.

        --json prints {"include": [...]} for a GitHub Actions matrix.
        """
        from miopenkernels.builder.matrix import build_matrix

        entries = build_matrix(targets)
        if as_json:
            print_json({"include": [e.to_dict() for e in entries]})
            return
        table = Table(show_header=True)
        # Names never wrap; the rest may, so that the table fits a narrow terminal.
        for col in ("target", "basename"):
            table.add_column(col, no_wrap=True)
        for col in ("package", "compiler", "runner", "tune runner"):
            table.add_column(col, overflow="fold")
        for e in entries:
            table.add_row(e.target, e.basename, e.package, e.compiler, e.runner,
                          ", ".join(e.tune_runner))
        console.print(table)
