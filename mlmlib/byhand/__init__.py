r"""mlmlib.byhand - the encoder chapter's library: the forward pass by hand, and its checks.

Does: every name is importable from ``mlmlib.byhand`` itself (the chapter writes
``byhand.embed(...)``); two modules:

* :mod:`mlmlib.byhand.forward` - what :class:`mlmlib.model.MiniBert` computes, for one
  sentence, in NumPy, one small function per step (embeddings, attention, heads, residuals
  and LayerNorms, the GELU feed-forward, the masked-LM head), and ``forward``, the whole
  pass with a record of every intermediate;
* :mod:`mlmlib.byhand.checks` - the chapter's checks against the model itself (random biases,
  forward hooks, differences, Hugging Face's scores) and the verdicts of its ablation
  measurement.

Does not: train, apply dropout or take a batch; the forward pass never imports torch.
"""

from mlmlib.byhand.checks import (
    ablation_verdict,
    fill_biases,
    hf_logits,
    largest_differences,
    model_intermediates,
    range_verdict,
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

__all__ = ["PADDING_SCORE", "ablation_verdict", "attention_head", "attention_scores",
           "attention_weights", "block", "embed", "feed_forward", "fill_biases", "forward",
           "gelu", "gelu_tanh", "hf_logits", "largest_differences", "layer_norm", "linear",
           "mlm_head", "model_intermediates", "multi_head", "range_verdict", "softmax",
           "split_heads", "weights_of", "without_positions"]
