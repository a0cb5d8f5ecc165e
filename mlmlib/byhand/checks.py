"""mlmlib.byhand.checks - the encoder chapter's checks: a model's own numbers, and verdicts.

Does: helpers that work on a model object (read through its attributes, never imported):
:func:`fill_biases` gives every bias, LayerNorm gain and shift and ``b_v`` random values, so
that a check of the forward pass sees every term; :func:`model_intermediates` runs the model
with forward hooks and returns what each layer computed; :func:`largest_differences` compares
that with a record of :func:`~mlmlib.byhand.forward.forward`; :func:`hf_logits` runs an
exported Hugging Face copy (when ``transformers`` is installed). And two that read the
chapter's ablation measurement: :func:`range_verdict` calls a variant worse or better than
the full model only when the two sets of seeds do not overlap, :func:`ablation_verdict`
asks that of each of the last evaluations, and :func:`still_falling` says whether a run's
curves had stopped falling when training ended.

Does not: compute the forward pass (:mod:`mlmlib.byhand.forward`) or train anything; it imports
torch (and ``transformers``) only inside the helpers that run a model.

>>> range_verdict([0.010, 0.012], [0.30, 0.35])
'worse'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mlmlib._checks import number, whole
from mlmlib.byhand.forward import _array, _ids, _keep

__all__ = ["ablation_verdict", "fill_biases", "hf_logits", "largest_differences",
           "model_intermediates", "range_verdict", "still_falling"]


def _is_model(model) -> None:
    if not (hasattr(model, "named_modules") and hasattr(model, "config")):
        raise TypeError(f"model must be a MiniBert, got {type(model).__name__}")


def fill_biases(model, seed: int, spread: float = 0.5) -> list[str]:
    """Give every bias, every LayerNorm gain and shift, and ``b_v`` random values, in place.

    A freshly built BERT has every bias and every LayerNorm shift at 0, every gain at 1 and
    ``b_v`` at 0, so a check of a forward pass against it cannot see whether those terms are
    added (or sliced) right. A trained model's are not zero; random ones make a check see every
    term. Biases and shifts are drawn from a normal with mean 0, gains with mean 1, both with
    standard deviation ``spread``, from ``seed``. Returns the names of the parameters filled.
    """
    _is_model(model)
    seed, spread = whole(seed, "seed", least=0), number(spread, "spread", 0, above=True)
    g = np.random.default_rng(seed)
    gains = {f"{name}.weight" for name, m in model.named_modules()
             if hasattr(m, "normalized_shape")}  # the LayerNorms' gamma
    filled = []
    for name, p in model.named_parameters():
        if name in gains or name.endswith(".bias") or name == "head_bias":
            values = p.detach().cpu().numpy()  # shares the parameter's memory (CPU)
            values[...] = (name in gains) + g.normal(0.0, spread, values.shape)
            filled.append(name)
    return filled


def model_intermediates(model, ids, keep=None) -> dict:
    """What ``model`` computes for one sentence, as float64 NumPy arrays, read with forward hooks.

    Returns ``"embeddings"`` (the embedding LayerNorm's output, ``(T, d)``), ``"block k"`` for
    each block (its output, ``(T, d)``), ``"attention k"`` (block ``k``'s weights,
    ``(heads, T, T)``) and ``"logits"`` (``(T, V)``): the names :func:`largest_differences`
    compares with a record of :func:`~mlmlib.byhand.forward.forward`.
    """
    import torch  # only here: the forward pass by hand never needs it

    _is_model(model)
    ids = _ids(ids, "ids", model.config.vocab_size)
    keep = _keep(keep, len(ids))
    seen = {}
    layers = {"embeddings": model.ln_embeddings,
              **{f"block {k}": b for k, b in enumerate(model.blocks)}}

    def hook(name):
        def keep_output(module, inputs, output):
            output = output[0] if isinstance(output, tuple) else output
            seen[name] = output[0].detach().double().cpu().numpy()
        return keep_output

    handles = [m.register_forward_hook(hook(name)) for name, m in layers.items()]
    try:
        with torch.no_grad():
            out = model(torch.tensor(ids)[None], return_attention=True,
                        attention_mask=torch.tensor(keep.astype(int))[None])
    finally:
        for handle in handles:
            handle.remove()
    for k, a in enumerate(out.attentions):
        seen[f"attention {k}"] = a[0].double().cpu().numpy()
    seen["logits"] = out.logits[0].double().cpu().numpy()
    return seen


def largest_differences(record: dict, theirs: dict) -> dict:
    """The largest ``|by hand - model|`` at each stage, in the order of the computation: a
    :func:`~mlmlib.byhand.forward.forward` record against :func:`model_intermediates`."""
    if not isinstance(record, dict) or "layers" not in record:
        raise TypeError("record must be the record forward() returns")
    ours = {"embeddings": record["embeddings"]}
    for k, layer in enumerate(record["layers"]):
        ours[f"attention {k}"] = np.stack([h["weights"] for h in layer["attention"]["heads"]])
        ours[f"block {k}"] = layer["out"]
    ours["logits"] = record["logits"]
    missing = [name for name in ours if name not in theirs]
    if missing:
        raise ValueError(f"theirs lacks {missing}: pass model_intermediates(model, ...)")
    return {name: float(np.abs(ours[name] - np.asarray(theirs[name])).max()) for name in ours}


def hf_logits(export, model, vocab, ids, keep=None) -> np.ndarray | None:
    """The scores ``(T, V)`` of ``model`` exported to Hugging Face and run by ``transformers``'
    ``BertForMaskedLM``, or ``None`` when ``transformers`` is not installed.

    ``export`` is :func:`mlmlib.hf.export_hf` (passed in, so that this module imports no
    other part of mlmlib); the copy is written to a new temporary folder and read back from
    it, with the progress bars off. Nothing is downloaded.
    """
    if not callable(export):
        raise TypeError("export must be mlmlib.hf.export_hf")
    try:
        import torch
        from transformers import BertForMaskedLM
        from transformers.utils import logging as hf_logging
    except ImportError:
        return None
    import os
    import tempfile

    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    ids = _ids(ids, "ids", model.config.vocab_size)
    keep = _keep(keep, len(ids)).astype(int)
    folder = export(model, vocab, os.path.join(tempfile.mkdtemp(), "tiny-bert"))
    hf_model = BertForMaskedLM.from_pretrained(folder, local_files_only=True).eval()
    with torch.no_grad():
        out = hf_model(input_ids=torch.tensor(ids)[None], attention_mask=torch.tensor(keep)[None])
    return out.logits[0].double().numpy()


# ----------------------------------------------------------------------------- the ablations

def range_verdict(full: Sequence[float], variant: Sequence[float]) -> str | None:
    """``"worse"`` when every seed of ``variant`` lies above every seed of ``full`` (a loss:
    higher is worse), ``"better"`` when every one lies below, ``None`` when the ranges overlap.

    With ``n`` seeds each and no real difference, all ``n`` of one side land above all ``n`` of
    the other by chance with probability ``1 / C(2n, n)`` for each direction (1/252 for 5).

    >>> range_verdict([1.0, 1.2], [1.3, 1.5]), range_verdict([1.0, 1.2], [1.1, 1.5])
    ('worse', None)
    """
    full = _array(full, "full", ndim=1)
    variant = _array(variant, "variant", ndim=1)
    if not full.size or not variant.size:
        raise ValueError("full and variant need one value per seed each")
    if variant.min() > full.max():
        return "worse"
    if variant.max() < full.min():
        return "better"
    return None


def ablation_verdict(full_curves, variant_curves, last: int = 5) -> dict:
    """:func:`range_verdict` at each of the ``last`` evaluations, and the verdict it supports.

    Args:
        full_curves, variant_curves: ``(seeds, evaluations)`` losses during training.

    Returns ``{"at_end": ..., "held": k, "last": last, "verdict": ...}``: the range verdict at
    the final evaluation, at how many of the last evaluations the same verdict holds, and the
    verdict: ``"worse"`` or ``"better"`` only when it holds at all ``last`` of them, else
    ``"no clear difference"``.
    """
    full = _array(full_curves, "full_curves", ndim=2)
    other = _array(variant_curves, "variant_curves", ndim=2, width=full.shape[1])
    last = whole(last, "last (how many evaluations)", 1, full.shape[1])
    each = [range_verdict(full[:, e], other[:, e]) for e in range(-last, 0)]
    held = sum(v == each[-1] for v in each)
    clear = each[-1] is not None and held == last
    return {"at_end": each[-1], "held": held, "last": last,
            "verdict": each[-1] if clear else "no clear difference"}


def still_falling(curves, last: int = 5) -> dict:
    r"""How much each seed's loss still fell over its ``last`` evaluations: has it converged?

    .. math::

        \text{drop}_k = L_k(\text{the evaluation } \texttt{last} \text{ from the end})
                      - L_k(\text{the final evaluation})

    Args:
        curves: ``(seeds, evaluations)`` losses during training, one row per seed.

    Returns ``{"drops": [...], "every_seed": bool, "last": last}``: each seed's drop (positive:
    it was still falling), and whether every seed fell. A curve still falling at the end has
    not converged: a longer run would likely end lower, so a comparison made there holds for this
    budget only.
    """
    c = _array(curves, "curves", ndim=2)
    last = whole(last, "last (how many evaluations)", 2, c.shape[1])
    drops = c[:, -last] - c[:, -1]
    return {"drops": [float(d) for d in drops], "every_seed": bool((drops > 0).all()),
            "last": last}
