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

# Folders of data (dbs/manifests, dbs/<basename>) are namespace packages so that setuptools
# ships them as package data.
DATA_ROOTS = {"miopenkernels.kernels", "miopenkernels.dbs"}
# recipes/ has sub-folders that are not identifiers (conda-build): its files are listed as
# package data of the one package instead.

packages = []
for name, folder in ROOTS.items():
    packages.append(name)
    finder = find_namespace_packages if name in DATA_ROOTS else find_packages
    packages += [f"{name}.{sub}" for sub in finder(folder) if "__pycache__" not in sub]

setup(packages=packages, package_dir=ROOTS)
