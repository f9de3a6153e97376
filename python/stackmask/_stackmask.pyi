"""Type stubs of the compiled extension (re-exported by ``stackmask``)."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Union

_Path = Union[str, PathLike[str]]

class StackmaskError(Exception):
    """Base class of every error stackmask raises."""

class GrammarError(StackmaskError):
    """Invalid grammar or regex, or an unsupported feature; message ``name:line:col: ...``."""

    source_name: str
    line: int
    col: int

class CompileLimitError(StackmaskError):
    """A compile hit a limit; the message names it (e.g. ``max_lr_states``)."""

class CompileTimeLimit(CompileLimitError):
    """A compile ran past its ``time_limit``; the message names the limit, its value and
    the stage that was running. Nothing was built."""

class CompileCancelled(StackmaskError):
    """A compile was cancelled through its :class:`CancelToken`; the message names the
    stage that was running. Nothing was built."""

class TokenizerError(StackmaskError):
    """A tokenizer could not be loaded, or a text could not be encoded."""

class ArtifactError(StackmaskError):
    """Unreadable, truncated or corrupted artifact, or one compiled for another vocabulary."""

class InvalidTokenError(StackmaskError):
    """A token id outside the vocabulary."""

class WorkLimitError(StackmaskError):
    """A commit needed more parsing work than ``max_step_work`` for one byte, or than the
    ``work_burst`` / ``work_per_byte`` budget over a stretch of bytes; nothing was committed."""

class RollbackError(StackmaskError):
    """``rollback(n)`` with more commits than were made."""

class Tokenizer:
    """A tokenizer's vocabulary (token id -> bytes and kind) and, when loaded from a real
    tokenizer, its canonical encoder."""

    @staticmethod
    def from_tiktoken(name: str) -> "Tokenizer":
        """``"o200k_base"`` or ``"cl100k_base"`` (built in, offline)."""
    @staticmethod
    def from_hf_file(path: _Path) -> "Tokenizer":
        """A Hugging Face ``tokenizer.json`` (or a directory holding one)."""
    @staticmethod
    def from_hf_json(json: str) -> "Tokenizer":
        """A Hugging Face tokenizer from its ``tokenizer.json`` text."""
    @staticmethod
    def from_tokens(
        tokens: Sequence[Optional[bytes]],
        eos_id: int,
        special_ids: Sequence[int] = ...,
        name: str = "explicit",
    ) -> "Tokenizer":
        """An explicit vocabulary: ``tokens[i]`` is token ``i``'s bytes (``None``: unused)."""
    @property
    def vocab_size(self) -> int:
        """Number of token ids."""
    @property
    def eos_id(self) -> int:
        """The end-of-sequence token id."""
    @property
    def name(self) -> str:
        """The tokenizer's spec (``tiktoken:o200k_base``, ``hf:...``, ``explicit``)."""
    @property
    def vocab_hash(self) -> int:
        """Hash of everything a mask depends on; checked when an artifact is loaded."""
    def token_bytes(self, id: int) -> bytes:
        """The bytes of token ``id``."""
    def is_special(self, id: int) -> bool:
        """Whether token ``id`` is special (never text; EOS is special)."""
    def encode(self, text: Union[str, bytes]) -> List[int]:
        """Canonical tokenization, without special tokens."""
    def decode(self, ids: Sequence[int]) -> bytes:
        """Concatenated bytes of ``ids``."""

class CancelToken:
    """Cancels compiles from another thread: pass it as ``cancel=`` and call
    :meth:`cancel`; the compile stops at its next poll (milliseconds) with
    :class:`CompileCancelled`. A cancelled token stays cancelled."""

    def __init__(self) -> None: ...
    def cancel(self) -> None:
        """Cancels every compile given this token, running or started later."""
    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""

class Compiler:
    """Compiles grammars for one tokenizer (its token trie is built once).

    Every compile method takes ``boundary_dwa_states`` (``--boundary-dwa-states``: a
    lexer boundary whose automaton would need more states is left to the run-time
    token-trie walk, which works under the matcher's work limits), ``time_limit``
    (seconds, default none: the whole compile,
    front end included, ends in :class:`CompileTimeLimit` past it) and ``cancel`` (a
    :class:`CancelToken`). Compiles run with the GIL released and can be interrupted
    with Ctrl-C (``KeyboardInterrupt``): the worker is cancelled before it is raised."""

    def __init__(self, tokenizer: Tokenizer) -> None: ...
    def compile_lark(
        self,
        source: str,
        name: str = "<grammar>",
        *,
        max_lr_states: Optional[int] = None,
        max_dwa_states: Optional[int] = None,
        max_weight_bytes: Optional[int] = None,
        max_table_bytes: Optional[int] = None,
        boundary_dwa_states: Optional[int] = None,
        time_limit: Optional[float] = None,
        cancel: Optional[CancelToken] = None,
    ) -> "Grammar":
        """Compiles a Lark grammar (GIL released). Limits raise
        :class:`CompileLimitError` naming the limit, ``time_limit``
        :class:`CompileTimeLimit`, ``cancel`` :class:`CompileCancelled`."""
    def compile_regex(
        self,
        pattern: str,
        *,
        max_lr_states: Optional[int] = None,
        max_dwa_states: Optional[int] = None,
        max_weight_bytes: Optional[int] = None,
        max_table_bytes: Optional[int] = None,
        boundary_dwa_states: Optional[int] = None,
        time_limit: Optional[float] = None,
        cancel: Optional[CancelToken] = None,
    ) -> "Grammar":
        """Compiles a regex that the whole output must match (GIL released)."""
    def compile_json_schema(
        self,
        schema: Union[str, Dict[str, Any]],
        *,
        lenient: bool = False,
        whitespace: str = "compact",
        property_order: str = "declared",
        max_lr_states: Optional[int] = None,
        max_dwa_states: Optional[int] = None,
        max_weight_bytes: Optional[int] = None,
        max_table_bytes: Optional[int] = None,
        boundary_dwa_states: Optional[int] = None,
        time_limit: Optional[float] = None,
        cancel: Optional[CancelToken] = None,
    ) -> "Grammar":
        """Compiles a JSON Schema (JSON text or dict); unsupported keywords raise
        GrammarError naming keyword and JSON pointer, or with ``lenient`` are listed in
        ``Grammar.warnings``. ``whitespace``: "compact" | "free"; ``property_order``:
        "declared" | "sorted" | "any" (members in any order, each declared name once;
        an object too large for it raises GrammarError, lenient: declared order, warned)
        | "any-or-declared" (any order, and declared order with a warning for an object
        too large for it, strict too).
        Releases the GIL."""
    def load(self, path: _Path) -> "Grammar":
        """Maps an artifact compiled for this vocabulary."""
    @property
    def vocab_size(self) -> int:
        """The tokenizer's vocabulary size."""

