"""Train the course's toy-world mini BERT as the chapter *The toy world* does on a CPU, and store
it in the package (``mlmlib/widgets/data/toy_model.json``), for the pages that run it live.

    .venv/bin/python tools/export_toy_model.py [--dtype float16|float32] [--out PATH]

The run is training_2's: ``toy_data(ToyWorld(), n_train=20000, n_eval=1000, seed=0)``,
``toy_recipe(..., steps=1400, seed=0)``, ``MiniBert(config, rng=recipe.seed)``, a ``Trainer``
on the CPU. It prints the evaluation loss of the trained float32 model and of the weights as
stored (rounded to ``--dtype``), each against the exact floor, and the file's size; the file
records both (``made_by``). Takes a few minutes on 2 cores. ``tests/test_toy_model.py`` checks
the stored file; it never trains.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import torch

from mlmlib.model import MiniBert
from mlmlib.tokenizer import SPECIAL_TOKENS
from mlmlib.toyworld import ToyWorld
from mlmlib.train import RunOptions, Trainer, toy_data, toy_recipe
from mlmlib.widgets.toy_model import DTYPES, TOY_MODEL_FILE, stored_toy_model, write_toy_model

STEPS, SEED = 1400, 0  # training_2's run on a CPU


@torch.no_grad()
def eval_loss(model, data) -> float:
    """The mean loss over every target of the evaluation rows (what Trainer.evaluate reports)."""
    ev = data.eval
    out = model.eval()(ev.input_ids, attention_mask=ev.attention_mask, labels=ev.labels)
    return out.loss.item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float16")
    parser.add_argument("--out", type=Path, default=TOY_MODEL_FILE)
    args = parser.parse_args()

    world = ToyWorld()
    data, vocab, eval_sentences, eval_masks = toy_data(world, n_train=20000, n_eval=1000, seed=0)
    floor = world.bayes_loss(eval_sentences, eval_masks)
    model_config, recipe = toy_recipe(len(vocab), data.rows.input_ids.shape[1], steps=STEPS,
                                      seed=SEED)
    model = MiniBert(model_config, rng=recipe.seed)
    trainer = Trainer(model, data, recipe, RunOptions(eval_every=50, quiet=True, device="cpu"))
    start = time.perf_counter()
    history = trainer.fit()
    seconds = time.perf_counter() - start
    trained = trainer.model.cpu().eval()
    full = eval_loss(trained, data)
    roles = {"pad": "[PAD]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}
    assert vocab[:len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    made_by = {
        "script": "tools/export_toy_model.py",
        "data": "toy_data(ToyWorld(), n_train=20000, n_eval=1000, seed=0)",
        "recipe": f"toy_recipe(len(vocab), {data.rows.input_ids.shape[1]}, steps={STEPS}, "
                  f"seed={SEED})",
        "device": "cpu", "torch": torch.__version__, "python": platform.python_version(),
        "floor": floor, "eval_loss_float32": full, "trainer_eval_loss": history[-1]["eval_loss"],
    }
    path = write_toy_model(trained, vocab, roles, args.out, args.dtype, made_by)
    stored, _ = stored_toy_model(path)
    rounded = eval_loss(stored, data)
    write_toy_model(trained, vocab, roles, args.out, args.dtype,
                    {**made_by, f"eval_loss_{args.dtype}": rounded})
    print(f"trained {STEPS} steps on the CPU in {seconds:.0f} s "
          f"({torch.get_num_threads()} threads)")
    print(f"floor {floor:.6f}; eval loss float32 {full:.6f} (gap {full / floor - 1:.4%}), "
          f"stored as {args.dtype} {rounded:.6f} (gap {rounded / floor - 1:.4%}); "
          f"{args.dtype} costs {rounded - full:+.2e} nats")
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
