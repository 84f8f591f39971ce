"""stagecraft from Python: simulate, check, derive, memory, plan, serve and goodput through the
run library.

    import stagecraft
    r = stagecraft.simulate("examples/deepseek-v4.1-flash.yaml", pp=8)
    print(r.makespan_ms, r.memory.fits)

A config is a path, `text=` (YAML) or `config=` (a dict). Overrides are the run flags by name
(`pp=8`, `micro_batch_size=2`, `recompute="full"`) or config keys (`**{"parallel.tp": 4}`).
Results carry the field names of the command's `--json` object (doc/json.md); `.to_dict()`
gives the plain dict, `.to_frame()` a pandas DataFrame of the command's main table (simulate's
ranks, plan's plans, serve's latency percentiles, goodput's failure causes; `.tables()` names the
others). Errors raise StagecraftError with `kind` ("bad_input", "infeasible",
"violation", "deadlock"), `file`, `line` and `message`. simulate, plan, serve and goodput take
`report="run.html"` to write the HTML report as `--report` does. `stagecraft.examples.path(name)`
gives a bundled example's file; `stagecraft.__version__` is the project's version (CMakeLists.txt).

Installed (`pip install .`, or the wheel of `python3 -m build --wheel --no-isolation`), the
package holds its native half (_native) and the examples. From the repository, _native is the one
the README's set-up builds (build*/python/); STAGECRAFT_PYTHON_DIR names another folder.
"""

import glob
import html
import importlib.util
import json
import os
import re
import sys
import tempfile

from . import examples

__all__ = ["simulate", "check", "derive", "memory", "plan", "serve", "goodput", "schedule", "kernel",
           "StagecraftError", "Result", "examples"]


def _load_native():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    folders = [os.environ["STAGECRAFT_PYTHON_DIR"]] if os.environ.get("STAGECRAFT_PYTHON_DIR") else []
    folders.append(here)  # an installed package's own
    built = [os.path.join(root, name, "python") for name in ("build", "build-test")]
    folders += built
    # The named folder first, then the package's; else the most recently built of the set-up's
    # two builds.
    candidates = []
    for rank, folder in enumerate(folders):
        for path in sorted(glob.glob(os.path.join(folder, "_native*.so"))):
            recency = -os.path.getmtime(path) if folder in built else float("-inf")
            candidates.append((recency, rank, path))
    if candidates:
        path = min(candidates)[2]
        spec = importlib.util.spec_from_file_location("stagecraft._native", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules["stagecraft._native"] = module
        return module
    raise ImportError(
        "stagecraft: the native module is not built; run the README's set-up "
        "(./scripts/test.sh) or set STAGECRAFT_PYTHON_DIR to the folder holding _native*.so "
        "(looked in: " + ", ".join(folders) + ")")


_native = _load_native()
__version__ = _native.version  # CMakeLists.txt's project version, compiled in


class StagecraftError(Exception):
    """A failed command: kind, the file and line it names (None when none), and the message."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message
        match = re.match(r"(?:--[\w-]+: )?([^\s:]+):(\d+)(?::\d+)?: ", message)
        self.file = match.group(1) if match else None
        self.line = int(match.group(2)) if match else None


# Each command's main table, what to_frame() gives without a name: simulate's ranks, plan's
# plans (best first), serve's latency percentiles, goodput's failure causes.
_DEFAULT_TABLES = {"simulate": "ranks", "plan": "plans", "serve": "latency",
                   "goodput": "failure_causes"}
# serve's percentile objects, one row each in its "latency" table.
_LATENCIES = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")


class Result:
    """A JSON object as attributes (nested objects too); lists stay lists."""

    def __init__(self, data, command=None, report=None):
        self._data = data
        self._command = command
        self._report = report  # writes the run's HTML report to a path (_repr_html_)
        for key, value in data.items():
            setattr(self, key, _wrap(value))

    def to_dict(self):
        return json.loads(json.dumps(self._data))

    def _repr_html_(self):
        """In Jupyter: the command's HTML report (the summary and its figure, as `report=`
        writes it; self-contained, no network) in an isolated frame."""
        if self._report is None:
            return None
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "report.html")
            self._report(path)
            with open(path, encoding="utf-8") as report:
                page = report.read()
        return ('<iframe srcdoc="' + html.escape(page, quote=True) +
                '" style="width: 100%; height: 640px; border: 0"></iframe>')

    def tables(self):
        """The names to_frame() takes: every list of objects, every object of plain values,
        and serve's "latency" (its percentiles)."""
        names = [key for key, value in self._data.items()
                 if (isinstance(value, list) and value and all(isinstance(v, dict) for v in value))
                 or (isinstance(value, dict) and value
                     and not any(isinstance(v, (dict, list)) for v in value.values()))]
        if any(key in self._data for key in _LATENCIES):
            names.append("latency")
        return sorted(names)

    def to_frame(self, table=None):
        """A table of the result as a pandas DataFrame, one row per item: `table` names it
        (tables() lists them; a nested object's fields become "outer.inner" columns, an object
        of plain values two columns, name and value); without it, the command's main one
        (simulate: ranks, plan: plans, serve: latency, goodput: failure_causes)."""
        try:
            import pandas
        except ImportError as error:
            raise ImportError("to_frame needs pandas: apt-get install python3-pandas (Debian), "
                              "or pip install pandas") from error
        name = table if table is not None else _DEFAULT_TABLES.get(self._command)
        if name is None:
            raise ValueError("name the table: to_frame(table), one of " + ", ".join(self.tables()))
        if name not in self.tables():
            raise ValueError(f"no table {name!r} in this result; it has " +
                             ", ".join(self.tables()))
        if name == "latency":
            rows = [dict(metric=key, **self._data[key]) for key in _LATENCIES if key in self._data]
            return pandas.DataFrame(rows)
        value = self._data[name]
        if isinstance(value, dict):
            return pandas.DataFrame({"name": list(value), "value": list(value.values())})
        return pandas.DataFrame([_flatten(row) for row in value])

    def __repr__(self):
        return "stagecraft.Result(" + ", ".join(sorted(self._data)) + ")"


