"""Shared fixtures: real tokenizers and grammars from the repository, compiled once per
test session, and a small byte-level vocabulary whose masks can be checked exhaustively."""

from pathlib import Path

import numpy as np
import pytest

import stackmask

REPO = Path(__file__).resolve().parents[2]
GRAMMARS = REPO / "grammars"
SHARED = REPO.parent / "shared"


def mask_bits(row: np.ndarray, vocab_size: int) -> np.ndarray:
    """The allowed token ids of one bitmask row, ascending."""
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:vocab_size]
    return np.flatnonzero(bits)


def commit_oracle(matcher: stackmask.Matcher, vocab_size: int) -> np.ndarray:
    """The tokens a copy of `matcher` accepts one by one: the mask by definition (a token
    is allowed iff committing it leaves a valid prefix), computed through commit and not
    through the compiled mask path."""
    return np.array(
        [t for t in range(vocab_size) if matcher.copy().accept_token(t)], dtype=np.int64
    )


@pytest.fixture(scope="session")
def o200k() -> stackmask.Tokenizer:
    return stackmask.Tokenizer.from_tiktoken("o200k_base")


@pytest.fixture(scope="session")
def o200k_compiler(o200k) -> stackmask.Compiler:
    return stackmask.Compiler(o200k)


@pytest.fixture(scope="session")
def json_source() -> str:
    return (GRAMMARS / "json.lark").read_text()


@pytest.fixture(scope="session")
def json_grammar(o200k_compiler, json_source) -> stackmask.Grammar:
    return o200k_compiler.compile_lark(json_source, "json.lark")


@pytest.fixture(scope="session")
def small_tokenizer() -> stackmask.Tokenizer:
    """All single bytes, a few multi-byte tokens, EOS and a control token; ids 300/301
    are special, 302 unused."""
    tokens = [bytes([b]) for b in range(256)]
    tokens += [b"12", b"+1", b"(1", b" * ", b"1)", b"))", b"((", b"-(", b" ", b"  "]
    tokens += [None] * (300 - len(tokens))
    tokens += [b"<eos>", b"<ctl>", None]
    return stackmask.Tokenizer.from_tokens(tokens, eos_id=300, special_ids=[301])


@pytest.fixture(scope="session")
def expr_grammar(small_tokenizer) -> stackmask.Grammar:
    return stackmask.Compiler(small_tokenizer).compile_lark(
        (GRAMMARS / "expr.lark").read_text(), "expr.lark"
    )
