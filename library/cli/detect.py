"""`miopenkernels detect`: the GPUs of this machine and the package each one needs."""

from __future__ import annotations

from pathlib import Path

import typer
from rich import box
from rich.table import Table

from ..detect import Device, detect_devices
from ._options import JsonFlag
from ._output import console, print_json


def _cu_text(dev: Device) -> str:
    # RDNA: say why the names use half of what rocminfo shows.
    if dev.rocminfo_cu is not None and dev.rocminfo_cu != dev.cu:
        return f"{dev.cu} (as HIP reports it; rocminfo: {dev.rocminfo_cu}, WGP mode)"
    return str(dev.cu)


def _table(dev: Device, row: dict[str, object]) -> Table:
    # One two-column table per GPU: target IDs and package names stay whole in 80 columns.
    table = Table(title=f"{dev.vendor.upper()} GPU {dev.index}: {dev.name}", title_justify="left",
                  show_header=False, box=box.SIMPLE)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    table.add_row("arch", dev.arch)
    table.add_row("target ID", dev.target_id)
    table.add_row("CUs", _cu_text(dev))
    table.add_row("basename", str(row["basename"]))
    table.add_row("package", str(row["package"]))
    return table


def register(app: typer.Typer) -> None:
    @app.command("detect")
    def detect_cmd(
        rocminfo_file: Path | None = typer.Option(
            None, "--rocminfo-file", help="Read this saved rocminfo output instead of detecting.",
            dir_okay=False,
        ),
        as_json: JsonFlag = False,
    ) -> None:
        """Show each GPU: arch, target ID, CUs, database basename and package name.

        No GPU exits 6, unreadable detection output 7. MIOPEN_DEVICE_ARCH and
        MIOPEN_DEVICE_CU override what is found.
        """
        devices: list[Device] = detect_devices(rocminfo_file)
        rows = [d.to_dict() for d in devices]
        if as_json:
            print_json(rows)
            return
        for dev, row in zip(devices, rows, strict=True):
            console.print(_table(dev, row))
