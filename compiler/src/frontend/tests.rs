//! End-to-end tests of [`super::parse_grammar`]: the IR shape each construct produces,
//! and the exact `file:line:col` and message of each error.

use stackmask_formats::grammar::{Grammar, Location};

use super::{parse_grammar, GrammarErrorKind};

fn grammar(src: &str) -> Grammar {
    parse_grammar(src, "g.lark").unwrap_or_else(|e| panic!("{e}"))
}

/// The productions as `lhs -> sym sym` (`lhs -> ε` for empty ones), in IR order.
fn rules(g: &Grammar) -> Vec<String> {
    g.rules
        .iter()
        .map(|r| {
            let rhs: Vec<&str> = r.rhs.iter().map(|&s| g.symbol_name(s)).collect();
            let rhs = if rhs.is_empty() {
                "ε".to_string()
            } else {
                rhs.join(" ")
            };
            format!("{} -> {}", g.nonterminals[r.lhs as usize].name, rhs)
        })
        .collect()
}

/// `name = regex` for every terminal, in IR order.
fn terminals(g: &Grammar) -> Vec<String> {
    g.terminals
        .iter()
        .map(|t| format!("{} = {}", t.name, t.regex))
        .collect()
}

fn error(src: &str) -> String {
    match parse_grammar(src, "g.lark") {
        Ok(g) => panic!("expected an error, got {:?}", rules(&g)),
        Err(e) => e.to_string(),
    }
}

fn error_kind(src: &str) -> GrammarErrorKind {
    parse_grammar(src, "g.lark")
        .expect_err("expected an error")
        .kind
}

// ---------------------------------------------------------------------------------------
// Constructs
// ---------------------------------------------------------------------------------------

#[test]
fn rules_alternatives_and_literals() {
    let g = grammar("start: \"a\" b\nb: \"c\" | \"d\"\n");
    assert_eq!(rules(&g), ["start -> \"a\" b", "b -> \"c\"", "b -> \"d\""]);
    assert_eq!(terminals(&g), ["\"a\" = a", "\"c\" = c", "\"d\" = d"]);
    assert_eq!(g.nonterminals.len(), 2);
    assert_eq!(g.nonterminals[g.start as usize].name, "start");
    assert_eq!(g.source_name, "g.lark");
    assert!(g.ignore.is_empty());
    assert!(!g.allow_initial_skip);
}

#[test]
fn llguidance_no_forcing_is_accepted_as_a_no_op() {
    let g =
        grammar("%llguidance {\"no_forcing\": true, \"allow_initial_skip\": true}\nstart: \"a\"\n");
    assert!(g.allow_initial_skip);
    assert_eq!(rules(&g), ["start -> \"a\""]);
}

#[test]
fn alternatives_continue_on_following_lines() {
    let src = "// leading comment\n\nstart: a\n     | b   // c\n\n     # another comment\n     | \"z\"\na: \"x\"\nb: (\"y\"\n   \"w\")\n";
    let g = grammar(src);
    assert_eq!(
        rules(&g),
        [
            "start -> a",
            "start -> b",
            "start -> \"z\"",
            "a -> \"x\"",
            "b -> \"y\" \"w\""
        ]
    );
}

#[test]
fn empty_alternatives_and_empty_strings_are_epsilon() {
    let g = grammar("start: | \"a\" \"\" | (\"\" | \"b\") \"c\"\n");
    assert_eq!(
        rules(&g),
        [
            "start -> ε",
            "start -> \"a\"",
            "start -> __start_opt_0 \"c\"",
            "__start_opt_0 -> ε",
            "__start_opt_0 -> \"b\""
        ]
    );
}

#[test]
fn tree_shaping_modifiers_are_ignored() {
    let g = grammar("start: _a -> x\n?_a: b | \"q\" -> y\n!b.3: \"k\"\n");
    assert_eq!(
        rules(&g),
        ["start -> _a", "_a -> b", "_a -> \"q\"", "b -> \"k\""]
    );
}

