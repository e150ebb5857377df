"""Named selections of the claims, for ``--claims <name>`` (``abspos-claims run``, ``verify``).

``core`` is what a reader of the paper must see first, the answer its title asks for: absolute position leaks into
the attention weights of every head that reads it (T5), it comes from the causal mask and not from RoPE
(bidirectional attention removes most of it, T6) and concentrates in the first query bin, where the softmax
denominator has the fewest terms (T7); position 0 is the fixed anchor, one state whatever the prompt (T9a) with a
norm far above the rest (T9b). On one bundled model it runs in about ten minutes on 2 CPU cores (README), between
the two-claim first try and every claim.
"""

from harness.spec.claims import Selection

SELECTIONS = (
    Selection(
        "core",
        ("T5", "T6", "T7", "T9a", "T9b"),
        "the headline claims: leakage exists (T5), comes from the causal mask (T6) in the first query bin (T7), "
        "and position 0 is a fixed anchor (T9a, T9b)",
    ),
)
