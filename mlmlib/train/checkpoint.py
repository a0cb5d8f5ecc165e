"""mlmlib.train.checkpoint - save and restore a run, in files a crash never leaves damaged.

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

:func:`save_run` and :func:`restore_run` put a whole run into a checkpoint and back: the model,
the optimizer, the scheduler, the step, the history, the training losses since the last
evaluation, every random state (the data's generator, each process's dropout stream), the
model's config and kind, the recipe, the data's checksum, and what decides the last bits of
every float (the kind of device, the number of threads). A run resumed from any checkpoint,
on any schedule of checkpoints and evaluations, ends with exactly the weights and the history
of a run that was never stopped (the measured tokens per second aside), on the same kind of
device with the same number of threads; with others it warns. Resuming with another recipe or
other data is refused, naming every difference (``allow_changes`` continues with the new
ones); the run options (:class:`~mlmlib.train.config.RunOptions`) are free. A checkpoint
written before the settings were split into a recipe and run options is refused in one line,
which says how to read its weights.

Does not: decide when to save (:meth:`~mlmlib.train.trainer.Trainer.fit` does), or train.

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
import json
import os
import warnings
from dataclasses import asdict
from pathlib import Path

import torch
import torch.distributed as dist

from mlmlib.train.setup import schedule

__all__ = ["CheckpointError", "checkpoints_in", "prepare_out_dir", "read_checkpoint",
           "restore_run", "resume_run", "save_history", "save_run",
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


def read_checkpoint(path) -> dict:
    """The state saved in ``path``, after checking it is whole; else :class:`CheckpointError`."""
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a checkpoint file's path (str or Path), got {path!r}")
    path = Path(path)
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
        raise CheckpointError(f"{path} is not an mlmlib checkpoint (or its header is damaged)")
    expected = data[len(MAGIC) + 7:header_end - 1].decode("ascii", errors="replace")
    payload = data[header_end:]
    if hashlib.sha256(payload).hexdigest() != expected:
        raise CheckpointError(f"checkpoint {path} is damaged: its checksum does not match its "
                              "contents (corrupt or truncated)")
    try:
        state = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
    except Exception as err:  # whole but unreadable: saved by another torch, say
        raise CheckpointError(f"checkpoint {path} cannot be read ({type(err).__name__}: {err})"
                              ) from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path} holds a {type(state).__name__}, not a checkpoint")
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


# ---------------------------------------------------------------------- a run's state


def _machine(trainer) -> dict:
    """What decides the last bits of every float: the kind of device and the threads."""
    return {"device": trainer.device.type, "threads": torch.get_num_threads()}


def _dropout_states(trainer) -> list[dict]:
    """Every process's dropout stream (gathered from all of them under torchrun)."""
    if not trainer.distributed:
        return [trainer.dropout_rng]
    states = [None] * trainer.world_size
    dist.all_gather_object(states, trainer.dropout_rng)
    return states


def save_history(trainer) -> Path | None:
    """Write ``history.json`` into the run's folder (the first process only), atomically."""
    if trainer.rank != 0 or trainer.run.out_dir is None:
        return None
    return write_text(trainer.run.out_dir / "history.json", json.dumps(trainer.history, indent=1))


def save_run(trainer) -> Path | None:
    """Write ``step-NNNNNNN.pt`` (the first process only), keep the newest few, update the
    history; the path written."""
    dropout = _dropout_states(trainer)  # every process takes part in the gathering
    if trainer.rank != 0 or trainer.run.out_dir is None:
        return None
    state = {
        "step": trainer.step,
        "model": trainer.model.state_dict(),
        "optimizer": trainer.optimizer.state_dict(),
        "scheduler": trainer.scheduler.state_dict(),
        "history": trainer.history,
        "pending_losses": trainer.pending,
        "seen_tokens": trainer.seen_tokens,
        "rng": {"dropout": dropout, "data": trainer.data_rng.get_state()},
        "model_kind": type(trainer.model).__name__,
        "model_config": asdict(trainer.model.config),
        "recipe": asdict(trainer.recipe),
        "data": trainer.data_fingerprint,
        "machine": _machine(trainer),
    }
    final = write_checkpoint(trainer.run.out_dir / f"step-{trainer.step:07d}.pt", state)
    for old in trainer.checkpoints()[: -trainer.run.keep_checkpoints]:
        old.unlink()
    save_history(trainer)
    return final


def resume_run(trainer, found: list[Path]) -> None:
    """Restore the newest of ``found``; if it is damaged, say whether the one before is whole."""
    try:
        state = read_checkpoint(found[-1])
    except CheckpointError as err:
        if len(found) < 2:
            raise
        try:
            read_checkpoint(found[-2])
            hint = (f"the previous checkpoint {found[-2]} is whole: delete {found[-1].name} "
                    "to resume from it")
        except CheckpointError:
            hint = f"the previous checkpoint {found[-2]} is damaged too"
        raise CheckpointError(f"{err}; {hint}") from None
    restore_run(trainer, found[-1], state)