#[test]
fn star_plus_and_optional_become_helpers() {
    let g = grammar("start: \"a\"* \"b\"+ \"c\"? [\"d\" \"e\"]\n");
    assert_eq!(
        rules(&g),
        [
            "start -> __start_star_0 __start_plus_1 __start_opt_2 __start_opt_3",
            "__start_star_0 -> __start_star_0 \"a\"",
            "__start_star_0 -> ε",
            "__start_plus_1 -> __start_plus_1 \"b\"",
            "__start_plus_1 -> \"b\"",
            "__start_opt_2 -> \"c\"",
            "__start_opt_2 -> ε",
            "__start_opt_3 -> \"d\" \"e\"",
            "__start_opt_3 -> ε",
        ]
    );
}

#[test]
fn groups_are_spliced_or_become_helpers() {
    let g = grammar("start: (\"a\" \"b\") (\"c\" | \"d\")* x\nx: (\"e\" | \"f\")\n");
    assert_eq!(
        rules(&g),
        [
            "start -> \"a\" \"b\" __start_star_0 x",
            "x -> __x_group_1",
            "__start_star_0 -> __start_star_0 \"c\"",
            "__start_star_0 -> __start_star_0 \"d\"",
            "__start_star_0 -> ε",
            "__x_group_1 -> \"e\"",
            "__x_group_1 -> \"f\"",
        ]
    );
}

#[test]
fn identical_helpers_are_shared() {
    let g = grammar("start: \"a\"* \"b\" \"a\"* | c\nc: \"a\"*\n");
    assert_eq!(
        rules(&g),
        [
            "start -> __start_star_0 \"b\" __start_star_0",
            "start -> c",
            "c -> __start_star_0",
            "__start_star_0 -> __start_star_0 \"a\"",
            "__start_star_0 -> ε",
        ]
    );
}

#[test]
fn star_of_something_with_an_empty_alternative_drops_it() {
    // `("a" | "")*` is `"a"*`; keeping the empty alternative would give `H -> H`.
    let g = grammar("start: (\"a\" | \"\")* (\"b\" | \"\")+\n");
    assert_eq!(
        rules(&g),
        [
            "start -> __start_star_0 __start_star_1",
            "__start_star_0 -> __start_star_0 \"a\"",
            "__start_star_0 -> ε",
            "__start_star_1 -> __start_star_1 \"b\"",
            "__start_star_1 -> ε",
        ]
    );
}

#[test]
fn bounded_repetition_is_expanded() {
    let g = grammar("start: \"a\" ~ 3\n");
    assert_eq!(rules(&g), ["start -> \"a\" \"a\" \"a\""]);

    let g = grammar("start: \"a\" ~ 1..3\n");
    assert_eq!(
        rules(&g),
        [
            "start -> \"a\" __start_rep_1",
            "__start_rep_0 -> \"a\"",
            "__start_rep_0 -> ε",
            "__start_rep_1 -> \"a\" __start_rep_0",
            "__start_rep_1 -> ε",
        ]
    );

    // llguidance's `{n,}` and `{,m}`, on a group with two alternatives.
    let g = grammar("start: (\"a\" | \"b\"){2,} \"c\"{,1}\n");
    assert_eq!(
        rules(&g),
        [
            "start -> __start_group_0 __start_group_0 __start_star_1 __start_rep_2",
            "__start_group_0 -> \"a\"",
            "__start_group_0 -> \"b\"",
            "__start_star_1 -> __start_star_1 \"a\"",
            "__start_star_1 -> __start_star_1 \"b\"",
            "__start_star_1 -> ε",
            "__start_rep_2 -> \"c\"",
            "__start_rep_2 -> ε",
        ]
    );
}

#[test]
fn anonymous_terminals_are_deduplicated_and_reuse_named_ones() {
    let g = grammar("start: \"(\" x \")\" \"(\" COMMA \",\"\nx: \",\" /[0-9]+/ /[0-9]+/ NUM\nCOMMA: \",\"\nNUM: /[0-9]+/\n");
    assert_eq!(
        rules(&g),
        [
            "start -> \"(\" x \")\" \"(\" COMMA COMMA",
            "x -> COMMA NUM NUM NUM"
        ]
    );
    assert_eq!(
        terminals(&g),
        [
            "\"(\" = \\(",
            "\")\" = \\)",
            "COMMA = ,",
            "NUM = (?:[0-9]+)"
        ]
    );
}

