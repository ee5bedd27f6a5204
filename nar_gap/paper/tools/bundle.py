"""The offline bundle: nar_gap for a GPU node without internet (make_bundle.sh).

A cluster's GPU node often has no internet, and its Python comes with the
site's CUDA JAX, Flax, Optax, NumPy, SciPy, matplotlib and scikit-learn,
sometimes newer than our lock. nar_gap needs little beyond those once dm-clrs
is loaded without TensorFlow (:mod:`nar_gap.tasks._clrs`): dm-clrs itself and
a few small pure-Python packages. So a machine with internet builds a folder
(at most 64 MiB, to fit the usual quota and transfer) holding:

- ``wheels/``: nar_gap's own wheel, dm-clrs and the helpers
  (:data:`HELPER_DISTRIBUTIONS`), each at the lock's version and each a
  ``py3-none-any`` wheel, so the node's Python version and platform do not
  matter. Never TensorFlow, Haiku, JAX or CUDA (:data:`FORBIDDEN_NAMES`): the
  site brings its own JAX, and the other three are what the light load avoids;
- ``project.tar.gz``: the committed tree (``git archive HEAD``: notebooks,
  results, docs, scripts);
- ``install.sh`` and ``README.txt`` (from ``scripts/bundle/``): installing
  needs no index, keeps the site's versions of the helpers, and ends with
  ``python -m nar_gap info``, whose backend self-check says in one line
  whether the site's JAX can be trusted;
- ``MANIFEST.json``: every file's size and sha256, the versions, the commit.

This module imports nothing from nar_gap and nothing outside the standard
library: ``make_bundle.sh`` runs it as a script with any Python >= 3.10 that
has pip, before nar_gap or its dependencies are installed anywhere.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

#: The bundle's ceiling: what a user can carry to the node in one go.
LIMIT_BYTES = 64 * 1024 * 1024

#: What the node's Python must already have (the site's own builds, CUDA JAX
#: included); the bundle never brings them. Their lock versions go into the
#: manifest as the versions the bundle was tested with.
SITE_DISTRIBUTIONS: tuple[str, ...] = (
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "numpy",
    "scipy",
    "matplotlib",
    "scikit-learn",
)

#: Installed on the node whatever is there already (``--force-reinstall``).
CORE_DISTRIBUTIONS: tuple[str, ...] = ("nar-gap", "dm-clrs")

#: What the light run imports beyond the site list and what the site list's
#: own requirements bring (found by running ``nar-gap check-install`` in a venv
#: holding only :data:`SITE_DISTRIBUTIONS`, and closed under the helpers'
#: requirements: ``tests/paper/tools/test_bundle.py`` checks both):
#: attrs, absl-py and chex for dm-clrs's probing and samplers, toolz and
#: typing-extensions for chex, tqdm for the training loop. absl-py and
#: typing-extensions come with Optax and Flax today; they are here because
#: dm-clrs and chex need them directly. Installed only where absent.
HELPER_DISTRIBUTIONS: tuple[str, ...] = (
    "absl-py",
    "attrs",
    "chex",
    "toolz",
    "tqdm",
    "typing-extensions",
)

#: Never in a bundle: the site brings its own JAX (a CUDA build we must not
#: shadow), and TensorFlow and Haiku are what the light dm-clrs load avoids.
FORBIDDEN_NAMES: tuple[str, ...] = (
    "tensorflow",
    "tensorflow-datasets",
    "tfds-nightly",
    "dm-haiku",
    "jax",
    "jaxlib",
)
FORBIDDEN_PREFIXES: tuple[str, ...] = (
    "tensorflow-",
    "tf-",
    "jax-cuda",
    "jax-rocm",
    "nvidia-",
)

MANIFEST = "MANIFEST.json"
PROJECT_ARCHIVE = "project.tar.gz"
PROJECT_PREFIX = "nar-gap/"  # the folder project.tar.gz unpacks into
TEMPLATES = Path("scripts") / "bundle"  # install.sh and README.txt, in the checkout
# What the nar_gap wheel is built from (pyproject.toml reads README.md).
PACKAGE_SOURCES: tuple[str, ...] = ("pyproject.toml", "README.md", "nar_gap")


class BundleError(RuntimeError):
    """The bundle cannot be built; the message is the one line to print."""


@dataclasses.dataclass(frozen=True)
class WheelName:
    """The parts of a wheel's file name (PEP 427), the distribution canonical."""

    distribution: str
    version: str
    python: str
    abi: str
    platform: str

    @property
    def pure(self) -> bool:
        """``py3-none-any``: runs on any Python 3 of any platform."""
        return (
            self.abi == "none"
            and self.platform == "any"
            and "py3" in self.python.split(".")
        )


