"""stackmask: grammar-constrained LLM decoding with ahead-of-time compiled token masks.

Compile a grammar once per tokenizer, then drive one :class:`Matcher` per request::

    import numpy as np, stackmask

    tok = stackmask.Tokenizer.from_tiktoken("o200k_base")
    compiler = stackmask.Compiler(tok)
    grammar = compiler.compile_lark('start: "yes" | "no"')
    m = stackmask.Matcher(grammar)
    bitmask = stackmask.allocate_token_bitmask(1, tok.vocab_size)
    m.fill_next_token_bitmask(bitmask)

A mask is exact (DESIGN.md section 1): token ``i`` is allowed iff bit ``i % 32`` of word
``i // 32`` is set, the layout vLLM, SGLang and XGrammar use. Compile and mask calls
release the GIL.

JSON Schemas compile with ``Compiler.compile_json_schema(schema)`` (a dict or JSON text).
Every compile takes ``time_limit=`` seconds (:class:`CompileTimeLimit` past it) and
``cancel=`` a :class:`CancelToken`; Ctrl-C interrupts it.
"""

from typing import Any, List, Optional, Sequence

import numpy as np

from ._stackmask import (
    ArtifactError,
    CancelToken,
    CompileCancelled,
    CompileLimitError,
    CompileTimeLimit,
    Compiler,
    Grammar,
    GrammarError,
    InvalidTokenError,
    Matcher,
    RollbackError,
    StackmaskError,
    Tokenizer,
    TokenizerError,
    WorkLimitError,
    apply_token_bitmask_inplace_numpy as _apply_numpy,
    fill_next_token_bitmask_batch,
)

__all__ = [
    "ArtifactError",
    "CancelToken",
    "CompileCancelled",
    "CompileLimitError",
    "CompileTimeLimit",
    "Compiler",
    "Grammar",
    "GrammarError",
    "InvalidTokenError",
    "Matcher",
    "RollbackError",
    "StackmaskError",
    "Tokenizer",
    "TokenizerError",
    "WorkLimitError",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "bitmask_words",
    "fill_next_token_bitmask_batch",
    "tokenizer_from_hf",
]


def bitmask_words(vocab_size: int) -> int:
    """int32 words per bitmask row for a vocabulary of ``vocab_size`` ids."""
    return (vocab_size + 31) // 32


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """A ``(batch_size, ceil(vocab_size / 32))`` int32 bitmask, all tokens allowed."""
    return np.full((batch_size, bitmask_words(vocab_size)), -1, dtype=np.int32)


def _is_torch_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "masked_fill_")


def apply_token_bitmask_inplace(
    logits: Any, bitmask: Any, indices: Optional[Sequence[int]] = None
) -> None:
    """Sets ``logits[r, i]`` to ``-inf`` for every token ``i`` whose bit is clear in
    ``bitmask[r]``, in place.

    ``logits``: numpy float32/float64 of shape ``(batch, vocab)`` or ``(vocab,)``, or a
    torch tensor (any device; the bitmask is moved to it). ``bitmask``: int32
    ``(batch, words)`` or ``(words,)``. Columns past ``32 * words`` are disallowed.
    ``indices``: the rows to apply (default: all).
    """
    if _is_torch_tensor(logits):
        _apply_torch(logits, bitmask, indices)
        return
    _apply_numpy(logits, bitmask, None if indices is None else list(indices))


def _apply_torch(logits: Any, bitmask: Any, indices: Optional[Sequence[int]]) -> None:
    import torch

    if not isinstance(bitmask, torch.Tensor):
        bitmask = torch.from_numpy(np.asarray(bitmask))
    if bitmask.dtype != torch.int32:
        raise TypeError(f"bitmask must have dtype int32, got {bitmask.dtype}")
    one_d = logits.dim() == 1
    rows = logits.unsqueeze(0) if one_d else logits
    bits = bitmask.unsqueeze(0) if bitmask.dim() == 1 else bitmask
    if rows.dim() != 2 or bits.dim() != 2:
        raise ValueError("logits and bitmask must be 1-D or 2-D")
    if rows.shape[0] != bits.shape[0]:
        raise ValueError(
            f"logits have {rows.shape[0]} rows but the bitmask has {bits.shape[0]}"
        )
    bits = bits.to(rows.device, non_blocking=True)
    shifts = torch.arange(32, device=rows.device, dtype=torch.int32)
    allowed = ((bits.unsqueeze(-1) >> shifts) & 1).bool().reshape(bits.shape[0], -1)
    vocab = rows.shape[1]
    if allowed.shape[1] < vocab:
        pad = torch.zeros(
            (allowed.shape[0], vocab - allowed.shape[1]), dtype=torch.bool, device=rows.device
        )
        allowed = torch.cat([allowed, pad], dim=1)
    allowed = allowed[:, :vocab]
    if indices is None:
        rows.masked_fill_(~allowed, float("-inf"))
    else:
        idx = torch.as_tensor(list(indices), device=rows.device, dtype=torch.long)
        rows[idx] = rows[idx].masked_fill(~allowed[idx], float("-inf"))


def tokenizer_from_hf(tokenizer: Any) -> Tokenizer:
    """A :class:`Tokenizer` from a ``tokenizers.Tokenizer`` or a transformers *fast*
    tokenizer (``PreTrainedTokenizerFast``), through its ``tokenizer.json`` text."""
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    to_str = getattr(backend, "to_str", None)
    if to_str is None:
        raise TokenizerError(
            f"{type(tokenizer).__name__} has no tokenizer.json form (to_str); pass a "
            "tokenizers.Tokenizer or a transformers fast tokenizer, or use "
            "Tokenizer.from_tokens"
        )
    return Tokenizer.from_hf_json(to_str())