#[test]
fn lazy_terminals_are_not_reused_for_literals() {
    let g = grammar("start: A \"a\"\nA[lazy]: \"a\"\n");
    assert_eq!(rules(&g), ["start -> A \"a\""]);
    assert!(g.terminals[0].lazy);
    assert!(!g.terminals[1].lazy);
}

#[test]
fn literal_flags_ranges_and_escapes() {
    let g = grammar("start: \"select\"i /a.b/si \"a\"..\"f\" \"\\t\\\"*\" /x\\/y/\n");
    assert_eq!(
        terminals(&g),
        [
            "\"select\"i = (?i:select)",
            "/a.b/si = (?si:a.b)",
            "\"a\"..\"f\" = [a-f]",
            "\"\\t\\\"*\" = \\x{9}\"\\*",
            "/x\\/y/ = (?:x/y)",
        ]
    );
}

#[test]
fn terminals_are_expanded_and_unused_ones_dropped() {
    let g = grammar("start: NAME\nNAME: LETTER (LETTER | DIGIT)*\nLETTER: \"a\"..\"z\"\nDIGIT: \"0\"..\"9\"\nUNUSED: \"u\"\n");
    assert_eq!(terminals(&g), ["NAME = [a-z](?:[a-z]|[0-9])*"]);
    assert_eq!(
        g.terminals[0].defined_at,
        Some(Location { line: 2, col: 1 })
    );
}

#[test]
fn unreachable_rules_are_dropped() {
    let g = grammar("start: \"a\"\nother: \"b\" other2\nother2: \"c\"\n");
    assert_eq!(rules(&g), ["start -> \"a\""]);
    assert_eq!(g.nonterminals.len(), 1);
    assert_eq!(terminals(&g), ["\"a\" = a"]);
}

#[test]
fn priorities() {
    let g = grammar("start.5: A B C\nA.2: \"a\"\nB.-1: \"b\"\nC: \"c\"\n");
    let prio: Vec<i32> = g.terminals.iter().map(|t| t.priority).collect();
    assert_eq!(prio, [2, -1, 0]);
}

#[test]
fn ignore_directives() {
    let g = grammar(
        "%import common.WS\n%ignore WS\n%ignore \"#\" /[^\\n]*/\n%ignore WS\nstart: \"a\"\n",
    );
    assert_eq!(
        terminals(&g),
        [
            "\"a\" = a",
            "WS = (?:[ \\t\\f\\r\\n])+",
            "\"#\" /[^\\n]*/ = \\#(?:[^\\n]*)"
        ]
    );
    assert_eq!(g.ignore, [1, 2]);
    assert!(g.is_ignore(1) && !g.is_ignore(0));
    // An ignored literal that a named terminal defines reuses it.
    let g = grammar("start: \"a\"\nSP: \" \"\n%ignore \" \"\n");
    assert_eq!(terminals(&g), ["\"a\" = a", "SP =  "]);
}

#[test]
fn imports_from_common() {
    let g = grammar("%import common (INT, WS_INLINE)\n%import common.CNAME -> NAME\n%import common.ESCAPED_STRING\nstart: NAME INT ESCAPED_STRING\n%ignore WS_INLINE\n");
    let names: Vec<&str> = g.terminals.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["NAME", "INT", "ESCAPED_STRING", "WS_INLINE"]);
    assert_eq!(g.terminals[1].regex, "[0-9]+");
    // Imported terminals point at the import.
    assert_eq!(
        g.terminals[0].defined_at,
        Some(Location { line: 2, col: 25 })
    );
    let g = grammar("%import unicode.WS\nstart: WS\n");
    assert_eq!(terminals(&g), ["WS = (?:[ \\t\\xa0\\f\\r\\n])+"]);
}

#[test]
fn llguidance_directive_and_lazy() {
    let g = grammar(
        "%llguidance {\"allow_initial_skip\": true}\nstart: TEXT \"!\"\nTEXT[lazy]: /.+/\n",
    );
    assert!(g.allow_initial_skip);
    assert!(g.terminals[0].lazy);
    assert!(!grammar("%llguidance {}\nstart: \"a\"").allow_initial_skip);
}