def canonical_name(name: str) -> str:
    """PEP 503's form of a distribution name, as pip compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(text: str) -> dict[str, str]:
    """``{canonical name: version}`` of a lock file's ``name==version`` lines."""
    pins = {}
    for line in text.splitlines():
        requirement = line.split("#", 1)[0].strip()
        name, sep, version = requirement.partition("==")
        if sep:
            pins[canonical_name(name)] = version.strip()
    return pins


def forbidden(names: Iterable[str]) -> list[str]:
    """The names, in order, that must never be in a bundle."""
    return [
        name
        for name in names
        if canonical_name(name) in FORBIDDEN_NAMES
        or canonical_name(name).startswith(FORBIDDEN_PREFIXES)
    ]


def _refuse_forbidden(names: Iterable[str]) -> None:
    found = forbidden(names)
    if found:
        raise BundleError(
            f"refusing to bundle {', '.join(found)}: the node brings its own JAX, "
            "and nar_gap needs neither TensorFlow nor Haiku"
        )


def planned_downloads(lock: Mapping[str, str]) -> list[str]:
    """``name==version`` of every wheel to download: dm-clrs and the helpers.

    Raises:
        BundleError: a distribution is forbidden, or the lock does not pin it.
    """
    names = [n for n in CORE_DISTRIBUTIONS if n != "nar-gap"] + list(
        HELPER_DISTRIBUTIONS
    )
    _refuse_forbidden(names)
    missing = [name for name in names if canonical_name(name) not in lock]
    if missing:
        raise BundleError(f"requirements/lock.txt pins no {', '.join(missing)}")
    return [f"{name}=={lock[canonical_name(name)]}" for name in names]


def parse_wheel_name(filename: str) -> WheelName:
    """Split ``dist-version(-build)?-python-abi-platform.whl`` into its parts."""
    parts = filename.removesuffix(".whl").split("-")
    if not filename.endswith(".whl") or len(parts) not in (5, 6):
        raise BundleError(f"{filename} is not a wheel's file name")
    return WheelName(canonical_name(parts[0]), parts[1], *parts[-3:])


def check_wheels(filenames: Iterable[str], lock: Mapping[str, str]) -> None:
    """Refuse, in one line, a wheel that is forbidden, not pure, or not the lock's.

    nar_gap's own wheel is built from the checkout, so only its purity is checked.
    """
    wheels = [parse_wheel_name(name) for name in sorted(filenames)]
    _refuse_forbidden(w.distribution for w in wheels)
    impure = [
        f"{w.distribution} ({w.python}-{w.abi}-{w.platform})"
        for w in wheels
        if not w.pure
    ]
    if impure:
        raise BundleError(
            f"not pure-Python (py3-none-any): {', '.join(impure)}; the node's "
            "Python and platform may differ from this machine's"
        )
    off = [
        f"{w.distribution} {w.version} (lock: {lock.get(w.distribution)})"
        for w in wheels
        if w.distribution != "nar-gap" and lock.get(w.distribution) != w.version
    ]
    if off:
        raise BundleError(f"not the lock's version: {', '.join(off)}")