def _flatten(row, prefix=""):
    """An object's fields as one level: {"a": {"b": 1}} gives {"a.b": 1}; lists stay values."""
    flat = {}
    for key, value in row.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, prefix + key + "."))
        else:
            flat[prefix + key] = value
    return flat


def _wrap(value):
    if isinstance(value, dict):
        return Result(value)
    if isinstance(value, list):
        return [_wrap(item) for item in value]
    return value


def _source(path, text, config):
    if config is not None:
        if path is not None or text is not None:
            raise ValueError("give one of path, text= or config=")
        return "", json.dumps(config)  # JSON is YAML: the same reader checks it
    return path or "", text


def _overrides(values):
    return {key: str(value).lower() if isinstance(value, bool) else str(value)
            for key, value in values.items()}


def _answer(result, as_json=True, command=None, report=None):
    ok, kind, message, answer, diagnostics = result
    if not ok:
        raise StagecraftError(kind, message.strip())
    return Result(json.loads(answer), command, report) if as_json else answer


def _reported(command, run, path, report):
    """run(config_path, report_path) once with the path as given (its messages name it); the
    result keeps run with the path made absolute, to write its report again from any folder
    (_repr_html_)."""
    absolute = os.path.abspath(path) if path else path
    return _answer(run(path, report), command=command,
                   report=lambda report_path: run(absolute, report_path))


def _path(report):
    return None if report is None else os.fspath(report)


def _csv(schedule):
    """A schedule as torch.distributed.pipelining's CSV: text, or a list of ranks' action lists."""
    if schedule is None or isinstance(schedule, str):
        return schedule
    return "".join(",".join(rank) + "\n" for rank in schedule)