#[test]
fn lazy_rules_become_lazy_terminals() {
    // llguidance: a rule with `[lazy]` is one lexeme.
    let g = grammar("start: head \"ok\" | TEXT\nhead[lazy]: /.*<call>/s\nTEXT: /.+/\n");
    assert_eq!(rules(&g), ["start -> head \"ok\"", "start -> TEXT"]);
    assert_eq!(
        terminals(&g),
        ["head = (?s:.*<call>)", "\"ok\" = ok", "TEXT = (?:.+)"]
    );
    assert!(g.terminals[0].lazy && !g.terminals[2].lazy);
    // A lazy `start` is wrapped in a rule.
    let g = grammar("\u{feff}start[lazy]: /.*END/\n");
    assert_eq!(rules(&g), ["start -> start"]);
    assert_eq!(terminals(&g), ["start = (?:.*END)"]);
    assert_eq!(
        error("start: head\nhead[lazy]: \"a\" b\nb: \"b\"\n"),
        "g.lark:2:17: terminal `head` refers to rule `b`; terminals may only use literals, regexes and other terminals"
    );
    assert_eq!(
        error("start: \"a\"\n_t{x}[lazy]: x\n"),
        "g.lark:2:7: unsupported attribute `lazy`: a template cannot be lazy"
    );
}

#[test]
fn templates_are_instantiated() {
    let g =
        grammar("_sep{x, s}: x (s x)*\nstart: _sep{item, \",\"} _sep{\"z\", \";\"}\nitem: \"i\"\n");
    assert_eq!(
        rules(&g),
        [
            "start -> _sep{item, \",\"} _sep{\"z\", \";\"}",
            "item -> \"i\"",
            "_sep{item, \",\"} -> item ___sep{item, \",\"}_star_0",
            "___sep{item, \",\"}_star_0 -> ___sep{item, \",\"}_star_0 \",\" item",
            "___sep{item, \",\"}_star_0 -> ε",
            "_sep{\"z\", \";\"} -> \"z\" ___sep{\"z\", \";\"}_star_1",
            "___sep{\"z\", \";\"}_star_1 -> ___sep{\"z\", \";\"}_star_1 \";\" \"z\"",
            "___sep{\"z\", \";\"}_star_1 -> ε",
        ]
    );
    // Templates calling templates, with the caller's parameter as argument.
    let g = grammar("_list{x}: \"[\" _sep{x} \"]\"\n_sep{y}: y (\",\" y)*\nstart: _list{\"a\"}\n");
    assert_eq!(g.nonterminals.len(), 4);
    assert_eq!(g.nonterminals[1].name, "_list{\"a\"}");
    assert_eq!(g.nonterminals[2].name, "_sep{\"a\"}");
}

#[test]
fn recursion_is_kept() {
    let g = grammar("start: \"(\" start \")\" | \"x\"\n");
    assert_eq!(rules(&g), ["start -> \"(\" start \")\"", "start -> \"x\""]);
}

// ---------------------------------------------------------------------------------------
// Errors: exact location and message
// ---------------------------------------------------------------------------------------

#[test]
fn syntax_errors_say_what_was_expected() {
    assert_eq!(
        error("start: \"a\" )\n"),
        "g.lark:1:12: unexpected `)`; expected one of `|`, end of line"
    );
    assert_eq!(
        error("start \"a\"\n"),
        "g.lark:1:7: unexpected string literal `\"a\"`; expected one of `.`, `:`, `[`, `{`"
    );
    assert_eq!(
        error("start: (\"a\"\n"),
        "g.lark:1:12: unexpected end of input; expected one of `)`, `|`"
    );
    assert_eq!(error("a: \"x\"\n: \"y\"\n"), "g.lark:2:1: unexpected `:`; expected one of `!`, `%declare`, `%extend`, `%ignore`, `%import`, `%llguidance`, `%override`, `?`, rule name, terminal name");
    assert_eq!(
        error("start: \"a\" \"b\nx: y\n"),
        "g.lark:1:12: unterminated string literal"
    );
    assert_eq!(
        error("start: /a\nb/\n"),
        "g.lark:1:8: unterminated regex literal (a regex may contain line breaks only with the `x` flag)"
    );
    assert_eq!(
        error("start: \"\\x4\"\n"),
        "g.lark:1:9: invalid escape `\\x4` in string literal"
    );
    assert_eq!(
        error("start: \"a\" ; \n"),
        "g.lark:1:12: unexpected character `;`"
    );
    assert!(matches!(
        error_kind("start: \"a\" )"),
        GrammarErrorKind::Syntax { .. }
    ));
}

