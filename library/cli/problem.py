"""`miopenkernels problem`: read a problem and print its MIOpen key and shapes."""

from __future__ import annotations

import typer

from ..driver import parse_any_line
from ..problem import ConvProblem
from ..problem_key import looks_like_key
from ._options import JsonFlag
from ._output import console, print_json


def register(app: typer.Typer) -> None:
    @app.command("problem")
    def problem_cmd(
        text: str = typer.Argument(
            ..., help="An MIOpenDriver line ('conv -n 32 -c 64 ...') or a FindDb key."
        ),
        as_json: JsonFlag = False,
    ) -> None:
        """Print the FindDb key and the derived shapes of a problem."""

        problems = ([ConvProblem.from_key(text)] if looks_like_key(text.strip())
                    else parse_any_line(text))
        if as_json:
            print_json([p.to_dict() for p in problems])
            return
        # One block per problem, a field a line: keys are long and shapes must stay whole
        # whatever the terminal's width.
        for i, p in enumerate(problems):
            out = getattr(p, "out_shape", None) or (p.n, p.c, *p.out_spatial)
            inp = getattr(p, "in_shape", None) or (p.n, p.c, *p.in_spatial)
            if i:
                console.print()
            console.print(f"[bold]key[/bold]        {p.key()}", soft_wrap=True)
            console.print(f"[bold]direction[/bold]  {p.direction}")
            console.print(f"[bold]input[/bold]      {'x'.join(map(str, inp))}")
            console.print(f"[bold]output[/bold]     {'x'.join(map(str, out))}")
