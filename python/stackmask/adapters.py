"""Adapters with the method names serving stacks call, so wiring stackmask in is a few
lines. Nothing here imports vLLM, SGLang, transformers or torch at module level.

- :class:`VllmBackend` / :class:`VllmGrammar`: the shape of vLLM's structured-output
  backend (``compile_grammar``, ``allocate_token_bitmask``; per request
  ``accept_tokens``, ``validate_tokens``, ``rollback``, ``fill_bitmask``,
  ``is_terminated``, ``reset``).
- :class:`SglangBackend` / :class:`SglangGrammar`: the shape of SGLang's grammar backend
  (``dispatch_ebnf``, ``dispatch_regex``; per request ``accept_token``, ``rollback``,
  ``fill_vocab_mask``, ``apply_vocab_mask``, ``copy``, ``try_jump_forward``).
- :class:`LogitsProcessor`: a transformers ``LogitsProcessor`` (a subclass of the real
  one when transformers is installed) for ``model.generate(logits_processor=[...])``.

Grammar kinds: ``"lark"`` (also ``"grammar"``/``"ebnf"``: Lark syntax), ``"regex"``,
``"json"``/``"json_schema"`` (a JSON Schema) and ``"json_object"`` (any JSON object).
"""

import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import (
    Compiler,
    Grammar,
    Matcher,
    Tokenizer,
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
)

__all__ = [
    "GrammarCache",
    "LogitsProcessor",
    "SglangBackend",
    "SglangGrammar",
    "VllmBackend",
    "VllmGrammar",
]

_LARK_KINDS = ("lark", "grammar", "ebnf")


class GrammarCache:
    """Compiles each (kind, spec) once per tokenizer and keeps the result (thread-safe;
    concurrent requests for the same grammar compile it once)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.compiler = Compiler(tokenizer)
        self._lock = threading.Lock()
        self._entries: Dict[Tuple[str, str], Tuple[threading.Lock, List[Grammar]]] = {}

    def get(self, kind: str, spec: str) -> Grammar:
        """The compiled grammar for ``spec`` (Lark text or a regex)."""
        key = (kind.lower(), spec)
        with self._lock:
            entry = self._entries.setdefault(key, (threading.Lock(), []))
        lock, slot = entry
        with lock:
            if not slot:
                slot.append(self._compile(*key))
            return slot[0]

    def _compile(self, kind: str, spec: str) -> Grammar:
        if kind in _LARK_KINDS:
            return self.compiler.compile_lark(spec)
        if kind == "regex":
            return self.compiler.compile_regex(spec)
        if kind in ("json", "json_schema"):
            return self.compiler.compile_json_schema(spec)
        if kind == "json_object":
            # Any JSON object: the schema that says only that.
            return self.compiler.compile_json_schema('{"type": "object"}')
        raise ValueError(
            f"unknown grammar kind {kind!r}: expected lark, regex or json_schema"
        )


class VllmGrammar:
    """One request's grammar state, with vLLM's ``StructuredOutputGrammar`` methods."""

    def __init__(self, grammar: Grammar) -> None:
        self.matcher = Matcher(grammar)
        self.vocab_size = grammar.vocab_size

    def accept_tokens(self, request_id: Any, tokens: Sequence[int]) -> bool:
        """Commits all ``tokens`` or none; ``False`` if any is rejected."""
        return self.matcher.accept_tokens(list(tokens))

    def validate_tokens(self, tokens: Sequence[int]) -> List[int]:
        """The longest prefix of ``tokens`` the grammar accepts (state unchanged)."""
        tokens = list(tokens)
        return tokens[: self.matcher.validate_tokens(tokens)]

    def rollback(self, num_tokens: int) -> None:
        """Undoes the last ``num_tokens`` accepted tokens."""
        self.matcher.rollback(num_tokens)

    def fill_bitmask(self, bitmask: Any, idx: int) -> None:
        """Writes the allowed next tokens into row ``idx`` of ``bitmask``."""
        self.matcher.fill_next_token_bitmask(bitmask, idx)

    def is_terminated(self) -> bool:
        """Whether EOS was accepted."""
        return self.matcher.is_terminated()

    def reset(self) -> None:
        """Back to the start."""
        self.matcher.reset()


class VllmBackend:
    """vLLM's ``StructuredOutputBackend`` shape: compile (cached) and allocate."""

    def __init__(self, tokenizer: Tokenizer, vocab_size: Optional[int] = None) -> None:
        self.cache = GrammarCache(tokenizer)
        self.vocab_size = vocab_size if vocab_size is not None else tokenizer.vocab_size

    def compile_grammar(self, request_type: Any, grammar_spec: str) -> VllmGrammar:
        """``request_type``: ``"lark"``/``"grammar"`` or ``"regex"`` (or an enum whose
        ``name`` is one of them)."""
        kind = getattr(request_type, "name", request_type)
        return VllmGrammar(self.cache.get(str(kind), grammar_spec))

    def allocate_token_bitmask(self, max_num_seqs: int) -> Any:
        """An all-allowed int32 bitmask (a torch tensor when torch is installed)."""
        mask = allocate_token_bitmask(max_num_seqs, self.vocab_size)
        try:
            import torch
        except ImportError:
            return mask
        return torch.from_numpy(mask)

    def destroy(self) -> None:
        """Nothing to release."""