#[test]
fn undefined_names_are_reported_at_the_use() {
    assert_eq!(
        error("start: a b\na: \"x\"\n"),
        "g.lark:1:10: undefined rule `b`"
    );
    assert_eq!(
        error("start: \"x\"\n  | X\n"),
        "g.lark:2:5: undefined terminal `X`"
    );
    assert_eq!(
        error("start: \"x\"\nunused: y\n"),
        "g.lark:2:9: undefined rule `y`"
    );
    assert_eq!(
        error("%ignore WS\nstart: \"a\"\n"),
        "g.lark:1:9: undefined terminal `WS`"
    );
    assert_eq!(
        error("%import common.BLAH\nstart: BLAH\n"),
        "g.lark:1:16: undefined terminal `common.BLAH`"
    );
    assert_eq!(
        error("root: \"a\"\n"),
        "g.lark:1:1: no `start` rule: the start symbol is the rule named `start`"
    );
}

#[test]
fn duplicates_are_reported_at_the_second_definition() {
    assert_eq!(
        error("start: \"a\"\nfoo: \"b\"\n\nfoo: \"c\"\n"),
        "g.lark:4:1: `foo` is already defined at 2:1"
    );
    assert_eq!(
        error("start: A\nA: \"a\"\n  A: \"b\"\n"),
        "g.lark:3:3: `A` is already defined at 2:1"
    );
    assert_eq!(
        error("%import common.WS\nstart: WS\nWS: \" \"\n"),
        "g.lark:3:1: `WS` is already defined at 1:16"
    );
    assert_eq!(
        error("%import common.INT -> N\n%import common.WS -> N\nstart: N\n"),
        "g.lark:2:22: `N` is already defined at 1:23"
    );
}

#[test]
fn empty_terminals() {
    const H: &str = " (a terminal matches at least one byte; in a rule, write `X?` for an \
                     optional terminal, and `\"\"` for the empty sequence)";
    assert_eq!(
        error("start: A\nA: /a*/\n"),
        format!("g.lark:2:1: `A` is a terminal that can match the empty string{H}")
    );
    assert_eq!(
        error("start: \"x\" /b?/\n"),
        format!("g.lark:1:12: `/b?/` is a terminal that can match the empty string{H}")
    );
    assert_eq!(
        error("start: \"x\"\n%ignore /\\s*/\n"),
        format!("g.lark:2:9: `/\\s*/` is a terminal that can match the empty string{H}")
    );
    // Issue 11 (10): `""` in a rule is the empty sequence (llguidance's reading), a
    // terminal defined as `""` is an empty terminal: the message says which to write.
    assert_eq!(
        error("start: A\nA: \"\"\n"),
        format!("g.lark:2:1: `A` is a terminal that can match the empty string{H}")
    );
    grammar("start: \"\"\n");
    grammar("start: \"a\" \"\"\n");
    // Fragments used only inside other terminals may match the empty string.
    let g = grammar("start: A\nA: \"a\" E\nE: /e*/\nUNUSED: /u*/\n");
    assert_eq!(terminals(&g), ["A = a(?:e*)"]);
}

#[test]
fn unsupported_regex_features_point_at_the_regex() {
    assert_eq!(
        error("start: A\nA: \"x\"  /a(?=b)/\n"),
        "g.lark:2:9: unsupported regex feature: lookahead `(?=...)`"
    );
    assert_eq!(
        error("start: /(a)\\1/\n"),
        "g.lark:1:8: unsupported regex feature: backreference `\\N`"
    );
    assert!(error_kind("start: /\\bx/").is_unsupported());
    assert_eq!(
        error("start: \"a\" /[a/\n"),
        "g.lark:1:12: invalid regex: unclosed character class"
    );
    assert_eq!(
        error("start: /a/l\n"),
        "g.lark:1:8: unsupported regex feature: flag `l` (locale-dependent matching)"
    );
}

