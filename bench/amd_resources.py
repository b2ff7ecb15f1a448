"""Resources of the default build's AMD objects, per arch and kernel family.

Plans the default build (every default target and manifest, as `miopenkernels build` does),
takes each AMD object the object cache holds (a build fills it; nothing is compiled here) and
reads its resource notes as the build's check does (builder/resources.py): objects, those that
spill to scratch, those that spill SGPRs, the most VGPRs, SGPRs and LDS (static plus the launch
metadata's dynamic bytes) and scratch, and objects beyond the arch's limits (the build refuses
those). Objects not in the cache are counted apart. `spilling` names each object that spills
VGPRs to scratch: its arch, kernel, constexprs, VGPRs spilled and scratch bytes.

    python bench/amd_resources.py [--cache-dir DIR] [--out FILE.json] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from miopenkernels.builder.cache import CacheKeys, ObjectCache
from miopenkernels.builder.jobs import build_jobs
from miopenkernels.builder.manifest import load_manifests
from miopenkernels.builder.resources import ResourceReport
from miopenkernels.codeobject import amdgpu_resources
from miopenkernels.errors import MIOpenKernelsError
from miopenkernels.launch_metadata import split_kdb_blob
from miopenkernels.target import default_targets
from rich.console import Console
from rich.table import Table


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache-dir", type=Path, help="object cache (default: the build's)")
    ap.add_argument("--out", type=Path, help="write the report as JSON here")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args()
    cache, keys = ObjectCache(args.cache_dir), CacheKeys(None)
    plan = build_jobs([t for t in default_targets() if t.vendor == "amd"], load_manifests(None))
    per_arch: dict[str, ResourceReport] = {}
    seen: set[tuple[str, str]] = set()
    missing: dict[str, int] = {}
    refused: list[str] = []
    spilling: list[dict] = []
    for target, jobs in plan.items():
        report = per_arch.setdefault(target.arch, ResourceReport())
        for job in jobs:
            key = keys.key(job)
            if (target.arch, key) in seen:
                continue  # one object per arch, whatever the CU count
            seen.add((target.arch, key))
            blob = cache.get(key)
            if blob is None:
                missing[target.arch] = missing.get(target.arch, 0) + 1
                continue
            try:
                what = f"{job.kernel_file} {job.kernel_name}"
                code, meta = split_kdb_blob(blob, what)
                why = report.check(target, job, code, meta, what)
                spilling.extend(
                    {"arch": target.arch, "kernel": job.kernel_name,
                     "constexprs": [o for o in job.options if o.startswith("-D")],
                     "vgpr_spills": k.vgpr_spills, "scratch_bytes": k.scratch_bytes}
                    for k in amdgpu_resources(code, what) if k.vgpr_spills)
            except MIOpenKernelsError as exc:
                why = str(exc)
            if why is not None:
                refused.append(why)
    result = {"archs": {arch: {"families": r.to_dict(), "not_in_cache": missing.get(arch, 0)}
                        for arch, r in sorted(per_arch.items())},
              "refused": refused, "spilling": spilling}
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result))
        return 0
    table = Table(title="AMD objects of the default build: resources per arch and family")
    for col in ("arch", "family", "objects", "spill to scratch", "SGPR spills", "max VGPRs",
                "max SGPRs", "max LDS", "max scratch"):
        table.add_column(col, justify="right" if col not in ("arch", "family") else "left")
    for arch, entry in result["archs"].items():
        for fam, f in entry["families"].items():
            table.add_row(arch, fam, str(f["objects"]), str(f["spilling"]),
                          str(f["sgpr_spilling"]), str(f["max_vgprs"]), str(f["max_sgprs"]),
                          str(f["max_lds_bytes"]), str(f["max_scratch_bytes"]))
    Console(width=130).print(table)
    print(f"not in the cache (not measured): {sum(missing.values())} objects; "
          f"beyond the arch's limits: {len(refused)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
