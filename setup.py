"""Maps the repository's top-level folders onto the `miopenkernels` import package.

library/ is `miopenkernels` (the runtime), builder/ is `miopenkernels.builder`, kernels/ and dbs/
travel as package data so that an installed tool can JIT-compile and knows its default targets.
"""

from setuptools import find_packages, setup

ROOTS = {
    "miopenkernels": "library",
    "miopenkernels.builder": "builder",
    "miopenkernels.kernels": "kernels",
    "miopenkernels.dbs": "dbs",
}

packages = []
for name, folder in ROOTS.items():
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=ROOTS)
