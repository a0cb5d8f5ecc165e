r"""mlmlib.byhand - the by-hand chapters' library: the forward pass, its checks, one training step.

Does: every name is importable from ``mlmlib.byhand`` itself (the chapter writes
``byhand.embed(...)``); three modules:

* :mod:`mlmlib.byhand.forward` - what :class:`mlmlib.model.MiniBert` computes, for one
  sentence, in NumPy, one small function per step (embeddings, attention, heads, residuals
  and LayerNorms, the GELU feed-forward, the masked-LM head), and ``forward``, the whole
  pass with a record of every intermediate;
* :mod:`mlmlib.byhand.checks` - the chapter's checks against the model itself (random biases,
  forward hooks, differences, Hugging Face's scores) and the verdicts of its ablation
  measurement.

* :mod:`mlmlib.byhand.step` - one training step's own arithmetic (training_0_one_step): the
  gradient of the loss with respect to the scores, ``p - onehot``, and one AdamW update of
  named weights, in NumPy; and the chapter's helpers (a model's weights and gradients as
  arrays, a tiny model overfitting a handful of sentences).

Does not: backpropagate through the encoder, or apply dropout or take a batch in the forward
pass; the forward pass and the two NumPy functions of ``step`` never import torch.
"""

from mlmlib.byhand.checks import (
    ablation_verdict,
    fill_biases,
    hf_logits,
    largest_differences,
    model_intermediates,
    range_verdict,
    still_falling,
)
from mlmlib.byhand.forward import (
    PADDING_SCORE,
    attention_head,
    attention_scores,
    attention_weights,
    block,
    embed,
    feed_forward,
    forward,
    gelu,
    gelu_tanh,
    layer_norm,
    linear,
    mlm_head,
    multi_head,
    softmax,
    split_heads,
    weights_of,
    without_positions,
)
from mlmlib.byhand.step import (
    AdamWState,
    adamw_step,
    largest_difference,
    overfitting_run,
    parameters_of,
    score_gradient,
)

__all__ = ["PADDING_SCORE", "AdamWState", "ablation_verdict", "adamw_step", "attention_head",
           "attention_scores", "attention_weights", "block", "embed", "feed_forward",
           "fill_biases", "forward", "gelu", "gelu_tanh", "hf_logits", "largest_difference",
           "largest_differences", "layer_norm", "linear", "mlm_head", "model_intermediates",
           "multi_head", "overfitting_run", "parameters_of", "range_verdict", "score_gradient",
           "softmax", "split_heads", "still_falling", "weights_of", "without_positions"]