class Grammar:
    """A compiled grammar for one vocabulary, shared by matchers."""

    @staticmethod
    def load(path: _Path, tokenizer: Tokenizer) -> "Grammar":
        """Maps an artifact and checks it was compiled for ``tokenizer``."""
    def save(self, path: _Path) -> None:
        """Writes the artifact (temporary file + rename)."""
    @property
    def vocab_size(self) -> int:
        """Number of token ids."""
    @property
    def bitmask_words(self) -> int:
        """int32 words per bitmask row."""
    @property
    def eos_id(self) -> int:
        """The EOS token id."""
    @property
    def stats(self) -> Dict[str, Any]:
        """Sizes of the compiled grammar."""
    @property
    def warnings(self) -> List[str]:
        """JSON Schema keywords not enforced (``lenient=True`` compiles)."""

class Matcher:
    """One decoding session over a :class:`Grammar`."""

    def __init__(
        self,
        grammar: Grammar,
        max_rollback: Optional[int] = 32,
        max_step_work: Optional[int] = None,
        mask_cache: int = 8,
        work_per_byte: int = 1000,
        work_burst: int = 100_000_000,
    ) -> None:
        """A matcher that can roll back its last ``max_rollback`` commits (``None``: all);
        a commit needing more than ``max_step_work`` parsing work for one byte, or more
        than ``work_burst`` plus ``work_per_byte`` a byte over any stretch of bytes,
        raises :class:`WorkLimitError`; the last ``mask_cache`` distinct masks are kept
        and copied when they come again (one mask of memory each; 0: none)."""
    @property
    def max_rollback(self) -> Optional[int]:
        """How many of the last commits :meth:`rollback` can undo (``None``: unlimited)."""
    @property
    def mask_cache(self) -> int:
        """How many recent masks are kept to be copied instead of recomputed."""
    def accept_token(self, id: int) -> bool:
        """Commits a token; ``False`` (state unchanged) if rejected."""
    def accept_tokens(self, ids: Sequence[int]) -> bool:
        """Commits all of ``ids`` or none."""
    def accept_bytes(self, data: bytes) -> bool:
        """Commits raw bytes, all or nothing (one rollback step)."""
    def validate_tokens(self, ids: Sequence[int]) -> int:
        """How many of ``ids`` would be accepted in a row; state unchanged."""
    def rollback(self, n: int) -> None:
        """Undoes the last ``n`` commits; ``RollbackError`` past ``max_rollback``."""
    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> None:
        """Writes the allowed next tokens into row ``index`` of an int32 bitmask;
        ``WorkLimitError`` where a work limit cut the token-trie walk of a boundary the
        compiler left to it."""
    def is_accepting(self) -> bool:
        """Whether the text so far is complete (EOS allowed); ``WorkLimitError`` where
        deciding it needs more GLR work than ``max_step_work``."""
    def is_terminated(self) -> bool:
        """Whether EOS was accepted."""
    def reset(self) -> None:
        """Back to the start."""
    def copy(self) -> "Matcher":
        """An independent copy."""
    def __copy__(self) -> "Matcher": ...
    def __deepcopy__(self, memo: Any) -> "Matcher": ...
    def forced_bytes(self) -> bytes:
        """The bytes every continuation must start with (jump-forward)."""
    @property
    def bytes_consumed(self) -> int:
        """Bytes committed so far."""

def fill_next_token_bitmask_batch(
    matchers: Sequence[Matcher], bitmask: Any, indices: Optional[Sequence[int]] = None
) -> None:
    """Fills row ``indices[i]`` for ``matchers[i]`` in parallel, GIL released;
    ``WorkLimitError`` as ``Matcher.fill_next_token_bitmask``."""

def apply_token_bitmask_inplace_numpy(
    logits: Any, bitmask: Any, indices: Optional[Sequence[int]] = None
) -> None:
    """numpy implementation of :func:`stackmask.apply_token_bitmask_inplace`."""
