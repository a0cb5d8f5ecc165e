r"""mlmlib.model - read both sides and score every word: a BERT, small enough for a laptop.

Does: the BERT architecture of Devlin et al. (2019), exactly: token + position + segment
embeddings, LayerNorm and dropout; post-LN encoder blocks (self-attention through
``torch.nn.functional.scaled_dot_product_attention`` with the padding mask, then a GELU
feed-forward), each sub-layer followed by dropout, a residual sum and LayerNorm; the masked-LM
head as Google's code has it (dense + GELU + LayerNorm, then a decoder tied to the input
embeddings plus a bias ``b_v``); and an optional pooler + next-sentence head.

.. math::

    s_v = \mathbf{w}_v^\top \operatorname{LN}(\operatorname{GELU}(D \mathbf{h}_i)) + b_v

By default the head scores only the masked positions (it gathers the hidden states where the
labels are not ``IGNORE_INDEX`` before the decoder): the same loss for a fraction of the
output layer's work. ``score_all=True`` scores every position (fill-mask, pictures).
Scoring the masked positions of a padded batch, it also leaves the padding out of the encoder
(``BertConfig.unpad``, on by default): the embeddings, every linear layer, GELU and LayerNorm
run on the real tokens only, packed into one ``(N, d)`` matrix, and attention puts them back
into their rows, where the padding mask keeps each sentence to itself (``Packed``). The
batch is the same and so is the loss, to rounding; only the work on padding is gone.

Checks its input (with ``mlmlib._checks``, and ``mlmlib._model_inputs`` for forward's tensors):
:class:`BertConfig` refuses nonsense settings (a size that is not a positive whole number,
which it stores as an ``int``, a dropout outside ``[0, 1)``, a LayerNorm epsilon or initializer
range that is not a positive finite number, ...), and :meth:`MiniBert.forward` refuses bad
tensors (wrong type, dtype, shape or device, ids outside the vocabulary, an empty batch, a mask
that is not 0/1 or hides a whole row) with a ``TypeError``/``ValueError`` that names the
argument, before any work.
Token ids, segment ids and labels of the smaller integer dtypes (int32, int16, int8, uint8) are
used as int64, so they give the int64 result.

Does not: tokenize, mask or train (:mod:`mlmlib.tokenizer`, :mod:`mlmlib.masking`,
:mod:`mlmlib.train`). The loss itself comes from :mod:`mlmlib.loss`. The parts
:class:`BertConfig` can switch off (position embeddings, the head's transform, the bias
``b_v``) or untie (the output matrix) are for the encoder chapter's measurements; the
defaults are BERT's, and only a model with every part is exported to Hugging Face
(:mod:`mlmlib.hf`; an untied one too).

>>> import torch
>>> model = MiniBert(BertConfig(vocab_size=50, hidden_size=16, num_layers=1, num_heads=2,
...                             intermediate_size=32, max_position=16))
>>> ids = torch.tensor([[2, 7, 4, 9, 3]])
>>> labels = torch.tensor([[-100, -100, 8, -100, -100]])
>>> logits, loss = model(ids, labels=labels)
>>> tuple(logits.shape), loss.shape
((1, 50), torch.Size([]))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from mlmlib._checks import flag, generator, kind, number, whole, within
from mlmlib._model_inputs import checked
from mlmlib.constants import IGNORE_INDEX
from mlmlib.loss import mlm_loss, nsp_loss

__all__ = ["BertConfig", "BertOutput", "MiniBert"]

@dataclass
class BertConfig:
    vocab_size: int = 1024  # |V|: rows of the word-embedding table (and of the scores)
    hidden_size: int = 128  # d: the length of every h_i
    num_layers: int = 2  # encoder blocks stacked
    num_heads: int = 4  # attention heads; hidden_size must be a multiple of it
    intermediate_size: int = 512  # feed-forward width, 4 x hidden_size as in BERT
    max_position: int = 128  # the longest input, [CLS] and [SEP] included
    type_vocab_size: int = 2  # segments: 0 for sentence A, 1 for sentence B
    dropout: float = 0.1  # BERT's hidden_dropout_prob
    attention_dropout: float = 0.1  # BERT's attention_probs_dropout_prob
    layer_norm_eps: float = 1e-12  # BERT's LayerNorm epsilon
    initializer_range: float = 0.02  # standard deviation of BERT's normal initialisation
    pad_token_id: int = 0  # its word embedding starts at zero, as in Hugging Face's BERT
    nsp: bool = False  # add the pooler and the next-sentence-prediction head
    # the parts the encoder chapter takes away, one at a time, to see what each is for
    position_embeddings: bool = True  # False: no position table, so word order is invisible
    head_transform: bool = True  # False: score h_i itself, without dense + GELU + LayerNorm
    head_bias: bool = True  # False: no per-word bias b_v in the scores
    tie_embeddings: bool = True  # False: the scores use their own (V, d) matrix
    # how the work is done, not what is computed: the same loss either way (to rounding)
    unpad: bool = True  # scoring masked slots: the encoder skips padding, on real tokens only

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads",
                     "intermediate_size", "max_position", "type_vocab_size"):
            setattr(self, name, whole(getattr(self, name), name, least=1))  # NumPy ints: ints
        self.pad_token_id = whole(self.pad_token_id, "pad_token_id")
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size {self.hidden_size} must be a multiple of "
                             f"num_heads {self.num_heads}")
        number(self.dropout, "dropout", 0, 1, below=True)
        number(self.attention_dropout, "attention_dropout", 0, 1, below=True)
        # LN divides by sqrt(var + eps): eps <= 0 gives NaN wherever a row is constant
        number(self.layer_norm_eps, "layer_norm_eps", 0, above=True)
        number(self.initializer_range, "initializer_range", 0, above=True)  # a standard deviation
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(f"pad_token_id {self.pad_token_id} is outside the vocabulary of "
                             f"{self.vocab_size}")
        for name in ("nsp", "position_embeddings", "head_transform", "head_bias",
                     "tie_embeddings", "unpad"):
            flag(getattr(self, name), name)


@dataclass
class BertOutput:
    """What :meth:`MiniBert.forward` returns; unpacks as ``logits, loss = model(...)``."""

    logits: torch.Tensor  # (|M|, V) for the masked slots, or (B, T, V) when scoring all
    loss: torch.Tensor | None = None  # mean MLM loss over M, plus the NSP loss if asked
    nsp_logits: torch.Tensor | None = None  # (B, 2): column 0 "B follows A", 1 "random"
    attentions: list[torch.Tensor] = field(default_factory=list)  # per layer (B, nh, T, T)

    def __iter__(self):
        return iter((self.logits, self.loss))


class SelfAttention(nn.Module):
    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.num_heads = cfg.num_heads
        self.qkv = nn.Linear(cfg.hidden_size, 3 * cfg.hidden_size)  # query, key, value at once
        self.out = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.attention_dropout = cfg.attention_dropout

    def forward(self, x: torch.Tensor, keep: torch.Tensor, want_weights: bool,
                packed: Packed | None = None):
        """``x`` is ``(B, T, C)``, or ``(N, C)``: the real tokens only, when ``packed`` says
        where they sit in the padded batch (for attention only, which needs the rows)."""
        qkv = self.qkv(x)  # (B, T, 3C) or (N, 3C)
        if packed is not None:  # back into rows for attention; padding rows stay zero
            qkv = packed.pad(qkv)  # (B, T, 3C)
        B, T, C3 = qkv.shape
        nh, hs = self.num_heads, C3 // (3 * self.num_heads)
        q, k, v = qkv.view(B, T, 3, nh, hs).permute(2, 0, 3, 1, 4)  # 3 x (B, nh, T, hs)
        p = self.attention_dropout if self.training else 0.0
        if want_weights:  # the explicit route, for pictures: softmax(q k^T / sqrt(hs))
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(hs)  # (B, nh, T, T)
            weights = scores.masked_fill(~keep, float("-inf")).softmax(dim=-1)
            y = F.dropout(weights, p, self.training) @ v  # (B, nh, T, hs)
        else:
            weights = None
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=p)
        y = y.transpose(1, 2).reshape(B, T, nh * hs)  # (B, T, C)
        if packed is not None:
            y = packed.unpad(y)  # (N, C)
        return self.out(y), weights


@dataclass
class Packed:
    """Where the real tokens of a padded ``(B, T)`` batch sit: ``index`` into its ``B * T``
    flattened positions, in order. The encoder's token-wise layers (embeddings, every linear
    layer, GELU, LayerNorm) run on the ``N`` real tokens only; attention puts them back into
    their rows, where the padding mask keeps each sentence to itself."""

    index: torch.Tensor  # (N,) positions b * T + t where attention_mask is 1
    rows: int  # B
    length: int  # T

    @classmethod
    def of(cls, real: torch.Tensor) -> Packed:
        """From the ``(B, T)`` bool mask of real tokens."""
        B, T = real.shape
        return cls(real.reshape(-1).nonzero().squeeze(1), B, T)

    def unpad(self, t: torch.Tensor) -> torch.Tensor:
        """``(B, T, ...)`` to ``(N, ...)``: the real tokens' entries, in order."""
        return t.reshape(self.rows * self.length, *t.shape[2:]).index_select(0, self.index)

    def pad(self, t: torch.Tensor) -> torch.Tensor:
        """``(N, ...)`` to ``(B, T, ...)``, zeros at the padding."""
        out = t.new_zeros(self.rows * self.length, *t.shape[1:])  # (B * T, ...)
        return out.index_copy(0, self.index, t).view(self.rows, self.length, *t.shape[1:])