def schedule(path=None, *, text=None, config=None, **overrides):
    """The schedule a run would simulate: one list of actions per rank ("0F0", "1B3", ...).
    Edit it and hand it to simulate(..., schedule=...) or check(..., schedule=...)."""
    csv = _answer(_native.schedule(*_source(path, text, config), _overrides(overrides)), False)
    return [line.split(",") if line else [] for line in csv.splitlines()]


def simulate(path=None, *, text=None, config=None, schedule=None, report=None, **overrides):
    """`stagecraft simulate --json`: the run's metrics, memory verdict and assumptions; with
    `schedule` (rank lists or CSV text) that order instead of the generator's; with `report` a
    path, the HTML report written there (`--report`)."""
    def run(config_path, report_path):
        return _native.simulate(*_source(config_path, text, config), _overrides(overrides),
                                _csv(schedule), _path(report_path))
    return _reported("simulate", run, path, report)


def derive(path=None, *, text=None, config=None, **overrides):
    """`stagecraft derive --json`: closed forms with their numbers next to the simulated value."""
    return _answer(_native.derive(*_source(path, text, config), _overrides(overrides)))


def memory(path=None, *, text=None, config=None, **overrides):
    """`stagecraft memory --json`; a device over its capacity raises (kind "infeasible")."""
    return _answer(_native.memory(*_source(path, text, config), _overrides(overrides)))


def check(path=None, *, text=None, config=None, schedule=None, **overrides):
    """`stagecraft check`: its report as text; violations raise (kind "violation"/"deadlock")."""
    return _answer(_native.check(*_source(path, text, config), _overrides(overrides),
                                 _csv(schedule)), False)


def plan(path=None, *, gpus, global_batch_size, engine="any", top=10, jobs=1, text=None,
         config=None, report=None, **overrides):
    """`stagecraft plan --json`: candidates, rejections by reason, the plans best first; `jobs`
    threads share the work (the same answer); with `report` a path, the HTML report there."""
    def run(config_path, report_path):
        return _native.plan(*_source(config_path, text, config), _overrides(overrides),
                            int(gpus), int(global_batch_size), engine, int(top), int(jobs),
                            _path(report_path))
    return _reported("plan", run, path, report)


def serve(path=None, *, text=None, config=None, report=None, **options):
    """`stagecraft serve --json`: the KV cache, the decode step and the request-level latencies.
    Options are serve's flags by name (tp=8, ep=8, rate=2, requests=500, slo="ttft=0.4s,tpot=40ms",
    prompt_tokens="128-1024", routing="least-outstanding", eager=True, ...); other names are the
    model's overrides as for simulate (cluster="h100", hf_config=...)."""
    def run(config_path, report_path):
        return _native.serve(*_source(config_path, text, config), _overrides(options),
                             _path(report_path))
    return _reported("serve", run, path, report)


def kernel(op, *extents, **options):
    """`stagecraft kernel OP ... --json`: one kernel timed as the simulator times it.
    kernel("gemm", 4096, 4096, 4096, dtype="bf16", cluster="h100", in_step=False);
    kernel("attention", batch=2, heads=16, head_dim=128, seq=8192, causal=True, impl="flash2",
    pass_="backward"); kernel("memory", bytes="256MiB"). The result has time_us, tflops and
    bound ("compute", "memory" or "latency"), with the compute, memory and floor times."""
    named = {}
    for key, value in options.items():
        key = key.rstrip("_")  # pass_: `pass` is a Python keyword
        named[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return _answer(_native.kernel(op, [str(extent) for extent in extents], named))


def goodput(path=None, *, report=None, **options):
    """`stagecraft goodput --json`: the checkpoint interval, ETTR and goodput under failures.
    Options are goodput's flags by name (gpus=16384, checkpoint_blocking="0.6s",
    checkpoint_persist="51s", restart="189s", monte_carlo=1000, ...); `path` is the optional
    config whose layout gives the GPUs (and, with storage=, the checkpoint's size)."""
    def run(config_path, report_path):
        return _native.goodput(config_path or "", _overrides(options), _path(report_path))
    return _reported("goodput", run, path, report)
