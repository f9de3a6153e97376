"""Type stubs of the ``stackmask`` package."""

from typing import Any, Optional, Sequence

import numpy as np

from ._stackmask import (
    ArtifactError as ArtifactError,
    CancelToken as CancelToken,
    CompileCancelled as CompileCancelled,
    CompileLimitError as CompileLimitError,
    CompileTimeLimit as CompileTimeLimit,
    Compiler as Compiler,
    Grammar as Grammar,
    GrammarError as GrammarError,
    InvalidTokenError as InvalidTokenError,
    Matcher as Matcher,
    RollbackError as RollbackError,
    StackmaskError as StackmaskError,
    Tokenizer as Tokenizer,
    TokenizerError as TokenizerError,
    fill_next_token_bitmask_batch as fill_next_token_bitmask_batch,
)

def bitmask_words(vocab_size: int) -> int:
    """int32 words per bitmask row."""

def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """An all-allowed ``(batch_size, ceil(vocab_size / 32))`` int32 bitmask."""

def apply_token_bitmask_inplace(
    logits: Any, bitmask: Any, indices: Optional[Sequence[int]] = None
) -> None:
    """Sets disallowed logits to ``-inf`` in place (numpy or torch)."""

def tokenizer_from_hf(tokenizer: Any) -> Tokenizer:
    """A Tokenizer from a ``tokenizers.Tokenizer`` or transformers fast tokenizer."""