class EncoderBlock(nn.Module):
    """Post-LN, as in BERT: x = LN(x + Attn(x)); x = LN(x + FFN(x))."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.attention = SelfAttention(cfg)
        self.ln_attention = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.ffn_in = nn.Linear(cfg.hidden_size, cfg.intermediate_size)
        self.ffn_out = nn.Linear(cfg.intermediate_size, cfg.hidden_size)
        self.ln_ffn = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x, keep, want_weights, packed=None):
        a, weights = self.attention(x, keep, want_weights, packed)
        x = self.ln_attention(x + self.dropout(a))
        x = self.ln_ffn(x + self.dropout(self.ffn_out(F.gelu(self.ffn_in(x)))))
        return x, weights


class MiniBert(nn.Module):
    """BERT for masked-language modeling (and optionally next-sentence prediction)."""

    def __init__(self, cfg: BertConfig, rng: int | torch.Generator = 0):
        """Build the model; its initial weights are drawn from ``rng`` (a seed or a generator),
        so the same seed always gives the same model."""
        kind(cfg, "cfg", BertConfig)
        cfg.__post_init__()  # again: a field may have been changed since the config was made
        gen = generator(rng)  # a seed that fits in 64 bits, or a torch.Generator
        super().__init__()
        self.config = cfg
        d = cfg.hidden_size
        self.word_embeddings = nn.Embedding(cfg.vocab_size, d)
        self.position_embeddings = (nn.Embedding(cfg.max_position, d)
                                    if cfg.position_embeddings else None)
        self.segment_embeddings = nn.Embedding(cfg.type_vocab_size, d)
        self.ln_embeddings = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(EncoderBlock(cfg) for _ in range(cfg.num_layers))
        # the masked-LM head: transform, then score against the (tied) word embeddings
        self.head_dense = nn.Linear(d, d) if cfg.head_transform else None
        self.head_ln = nn.LayerNorm(d, eps=cfg.layer_norm_eps) if cfg.head_transform else None
        self.head_bias = nn.Parameter(torch.zeros(cfg.vocab_size)) if cfg.head_bias else None
        if cfg.nsp:
            self.pooler = nn.Linear(d, d)
            self.nsp_head = nn.Linear(d, 2)
        for module in self.modules():
            self._init_weights(module, gen)
        self.decoder = None  # tied: the scores use word_embeddings.weight
        if not cfg.tie_embeddings:  # drawn last, so the other weights match the tied model's
            self.decoder = nn.Parameter(torch.empty(cfg.vocab_size, d))  # (V, d)
            nn.init.normal_(self.decoder, mean=0.0, std=cfg.initializer_range, generator=gen)

    def _init_weights(self, module: nn.Module, gen: torch.Generator) -> None:
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=std, generator=gen)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=std, generator=gen)
            if module is self.word_embeddings:
                with torch.no_grad():
                    module.weight[self.config.pad_token_id].zero_()
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # ------------------------------------------------------------------ checks

    def _check(self, input_ids, attention_mask, token_type_ids, labels, is_next):
        """Every input checked (:func:`mlmlib._model_inputs.checked`); ids come back as int64."""
        return checked(self, input_ids, attention_mask, token_type_ids, labels, is_next)

    # ------------------------------------------------------------------ forward

    def encode(self, input_ids, attention_mask=None, token_type_ids=None,
               want_weights: bool = False):
        """The hidden states ``h_i`` of every position, ``(B, T, d)``, and attention weights."""
        flag(want_weights, "want_weights")
        input_ids, attention_mask, token_type_ids, _ = self._check(
            input_ids, attention_mask, token_type_ids, None, None)
        return self._encode(input_ids, attention_mask, token_type_ids, want_weights)

    def _encode(self, input_ids, attention_mask, token_type_ids, want_weights: bool,
                packed: Packed | None = None):
        """``(B, T, d)`` hidden states; with ``packed``, ``(N, d)``: the real tokens only."""
        T = input_ids.shape[1]
        positions = torch.arange(T, device=input_ids.device)  # (T,)
        segments = token_type_ids if token_type_ids is not None else torch.zeros_like(input_ids)
        if packed is not None:  # every token-wise layer on the N real tokens
            input_ids = input_ids.reshape(-1).index_select(0, packed.index)  # (N,)
            positions = packed.index % T  # (N,): each token's place in its row
            segments = segments.reshape(-1).index_select(0, packed.index)  # (N,)
        x = self.word_embeddings(input_ids)  # (B, T, d) or (N, d); + positions, + segments (BERT's
        if self.position_embeddings is not None:  # order: the sums round the same way)
            x = x + self.position_embeddings(positions)
        x = x + self.segment_embeddings(segments)
        x = self.dropout(self.ln_embeddings(x))
        if attention_mask is None:
            attention_mask = torch.ones(T, dtype=torch.bool, device=x.device).expand(1, T)
        keep = attention_mask.bool()[:, None, None, :]  # (B, 1, 1, T): keys a query may read
        weights = []
        for block in self.blocks:
            x, w = block(x, keep, want_weights, packed)
            if want_weights:
                weights.append(w)
        return x, weights

    def _real_tokens(self, attention_mask, labels, score_all: bool, want_weights: bool):
        """The ``(B, T)`` bool mask of real tokens when the encoder may run on them alone (it
        scores the masked slots of a batch with padding, none of them at the padding, and
        ``config.unpad``); None otherwise."""
        if (not self.config.unpad or score_all or want_weights or attention_mask is None
                or labels is None):
            return None
        real = attention_mask != 0  # (B, T)
        if bool(real.all()) or bool((labels[~real] != IGNORE_INDEX).any()):
            return None  # nothing to leave out; or a target at the padding, scored as it is
        if self.config.nsp and not bool(real[:, 0].all()):
            return None  # the pooler reads position 0 of every row
        return real

    def score(self, h: torch.Tensor) -> torch.Tensor:
        """The masked-LM head: every word's score ``s_v`` for hidden states ``(..., d)``."""
        d = self.config.hidden_size
        if not isinstance(h, torch.Tensor) or not h.is_floating_point():
            raise TypeError(f"h must be a float tensor of hidden states, got "
                            f"{h.dtype if isinstance(h, torch.Tensor) else type(h).__name__}")
        if h.ndim == 0 or h.shape[-1] != d:
            raise ValueError(f"h must have shape (..., {d}), got {tuple(h.shape)}")
        if h.dtype != self.word_embeddings.weight.dtype:
            raise TypeError(f"h has dtype {h.dtype} but the model's weights are "
                            f"{self.word_embeddings.weight.dtype}; convert one to the other")
        return self._score(within(h, "h"))

    def _score(self, h: torch.Tensor) -> torch.Tensor:
        """:meth:`score` on checked hidden states (forward's own, not checked again)."""
        t = self.head_ln(F.gelu(self.head_dense(h))) if self.head_dense is not None else h
        w = self.word_embeddings.weight if self.decoder is None else self.decoder  # (V, d)
        s = t @ w.T  # (..., V)
        return s + self.head_bias if self.head_bias is not None else s

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, labels: torch.Tensor | None = None,
                is_next: torch.Tensor | None = None, score_all: bool | None = None,
                return_attention: bool = False) -> BertOutput:
        """Scores (and the loss when ``labels`` are given).

        Args:
            input_ids: ``(B, T)`` token ids, ``B, T >= 1``, of any integer dtype (int64 or a
                smaller one, used as int64).
            attention_mask: ``(B, T)``, 1 for real tokens and 0 for padding (integers, bools
                or floats); every row needs at least one 1.
            token_type_ids: ``(B, T)`` segment ids (0 for sentence A, 1 for B).
            labels: ``(B, T)``, the original id at masked positions, ``IGNORE_INDEX`` elsewhere.
            is_next: ``(B,)`` booleans, True where sentence B really follows A (NSP).
            score_all: score every position (``(B, T, V)`` logits) instead of only the masked
                ones (``(|M|, V)``). Defaults to True without labels, False with them.
            return_attention: also return every layer's attention weights (slower).
        """
        flag(return_attention, "return_attention")
        if score_all is not None:
            flag(score_all, "score_all")
        input_ids, attention_mask, token_type_ids, labels = self._check(
            input_ids, attention_mask, token_type_ids, labels, is_next)
        if score_all is None:
            score_all = labels is None
        packed = None
        real = self._real_tokens(attention_mask, labels, score_all, return_attention)
        if real is not None:
            T = int(real.any(0).nonzero().max()) + 1  # the columns of padding in every row: out
            input_ids, attention_mask, labels, real = (t[:, :T] for t in (input_ids,
                                                                          attention_mask, labels,
                                                                          real))
            token_type_ids = None if token_type_ids is None else token_type_ids[:, :T]
            packed = Packed.of(real)
        h, weights = self._encode(input_ids, attention_mask, token_type_ids, return_attention,
                                  packed)  # (B, T, d), or (N, d) when packed
        if score_all:
            logits = self._score(h)  # (B, T, V)
            loss = None if labels is None else mlm_loss(logits, labels, reduction="mean",
                                                        check=False)
        else:
            if labels is None:
                raise ValueError("scoring only the masked positions needs labels")
            labels = labels.reshape(-1)  # (B * T,)
            if packed is not None:
                labels = labels.index_select(0, packed.index)  # (N,): the real tokens'
            where = (labels != IGNORE_INDEX).nonzero().squeeze(1)  # (|M|,)
            picked = h.reshape(-1, h.shape[-1]).index_select(0, where)  # (|M|, d)
            logits = self._score(picked)  # (|M|, V): the decoder runs on masked slots only
            loss = mlm_loss(logits, labels[where], reduction="mean", check=False)
        nsp_logits = None
        if self.config.nsp:
            if packed is None:
                first = h[:, 0]  # (B, d): the [CLS] position
            else:  # row b's position 0 comes after the real tokens of rows 0..b-1
                lengths = real.sum(1)  # (B,)
                first = h.index_select(0, lengths.cumsum(0) - lengths)  # (B, d)
            pooled = torch.tanh(self.pooler(first))  # (B, d)
            nsp_logits = self.nsp_head(pooled)  # (B, 2)
            if is_next is not None:
                loss = nsp_loss(nsp_logits, is_next) + (0.0 if loss is None else loss)
        return BertOutput(logits, loss, nsp_logits, weights)
