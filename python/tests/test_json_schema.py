"""JSON Schemas through Compiler.compile_json_schema: valid instances accepted, invalid
ones rejected, masks exact against the commit oracle, unsupported keywords named."""

import json

import numpy as np
import pytest

import stackmask
from conftest import commit_oracle, mask_bits

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 3},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def person(small_tokenizer):
    return stackmask.Compiler(small_tokenizer).compile_json_schema(SCHEMA)


def accepts(grammar, text: bytes) -> bool:
    m = stackmask.Matcher(grammar)
    return m.accept_bytes(text) and m.is_accepting()


@pytest.mark.parametrize(
    "instance",
    [
        {"name": "Ann", "age": 42},
        {"name": "", "age": 0, "tags": ["a", "b"]},
        {"name": "Bo", "age": 150, "tags": []},
    ],
)
def test_valid_instances_are_accepted(person, instance):
    text = json.dumps(instance, separators=(",", ":")).encode()
    assert accepts(person, text), text


@pytest.mark.parametrize(
    "text",
    [
        b'{"name":"Anna","age":42}',  # maxLength 3
        b'{"name":"Ann","age":151}',  # maximum
        b'{"name":"Ann","age":-1}',  # minimum
        b'{"name":"Ann"}',  # required age
        b'{"name":"Ann","age":1,"x":1}',  # additionalProperties false
        b'{"name":"Ann","age":1,"tags":["c"]}',  # enum
        b'{"name":"Ann","age":1,"tags":["a","a","b"]}',  # maxItems
        b'{"name":"Ann","age":1.5}',  # integer
    ],
)
def test_invalid_instances_are_rejected(person, text):
    assert not accepts(person, text), text


def test_dict_and_text_compile_to_the_same_language(small_tokenizer, person):
    from_text = stackmask.Compiler(small_tokenizer).compile_json_schema(json.dumps(SCHEMA))
    for text in (b'{"name":"Ann","age":42}', b'{"name":"Ann","age":420}'):
        assert accepts(from_text, text) == accepts(person, text)


def test_masks_match_the_commit_oracle(person, small_tokenizer):
    m = stackmask.Matcher(person)
    bitmask = stackmask.allocate_token_bitmask(1, small_tokenizer.vocab_size)
    for b in b'{"name":"Al","age":7}':
        m.fill_next_token_bitmask(bitmask)
        got = mask_bits(bitmask[0], small_tokenizer.vocab_size)
        assert np.array_equal(got, commit_oracle(m, small_tokenizer.vocab_size))
        assert m.accept_bytes(bytes([b]))
    assert m.is_accepting()


def test_unsupported_keyword_is_named_or_listed(small_tokenizer):
    schema = {"type": "array", "contains": {"type": "integer"}}
    c = stackmask.Compiler(small_tokenizer)
    with pytest.raises(stackmask.GrammarError, match="contains"):
        c.compile_json_schema(schema)
    g = c.compile_json_schema(schema, lenient=True)
    assert any("contains" in w and "#" in w for w in g.warnings), g.warnings
    assert accepts(g, b"[1]")


def test_bad_options_are_refused(small_tokenizer):
    c = stackmask.Compiler(small_tokenizer)
    with pytest.raises(ValueError, match="whitespace"):
        c.compile_json_schema({}, whitespace="pretty")
    with pytest.raises(stackmask.GrammarError):
        c.compile_json_schema("{not json")
    g = c.compile_json_schema({"type": "integer"}, whitespace="free")
    assert accepts(g, b"12") and np.asarray(g.warnings).size == 0


def test_property_order_any_accepts_every_order(small_tokenizer):
    c = stackmask.Compiler(small_tokenizer)
    declared = c.compile_json_schema(SCHEMA)
    anyorder = c.compile_json_schema(SCHEMA, property_order="any")
    for text in [b'{"age":42,"name":"Ann"}', b'{"tags":["a"],"age":1,"name":""}']:
        assert accepts(anyorder, text), text
        assert not accepts(declared, text), text
    for text in [b'{"age":42,"name":"Ann","age":1}', b'{"age":42}']:
        assert not accepts(anyorder, text), text
    with pytest.raises(ValueError, match="property_order"):
        c.compile_json_schema({}, property_order="shuffled")
    wide = {"properties": {f"p{i}": {} for i in range(12)}}
    with pytest.raises(stackmask.GrammarError, match="the limit on any-order objects"):
        c.compile_json_schema(wide, property_order="any")
    lenient = c.compile_json_schema(wide, property_order="any", lenient=True)
    assert any("declared order" in w for w in map(str, lenient.warnings))
    # any-or-declared: the wide object falls back with a warning, strict too; the
    # outer object stays in any order.
    nested = {"properties": {"wide": wide, "n": {"type": "integer"}}}
    auto = c.compile_json_schema(nested, property_order="any-or-declared")
    assert any("any-or-declared" in w for w in map(str, auto.warnings))
    assert accepts(auto, b'{"wide":{"p0":1},"n":2}')
    assert accepts(auto, b'{"n":2,"wide":{"p0":1,"p11":3}}')
    assert not accepts(auto, b'{"wide":{"p11":3,"p0":1}}')
