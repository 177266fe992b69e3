"""Images of the container backends (sandbox/images.py): found offline, or built from a Dockerfile
with the network off, cached by the hash of everything the build reads; on podman and docker."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from container_helpers import (
    EXTRA_DOCKERFILE,
    EXTRA_IMAGE,
    RUNTIMES,
    container_backend_or_skip,
    started,
    workspace_dir,
)

from reliabench.errors import SandboxError
from reliabench.sandbox.containers import DEFAULT_TEST_IMAGE, ContainerBackend
from reliabench.sandbox.environment import EnvironmentSpec
from reliabench.sandbox.images import (
    BUILD_TAG_PREFIX,
    CliResult,
    build_tag,
    context_hash,
    inspect_image,
    output_tail,
)


class _FakeCli:
    """A runtime whose ``image inspect`` knows a fixed set of images."""

    name = "fake"

    def __init__(self, images: Mapping[str, str]) -> None:
        self.images = dict(images)
        self.calls: list[list[str]] = []

    def __call__(self, args: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None) -> CliResult:
        self.calls.append(list(args))
        ref = args[-1]
        if args[:2] == ["image", "inspect"] and ref in self.images:
            if "--format" in args:
                return CliResult(0, self.images[ref] + "\n", "")
            return CliResult(0, f'[{{"Id": "{self.images[ref]}", "Config": {{"Env": ["A=1", "B=x=y"], '
                                f'"Labels": {{"k": "v"}}}}}}]', "")
        return CliResult(125, "", f"Error: {ref}: image not known\n")

    def build_args(self, *, dockerfile: Path, context: Path, tag: str,
                   labels: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        return ["build", "-t", tag, str(context)], {}


def _context(tmp_path: Path, base: str = "base:1") -> Path:
    ctx = tmp_path / "My Env"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text(f"FROM {base} AS build\nFROM build\nCOPY app.py /app.py\n")
    (ctx / "app.py").write_text("print(1)\n")
    return ctx / "Dockerfile"


def test_context_hash_covers_files_modes_links_and_bases(tmp_path: Path) -> None:
    dockerfile = _context(tmp_path)
    cli = _FakeCli({"base:1": "sha256:aaa"})
    first = context_hash(cli, dockerfile)
    assert context_hash(cli, dockerfile) == first
    (dockerfile.parent / "app.py").write_text("print(2)\n")
    second = context_hash(cli, dockerfile)
    assert second != first
    os.chmod(dockerfile.parent / "app.py", 0o755)
    third = context_hash(cli, dockerfile)
    assert third != second
    (dockerfile.parent / "link").symlink_to("/etc/passwd")  # hashed as a link target, never read
    fourth = context_hash(cli, dockerfile)
    assert fourth != third
    cli.images["base:1"] = "sha256:bbb"  # a re-imported base rebuilds what stands on it
    assert context_hash(cli, dockerfile) != fourth
    # the stage alias `build` is not a base image
    assert ["image", "inspect", "--format", "{{.Id}}", "build"] not in cli.calls


def test_build_tag_names_the_folder_and_the_hash(tmp_path: Path) -> None:
    assert build_tag(tmp_path / "My Env" / "Dockerfile", "ab" * 32) == f"{BUILD_TAG_PREFIX}/my-env:{'ab' * 8}"
    assert build_tag(Path("/x/.../Dockerfile"), "c" * 64).startswith(f"{BUILD_TAG_PREFIX}/context:")


def test_inspect_image_and_its_refusals() -> None:
    cli = _FakeCli({"img:1": "0123"})
    info = inspect_image(cli, "img:1")
    assert (info.ref.reference, info.ref.digest, info.env, dict(info.labels)) == (
        "img:1", "sha256:0123", (("A", "1"), ("B", "x=y")), {"k": "v"})
    with pytest.raises(SandboxError, match=r"^t.toml:2: image 'nope:1' is not in fake's local storage \(reliabench "
                                           r"never pulls: runs are offline\): load it first"):
        inspect_image(cli, "nope:1", source="t.toml:2")
    with pytest.raises(SandboxError, match="is not an image reference"):
        inspect_image(cli, "--all")
    assert output_tail("a\n\n b \nc\n", 2) == "b | c"


# ------------------------------------------------------------------------------------------
# on the runtimes
# ------------------------------------------------------------------------------------------


@pytest.fixture(params=RUNTIMES)
def backend(request: pytest.FixtureRequest) -> ContainerBackend:
    return container_backend_or_skip(request.param)


def _copy_extra(tmp_path: Path, marker: str) -> Path:
    ctx = tmp_path / "extra"
    shutil.copytree(EXTRA_DOCKERFILE.parent, ctx)
    (ctx / "marker.txt").write_text(marker)  # a context of its own: this test builds it
    return ctx / "Dockerfile"


def test_a_dockerfile_is_built_once_then_found(backend: ContainerBackend, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    dockerfile = _copy_extra(tmp_path, f"{backend.name} {time.time_ns()}")
    spec = EnvironmentSpec(dockerfile=dockerfile, source="suite/task.toml:3")
    assert backend.refuse(spec) is None
    first = backend.prepare(spec)
    assert first.image is not None and first.image.reference.startswith(f"{BUILD_TAG_PREFIX}/extra:")
    assert first.image.digest.startswith("sha256:")
    builds: list[str] = []
    real = backend._build_args

    def counting(**kw: object) -> tuple[list[str], dict[str, str]]:
        builds.append(str(kw["tag"]))
        return real(**kw)  # type: ignore[arg-type]

    monkeypatch.setattr(backend, "_build_args", counting)
    start = time.monotonic()
    again = backend.prepare(spec)
    assert again == first and builds == [] and time.monotonic() - start < 10  # found by its hash
    with workspace_dir() as ws, started(backend, ws, spec) as env:
        # the image's ENV reaches a command given no environment
        out = env.exec(["python3", "-c", "import extra_mod, os; print(extra_mod.VALUE, os.environ['RELIABENCH_EXTRA'])"])
        assert out.stdout == "42 1\n", out
    backend._call(["rmi", "-f", first.image.reference])


def test_the_set_up_built_the_extra_image(backend: ContainerBackend) -> None:
    assert backend.refuse(EnvironmentSpec(image=EXTRA_IMAGE)) is None


def test_a_failing_build_says_where_and_why(backend: ContainerBackend, tmp_path: Path) -> None:
    ctx = tmp_path / "failing"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text(f"FROM {DEFAULT_TEST_IMAGE}\nRUN echo rb-about-to-fail && exit 7\n")
    spec = EnvironmentSpec(dockerfile=ctx / "Dockerfile", source="suite/task.toml:5")
    with pytest.raises(SandboxError) as info:
        backend.prepare(spec)
    message = str(info.value)
    assert message.startswith(f"suite/task.toml:5: building {ctx / 'Dockerfile'} with {backend.name} failed")
    assert "rb-about-to-fail" in message and "\n" not in message


def test_a_build_has_no_network(backend: ContainerBackend, tmp_path: Path) -> None:
    ctx = tmp_path / "net"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text(
        f"FROM {DEFAULT_TEST_IMAGE}\nRUN python3 -c \"import socket; socket.create_connection(('10.0.2.2', 80), "
        "timeout=3)\"\n")
    with pytest.raises(SandboxError, match=r"Network is unreachable"):
        backend.prepare(EnvironmentSpec(dockerfile=ctx / "Dockerfile"))


def test_a_missing_base_is_never_pulled(backend: ContainerBackend, tmp_path: Path) -> None:
    ctx = tmp_path / "nobase"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text("FROM reliabench/no-such-base:1\nRUN true\n")
    with pytest.raises(SandboxError, match=r"the base image 'reliabench/no-such-base:1' is not in .* local storage "
                                           r"\(reliabench never pulls"):
        backend.prepare(EnvironmentSpec(dockerfile=ctx / "Dockerfile"))


def test_close_removes_the_anonymous_volumes_of_an_image(backend: ContainerBackend, tmp_path: Path) -> None:
    ctx = tmp_path / "volume"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text(f"FROM {DEFAULT_TEST_IMAGE}\nVOLUME /data\n")
    spec = EnvironmentSpec(dockerfile=ctx / "Dockerfile")
    prepared = backend.prepare(spec)
    assert prepared.image is not None
    try:
        with workspace_dir() as ws, started(backend, ws, spec) as env:
            mounts = backend._call(["inspect", "--format", "{{range .Mounts}}{{.Name}} {{end}}", env.container_id])
            volumes = mounts.stdout.split()
            assert len(volumes) == 1, mounts
            assert backend._call(["volume", "inspect", volumes[0]]).returncode == 0
        assert backend._call(["volume", "inspect", volumes[0]]).returncode != 0  # removed with the container
    finally:
        backend._call(["rmi", "-f", prepared.image.reference])
