"""Shared test helpers: ``refuses``, the check behind every bad-input case.

A bad-input case is ``refuses(call, error, *words)``: calling ``call()`` must raise ``error``
(a ``ValueError``/``TypeError`` subclass, say), from a line inside mlmlib itself (not from deep
inside torch or transformers), with a message that names the problem: every one of ``words``
appears in it (case-insensitive). The bad-input suites are the tests named ``test_bad_input*``:
``pytest -k bad_input`` runs them all.
"""

from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parent.parent / "mlmlib"


def _refuses(call, error, *words, inside_mlmlib=True):
    with pytest.raises(error) as info:
        call()
    message = str(info.value).lower()
    missing = [w for w in words if w.lower() not in message]
    assert not missing, f"{type(info.value).__name__}({message!r}) does not name {missing}"
    if inside_mlmlib:
        raised_at = Path(str(info.traceback[-1].path)).resolve()
        assert LIB in raised_at.parents, f"raised inside {raised_at}, not by mlmlib's own check"
    return info.value


@pytest.fixture
def refuses():
    """``refuses(call, error, *words)``: see the module docstring."""
    return _refuses
