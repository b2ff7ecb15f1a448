"""`miopenkernels problem`: read a problem and print its MIOpen key and shapes."""

from __future__ import annotations

import typer
from rich.table import Table

from ..driver import parse_any_line
from ..problem import ConvProblem, _looks_like_key
from ._output import console, print_json, run_guarded


def register(app: typer.Typer) -> None:
    @app.command("problem")
    def problem_cmd(
        text: str = typer.Argument(
            ..., help="An MIOpenDriver line ('conv -n 32 -c 64 ...') or a FindDb key."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Print the FindDb key and the derived shapes of a problem."""

        def parse() -> list:
            if _looks_like_key(text.strip()):
                return [ConvProblem.from_key(text)]
            return parse_any_line(text)

        problems = run_guarded(parse)
        if as_json:
            print_json([p.to_dict() for p in problems])
            return
        table = Table(show_header=True)
        table.add_column("key", no_wrap=True)
        for col in ("direction", "input", "output"):
            table.add_column(col)
        for p in problems:
            out = getattr(p, "out_shape", None) or (p.n, p.c, *p.out_spatial)
            inp = getattr(p, "in_shape", None) or (p.n, p.c, *p.in_spatial)
            table.add_row(p.key(), p.direction, "x".join(map(str, inp)),
                          "x".join(map(str, out)))
        console.print(table)