#[test]
fn unsupported_directives() {
    assert_eq!(
        error("start: A\n%declare A\n"),
        "g.lark:2:1: unsupported directive: `%declare` (terminals made by a post-lexer, like Python's _INDENT/_DEDENT, are not regular languages)"
    );
    assert_eq!(
        error("start: a\n%import .other (a)\n"),
        "g.lark:2:1: unsupported directive: `%import` from `.other` (only the built-in `common` and `unicode` libraries can be imported)"
    );
    assert_eq!(
        error("%import python.NAME\nstart: NAME\n"),
        "g.lark:1:1: unsupported directive: `%import` from `python` (only the built-in `common` and `unicode` libraries can be imported)"
    );
    assert_eq!(
        error("start: a\n%override a: \"b\"\n"),
        "g.lark:2:1: unsupported directive: `%override` (it only applies to rules imported from other grammars)"
    );
    assert_eq!(
        error("%llguidance {\"allow_initial_skip\": true, \"no_forcing\": false}\nstart: \"a\"\n"),
        "g.lark:1:1: unsupported directive: `%llguidance` key `no_forcing`"
    );
    assert_eq!(
        error("%llguidance {\"max_tokens\": 3}\nstart: \"a\"\n"),
        "g.lark:1:1: unsupported directive: `%llguidance` key `max_tokens`"
    );
    assert_eq!(
        error("%llguidance {\"allow_initial_skip\": 1}\nstart: \"a\"\n"),
        "g.lark:1:1: invalid directive: `allow_initial_skip` must be true or false"
    );
    assert_eq!(
        error("start: %regex {}\n"),
        "g.lark:1:8: unsupported directive: `%regex` (llguidance)"
    );
    assert_eq!(
        error("%foo x\n"),
        "g.lark:1:1: unsupported directive: `%foo`"
    );
    assert_eq!(
        error("start: a\na[max_tokens=5]: \"x\"\n"),
        "g.lark:2:3: unsupported attribute `max_tokens`: only `lazy` is supported"
    );
    assert!(error_kind("start: \"a\" <|eos|>").is_unsupported());
    assert!(error_kind("start: A\nA: /a/ & /b/").is_unsupported());
    assert!(error_kind("start: a::0").is_unsupported());
}

#[test]
fn unproductive_rules() {
    assert_eq!(
        error("start: a\na: \"x\" a\n"),
        "g.lark:2:1: rule `a` derives no finite string of terminals (every alternative recurses without reaching a base case)"
    );
    // The culprit is the recursion, not the rules that only use it.
    assert_eq!(
        error("start: b | c\nb: \"x\" c\nc: \"(\" c \")\" \"y\"+\n"),
        "g.lark:3:1: rule `c` derives no finite string of terminals (every alternative recurses without reaching a base case)"
    );
    // Unreachable unproductive rules are simply dropped.
    grammar("start: \"a\"\nloop: loop \"x\"\n");
}

#[test]
fn cyclic_derivations() {
    assert_eq!(
        error("start: a\na: b | \"x\"\nb: a\n"),
        "g.lark:2:1: cyclic derivation a => b => a (a rule derives itself without consuming input)"
    );
    // Through a nullable neighbour.
    assert_eq!(
        error("start: a\na: b a | \"x\"\nb: \"y\"?\n"),
        "g.lark:2:1: cyclic derivation a => a (a rule derives itself without consuming input)"
    );
    assert!(matches!(
        error_kind("start: start | \"a\""),
        GrammarErrorKind::CyclicUnitRules { .. }
    ));
}

#[test]
fn template_errors() {
    assert_eq!(
        error("_sep{x, s}: x (s x)*\nstart: _sep{\"a\"}\n"),
        "g.lark:2:8: template `_sep`: takes 2 argument(s), but 1 are given"
    );
    assert_eq!(
        error("a: \"a\"\nstart: a{\"b\"}\n"),
        "g.lark:2:8: template `a`: is not a template, but is given arguments"
    );
    assert_eq!(
        error("_t{x}: x\nstart: _t\n"),
        "g.lark:2:8: template `_t`: is a template and needs 1 argument(s): `_t{...}`"
    );
}

