"""The bundled examples (the repository's examples/ folder) as files on disk:

    stagecraft.simulate(stagecraft.examples.path("deepseek-v4.1-flash.yaml"))

An installed package carries its own copies beside this file (pip and the wheel put them there);
from the repository, the names resolve to examples/ at its root.
"""

import difflib
import os

__all__ = ["path", "names"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPOSITORY_EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "examples")


def _folder() -> str:
    if os.path.isfile(os.path.join(_HERE, "deepseek-v4.1-flash.yaml")):
        return _HERE
    return _REPOSITORY_EXAMPLES


def names() -> list[str]:
    """Every bundled example's name, sorted ("deepseek-v4.1-flash.yaml", "vidur/chat.csv", ...)."""
    folder = _folder()
    found = []
    for parent, folders, files in os.walk(folder):
        folders[:] = [name for name in folders if name != "__pycache__"]
        found += [os.path.relpath(os.path.join(parent, name), folder).replace(os.sep, "/")
                  for name in files if not name.endswith((".py", ".pyi", ".pyc"))]
    return sorted(found)


def path(name: str) -> str:
    """The absolute path of the bundled example `name` (a file of examples/, e.g.
    "uniform-study.yaml" or "vidur/chat.csv"); FileNotFoundError, with a suggestion, otherwise."""
    known = names()
    if name not in known:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise FileNotFoundError(f"stagecraft.examples: no example '{name}'{hint} "
                                f"(expected one of {', '.join(known)})")
    return os.path.join(_folder(), *name.split("/"))