def _differences(trainer, state: dict) -> list[str]:
    """What of the recipe and the data differs from the checkpoint's."""
    saved, now = state["recipe"], asdict(trainer.recipe)
    diffs = [f"{k} (checkpoint {saved.get(k)!r}, now {v!r})" for k, v in now.items()
             if saved.get(k) != v]
    if state["data"] != trainer.data_fingerprint:
        diffs.append("the data (training or evaluation rows, or the vocabulary)")
    return diffs


def _check_fits(trainer, path: Path, state: dict) -> list[str]:
    """Refuse a checkpoint of another kind, age, model or (unless allowed) recipe or data; the
    differences allowed."""
    if "train_config" in state and "recipe" not in state:
        raise CheckpointError(
            f"checkpoint {path} was written by an older mlmlib, before a run's settings were "
            "split into a Recipe and RunOptions, and cannot be resumed; its weights still "
            "load: mlmlib.train.read_checkpoint(path)['model']")
    needed = {"step", "model", "optimizer", "scheduler", "history", "pending_losses",
              "seen_tokens", "rng", "model_kind", "model_config", "recipe", "data"}
    if needed - set(state):
        raise CheckpointError(f"checkpoint {path} lacks {sorted(needed - set(state))}")
    if not isinstance(state["model_config"], dict) or not isinstance(state["recipe"], dict):
        raise CheckpointError(f"checkpoint {path} is not one of mlmlib's: its configs are not "
                              "tables of settings")
    kind = type(trainer.model).__name__
    if state["model_kind"] != kind:
        raise CheckpointError(f"checkpoint {path} holds a {state['model_kind']}, not a {kind}")
    now = asdict(trainer.model.config)
    if state["model_config"] != now:
        other = [k for k, v in now.items() if state["model_config"].get(k) != v]
        raise CheckpointError(f"checkpoint {path} was made for another model shape "
                              f"(differs in {', '.join(other)})")
    diffs = _differences(trainer, state)
    if diffs and not trainer.run.allow_changes:
        raise CheckpointError(
            f"checkpoint {path} belongs to a run with other settings: {'; '.join(diffs)}. "
            "Resume with the same settings, or pass allow_changes=True (--allow-changes) to "
            "continue with the new ones")
    return diffs


def _warn_if_other_machine(trainer, path: Path, saved: dict) -> None:
    now = _machine(trainer)
    if saved == now:
        return
    warnings.warn(
        f"checkpoint {path} was written on {saved['device']} with {saved['threads']} "
        f"thread(s); this run uses {now['device']} with {now['threads']}. Training goes on, "
        "but its floats will differ from an uninterrupted run's in the last bits (set "
        f"OMP_NUM_THREADS={saved['threads']} and the same device for a bit-identical resume)",
        RuntimeWarning, stacklevel=4)


def restore_run(trainer, path, state: dict) -> None:
    """Put the run saved in ``state`` (read from ``path``) into ``trainer``."""
    path = Path(path)
    diffs = _check_fits(trainer, path, state)
    try:
        trainer.model.load_state_dict(state["model"])
        trainer.optimizer.load_state_dict(state["optimizer"])
        trainer.scheduler.load_state_dict(state["scheduler"])
    except (RuntimeError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"checkpoint {path} does not fit this model: "
                              f"{str(err).splitlines()[0]}") from None
    if diffs:  # the new learning rate, decay and schedule from here on
        recipe = trainer.recipe
        factor = schedule(recipe)(state["step"])
        trainer.scheduler.base_lrs = [recipe.lr] * len(trainer.optimizer.param_groups)
        for group, decay in zip(trainer.optimizer.param_groups, (recipe.weight_decay, 0.0),
                                strict=True):
            group.update(initial_lr=recipe.lr, lr=recipe.lr * factor, weight_decay=decay)
    _warn_if_other_machine(trainer, path, state.get("machine", _machine(trainer)))
    trainer.step = state["step"]
    trainer.history = state["history"]
    trainer.pending = list(state["pending_losses"])
    trainer.seen_tokens = state["seen_tokens"]
    trainer.data_rng.set_state(state["rng"]["data"])
    streams = state["rng"]["dropout"]
    mine = dict(streams[trainer.rank] if trainer.rank < len(streams) else streams[0])
    if trainer.device.type != "cuda" or mine.get("cuda") is None:  # a CPU run, or a GPU
        mine["cuda"] = trainer.dropout_rng["cuda"]  # checkpoint resumed on another device
    trainer.dropout_rng = mine
