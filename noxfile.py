"""Sessions for developing numpile: tests per Python and per layer, types, lint, demo, bench.

nox -t ci          # everything CI runs (the README's test command)
nox -s demo        # compile a few NumPy functions and show graphs, guards, results
nox -s docs        # the documentation site (mkdocs --strict) into build/site
nox -s tests-3.12  # the whole test suite on one Python
nox -s tests-capture  # one layer alone, in a venv holding only it and what it declares
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import tomllib
from collections.abc import Mapping, Sequence

import nox

ROOT = pathlib.Path(__file__).parent
PYTHONS = ["3.11", "3.12", "3.13"]
DEFAULT_PYTHON = "3.11"
# Bottom to top; a layer may import only the layers before it.
LAYERS = ["runtime", "guards", "capture", "autograd_aot", "inductor", "api"]
# The layers whose tests exercise the interpreter's bytecode (capture, and autograd's traced
# transforms): their layer sessions run on every Python. The others test code that reads
# graphs, not bytecode; their layer sessions run on the default Python, and the integration
# tests run end to end on every Python.
BYTECODE_LAYERS = ["capture", "autograd_aot"]
TEST_DEPS = ["pytest>=8", "pytest-xdist>=3.2", "hypothesis>=6"]
# Tests spend most of their time waiting on the C++ compiler: one worker per core halves CI.
# Work stealing: a worker that runs out of tests takes half of another's queue, so a long
# test near the end no longer leaves the other core idle while the tests queued behind it
# wait (xdist's default hands each worker its share in advance).
PYTEST_PARALLEL = ["-n", "auto", "--dist", "worksteal"]

nox.options.default_venv_backend = "uv|virtualenv"
# NOTE: sessions write the bytecode of what they import, once, where it lives: the venv's
# packages, numpile's sources and the test modules pytest rewrites (shared by every session
# of one Python). Where PYTHONDONTWRITEBYTECODE is set, every test process, xdist worker
# and subprocess compiled them all again (numpile's own modules alone: 0.5 s of CPU each);
# compiling every file of every venv at install instead (UV_COMPILE_BYTECODE) cost 16 s of
# CPU per venv, mostly files no test imports.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# NOTE: one kernel cache for every session and xdist worker of a checkout (each Python
# builds its own modules; a layer's tests and the integration tests on one Python share
# theirs), in .nox beside the venvs: a fresh clone starts cold, as CI does, whatever the
# user's cache holds, and the run's hundreds of MB never sweep the user's entries out.
# Tests that need an empty cache make their own. NUMPILE_CACHE_DIR set outside wins.
os.environ.setdefault("NUMPILE_CACHE_DIR", str(ROOT / ".nox" / "numpile-cache"))
nox.options.reuse_venv = "yes"
# A missing interpreter is an error under CI=true (and nox's own CI detection); skipped locally.
nox.options.error_on_missing_interpreters = bool(os.environ.get("CI"))


def _add_pyenv_pythons_to_path() -> None:
    # pyenv's shims resolve only the selected version; nox needs python3.12 and python3.13 too.
    root = os.environ.get("PYENV_ROOT")
    if root is None:
        try:
            root = subprocess.run(
                ["pyenv", "root"], capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return
    versions = pathlib.Path(root) / "versions"
    bins = []
    for wanted in PYTHONS:
        matches = sorted(versions.glob(f"{wanted}.*"), key=lambda p: p.name)
        if matches:
            bins.append(str(matches[-1] / "bin"))
    os.environ["PATH"] = os.pathsep.join([*bins, os.environ.get("PATH", "")])


_add_pyenv_pythons_to_path()


def _package_dir(layer: str) -> pathlib.Path:
    return ROOT / "packages" / layer


def _local_deps(layer: str) -> list[str]:
    """The layer and every sibling it declares, directly or through another sibling."""
    distribution_to_layer = {
        tomllib.loads((_package_dir(name) / "pyproject.toml").read_text())["project"]["name"]: name
        for name in LAYERS
    }
    ordered: list[str] = []

    def visit(name: str) -> None:
        if name in ordered:
            return
        project = tomllib.loads((_package_dir(name) / "pyproject.toml").read_text())["project"]
        for requirement in project.get("dependencies", []):
            distribution = requirement.split(">")[0].split("<")[0].split("=")[0].strip()
            if distribution in distribution_to_layer:
                visit(distribution_to_layer[distribution])
        ordered.append(name)

    visit(layer)
    return ordered


def _install_layers(
    session: nox.Session,
    layers: list[str],
    *requirements: str,
    extras: Mapping[str, str] | None = None,
) -> None:
    """The layers (editable, a layer's extras from `extras`) and `requirements`, in one
    install: one resolution, and each layer built once (a second install of a layer with
    an extra built its editable wheel again)."""
    args = []
    for layer in layers:
        args += ["-e", f"{_package_dir(layer)}{(extras or {}).get(layer, '')}"]
    session.install(*args, *requirements)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Every layer's tests plus the integration tests, the layering contract, and the doctests
    of every README and module, on one Python."""
    _run_suite(session, LAYERS)


@nox.session(name="tests-ci", python=PYTHONS, tags=["ci"])
def tests_ci(session: nox.Session) -> None:
    """CI's share of ``tests``: the layer sessions run every layer's tests and doctests (the
    bytecode layers' on every Python), so this runs the integration tests alone: all of them
    on the default Python, capture's (`CAPTURE_INTEGRATION_TESTS`, the corpus through
    capture alone) on the others."""
    if session.python == DEFAULT_PYTHON:
        # The corpus and the generated programs through the C backend alone: the eager
        # backend's runs of them (capture alone) are those of 3.12 and 3.13 below, and the
        # C backend's runs capture the same bytecode. Since the tests stopped running calls on
        # the tiered path, every C build is waited for, and both backends here took CI past
        # its 30 minutes.
        session.env["NUMPILE_CORPUS_BACKENDS"] = "inductor"
        _run_suite(session, [])
        return
    # The corpus and the generated programs through capture alone (the eager backend runs
    # the captured graph): what the interpreter changes is capture. The C backend reads
    # graphs, and the runtime's tests (threads, signals, unloading, docs, training) do not
    # read bytecode: their runs on the default Python cover them.
    session.env["NUMPILE_CORPUS_BACKENDS"] = "eager"
    session.env["NUMPILE_EXAMPLES_FRACTION"] = "0.34"  # the default Python draws them all
    # The bytecode layers' own tests run in their layer sessions, on every Python: there,
    # with only what each layer declares installed, they run their graphs with `run_graph`.
    # Here, beside the inductor, they compiled their graphs to C, three fifths of their CPU
    # (docs/performance_notes.md), for a backend that reads graphs, not bytecode.
    tests = [f"integration_tests/{name}" for name in CAPTURE_INTEGRATION_TESTS]
    _run_suite(session, [], tests)


# NOTE: the integration tests CI runs on the Pythons other than the default: those of
# capture (the corpus, generated programs, breaks, loops kept, guards). The whole folder on
# 3.12 and 3.13 took CI past its 30 minutes (round 2, fourth session). Pickling by value and
# by reference, across processes, is capture's own test (test_capture_pickling.py, in its
# layer session on every Python); test_dask.py adds a cluster of processes sharing the
# kernel cache, which reads no bytecode: it runs on the default Python.
CAPTURE_INTEGRATION_TESTS = [
    "test_breaking_loops_random.py",
    "test_breaks.py",
    "test_corpus.py",
    "test_corpus_harness.py",
    "test_dynamic.py",
    "test_loops_kept_everywhere.py",
    "test_loops_random.py",
    "test_loops_trip_counts.py",
    "test_python_visible_sizes.py",
    "test_scalar_inputs_random.py",
    "test_scalar_recurrences.py",
    "test_stale_code.py",
]


def _run_suite(
    session: nox.Session, layers: list[str], tests: Sequence[str] = ("integration_tests",)
) -> None:
    # The dask extra: integration_tests/test_dask.py starts a real LocalCluster with it.
    _install_layers(session, LAYERS, *TEST_DEPS, "import-linter>=2", extras={"api": "[dask]"})
    session.run("lint-imports")
    paths = [f"packages/{layer}/tests" for layer in layers] + list(tests)
    session.run("pytest", "-q", *PYTEST_PARALLEL, *paths, *session.posargs)
    if layers:
        session.run("pytest", "-q", *_doctest_args(layers))


def _doctest_args(layers: list[str]) -> list[str]:
    """pytest arguments that run the doctests of the layers' READMEs and modules."""
    args = ["--doctest-glob=README.md"]
    for layer in layers:
        args += [f"packages/{layer}/README.md", "--doctest-modules", f"packages/{layer}/src"]
    return args


def _layer_session(layer: str) -> None:
    def layer_tests(session: nox.Session) -> None:
        _install_layers(session, _local_deps(layer), *TEST_DEPS)
        session.run("pytest", "-q", *PYTEST_PARALLEL, f"packages/{layer}/tests", *session.posargs)
        session.run("pytest", "-q", *_doctest_args([layer]))

    every_python = layer in BYTECODE_LAYERS
    # The docstring before the decorator: nox copies it into each Python's session.
    layer_tests.__doc__ = (
        f"The {layer} layer alone, with only what it declares installed: its tests, then the "
        "doctests of its README and modules" + (" (on every Python)." if every_python else ".")
    )
    nox.session(
        name=f"tests-{layer}",
        python=PYTHONS if every_python else DEFAULT_PYTHON,
        tags=["ci", "layers"],
    )(layer_tests)


for _layer in LAYERS:
    _layer_session(_layer)


_CORPUS_TEST = "integration_tests/test_corpus.py::test_corpus_program"
# A tree-ordered float sum differs from NumPy's pairwise one in the last bit; this program
# compares a sum stored on a Python object exactly. Runs of Triton kernels deselect it.
SUM_ORDER_PROGRAM = "breaks/set_attribute_of_input_object"


@nox.session(name="tests-triton-interpret", python=DEFAULT_PYTHON, tags=["ci"])
def tests_triton_interpret(session: nox.Session) -> None:
    """Generated Triton kernels on the CPU (TRITON_INTERPRET=1): unit tests and the corpus.

    In ci (since 2026-11-25): it downloads triton once, then runs in about 20 s; out of ci it
    had quietly regressed (a test stand-in the runner no longer recognized).
    """
    _install_layers(session, LAYERS, *TEST_DEPS, "triton>=3.0")
    env = {"TRITON_INTERPRET": "1"}
    session.run(
        "pytest",
        "-q",
        *PYTEST_PARALLEL,
        "packages/inductor/tests/test_inductor_triton.py",
        "packages/inductor/tests/test_inductor_triton_split.py",
        "packages/inductor/tests/test_inductor_triton_scalar_slots.py",
        "packages/inductor/tests/test_inductor_triton_launch_plan.py",
        "packages/inductor/tests/test_inductor_loop_graph_slots.py",
        "packages/runtime/tests/test_runtime_cuda.py",
        "integration_tests/test_loops_triton.py",
        "integration_tests/test_loops_triton_while.py",
        "integration_tests/test_loops_random.py::test_random_loop_nests_behave_as_in_eager[triton]",
        env=env,
    )
    deselect = f"{_CORPUS_TEST}[{SUM_ORDER_PROGRAM}-triton]"
    session.run(
        "pytest",
        "-q",
        *PYTEST_PARALLEL,
        "integration_tests/test_corpus.py",
        "--deselect",
        deselect,
        # Loops on Triton: test_loops_triton.py and the random loop nests above.
        "-k",
        "not loops",
        *session.posargs,
        env={**env, "NUMPILE_CORPUS_BACKENDS": "triton"},
    )


@nox.session(name="tests-gpu", python=DEFAULT_PYTHON)
def tests_gpu(session: nox.Session) -> None:
    """On a machine with an NVIDIA GPU: the GPU tests and the corpus, from NumPy inputs
    (device copies) and on CuPy arrays. Not in ci (CI has no GPU); posargs name the CuPy
    wheel for the machine's CUDA (default cupy-cuda12x).
    """
    _install_layers(
        session, LAYERS, *TEST_DEPS, "triton>=3.0", *(session.posargs or ["cupy-cuda12x"])
    )
    session.run(
        "pytest",
        "-q",
        "-m",
        "gpu",
        "integration_tests/test_gpu.py",
        "packages/runtime/tests/test_runtime_cuda.py",
    )
    for env, backend in (({}, "triton"), ({"NUMPILE_CORPUS_DEVICE": "cupy"}, "inductor")):
        session.run(
            "pytest",
            "-q",
            *PYTEST_PARALLEL,
            "integration_tests/test_corpus.py",
            "--deselect",
            f"{_CORPUS_TEST}[{SUM_ORDER_PROGRAM}-{backend}]",
            env={**env, "NUMPILE_CORPUS_BACKENDS": backend},
        )


@nox.session(python=DEFAULT_PYTHON, tags=["ci"])
def typecheck(session: nox.Session) -> None:
    """mypy --strict on every package."""
    _install_layers(session, LAYERS, "mypy>=1.10")
    packages = []
    for layer in LAYERS:
        import_name = "numpile" if layer == "api" else f"numpile_{layer}"
        packages += ["-p", import_name]
    session.run("mypy", "--strict", *packages)


@nox.session(python=DEFAULT_PYTHON, tags=["ci"])
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=DEFAULT_PYTHON, tags=["ci"])
def docs(session: nox.Session) -> None:
    """The documentation site (mkdocs, Material; the API reference generated from the
    docstrings) into build/site, warnings as errors. The code blocks of the pages run as
    tests in integration_tests/test_docs.py.
    """
    _install_layers(
        session, LAYERS, "mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26"
    )
    session.run("mkdocs", "build", "--strict", env={"NO_MKDOCS_2_WARNING": "1"})


@nox.session(python=DEFAULT_PYTHON)
def demo(session: nox.Session) -> None:
    """Compile a few realistic NumPy functions and a loop; print graphs, guards, results and
    steady-state times beside NumPy's (after the background builds)."""
    _install_layers(session, LAYERS)
    session.run("python", "-u", "docs/demo.py")  # each line as it is printed, piped or not


@nox.session(python=DEFAULT_PYTHON)
def bench(session: nox.Session) -> None:
    """The benchmark suite: ratios against NumPy and peers measured in the same run.

    nox -s bench -- --quick           # smoke run
    nox -s bench -- --torch           # also installs torch (CPU build) and runs torch.compile
    """
    _install_layers(session, LAYERS, "numexpr")
    if "--torch" in session.posargs:
        # uv ignores pip's config: pass its find-links on, so a CPU wheel on local disk wins.
        links = os.environ.get("PIP_FIND_LINKS", "").split()
        session.install("torch==2.13.0", *[arg for link in links for arg in ("--find-links", link)])
    session.run("python", "-m", "benchmarks", *session.posargs)
