"""The related paper's synthetic model sets a run can name (``--models synthetic-<size>[-<architecture>]``), in one
list: the sizes and architectures that the selection (``harness.run.selection``), the listings and the notebook API
accept and that ``harness.synthetic`` trains (its sizes' shapes and recipes are ``harness.synthetic.sizes.SIZES``,
which holds each of these and may hold depth variants that are no set of their own). Pure Python: the command line reads
it without loading torch."""

from __future__ import annotations

SYNTHETIC_SIZES = ("smoke", "pilot", "paper")
SYNTHETIC_ARCHITECTURES = ("authors", "decoder")
#: what each size of synthetic set is for, in a reader's words (``abspos-claims models``, a claim's --models hint)
SYNTHETIC_PURPOSE = {
    "smoke": "seconds of training: checks the machinery, never a verdict",
    "pilot": "the qualitative claims' verdicts: about half an hour per model on 2 CPU cores",
    "paper": "the authors' sizes, where their numbers are judged: for a GPU",
}
SYNTHETIC_ARCHITECTURE_WORDS = {
    "authors": "the authors' architecture (no causal mask, mean pooling)",
    "decoder": "a standard causal decoder (not tested by the paper)",
}
