"""Package metadata comes from settings.ini, the one place dependencies are declared."""
from configparser import ConfigParser
from setuptools import find_packages, setup

cfg = ConfigParser(delimiters=["="])
cfg.read("settings.ini")
cfg = cfg["DEFAULT"]


def deps(key: str) -> list[str]:
    "The whitespace-separated requirement list stored under `key`."
    return cfg.get(key, "").split()


setup(
    name=cfg["lib_name"],
    version=cfg["version"],
    description=cfg["description"],
    author=cfg["author"],
    license="Apache-2.0",
    python_requires=f">={cfg['min_python']}",
    packages=find_packages(include=[cfg["lib_path"], f"{cfg['lib_path']}.*"]),
    include_package_data=True,
    package_data={cfg["lib_path"]: ["assets/**/*", "data/*"]},
    install_requires=deps("requirements"),
    extras_require={"dev": deps("dev_requirements"), "blind": deps("blind_requirements"), "t2i": deps("t2i_requirements")},
    entry_points={"console_scripts": deps("console_scripts")},
    zip_safe=False,
)