def sha256(path: Path) -> str:
    """The file's sha256, read in chunks (a wheel or archive of many MiB)."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_records(folder: Path) -> list[dict[str, Any]]:
    """``{"path", "size", "sha256"}`` of every file under ``folder`` but the manifest.

    Paths are relative, with ``/``, sorted, so the manifest of the same files
    is the same text.
    """
    records = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder).as_posix()
        if relative != MANIFEST:
            size = path.stat().st_size
            records.append({"path": relative, "size": size, "sha256": sha256(path)})
    return records


def make_manifest(
    records: Sequence[Mapping[str, Any]],
    *,
    commit: str,
    wheel_matches_commit: bool,
    lock: Mapping[str, str],
) -> dict[str, Any]:
    """The manifest: the files, the commit and the versions (bundled, and site tested).

    ``wheel_matches_commit`` False says that the nar_gap wheel, built from the
    checkout, holds uncommitted changes that ``project.tar.gz`` (``HEAD``) does not.
    """
    wheels = [
        parse_wheel_name(r["path"].removeprefix("wheels/"))
        for r in records
        if r["path"].startswith("wheels/")
    ]
    return {
        "commit": commit,
        "wheel_matches_commit": wheel_matches_commit,
        "bundled": {w.distribution: w.version for w in wheels},
        "site_tested": {name: lock.get(name) for name in SITE_DISTRIBUTIONS},
        "helpers": list(HELPER_DISTRIBUTIONS),
        "total_bytes": sum(r["size"] for r in records),
        "limit_bytes": LIMIT_BYTES,
        "files": [dict(r) for r in records],
    }


def check_size(sizes: Mapping[str, int], limit: int = LIMIT_BYTES) -> int:
    """The total of ``sizes`` (path -> bytes); raises when it is over ``limit``."""
    total = sum(sizes.values())
    if total > limit:
        largest = max(sizes, key=lambda path: sizes[path])
        raise BundleError(
            f"the bundle would be {total / 2**20:.1f} MiB, over the "
            f"{limit / 2**20:.0f} MiB limit (largest: {largest}, "
            f"{sizes[largest] / 2**20:.1f} MiB); nothing written"
        )
    return total


def fill_template(text: str, values: Mapping[str, str]) -> str:
    """Replace each ``@NAME@`` by ``values["NAME"]``; raises if one is left over."""
    for name, value in values.items():
        text = text.replace(f"@{name}@", value)
    left = sorted(set(re.findall(r"@([A-Z_]+)@", text)))
    if left:
        raise BundleError(f"template placeholders without a value: {left}")
    return text


def wheel_requires_python(path: Path) -> str:
    """A wheel's ``Requires-Python`` (empty if none), read from its METADATA."""
    with zipfile.ZipFile(path) as wheel:
        name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        for line in wheel.read(name).decode("utf-8").splitlines():
            if line.startswith("Requires-Python:"):
                return line.partition(":")[2].strip()
            if not line:  # the headers end at the first blank line
                break
    return ""


# --- the steps that touch files, git and pip -----------------------------------


def _run(command: Sequence[str], cwd: Path | None = None) -> str:
    """Run ``command``; on failure, raise with the last line it printed."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
        raise BundleError(f"`{' '.join(command[:4])} ...` failed: {lines[-1]}")
    return done.stdout


def _commit(root: Path) -> tuple[str, bool]:
    """HEAD's sha, and whether the wheel's sources (new files too) equal HEAD's."""
    commit = _run(["git", "-C", str(root), "rev-parse", "HEAD"]).strip()
    status = _run(
        ["git", "-C", str(root), "status", "--porcelain", "--", *PACKAGE_SOURCES]
    )
    return commit, not status.strip()


def _package_sources(root: Path, dest: Path) -> None:
    """Copy what the nar_gap wheel is built from: tracked and new, never ignored.

    A copy, not ``pip wheel .``: setuptools reuses ``build/lib``, where a
    module deleted from the checkout would live on in the wheel.
    """
    listed = _run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others"]
        + ["--exclude-standard", "--", *PACKAGE_SOURCES]
    )
    for relative in filter(None, listed.split("\0")):
        source = root / relative
        if source.is_file():  # a tracked file deleted in the checkout is not
            (dest / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / relative)


def _fetch_wheels(python: str, root: Path, wheels: Path, lock: dict) -> None:
    """Build nar_gap's wheel from the checkout; download dm-clrs and the helpers."""
    pip = [python, "-m", "pip"]
    with tempfile.TemporaryDirectory() as sources:
        _package_sources(root, Path(sources))
        _run([*pip, "wheel", "-q", "--no-deps", "-w", str(wheels), sources])
    _run(
        [*pip, "download", "-q", "--no-deps", "--only-binary=:all:"]
        + ["-d", str(wheels), *planned_downloads(lock)]
    )
    check_wheels([p.name for p in wheels.glob("*.whl")], lock)


def _indented(items: Iterable[str], indent: int = 19) -> str:
    """A comma-separated list wrapped to README.txt's 76 columns, indented."""
    return textwrap.fill(
        ", ".join(items),
        width=76,
        initial_indent=" " * indent,
        subsequent_indent=" " * indent,
        break_on_hyphens=False,
    )


