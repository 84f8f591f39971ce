"""The Python module against the CLI: the same JSON field by field on every example, errors as
exceptions with their kind, file and line, and a notebook-style plan -> simulate -> memory."""

import glob
import html
import json
import os
import re
import subprocess
import sys

import pytest

import stagecraft

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("STAGECRAFT_BINARY", os.path.join(ROOT, "build", "src", "cli", "stagecraft"))


def cli_json(*args):
    done = subprocess.run([BINARY, *args, "--json"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("example", sorted(glob.glob(os.path.join(ROOT, "examples", "*.yaml"))))
def test_simulate_equals_the_cli_json_on_every_example(example):
    path = os.path.relpath(example, ROOT)
    os.chdir(ROOT)
    done = subprocess.run([BINARY, "simulate", path, "--json"], cwd=ROOT, capture_output=True,
                          text=True)
    if done.returncode == 2:  # not a training run (the serving examples): the same error
        with pytest.raises(stagecraft.StagecraftError) as error:
            stagecraft.simulate(path)
        assert error.value.kind == "bad_input"
        assert done.stderr.strip() == "stagecraft: error: " + error.value.message
        return
    assert stagecraft.simulate(path).to_dict() == json.loads(done.stdout)


def test_the_readme_line():
    os.chdir(ROOT)
    r = stagecraft.simulate("examples/deepseek-v4.1-flash.yaml")
    assert r.makespan_ms > 0
    assert r.memory.fits in (True, False)


def test_overrides_are_flags_or_config_keys():
    os.chdir(ROOT)
    by_flag = stagecraft.simulate("examples/uniform-study.yaml", pp=8, microbatches=16)
    by_key = stagecraft.simulate("examples/uniform-study.yaml", **{"parallel.pp": 8},
                                 microbatches=16)
    assert by_flag.to_dict() == by_key.to_dict()
    assert by_flag.to_dict() == cli_json("simulate", "examples/uniform-study.yaml", "--pp", "8",
                                         "--microbatches", "16")


def test_a_config_as_a_dict_and_as_text():
    config = {"model": {"forward": "1ms", "input_grad": "1ms", "weight_grad": "1ms"},
              "parallel": {"pp": 4, "microbatches": 8}, "schedule": {"name": "1f1b"}}
    # 1F1B, p = 4, m = 8, F = I = W = 1 ms: (m + p - 1)(F + I + W) = 33 ms.
    assert stagecraft.simulate(config=config).makespan_ms == pytest.approx(33.0)
    assert stagecraft.simulate(text=json.dumps(config)).to_dict() == \
        stagecraft.simulate(config=config).to_dict()


def test_errors_carry_kind_file_and_line():
    with pytest.raises(stagecraft.StagecraftError) as bad:
        stagecraft.simulate(text="model:\n  forward: 1ms\nparallel:\n  pp: zero\n")
    assert bad.value.kind == "bad_input"
    assert bad.value.file == "config.yaml"
    assert bad.value.line == 4
    with pytest.raises(stagecraft.StagecraftError) as unknown:
        stagecraft.simulate("examples/uniform-study.yaml", ppp=4)
    assert "did you mean 'pp'" in unknown.value.message
    os.chdir(ROOT)
    with pytest.raises(stagecraft.StagecraftError) as broken:
        stagecraft.check(os.path.join("tests", "golden", "data", "backward-before-forward.csv"))
    assert broken.value.kind in ("bad_input", "violation")


def test_derive_and_memory_equal_the_cli():
    os.chdir(ROOT)
    path = "tests/golden/data/llama-3-70b.yaml"
    assert stagecraft.derive(path).to_dict() == cli_json("derive", path)
    assert stagecraft.memory(path).to_dict() == cli_json("memory", path)


def test_notebook_plan_then_simulate_then_memory():
    os.chdir(ROOT)
    hf = "tests/golden/data/hf/llama-3-8b.json"
    plans = stagecraft.plan(hf_config=hf, cluster="h100", seq_len=8192, gpus=8,
                            global_batch_size=64, engine="megatron", top=3)
    assert plans.candidates > 0 and plans.plans
    best = plans.plans[0]
    run = stagecraft.simulate(hf_config=hf, cluster="h100", seq_len=8192, tp=best.tp, pp=best.pp,
                              dp=best.dp, cp=best.cp, micro_batch_size=best.micro_batch_size,
                              microbatches=best.microbatches, recompute=best.recompute,
                              zero_stage=best.zero_stage)
    print("best plan:", best.to_dict())
    print("memory:", run.memory.to_dict())
    assert run.memory.fits is not None


def test_a_schedule_edited_in_python():
    os.chdir(ROOT)
    path = "examples/uniform-study.yaml"
    ranks = stagecraft.schedule(path, pp=2, microbatches=2)
    assert ranks == [["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]
    same = stagecraft.simulate(path, pp=2, microbatches=2, schedule=ranks)
    assert same.makespan_ms == stagecraft.simulate(path, pp=2, microbatches=2).makespan_ms
    # Rank 0 runs backward 0 before forward 1's: 1F1B's order with no warm-up, still sound.
    edited = [["0F0", "0B0", "0F1", "0B1"], ranks[1]]
    assert "check: ok" in stagecraft.check(path, pp=2, microbatches=2, schedule=edited)
    assert stagecraft.simulate(path, pp=2, microbatches=2, schedule=edited).makespan_ms > 0
    # Backward before its forward: a violation, raised with its kind.
    broken = [["0B0", "0F0", "0F1", "0B1"], ranks[1]]
    with pytest.raises(stagecraft.StagecraftError) as error:
        stagecraft.check(path, pp=2, microbatches=2, schedule=broken)
    assert error.value.kind in ("violation", "deadlock")


@pytest.mark.parametrize("example", ["examples/llama3-70b-serve.yaml", "examples/opt-13b-serve.yaml"])
def test_serve_equals_the_cli(example):
    os.chdir(ROOT)
    ours = stagecraft.serve(example, rate=2, requests=200, slo="ttft=0.5s,tpot=50ms",
                            prompt_tokens="128-1024")
    theirs = cli_json("serve", example, "--rate", "2", "--requests", "200", "--slo",
                      "ttft=0.5s,tpot=50ms", "--prompt-tokens", "128-1024")
    assert ours.to_dict() == theirs
    # A model override next to serve's own options, as on the command line.
    assert (stagecraft.serve(example, requests=50, cluster="h200").to_dict()
            == cli_json("serve", example, "--requests", "50", "--cluster", "h200"))
    # Expert parallelism (ep=) as --ep, on DeepSeek-V3's config.
    deepseek = "tests/golden/data/hf/deepseek-v3.json"
    ours = stagecraft.serve(hf_config=deepseek, cluster="h200", ep=8, requests=50).to_dict()
    assert ours == cli_json("serve", "--hf-config", deepseek, "--cluster", "h200", "--ep", "8",
                            "--requests", "50")
    assert ours["ep"] == 8 and ours["attention_dp"] == 8 and ours["decode_alltoalls"] == 116


def test_serve_errors_name_the_option():
    os.chdir(ROOT)
    with pytest.raises(stagecraft.StagecraftError) as error:
        stagecraft.serve("examples/llama3-70b-serve.yaml", rate="fast")
    assert error.value.kind == "bad_input"
    assert "rate='fast': expected a number" in error.value.message
    with pytest.raises(stagecraft.StagecraftError) as error:
        stagecraft.serve("examples/llama3-70b-serve.yaml", replicaz=2)
    assert "unknown override 'replicaz'" in error.value.message
    assert "replicas" in error.value.message


def test_goodput_equals_the_cli():
    ours = stagecraft.goodput(gpus=16384, checkpoint_blocking="0.6s", checkpoint_persist="51s",
                              restart="189s", monte_carlo=200)
    theirs = cli_json("goodput", "--gpus", "16384", "--checkpoint-blocking", "0.6s",
                      "--checkpoint-persist", "51s", "--restart", "189s", "--monte-carlo", "200")
    assert ours.to_dict() == theirs
    with pytest.raises(stagecraft.StagecraftError) as error:
        stagecraft.goodput(gpus=64, checkpoint_blocking="1s", restrat="60s")
    assert error.value.kind == "bad_input"
    assert "did you mean 'restart'" in error.value.message
    # A count that is not whole is bad input, not a crash (issue 35, D2: 0.5 had been 0 nodes).
    with pytest.raises(stagecraft.StagecraftError) as error:
        stagecraft.goodput(gpus=16384, gpus_per_node=0.5, checkpoint_blocking="1s", restart="60s")
    assert error.value.kind == "bad_input"
    assert error.value.message.startswith("--gpus-per-node: expected a whole number")

def test_kernel_equals_the_cli():
    ours = stagecraft.kernel("gemm", 4096, 8192, 2048, dtype="fp8", cluster="h100", in_step=True)
    theirs = cli_json("kernel", "gemm", "4096", "8192", "2048", "--dtype", "fp8", "--cluster",
                      "h100", "--in-step")
    assert ours.to_dict() == theirs
    assert ours.bound == "compute"
    attention = stagecraft.kernel("attention", batch=2, heads=16, head_dim=128, seq=8192,
                                  causal=True, impl="flash3", pass_="backward")
    assert attention.to_dict() == cli_json("kernel", "attention", "--batch", "2", "--heads", "16",
                                           "--head-dim", "128", "--seq", "8192", "--causal",
                                           "--impl", "flash3", "--pass", "backward")
    with pytest.raises(stagecraft.StagecraftError) as error:
        stagecraft.kernel("attention", batch=2, heads=16, head_dims=128, seq=8192)
    assert error.value.kind == "bad_input"
    assert "did you mean 'head_dim'" in error.value.message


def test_plan_with_threads_is_the_same_answer():
    os.chdir(ROOT)
    args = dict(hf_config="tests/golden/data/hf/llama-3-8b.json", cluster="h100", gpus=8,
                global_batch_size=64, seq_len=8192, engine="any", top=5)
    assert stagecraft.plan(**args, jobs=3).to_dict() == stagecraft.plan(**args).to_dict()


def test_reports_from_python(tmp_path):
    os.chdir(ROOT)
    written = {
        "simulate": lambda path: stagecraft.simulate("examples/pipeline-1f1b.yaml", report=path),
        "plan": lambda path: stagecraft.plan(hf_config="tests/golden/data/hf/llama-3-8b.json",
                                             cluster="h100", gpus=8, global_batch_size=64,
                                             seq_len=8192, engine="megatron", top=3, report=path),
        "serve": lambda path: stagecraft.serve("examples/llama3-70b-serve.yaml", requests=50,
                                               report=path),
        "goodput": lambda path: stagecraft.goodput(gpus=1024, checkpoint_blocking="2s",
                                                   restart="120s", report=path),
    }
    for command, write in written.items():
        path = tmp_path / (command + ".html")
        write(path)
        text = path.read_text()
        assert text.startswith("<!DOCTYPE html>"), command
        assert '<section id="assumptions">' in text, command
        assert text.rstrip().endswith("</html>"), command


def test_unknown_schedule_and_deadlock_raise_with_their_kind():
    os.chdir(ROOT)
    # The generator by its config key (`schedule=` is the action lists handed in).
    with pytest.raises(stagecraft.StagecraftError) as unknown:
        stagecraft.simulate("examples/uniform-study.yaml", **{"schedule.name": "1f1c"})
    assert unknown.value.kind == "bad_input"
    assert "did you mean '1f1b'" in unknown.value.message
    # Rank 1 runs 1F1 before 1F0: under rendezvous point-to-point a deadlock, whose exception
    # carries the wait-for cycle (tests/golden/check/rendezvous-deadlock.test).
    with open("tests/golden/data/rendezvous-deadlock.csv") as csv:
        ranks = [line.strip().split(",") for line in csv if line.strip()]
    with pytest.raises(stagecraft.StagecraftError) as deadlock:
        stagecraft.simulate("tests/golden/data/uniform.yaml", schedule=ranks, p2p="rendezvous")
    assert deadlock.value.kind == "deadlock"
    assert "wait-for cycle:" in deadlock.value.message
    assert "rank 1 1F1 waits for activation transfer 0F1 -> 1F1" in deadlock.value.message


def test_bundled_examples_and_the_version():
    # From any folder: a bundled example by name (the installed package's own copy, or examples/
    # from the repository), simulated as the CLI simulates the repository's file.
    path = stagecraft.examples.path("deepseek-v4.1-flash.yaml")
    assert os.path.isabs(path) and os.path.isfile(path)
    with open(path) as bundled, open(os.path.join(ROOT, "examples", "deepseek-v4.1-flash.yaml")) as repo:
        assert bundled.read() == repo.read()
    assert stagecraft.simulate(path).to_dict() == \
        cli_json("simulate", "examples/deepseek-v4.1-flash.yaml")
    assert "vidur/chat.csv" in stagecraft.examples.names()
    with pytest.raises(FileNotFoundError) as unknown:
        stagecraft.examples.path("deepseek-v4-flash.yaml")
    assert "did you mean 'deepseek-v4.1-flash.yaml'" in str(unknown.value)
    # One version, CMakeLists.txt's project version.
    with open(os.path.join(ROOT, "CMakeLists.txt")) as cmake:
        assert f"project(stagecraft VERSION {stagecraft.__version__} " in cmake.read()


@pytest.mark.skipif(not os.environ.get("STAGECRAFT_INSTALLED"),
                    reason="the installed package only (tests/python/pip_install.sh)")
def test_the_installed_package_is_self_contained():
    import importlib.metadata
    package = os.path.dirname(os.path.abspath(stagecraft.__file__))
    assert package.startswith(sys.prefix + os.sep), package  # the venv's, not the repository's
    assert os.path.dirname(stagecraft._native.__file__) == package
    assert stagecraft.examples.path("uniform-study.yaml").startswith(package + os.sep)
    for typed in ("__init__.pyi", "py.typed"):
        assert os.path.isfile(os.path.join(package, typed))
    assert importlib.metadata.version("stagecraft") == stagecraft.__version__


def _stub_parameters(function):
    """A stub's parameters as (name, kind, has a default), kinds as _runtime_parameters gives."""
    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    first_default = len(positional) - len(arguments.defaults)
    parameters = [(arg.arg, "positional", index >= first_default)
                  for index, arg in enumerate(positional)]
    if arguments.vararg:
        parameters.append((arguments.vararg.arg, "*", False))
    parameters += [(arg.arg, "keyword", default is not None)
                   for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults)]
    if arguments.kwarg:
        parameters.append((arguments.kwarg.arg, "**", False))
    return parameters


def _runtime_parameters(function):
    import inspect
    kinds = {inspect.Parameter.POSITIONAL_ONLY: "positional",
             inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
             inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.KEYWORD_ONLY: "keyword",
             inspect.Parameter.VAR_KEYWORD: "**"}
    return [(parameter.name, kinds[parameter.kind], parameter.default is not parameter.empty)
            for parameter in inspect.signature(function).parameters.values()]


def test_the_type_stubs_match_the_functions():
    # __init__.pyi (shipped with py.typed) declares every name of __all__, each public function
    # with the runtime's parameters: names, kinds and which have defaults.
    import ast
    with open(os.path.join(os.path.dirname(stagecraft.__file__), "__init__.pyi")) as stub:
        tree = ast.parse(stub.read())
    declared = {node.name: node for node in tree.body
                if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert set(stagecraft.__all__) - {"examples"} <= set(declared)
    for name, node in declared.items():
        if isinstance(node, ast.FunctionDef):
            assert _stub_parameters(node) == _runtime_parameters(getattr(stagecraft, name)), name


def test_results_as_data_frames():
    pandas = pytest.importorskip("pandas")  # scripts/install-deps.sh installs python3-pandas
    os.chdir(ROOT)
    example = "examples/deepseek-v4.1-flash.yaml"
    run = stagecraft.simulate(example)
    ranks = run.to_frame()  # simulate's main table: one row a rank
    assert isinstance(ranks, pandas.DataFrame)
    assert list(ranks["rank"]) == list(range(run.pp))
    assert list(ranks["busy_ms"]) == [rank.busy_ms for rank in run.ranks]
    # A nested object's fields as "outer.inner" columns.
    assert list(ranks["bubble_ms.pipeline"]) == [rank.bubble_ms.pipeline for rank in run.ranks]
    assert "stages" in run.tables() and "memory" in run.tables()
    stages = run.to_frame("stages")
    assert len(stages) == len(run.stages) and stages["forward_ms"][0] == run.stages[0].forward_ms
    plan = stagecraft.plan("examples/llama3-70b-serve.yaml", gpus=16, global_batch_size=64,
                           engine="megatron", top=3, cluster="h100x2")
    plans = plan.to_frame()
    assert list(plans["step_ms"]) == [p.step_ms for p in plan.plans]
    assert list(plans["step_ms"]) == sorted(plans["step_ms"])  # best first
    rejected = plan.to_frame("rejected")  # an object of counts: name and value
    assert list(rejected.columns) == ["name", "value"]
    assert dict(zip(rejected["name"], rejected["value"])) == plan.to_dict()["rejected"]
    served = stagecraft.serve("examples/llama3-70b-serve.yaml", requests=50)
    latency = served.to_frame()  # serve's percentiles, one row a metric
    assert list(latency["metric"]) == ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"]
    assert latency["p99"][0] == served.ttft_ms.p99
    causes = stagecraft.goodput(gpus=16384, checkpoint_blocking="1s", restart="60s").to_frame()
    assert causes["failures"].sum() == sum(c.failures for c in
                                           stagecraft.goodput(gpus=16384,
                                                              checkpoint_blocking="1s",
                                                              restart="60s").failure_causes)
    with pytest.raises(ValueError, match="no table 'rankz'"):
        run.to_frame("rankz")
    with pytest.raises(ValueError, match="name the table"):
        stagecraft.derive(example).to_frame()


def test_to_frame_without_pandas_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    run = stagecraft.simulate(os.path.join(ROOT, "examples", "deepseek-v4.1-flash.yaml"))
    with pytest.raises(ImportError, match="apt-get install python3-pandas"):
        run.to_frame()


def test_results_render_their_report_in_a_notebook(tmp_path):
    os.chdir(ROOT)
    example = "examples/deepseek-v4.1-flash.yaml"
    written = tmp_path / "run.html"
    run = stagecraft.simulate(example, report=written)
    shown = run._repr_html_()  # what Jupyter displays: the report, isolated in a frame
    assert shown.startswith('<iframe srcdoc="') and shown.endswith("</iframe>")
    page = html.unescape(shown[len('<iframe srcdoc="'):shown.index('" style=')])
    assert page == written.read_text(encoding="utf-8")  # the report as report= writes it
    # Self-contained: nothing loaded from the network (the SVG namespace is a name, not a load).
    assert not re.search(r'(src|href)\s*=\s*["\']?https?:', page)
    served = stagecraft.serve("examples/llama3-70b-serve.yaml", requests=20)
    os.chdir(tmp_path)  # the config path was made absolute: it renders from anywhere
    assert "<iframe" in served._repr_html_()
    assert "<iframe" in stagecraft.goodput(gpus=1024, checkpoint_blocking="1s",
                                           restart="60s")._repr_html_()
    assert stagecraft.derive(os.path.join(ROOT, example))._repr_html_() is None  # no report
    os.chdir(ROOT)


def test_the_course_notebook_runs(capsys):
    """examples/course.ipynb's code cells, run in order from the repository root in one
    namespace (what `jupyter nbconvert --execute` does, without Jupyter)."""
    os.chdir(ROOT)
    with open(os.path.join(ROOT, "examples", "course.ipynb"), encoding="utf-8") as notebook:
        cells = json.load(notebook)["cells"]
    namespace = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), "course.ipynb", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "m  4: 1f1b 0.4286  interleaved-1f1b 0.2727  zb-h1 0.2000" in printed
    assert "rejected, by reason:" in printed and "fits True" in printed
    assert printed.count("TTFT p50") == 3