#[test]
fn other_errors() {
    assert_eq!(
        error("start: a\n%ignore a\na: \"x\"\n"),
        "g.lark:2:9: `%ignore` needs a terminal, but `a` is a rule"
    );
    assert_eq!(
        error("start: \"a\" ~ 3..2\n"),
        "g.lark:1:8: invalid repetition: range end 2 must be >= start 3"
    );
    assert_eq!(
        error("start: \"a\" ~ 20000\n"),
        "g.lark:1:8: invalid repetition: count 20000 is too large (the limit is 10000)"
    );
    assert_eq!(
        error("start: \"ab\"..\"c\"\n"),
        "g.lark:1:8: invalid character range: range start \"ab\" must be a single character"
    );
    assert_eq!(
        error("start: A\nA: \"a\" b\nb: \"b\"\n"),
        "g.lark:2:8: terminal `A` refers to rule `b`; terminals may only use literals, regexes and other terminals"
    );
}

#[test]
fn limits_end_in_located_errors_not_stack_overflows_or_oom() {
    // Deep nesting: rejected by the lexer before anything recurses over it (100k levels
    // would overflow the stack of the recursive stages, and of the tree's drop).
    for depth in [300, 100_000] {
        for (open, close) in [("(", ")"), ("[", "]")] {
            let src = format!(
                "start: {}\"a\"{}\n",
                open.repeat(depth),
                close.repeat(depth)
            );
            assert_eq!(
                error(&src),
                "g.lark:1:264: brackets nested more than 256 levels deep"
            );
        }
        let src = format!(
            "A: {}\"a\"{}\nstart: A\n",
            "(".repeat(depth),
            ")".repeat(depth)
        );
        assert!(error(&src).contains("nested more than 256"), "{src:.40}");
    }
    grammar(&format!(
        "start: {}\"a\"{}\n",
        "(".repeat(200),
        ")".repeat(200)
    ));

    // A template that instantiates itself with growing arguments.
    let e = error("start: t{\"a\"}\nt{x}: x | t{u{x}}\nu{y}: y y\n");
    assert!(
        e.starts_with("g.lark:2:13: template `u`: instantiations nested")
            && e.ends_with("exceeds the limit of 64 levels"),
        "{e}"
    );

    // Nested repetitions multiply.
    assert_eq!(
        error("start: (\"a\" ~ 10000) ~ 10000\n"),
        "g.lark:1:8: symbols written out by `~ n..m` repetitions exceeds the limit of 1048576 symbols in all"
    );

    // Terminals that double at every level, and long chains of terminals.
    let mut src = String::from("start: A40\nA0: \"ab\"\n");
    for i in 1..=40 {
        src.push_str(&format!("A{i}: A{} A{}\n", i - 1, i - 1));
    }
    let e = error(&src);
    assert!(
        e.contains("its expanded regex exceeds the limit of 1048576 bytes"),
        "{e}"
    );
    // Defined top-down, so that expanding the first one recurses through all of them.
    let mut src = String::from("start: A1000\n");
    for i in (1..=1000).rev() {
        src.push_str(&format!("A{i}: A{} \"b\"\n", i - 1));
    }
    src.push_str("A0: \"a\"\n");
    let e = error(&src);
    assert!(
        e.contains(
            "terminals defined through other terminals exceeds the limit of 256 levels deep"
        ),
        "{e}"
    );
}

#[test]
fn terminals_with_an_empty_language_are_errors() {
    assert_eq!(
        error("start: A | \"b\"\nA: /[^\\s\\S]/\n"),
        "g.lark:2:1: `A` is a terminal that matches nothing (its language is empty)"
    );
}

#[test]
fn ignoring_an_undefined_name_says_it_is_undefined() {
    assert_eq!(
        error("start: \"a\"\n%ignore ws\n"),
        "g.lark:2:9: undefined terminal `ws`"
    );
}

