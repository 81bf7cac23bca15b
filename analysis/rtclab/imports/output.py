"""What every import shares: the new run directory it writes into, and the digest of the file it came from."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256(path: Path) -> str:
    """The imported file's SHA-256 (hex), read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def prepare_out(out: Path, error: type[Exception]) -> None:
    """Makes `out` (a new or empty directory); raises `error` naming it when it holds anything."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise error(f"{out} exists and is not an empty directory: choose another --out")
    out.mkdir(parents=True, exist_ok=True)
