"""Compiling (Lark, regex), errors, limits, save/load and corrupted artifacts."""

import numpy as np
import pytest

import stackmask
from conftest import commit_oracle, mask_bits


def test_stats(json_grammar, o200k):
    s = json_grammar.stats
    assert s["grammar_name"] == "json.lark"
    assert s["tokenizer"] == "tiktoken:o200k_base"
    assert s["vocab_size"] == o200k.vocab_size
    assert s["vocab_hash"] == o200k.vocab_hash
    assert s["lr_conflicts"] == 0
    assert s["lr_states"] > 0 and s["parser_dwa_states"] > 0
    assert s["artifact_bytes"] > 0
    assert s["compile_seconds"] > 0
    assert json_grammar.bitmask_words == (o200k.vocab_size + 31) // 32
    assert json_grammar.eos_id == o200k.eos_id


def test_grammar_error_has_location(o200k_compiler):
    src = 'start: "a" b\nb: "x"\n  | undefined_rule\n'
    with pytest.raises(stackmask.GrammarError) as e:
        o200k_compiler.compile_lark(src, "bad.lark")
    assert str(e.value).startswith("bad.lark:3:5:")
    assert "undefined_rule" in str(e.value)
    assert (e.value.source_name, e.value.line, e.value.col) == ("bad.lark", 3, 5)
    assert isinstance(e.value, stackmask.StackmaskError)


def test_syntax_error_says_what_was_expected(o200k_compiler):
    with pytest.raises(stackmask.GrammarError, match=r"^<grammar>:1:\d+: .*expected"):
        o200k_compiler.compile_lark("start: (")


def test_unsupported_regex_feature_is_named(o200k_compiler):
    with pytest.raises(stackmask.GrammarError, match="backreference"):
        o200k_compiler.compile_regex(r"(a)\1")


def test_limit_is_named(o200k_compiler, json_source):
    with pytest.raises(stackmask.CompileLimitError, match="max_lr_states"):
        o200k_compiler.compile_lark(json_source, max_lr_states=5)
    with pytest.raises(stackmask.CompileLimitError, match="max_table_bytes"):
        o200k_compiler.compile_lark(json_source, max_table_bytes=1000)
    with pytest.raises(stackmask.CompileLimitError, match="max_dwa_states"):
        o200k_compiler.compile_lark(json_source, max_dwa_states=3)


@pytest.mark.parametrize(
    "pattern, good, bad",
    [
        (r"a/b[0-9]+", [b"a/b1", b"a/b42"], [b"a/b", b"ab1", b"a/b1x"]),
        (r"x\/y", [b"x/y"], [b"x\\/y"]),
        ("line\nbreak", [b"line\nbreak"], [b"linebreak"]),
        (r"[/]{2}", [b"//"], [b"/"]),
    ],
)
def test_regex(small_tokenizer, pattern, good, bad):
    g = stackmask.Compiler(small_tokenizer).compile_regex(pattern)
    for text in good:
        m = stackmask.Matcher(g)
        assert m.accept_bytes(text), text
        assert m.is_accepting(), text
    for text in bad:
        m = stackmask.Matcher(g)
        assert not (m.accept_bytes(text) and m.is_accepting()), text


def test_regex_trailing_backslash(small_tokenizer):
    with pytest.raises(stackmask.GrammarError, match="lone backslash"):
        stackmask.Compiler(small_tokenizer).compile_regex("ab\\")


def test_regex_mask_equals_commit_oracle(small_tokenizer):
    g = stackmask.Compiler(small_tokenizer).compile_regex(r"\(1[+*]1\)")
    m = stackmask.Matcher(g)
    bm = stackmask.allocate_token_bitmask(1, g.vocab_size)
    for step in [b"(", b"1", b"+", b"1", b")"]:
        m.fill_next_token_bitmask(bm)
        assert list(mask_bits(bm[0], g.vocab_size)) == list(commit_oracle(m, g.vocab_size))
        assert m.accept_bytes(step)
    m.fill_next_token_bitmask(bm)
    assert list(mask_bits(bm[0], g.vocab_size)) == [small_tokenizer.eos_id]


def test_save_load_roundtrip(tmp_path, json_grammar, o200k, o200k_compiler):
    path = tmp_path / "json.smask"
    json_grammar.save(path)
    loaded = stackmask.Grammar.load(path, o200k)
    loaded2 = o200k_compiler.load(str(path))
    assert loaded.stats["grammar_hash"] == json_grammar.stats["grammar_hash"]
    assert loaded.stats["compile_seconds"] is None
    ids = o200k.encode('{"k": [1, true]}')
    masks = []
    for g in (json_grammar, loaded, loaded2):
        m = stackmask.Matcher(g)
        bm = stackmask.allocate_token_bitmask(len(ids) + 1, g.vocab_size)
        for i, t in enumerate(ids):
            m.fill_next_token_bitmask(bm, i)
            assert m.accept_token(t)
        m.fill_next_token_bitmask(bm, len(ids))
        masks.append(bm)
    assert np.array_equal(masks[0], masks[1]) and np.array_equal(masks[0], masks[2])


def test_load_checks_the_vocabulary(tmp_path, json_grammar, small_tokenizer):
    path = tmp_path / "json.smask"
    json_grammar.save(path)
    with pytest.raises(stackmask.ArtifactError, match="another vocabulary"):
        stackmask.Grammar.load(path, small_tokenizer)
    with pytest.raises(stackmask.ArtifactError, match="another vocabulary"):
        stackmask.Compiler(small_tokenizer).load(path)


def test_corrupted_artifacts_are_errors(tmp_path, expr_grammar, small_tokenizer):
    path = tmp_path / "expr.smask"
    expr_grammar.save(path)
    data = path.read_bytes()
    cases = {
        "empty": b"",
        "truncated": data[: len(data) // 2],
        "header only": data[:64],
        "garbage": b"not an artifact" * 100,
    }
    rng = np.random.default_rng(7)
    for i in range(8):
        flipped = bytearray(data)
        pos = int(rng.integers(0, len(data)))
        flipped[pos] ^= 0x5A
        cases[f"flipped byte {pos}"] = bytes(flipped)
    for name, contents in cases.items():
        bad = tmp_path / "bad.smask"
        bad.write_bytes(contents)
        with pytest.raises(stackmask.ArtifactError):
            stackmask.Grammar.load(bad, small_tokenizer)
            pytest.fail(f"{name}: loaded")
    with pytest.raises(stackmask.ArtifactError, match="missing.smask"):
        stackmask.Grammar.load(tmp_path / "missing.smask", small_tokenizer)


def test_save_to_bad_path_is_an_error(tmp_path, expr_grammar):
    with pytest.raises(stackmask.ArtifactError, match="no-such-dir"):
        expr_grammar.save(tmp_path / "no-such-dir" / "x.smask")
