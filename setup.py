"""Maps the repository's top-level folders onto the `miopenkernels` import package.

library/ is `miopenkernels` (the runtime), builder/ is `miopenkernels.builder`, kernels/ and dbs/
travel as package data so that an installed tool can JIT-compile and knows its default targets,
recipes/ so that an installed builder can make conda packages.
"""

from setuptools import find_namespace_packages, find_packages, setup

ROOTS = {
    "miopenkernels": "library",
    "miopenkernels.builder": "builder",
    "miopenkernels.kernels": "kernels",
    "miopenkernels.dbs": "dbs",
    "miopenkernels.recipes": "recipes",
}

# Folders of data (dbs/manifests, dbs/<basename>, recipes/selector) are namespace packages so
# that setuptools ships them as package data (and does not warn that an importable folder is
# missing from `packages`).
DATA_ROOTS = {"miopenkernels.kernels", "miopenkernels.dbs", "miopenkernels.recipes"}

packages = []
for name, folder in ROOTS.items():
    packages.append(name)
    finder = find_namespace_packages if name in DATA_ROOTS else find_packages
    # recipes/conda-build is not an identifier, so no package: its files are package data of
    # miopenkernels.recipes (pyproject.toml).
    packages += [f"{name}.{sub}" for sub in finder(folder)
                 if "__pycache__" not in sub and all(p.isidentifier() for p in sub.split("."))]

setup(packages=packages, package_dir=ROOTS)