#[test]
fn invalid_utf8_is_located() {
    let e = super::grammar_text(b"start: \"a\"\n  \"\xff\"\n".to_vec(), "g.lark").unwrap_err();
    assert_eq!(
        e.to_string(),
        "g.lark:2:4: invalid UTF-8 (grammar files are UTF-8 text)"
    );
    assert_eq!(
        super::grammar_text(b"start: \"\xc3\xa9\"".to_vec(), "g.lark").unwrap(),
        "start: \"é\""
    );
}

#[test]
fn columns_after_a_byte_order_mark() {
    assert_eq!(
        error("\u{feff}start: foo\n"),
        "g.lark:1:8: undefined rule `foo`"
    );
}

#[test]
fn loops_over_nullable_items_are_not_cycles() {
    // `("a"?)*` would be `H -> H opt | ε` with `opt -> "a" | ε`: `H => H`. The loop is
    // rewritten over an ε-free copy (the languages are compared in the tests crate).
    let g = grammar("start: (\"a\"?)*\n");
    assert_eq!(
        rules(&g),
        [
            "start -> __start_star_1",
            "__start_star_1 -> __start_star_1 __start_opt_0_nonempty",
            "__start_star_1 -> ε",
            "__start_opt_0_nonempty -> \"a\"",
        ]
    );
    grammar("start: item+ \"b\"\nitem: \"a\" |\n");
    grammar("start: (\"a\"? \"b\"?)* \"c\"\n");
}

#[test]
fn error_display_uses_the_source_name() {
    let e = parse_grammar("start: x", "dir/my.lark").unwrap_err();
    assert_eq!((e.line, e.col), (1, 8));
    assert_eq!(e.source_name, "dir/my.lark");
    assert!(e.to_string().starts_with("dir/my.lark:1:8: "));
}

// ---------------------------------------------------------------------------------------
// Robustness: no input makes the front end panic
// ---------------------------------------------------------------------------------------

#[test]
fn random_and_truncated_inputs_never_panic() {
    const PIECES: &[&str] = &[
        "start",
        "a",
        "B",
        "_c",
        ":",
        " ",
        "\n",
        "|",
        "\"x\"",
        "\"\\",
        "\"\"",
        "/[a-z]+/",
        "/(?=x)/",
        "/",
        "i",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "{2,3}",
        ",",
        "?",
        "*",
        "+",
        "!",
        "~",
        "3",
        "..",
        ".",
        "-1",
        "->",
        "=",
        "%ignore",
        "%import",
        "common",
        "%declare",
        "%llguidance {}",
        "#c\n",
        "//c\n",
        "é",
        "\t",
        "\r\n",
        "%",
        "lazy",
        "\"a\"..\"z\"",
        "::",
        "<",
        "&",
        "@",
    ];
    let mut rng = crate::test_rng::XorShift(0x2545_f491_4f6c_dd1d);
    let mut next = move || rng.next();
    // Rule bodies over a smaller alphabet, so that a fair share is valid.
    const EXPR: &[&str] = &[
        " a", " B", " \"x\"", " /y+/", " (", " )", " [", " ]", "?", "*", "+", " |", "~2", "{1,2}",
    ];
    let mut pick = |alphabet: &[&'static str], len: u64| -> String {
        (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect()
    };
    let mut parsed = 0;
    for i in 0..4000 {
        let src = if i % 2 == 0 {
            pick(PIECES, 1 + i % 24)
        } else {
            format!("start:{}\na: \"q\"\nB: \"b\"\n", pick(EXPR, 1 + i % 12))
        };
        if parse_grammar(&src, "r.lark").is_ok() {
            parsed += 1;
        }
    }
    // Some random inputs are valid grammars; most are not. Both paths were exercised.
    assert!(parsed > 100 && parsed < 3000, "{parsed}");

    let full = "%import common.WS\n%ignore WS\nstart: value\n?value: obj | \"[\" [value (\",\" value)*] \"]\" | STRING\n\
                obj: \"{\" (pair (\",\" pair)*)? \"}\"\npair: STRING \":\" value\nSTRING: /\"[^\"]*\"/i\n";
    assert!(parse_grammar(full, "j.lark").is_ok());
    for (cut, _) in full.char_indices() {
        let _ = parse_grammar(&full[..cut], "j.lark");
    }
}
