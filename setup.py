"""Maps the source folders to their import names (metadata lives in pyproject.toml)."""

from setuptools import find_packages, setup

FOLDERS = {"gem_core": "gem_core", "gem_envs": "envs_plugins", "gem_adapters": "adapters",
           "gem_trainer": "trainer", "gem_serve": "serve", "gem_taskset": "gem_taskset"}

setup(
    packages=[
        import_name + package[len(folder):]
        for import_name, folder in FOLDERS.items()
        for package in find_packages(include=[folder, folder + ".*"])
    ],
)