def _templates(root: Path, folder: Path, commit: str, lock: Mapping[str, str]) -> None:
    """install.sh as it is, README.txt with this bundle's versions filled in."""
    shutil.copy2(root / TEMPLATES / "install.sh", folder / "install.sh")
    (folder / "install.sh").chmod(0o755)
    wheels = {
        parse_wheel_name(p.name): p for p in sorted((folder / "wheels").glob("*"))
    }
    version = {w.distribution: w.version for w in wheels}
    nar_gap = next(p for w, p in wheels.items() if w.distribution == "nar-gap")
    values = {
        "VERSION": version["nar-gap"],
        "COMMIT": commit,
        "DMCLRS": version["dm-clrs"],
        "HELPERS": _indented(
            f"{name} {version[canonical_name(name)]}" for name in HELPER_DISTRIBUTIONS
        ),
        "SITE": _indented([f"{n} {lock.get(n)}" for n in SITE_DISTRIBUTIONS], 4),
        "REQUIRES_PYTHON": wheel_requires_python(nar_gap) or "any",
    }
    text = (root / TEMPLATES / "README.txt").read_text(encoding="utf-8")
    (folder / "README.txt").write_text(fill_template(text, values), encoding="utf-8")


def build(
    out_dir: Path, root: Path, python: str, limit: int = LIMIT_BYTES
) -> dict[str, Any]:
    """Build the bundle in a scratch folder beside ``out_dir``, then move it there.

    Nothing is left at ``out_dir`` when a step fails or the size is over ``limit``.

    Returns:
        The manifest written to ``out_dir / MANIFEST.json``.
    """
    if out_dir.exists() and any(out_dir.iterdir()):
        raise BundleError(f"{out_dir} exists and is not empty; choose a new folder")
    out_dir = out_dir.absolute()  # git runs in the checkout, not here
    lock = read_lock((root / "requirements" / "lock.txt").read_text())
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    scratch.chmod(0o755)  # mkdtemp's 0700 would hide it from the node's group
    try:
        (scratch / "wheels").mkdir()
        _fetch_wheels(python, root, scratch / "wheels", lock)
        _run(
            ["git", "-C", str(root), "archive", "--format=tar.gz"]
            + [f"--prefix={PROJECT_PREFIX}", "-o", str(scratch / PROJECT_ARCHIVE)]
            + ["HEAD"]
        )
        commit, clean = _commit(root)
        _templates(root, scratch, commit, lock)
        manifest = make_manifest(
            file_records(scratch), commit=commit, wheel_matches_commit=clean, lock=lock
        )
        text = json.dumps(manifest, indent=2) + "\n"
        (scratch / MANIFEST).write_text(text, encoding="utf-8")
        sizes = {r["path"]: r["size"] for r in manifest["files"]}
        check_size({**sizes, MANIFEST: len(text.encode())}, limit)
        if out_dir.exists():
            out_dir.rmdir()  # empty, checked above
        scratch.rename(out_dir)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return manifest


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/make_bundle.sh",
        description="Build a folder that installs nar_gap on a node without "
        "internet whose Python has the site's JAX (see docs/notebooks.md).",
    )
    parser.add_argument("out_dir", type=Path, help="the folder to create")
    parser.add_argument(
        "--python",
        default=os.environ.get("PYTHON") or sys.executable,
        help="the Python whose pip builds and downloads (default: $PYTHON, "
        "else this one)",
    )
    parser.add_argument(
        "--limit-mib",
        type=float,
        default=LIMIT_BYTES / 2**20,
        help="refuse a bundle over this size (at most, and by default, 64)",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parents[3],
        help=argparse.SUPPRESS,  # the checkout; this file's is the default
    )
    args = parser.parse_args(argv)
    if not 0 < args.limit_mib <= LIMIT_BYTES / 2**20:
        parser.error(f"--limit-mib must be in (0, 64], got {args.limit_mib}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """``scripts/make_bundle.sh OUT_DIR``: 0 when built, 1 with one line when not."""
    args = _parse(argv)
    start = time.perf_counter()
    print(f"nar_gap: building the offline bundle in {args.out_dir}")
    try:
        manifest = build(
            args.out_dir, args.root, args.python, int(args.limit_mib * 2**20)
        )
    except BundleError as error:
        print(f"nar_gap: bundle failed: {error}", file=sys.stderr)
        return 1
    bundled = ", ".join(f"{n} {v}" for n, v in manifest["bundled"].items())
    print(f"  wheels: {bundled}")
    if not manifest["wheel_matches_commit"]:
        print(
            "  warning: uncommitted changes in nar_gap/: the wheel holds them, "
            f"{PROJECT_ARCHIVE} (HEAD {manifest['commit'][:12]}) does not"
        )
    files = [p for p in args.out_dir.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    print(
        f"nar_gap: wrote {args.out_dir} ({total / 2**20:.1f} MiB in {len(files)} "
        "files, "
        f"{time.perf_counter() - start:.0f} s); on the node: bash install.sh"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
