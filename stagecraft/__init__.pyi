# Type stubs of the stagecraft package's public functions (__init__.py holds their docs).
import os
from typing import Any, Mapping, Sequence

from . import examples as examples

__version__: str

_Path = str | os.PathLike[str]
_Schedule = str | Sequence[Sequence[str]]

class StagecraftError(Exception):
    kind: str  # "bad_input", "infeasible", "violation" or "deadlock"
    message: str
    file: str | None
    line: int | None
    def __init__(self, kind: str, message: str) -> None: ...

class Result:
    """A command's --json object as attributes (nested objects are Results too)."""
    def __init__(self, data: Mapping[str, Any], command: str | None = None) -> None: ...
    def to_dict(self) -> dict[str, Any]: ...
    def tables(self) -> list[str]: ...
    def to_frame(self, table: str | None = None) -> Any: ...  # a pandas.DataFrame
    def __getattr__(self, name: str) -> Any: ...

def schedule(path: str | None = None, *, text: str | None = None,
             config: Mapping[str, Any] | None = None, **overrides: Any) -> list[list[str]]: ...
def simulate(path: str | None = None, *, text: str | None = None,
             config: Mapping[str, Any] | None = None, schedule: _Schedule | None = None,
             report: _Path | None = None, **overrides: Any) -> Result: ...
def derive(path: str | None = None, *, text: str | None = None,
           config: Mapping[str, Any] | None = None, **overrides: Any) -> Result: ...
def memory(path: str | None = None, *, text: str | None = None,
           config: Mapping[str, Any] | None = None, **overrides: Any) -> Result: ...
def check(path: str | None = None, *, text: str | None = None,
          config: Mapping[str, Any] | None = None, schedule: _Schedule | None = None,
          **overrides: Any) -> str: ...
def plan(path: str | None = None, *, gpus: int, global_batch_size: int, engine: str = "any",
         top: int = 10, jobs: int = 1, text: str | None = None,
         config: Mapping[str, Any] | None = None, report: _Path | None = None,
         **overrides: Any) -> Result: ...
def serve(path: str | None = None, *, text: str | None = None,
          config: Mapping[str, Any] | None = None, report: _Path | None = None,
          **options: Any) -> Result: ...
def kernel(op: str, *extents: int | str, **options: Any) -> Result: ...
def goodput(path: str | None = None, *, report: _Path | None = None, **options: Any) -> Result: ...
