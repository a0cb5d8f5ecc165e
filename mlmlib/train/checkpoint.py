"""mlmlib.train.checkpoint - write files so that a crash never leaves a damaged one, and check them.

Does: :func:`write_checkpoint` stores a dict of tensors and plain values (``torch.save``) behind
a one-line header holding the SHA-256 checksum of the bytes that follow; it writes a temporary
file, flushes it to disk (``fsync``), renames it over the final name and flushes the folder, so
a reader sees the old file or the new one, whole. :func:`read_checkpoint` checks the header and
the checksum before it unpickles anything (and then only with ``weights_only=True``), so a
truncated file or a single flipped bit is refused with :class:`CheckpointError`.
:func:`write_text` writes ``history.json`` the same durable way. :func:`prepare_out_dir`
checks a run's output folder before training: one that is a file, cannot be written, or
already holds a run (unless resuming it) is refused, and resuming a folder with no checkpoint
is an error.

Does not: decide what goes into a checkpoint or when (:mod:`mlmlib.train.trainer` does).

>>> import tempfile, torch
>>> from pathlib import Path
>>> path = write_checkpoint(Path(tempfile.mkdtemp()) / "step-1.pt", {"w": torch.ones(2)})
>>> read_checkpoint(path)["w"]
tensor([1., 1.])
>>> damaged = bytearray(path.read_bytes()); damaged[-40] ^= 1; _ = path.write_bytes(damaged)
>>> read_checkpoint(path)
Traceback (most recent call last):
...
mlmlib.train.checkpoint.CheckpointError: checkpoint ... is damaged: its checksum does not match ...
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import torch

__all__ = ["CheckpointError", "checkpoints_in", "prepare_out_dir", "read_checkpoint",
           "write_checkpoint", "write_text"]

#: The first line of every checkpoint file; the second holds the checksum of the rest.
MAGIC = b"mlmlib checkpoint 2\n"


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: damaged, truncated, not ours, or for another run."""


def _write_bytes(path: Path, data: bytes) -> Path:
    """``data`` into ``path`` atomically and durably: a temporary file, fsync, rename, fsync."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)  # atomic: a reader sees the old file or the new one, whole
    if hasattr(os, "O_DIRECTORY"):  # make the rename itself survive a power cut (POSIX)
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    return path


def write_text(path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically and durably."""
    return _write_bytes(Path(path), text.encode("utf-8"))


def write_checkpoint(path, state: dict) -> Path:
    """Save ``state`` with its checksum, atomically; the path written."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    payload = buffer.getvalue()
    header = MAGIC + b"sha256 " + hashlib.sha256(payload).hexdigest().encode() + b"\n"
    return _write_bytes(Path(path), header + payload)


def read_checkpoint(path, previous=None) -> dict:
    """The state saved in ``path``, after checking it is whole; else :class:`CheckpointError`.

    ``previous``, if given, is named in the error as the checkpoint to fall back on.
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a checkpoint file's path (str or Path), got {path!r}")
    path = Path(path)
    hint = (f"; the previous checkpoint {previous} is untouched: delete {path.name} to resume "
            "from it") if previous else ""
    if not path.is_file():
        raise CheckpointError(f"no checkpoint file at {path}")
    data = path.read_bytes()
    if data.startswith(b"PK"):  # a plain torch.save zip: what mlmlib wrote before checksums
        raise CheckpointError(
            f"checkpoint {path} was written by an older mlmlib, without a checksum, and cannot "
            "be resumed; its weights are still readable: torch.load(path, weights_only=True)"
            "['model']")
    header_end = len(MAGIC) + len(b"sha256 ") + 64 + 1
    if not data.startswith(MAGIC) or len(data) < header_end \
            or data[len(MAGIC):len(MAGIC) + 7] != b"sha256 ":
        raise CheckpointError(f"{path} is not an mlmlib checkpoint (or its header is damaged)"
                              f"{hint}")
    expected = data[len(MAGIC) + 7:header_end - 1].decode("ascii", errors="replace")
    payload = data[header_end:]
    if hashlib.sha256(payload).hexdigest() != expected:
        raise CheckpointError(f"checkpoint {path} is damaged: its checksum does not match its "
                              f"contents (corrupt or truncated){hint}")
    try:
        state = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
    except Exception as err:  # whole but unreadable: saved by another torch, say
        raise CheckpointError(f"checkpoint {path} cannot be read ({type(err).__name__}: {err})"
                              f"{hint}") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path} holds a {type(state).__name__}, not a checkpoint{hint}")
    return state


def checkpoints_in(folder) -> list[Path]:
    """The checkpoint files (``step-NNNNNNN.pt``) in ``folder``, oldest first."""
    if folder is None or not Path(folder).is_dir():
        return []
    return sorted(Path(folder).glob("step-*.pt"))


def prepare_out_dir(out: Path | None, resume: bool, write: bool = True) -> list[Path]:
    """Refuse an output folder that would lose work or fail late; the checkpoints to resume.

    ``write``: create the folder, check it can be written and clear temporary files left by a
    killed run (the process that writes; under torchrun, rank 0).
    """
    if out is None:
        return []
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir {out} is a file, not a folder: choose another path")
    found = checkpoints_in(out)
    history = out / "history.json"
    if resume and not found:
        extra = (" (it has a history.json: the run was made without checkpoints, "
                 "checkpoint_every=0, or they were deleted)") if history.exists() else ""
        raise CheckpointError(f"nothing to resume: {out} holds no checkpoint (step-*.pt){extra}")
    if not resume and (found or history.exists()):
        raise FileExistsError(f"{out} already holds a training run; resume it (resume=True, "
                              "--resume) or choose another folder")
    if write:
        try:
            out.mkdir(parents=True, exist_ok=True)
            probe = out / ".mlmlib-write-test"
            probe.write_bytes(b"")
            probe.unlink()
            for stale in out.glob(".*.tmp"):  # left by a run killed while writing
                stale.unlink()
        except OSError as err:
            raise ValueError(f"cannot write to out_dir {out}: {err.strerror}") from None
        if history.is_dir():
            raise ValueError(f"{history} is a folder: history.json cannot be written there")
    return found
