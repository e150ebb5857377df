"""abspos-claims: the claims of 'Where does Absolute Position come from in decoder-only Transformers?'
as tests on real RoPE models. What a claim test uses is importable from here."""

from .claim_registry import CLAIMS, claim, family_sizes
from .verdict import ClaimNotHeld, holds

__all__ = ["CLAIMS", "ClaimNotHeld", "claim", "family_sizes", "holds"]
