"""The custom-operator example (examples/custom_op) end to end.

my_ops::squared_relu is defined with torch.library (eager and fake kernels),
exported with its kernel described in my_ops.yaml, and run by the example's
C program (main.c + my_ops.c, linked with build/libember.a) and from Python
(my_ops.c as a shared library through ember.runtime.load_library); both are
compared with eager PyTorch. Without the description, export fails naming
the operator and its source line; without the kernel, method load fails
naming the operator.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ember import ExecutorchBackendConfig, ExportError, KernelLibrary, to_edge
from conftest import ROOT

EXAMPLE = Path(ROOT) / "examples" / "custom_op"
BUILD = Path(os.environ.get("EMBER_BUILD_DIR") or Path(ROOT) / "build")
CC = os.environ.get("CC", "cc")
KEY = "my_ops::squared_relu.out"

# One worker: the tests share the module's export.
pytestmark = pytest.mark.xdist_group("custom_op")


def _load(name: str, path: Path):
    """Imports an example file under a name of its own (examples share module names)."""
    if name in sys.modules:
        return sys.modules[name]
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


# export.py imports my_ops under its own name, which defines the operator once.
export_mod = _load("custom_op_export", EXAMPLE / "export.py")
my_ops = sys.modules["my_ops"]


@pytest.fixture(scope="module")
def pte(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("custom_op") / "model.pte"
    path.write_bytes(export_mod.export().buffer)
    return path


def _eager() -> torch.Tensor:
    return my_ops.Model().eval()(my_ops.example_input()).detach()


def test_export_without_the_kernel_description_fails_naming_the_op() -> None:
    with pytest.raises(ExportError) as e:
        export_mod.export(kernel_library=False)
    msg = str(e.value)
    assert KEY in msg
    assert re.search(r"my_ops\.py:\d+ in forward", msg), msg
    assert "kernel_libraries" in msg


def test_description_must_match_the_torch_schema() -> None:
    lib = KernelLibrary.from_rows(
        [{"func": "my_ops::squared_relu.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"}], "bad")
    ep = torch.export.export(my_ops.Model().eval(), (my_ops.example_input(),))
    with pytest.raises(ExportError, match="torch registers the operator as"):
        to_edge(ep).to_executorch(ExecutorchBackendConfig(kernel_libraries=[lib]))


def test_description_files(tmp_path: Path) -> None:
    lib = KernelLibrary.load(EXAMPLE / "my_ops.yaml")
    assert lib.keys == {KEY}
    assert lib.entries[0].kernel == "squared_relu_out"
    # The C file registers the kernel the description names, under its key.
    src = (EXAMPLE / "my_ops.c").read_text()
    assert re.search(r'\{"my_ops::squared_relu\.out",\s*squared_relu_out\}', src)
    js = tmp_path / "ops.json"
    js.write_text(json.dumps({"kernels": [{"func": lib.entries[0].func}]}))
    assert KernelLibrary.load(js).keys == {KEY}
    for rows, match in (([{"kernel": "f"}], "no 'func'"),
                        ([{"func": "nonsense("}], "not an operator schema"),
                        ([{"func": lib.entries[0].func, "kernal": "f"}], "unknown fields")):
        with pytest.raises(ValueError, match=match):
            KernelLibrary.from_rows(rows)


def _outputs(stdout: str) -> torch.Tensor:
    m = re.search(r"output 0: float32 \[([\d, ]+)\]:(.*)", stdout)
    assert m, stdout
    shape = [int(s) for s in m.group(1).split(",")]
    return torch.tensor([float(v) for v in m.group(2).split()]).reshape(shape)


def _static_libs() -> list:
    """What linking libember.a statically also needs (ember.pc's Libs.private:
    libm, pthreads, and libvulkan in a build with the Vulkan backend)."""
    pc = BUILD / "ember.pc"
    if pc.exists():
        for line in pc.read_text().splitlines():
            if line.startswith("Libs.private:"):
                return line.split(":", 1)[1].split()
    return ["-lm", "-lpthread"]


@pytest.mark.skipif(not (BUILD / "libember.a").exists(), reason=f"{BUILD}/libember.a is not built")
def test_c_program_runs_the_custom_op(pte: Path, tmp_path: Path) -> None:
    exe = tmp_path / "custom_op"
    res = subprocess.run(
        [CC, "-std=c11", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
         f"-I{ROOT}/include", str(EXAMPLE / "main.c"), str(EXAMPLE / "my_ops.c"),
         str(BUILD / "libember.a"), *_static_libs(), "-o", str(exe)],
        capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([str(exe), str(pte)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    torch.testing.assert_close(_outputs(res.stdout), _eager(), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not os.access(BUILD / "ember-run", os.X_OK), reason="ember-run is not built")
def test_method_load_without_the_kernel_names_the_op(pte: Path) -> None:
    # ember-run registers only the built-in kernels.
    res = subprocess.run([str(BUILD / "ember-run"), str(pte)], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 1
    assert re.search(r"operator missing: .*1 operator without a kernel: my_ops::squared_relu\.out",
                     res.stderr), res.stderr


def test_python_runtime_with_the_kernel_library(pte: Path, tmp_path: Path) -> None:
    import ember.runtime as rt

    lib = tmp_path / "libmy_ops.so"
    subprocess.run(
        [CC, "-shared", "-fPIC", "-std=c11", "-O2", f"-I{ROOT}/include", str(EXAMPLE / "my_ops.c"),
         f"-L{rt.library_dir()}", "-l:libember.so.0", "-lm", "-o", str(lib)],
        check=True, capture_output=True, text=True)
    # Not loaded into this process (a loaded library stays for the process's
    # life), so the kernel is missing here; run.py loads it in a process of its own.
    with pytest.raises(rt.EmberError) as e:
        rt.Runtime.get().load_program(str(pte)).load_method("forward")
    assert e.value.status_name == "OPERATOR_MISSING"
    assert KEY in e.value.message
    res = subprocess.run([sys.executable, "-W", "ignore", str(EXAMPLE / "run.py"), "--model",
                          str(pte), "--library", str(lib)], capture_output=True, text=True,
                         timeout=300, env={**os.environ,
                                           "PYTHONPATH": str(Path(ROOT) / "python")})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "max abs error" in res.stdout