class SglangGrammar:
    """One request's grammar state, with SGLang's ``BaseGrammarObject`` methods."""

    def __init__(self, grammar: Grammar, matcher: Optional[Matcher] = None) -> None:
        self.grammar = grammar
        self.matcher = matcher if matcher is not None else Matcher(grammar)
        self.finished = False

    def accept_token(self, token: int) -> None:
        """Commits ``token``; raises ``ValueError`` if the grammar rejects it (SGLang
        only feeds tokens sampled under the mask)."""
        if not self.matcher.accept_token(token):
            raise ValueError(f"token {token} is not allowed by the grammar here")

    def rollback(self, k: int) -> None:
        """Undoes the last ``k`` tokens."""
        self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        """Whether EOS was accepted."""
        return self.matcher.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device: Any) -> Any:
        """An all-allowed int32 bitmask (torch on ``device`` when torch is installed)."""
        mask = allocate_token_bitmask(batch_size, vocab_size)
        try:
            import torch
        except ImportError:
            return mask
        return torch.from_numpy(mask).to(device)

    def fill_vocab_mask(self, vocab_mask: Any, idx: int) -> None:
        """Writes row ``idx`` (a CPU array or tensor)."""
        self.matcher.fill_next_token_bitmask(vocab_mask, idx)

    @staticmethod
    def move_vocab_mask(vocab_mask: Any, device: Any) -> Any:
        """Moves a torch mask to ``device`` (numpy masks are returned as they are)."""
        to = getattr(vocab_mask, "to", None)
        return to(device, non_blocking=True) if to is not None else vocab_mask

    @staticmethod
    def apply_vocab_mask(logits: Any, vocab_mask: Any) -> None:
        """Sets disallowed logits to ``-inf`` in place."""
        apply_token_bitmask_inplace(logits, vocab_mask)

    def copy(self) -> "SglangGrammar":
        """An independent copy (same history)."""
        return SglangGrammar(self.grammar, self.matcher.copy())

    def try_jump_forward(self, tokenizer: Any = None) -> Optional[bytes]:
        """The bytes every continuation must start with, or ``None`` if there are none.
        Commit them with :meth:`jump_forward_bytes` after re-tokenizing."""
        forced = self.matcher.forced_bytes()
        return forced or None

    def jump_forward_bytes(self, data: bytes) -> bool:
        """Commits forced bytes (one ``rollback`` step)."""
        return self.matcher.accept_bytes(data)


class SglangBackend:
    """SGLang's ``BaseGrammarBackend`` shape: ``dispatch_*`` compile (cached)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.cache = GrammarCache(tokenizer)

    def dispatch_ebnf(self, key_string: str) -> SglangGrammar:
        """A Lark grammar (stackmask reads Lark syntax, not GBNF)."""
        return SglangGrammar(self.cache.get("lark", key_string))

    def dispatch_regex(self, key_string: str) -> SglangGrammar:
        """A regex the whole output must match."""
        return SglangGrammar(self.cache.get("regex", key_string))

    def dispatch_json(self, key_string: str) -> SglangGrammar:
        """A JSON Schema (JSON text)."""
        return SglangGrammar(self.cache.get("json", key_string))


try:  # pragma: no cover - depends on the environment
    from transformers import LogitsProcessor as _HfLogitsProcessor
except ImportError:  # transformers is optional
    _HfLogitsProcessor = object


class LogitsProcessor(_HfLogitsProcessor):  # type: ignore[misc, valid-type]
    """Constrains ``model.generate`` to a grammar: on each call, accepts the token each
    sequence generated last, then masks ``scores`` to the tokens allowed next.

    ``prompt_len``: the length of the prompt in ``input_ids`` (tokens before it are not
    constrained); by default taken from the first call. Works with torch tensors and, for
    tests, numpy arrays.
    """

    def __init__(self, grammar: Grammar, prompt_len: Optional[int] = None) -> None:
        self.grammar = grammar
        self.prompt_len = prompt_len
        self.matchers: List[Matcher] = []
        self._seen: List[int] = []  # generated tokens already accepted, per row
        self._bitmask: Optional[np.ndarray] = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        ids = np.asarray(input_ids.cpu() if hasattr(input_ids, "cpu") else input_ids)
        batch, length = ids.shape
        if not self.matchers:
            self.matchers = [Matcher(self.grammar) for _ in range(batch)]
            self._seen = [0] * batch
            if self.prompt_len is None:
                self.prompt_len = length
        assert self.prompt_len is not None
        for r, (m, row) in enumerate(zip(self.matchers, ids)):
            # After EOS, generate() pads finished rows; those tokens are not text.
            for t in row[self.prompt_len + self._seen[r] : length]:
                if not m.is_terminated() and not m.accept_token(int(t)):
                    raise ValueError(f"generated token {int(t)} violates the grammar")
                self._seen[r] += 1
        if self._bitmask is None or self._bitmask.shape[0] != batch:
            words = max(self.grammar.bitmask_words, (scores.shape[-1] + 31) // 32)
            self._bitmask = np.zeros((batch, words), dtype=np.int32)
        from . import fill_next_token_bitmask_batch

        fill_next_token_bitmask_batch(self.matchers, self._bitmask)
        apply_token_bitmask_inplace(scores, self._bitmask)
        return scores
