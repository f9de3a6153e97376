//! Lexer stage: one anchored byte-level DFA per terminal.
//!
//! Each terminal's regex is determinized through regex-automata's lazy DFA, a
//! breadth-first walk that polls the compile budget (see [`build_terminal`]), into a
//! [`ByteDfa`] table with two fixes the runtime relies on (DESIGN.md §7):
//! regex-automata reports a match one byte late, so "accepting" here is computed
//! through the end-of-input transition; and a non-dead state may be unable to reach a
//! match, so liveness is computed here and every non-live state is folded into the
//! single dead state. After that, `next(s, b) != DEAD` is exactly "b extends the
//! lexeme", which is the test greedy lexing needs.

use crate::budget::{BudgetError, Deadline, Stage};
use crate::dfa_minimize::{minimize_rows, widen, ClassRows};
use regex_automata::hybrid::dfa::{Cache, Config, DFA};
use regex_automata::hybrid::{BuildError, CacheError, LazyStateID, StartError};
use regex_automata::nfa::thompson;
use regex_automata::util::start;
use regex_automata::{util::syntax, Anchored, MatchKind};
use rustc_hash::FxHashMap;
use stackmask_formats::dfa::ReverseEdges;
use stackmask_formats::{ByteDfa, Difference, Grammar, Location, Terminal};
use std::convert::Infallible;

/// Limit on the heap regex-automata may use to build one terminal's Thompson NFA (its
/// default is no limit: `/(?:(?:a{1000}){1000}){1000}/` would expand to 10⁹ states
/// and exhaust memory before anything else is checked).
pub const NFA_SIZE_LIMIT: usize = 64 << 20;
/// Limit on the memory regex-automata may use to determinize one terminal: its lazy
/// DFA's cache, which holds every DFA state found (as its set of NFA states) with its
/// transitions over the byte classes.
pub const DETERMINIZE_SIZE_LIMIT: usize = 128 << 20;
/// Limit on the number of states of one terminal's table: 65536 states are 64 MiB of
/// transitions (256 `u32` each). Real terminals have tens to a few thousand.
pub const MAX_TERMINAL_STATES: usize = 1 << 16;
/// Limit on the states of all terminals' tables together (the lexer table budget,
/// 128 MiB of transitions): checked before each state is added, so a grammar of many
/// large terminals ends in an error instead of a huge artifact or an OOM.
pub const MAX_LEXER_STATES: usize = 1 << 17;

/// The lexer stage's size limits; [`LexerLimits::default`] holds the constants above.
/// Every limit that is hit is a [`LexerErrorKind::SizeLimit`] naming it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LexerLimits {
    /// Heap for one terminal's NFA, in bytes ([`NFA_SIZE_LIMIT`]).
    pub nfa_bytes: usize,
    /// Determinization memory for one terminal, in bytes ([`DETERMINIZE_SIZE_LIMIT`]).
    pub determinize_bytes: usize,
    /// States of one terminal's table ([`MAX_TERMINAL_STATES`]).
    pub terminal_states: usize,
    /// States of all terminals' tables together ([`MAX_LEXER_STATES`]).
    pub total_states: usize,
}

impl Default for LexerLimits {
    fn default() -> Self {
        LexerLimits {
            nfa_bytes: NFA_SIZE_LIMIT,
            determinize_bytes: DETERMINIZE_SIZE_LIMIT,
            terminal_states: MAX_TERMINAL_STATES,
            total_states: MAX_LEXER_STATES,
        }
    }
}

/// What a Unicode word boundary gets: byte-level DFAs cannot decide it, the ASCII one
/// works (named the same wherever it is detected).
const UNICODE_WORD_BOUNDARY: &str =
    "Unicode word boundary \\b (a byte-level DFA cannot decide it): use (?-u:\\b), the ASCII word boundary";

use stackmask_formats::display_name::short;

/// Why a terminal's regex could not become a DFA.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LexerErrorKind {
    /// The regex does not parse (or uses syntax Rust's regex lacks).
    #[error("invalid regex: {0}")]
    Syntax(String),
    /// A size limit was hit (see [`LexerLimits`]).
    #[error("exceeds the limit on {what} ({limit}); simplify the regex")]
    SizeLimit {
        /// Which limit.
        what: &'static str,
        /// Its value.
        limit: usize,
    },
    /// The regex uses a feature byte-level DFAs cannot express.
    #[error("unsupported regex feature: {0}")]
    Unsupported(String),
    /// The regex matches the empty string.
    #[error("the terminal can match the empty string")]
    EmptyMatch,
}

/// A terminal whose regex could not be compiled, with where it was defined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}:{}:{}: terminal {}: {kind}", .location.line, .location.col, short(.terminal))]
pub struct LexerError {
    /// Grammar source name.
    pub source_name: String,
    /// Where the terminal was defined (1:1 if unknown).
    pub location: Location,
    /// Terminal name.
    pub terminal: String,
    /// What went wrong.
    pub kind: LexerErrorKind,
}

/// Compiles one regex (Rust syntax) to a [`ByteDfa`] matching it anchored at both ends,
/// under the default [`LexerLimits`].
pub fn compile_terminal(regex: &str) -> Result<ByteDfa, LexerErrorKind> {
    let limits = LexerLimits::default();
    let per_terminal = (PER_TERMINAL, limits.terminal_states);
    without_budget(|poll| {
        compile_terminal_with(
            regex,
            None,
            &limits,
            limits.terminal_states,
            per_terminal,
            poll,
        )
    })
    .map(|(_, dfa)| dfa)
}

/// Runs a build that takes a budget poll with one that never stops it.
fn without_budget<T>(
    build: impl FnOnce(&mut dyn FnMut() -> Result<(), Infallible>) -> Result<T, Infallible>,
) -> T {
    build(&mut || Ok(())).unwrap_or_else(|never| match never {})
}

/// The error of a table past its state limit, `(name, value)`.
fn over_state_limit(states_limit: (&'static str, usize)) -> LexerErrorKind {
    LexerErrorKind::SizeLimit {
        what: states_limit.0,
        limit: states_limit.1,
    }
}

/// Names of the two state limits in errors.
const PER_TERMINAL: &str = "states per terminal";
/// The name of the determinization memory limit ([`LexerLimits::determinize_bytes`]).
const DETERMINIZE_BYTES: &str = "regex-automata determinization memory in bytes";
const BUDGET: &str = "states of all terminals together (the lexer table budget)";

/// [`compile_terminal`] with explicit limits; the table may have at most `max_states`
/// states (DEAD included). Exceeding that is a [`LexerErrorKind::SizeLimit`] with
/// `states_limit`, the name and value of the limit `max_states` comes from (the whole
/// budget, when what was left of it ran out). `poll` is the compile budget's, whose
/// error is the outer one (see [`build_terminal`]). A terminal that comes with its
/// language as a [`Difference`] (which must be `regex`'s language) is built by
/// [`build_difference`], unless its base fails to build, when `regex` is determinized
/// as usual (and fails with its own error).
fn compile_terminal_with<E>(
    regex: &str,
    difference: Option<&Difference>,
    limits: &LexerLimits,
    max_states: usize,
    states_limit: (&'static str, usize),
    poll: &mut dyn FnMut() -> Result<(), E>,
) -> Result<Result<(usize, ByteDfa), LexerErrorKind>, E> {
    let key = (regex.to_string(), *limits);
    if let Some((reachable, dfa)) = TerminalCache::get(&key) {
        // The same test the build below makes on its reachable states.
        if reachable >= max_states {
            return Ok(Err(over_state_limit(states_limit)));
        }
        return Ok(Ok((reachable, dfa)));
    }
    let started = std::time::Instant::now();
    let base = match difference {
        Some(d) => compile_terminal_with(&d.base, None, limits, max_states, states_limit, poll)?
            .ok()
            .map(|(_, dfa)| dfa),
        None => None,
    };
    let built = match (base, difference) {
        (Some(base), Some(d)) => build_difference(&base, &d.words, max_states, states_limit, poll)?,
        _ => match build_literal(regex, limits, max_states, states_limit) {
            Some(built) => built,
            None => build_terminal(regex, limits, max_states, states_limit, poll)?,
        },
    };
    Ok(built.map(|(reachable, dfa)| {
        if reachable >= TerminalCache::MIN_STATES || started.elapsed() >= TerminalCache::MIN_TIME {
            TerminalCache::put(key, reachable, &dfa);
        }
        (reachable, dfa)
    }))
}

/// Terminal DFAs already built in this process, by regex and limits.
///
/// A pure function's results: JSON Schemas repeat a few expensive terminals from one
/// schema to the next (`"date-time"` is 11,000 states and half a second of parsing,
/// determinization and minimization; `uri`, `email`, counted patterns), and a serving
/// process or `stackmask compile A.json B.json …` compiles schema after schema; and the
/// plain JSON string, 17 states, takes 2 ms (its character class spans all of Unicode).
/// Only terminals of [`TerminalCache::MIN_STATES`] reachable states or more, or that
/// took [`TerminalCache::MIN_TIME`] or more to build, are kept, up to
/// [`TerminalCache::MAX_BYTES`] of tables in all; past that nothing more is added.
struct TerminalCache {
    /// Per key: the reachable states before minimization (what the state limit is
    /// checked on) and the table.
    dfas: FxHashMap<(String, LexerLimits), (usize, ByteDfa)>,
    bytes: usize,
}

impl TerminalCache {
    /// Terminals smaller than this are cheaper to rebuild than to keep…
    const MIN_STATES: usize = 256;
    /// … unless they took this long to build.
    const MIN_TIME: std::time::Duration = std::time::Duration::from_micros(200);
    /// The tables kept, in bytes (4 per transition).
    const MAX_BYTES: usize = 64 << 20;

    fn shared() -> std::sync::MutexGuard<'static, Option<TerminalCache>> {
        static CACHE: std::sync::Mutex<Option<TerminalCache>> = std::sync::Mutex::new(None);
        // A panic elsewhere while the lock was held leaves a consistent map (inserts
        // are single calls), so a poisoned lock is still usable.
        CACHE.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(key: &(String, LexerLimits)) -> Option<(usize, ByteDfa)> {
        Self::shared().as_ref()?.dfas.get(key).cloned()
    }

    fn put(key: (String, LexerLimits), reachable: usize, dfa: &ByteDfa) {
        let bytes = dfa.trans.len() * 4 + dfa.flags.len() + key.0.len();
        let mut shared = Self::shared();
        let cache = shared.get_or_insert_with(|| TerminalCache {
            dfas: FxHashMap::default(),
            bytes: 0,
        });
        if cache.bytes + bytes <= Self::MAX_BYTES && !cache.dfas.contains_key(&key) {
            cache.bytes += bytes;
            cache.dfas.insert(key, (reachable, dfa.clone()));
        }
    }
}

/// States determinized between two polls of the compile budget: a state costs at least
/// 256 transition lookups, and at most one determinization step per byte class (about
/// 0.1 ms for the largest regexes found), so a poll every 16 states reads the clock
/// every few microseconds to few milliseconds.
const POLL_EVERY_STATES: usize = 16;

/// Builds a terminal's table: determinization, then minimization. Returns the number of
/// states reachable before minimization with it. The outer error is `poll`'s (the
/// compile budget, polled every [`POLL_EVERY_STATES`] states); the inner one the
/// terminal's.
///
/// The determinization is our breadth-first walk over regex-automata's lazy DFA, not its
/// dense builder: the dense builder determinizes every state before it returns, and no
/// time limit could interrupt it — an 825-byte regex of `.` and `*` ran for 10 s (60 s
/// with debug assertions) before the size limit stopped it. The lazy DFA determinizes
/// one transition at a time, the same subset construction, so the walk checks the
/// budget and the state limit as it goes. Its cache is the determinization memory limit:
/// it is never cleared (`minimum_cache_clear_count(0)`: full means give up), so every
/// state id the walk holds stays valid.
fn build_terminal<E>(
    regex: &str,
    limits: &LexerLimits,
    max_states: usize,
    states_limit: (&'static str, usize),
    poll: &mut dyn FnMut() -> Result<(), E>,
) -> Result<Result<(usize, ByteDfa), LexerErrorKind>, E> {
    let cache_limit = || LexerErrorKind::SizeLimit {
        what: DETERMINIZE_BYTES,
        limit: limits.determinize_bytes,
    };
    let nfa = match thompson::Compiler::new()
        .syntax(syntax::Config::new().unicode(true).utf8(false))
        .configure(
            thompson::Config::new()
                .utf8(false)
                .which_captures(thompson::WhichCaptures::None)
                .nfa_size_limit(Some(limits.nfa_bytes)),
        )
        .build(regex)
    {
        Ok(nfa) => nfa,
        Err(e) => return Ok(Err(nfa_error(regex, &e))),
    };
    let config = Config::new()
        // The terminal is its whole regular language: leftmost-first (the default)
        // would drop `ab` from `a|ab` once `a` has matched.
        .match_kind(MatchKind::All)
        .unicode_word_boundary(false)
        .cache_capacity(limits.determinize_bytes)
        .minimum_cache_clear_count(Some(0));
    let dfa = match DFA::builder().configure(config).build_from_nfa(nfa) {
        Ok(dfa) => dfa,
        Err(e) => return Ok(Err(build_error(regex, &e, limits))),
    };
    let mut cache = dfa.create_cache();
    // The lazy DFA gives up (instead of clearing) only when its cache is full.
    macro_rules! lazy {
        ($e:expr) => {
            match $e {
                Ok(sid) => sid,
                Err(_) => return Ok(Err(cache_limit())),
            }
        };
    }
    let start = match dfa.start_state(&mut cache, &start::Config::new().anchored(Anchored::Yes)) {
        Ok(sid) => sid,
        Err(StartError::Cache { .. }) => return Ok(Err(cache_limit())),
        Err(e) => return Ok(Err(LexerErrorKind::Unsupported(e.to_string()))),
    };
    let is_match = |cache: &mut Cache, sid: LazyStateID| -> Result<bool, CacheError> {
        dfa.next_eoi_state(cache, sid).map(|eoi| eoi.is_match())
    };

    // Bytes of one of the lazy DFA's byte classes have the same transitions (it keeps
    // one per class), so each state is asked once per class, at the class's first byte,
    // and the table keeps a column per class through the minimization, widened to 256
    // bytes only for the minimal states: a `date-time` has 23,000 states before
    // minimization and 29 classes. Classes are visited and kept in the order of their
    // first bytes, so states are numbered as a walk over the bytes in order would
    // number them.
    let byte_classes = dfa.byte_classes();
    let mut firsts: Vec<u8> = Vec::new();
    // Per lazy DFA class: its column (the rank of its first byte among the classes').
    let mut column_of_class = vec![u8::MAX; byte_classes.alphabet_len()];
    let mut column = [0u8; 256];
    for b in 0..=255u8 {
        let class = byte_classes.get(b) as usize;
        if column_of_class[class] == u8::MAX {
            column_of_class[class] = firsts.len() as u8;
            firsts.push(b);
        }
        column[b as usize] = column_of_class[class];
    }
    let width = firsts.len();
    // Breadth-first copy of the reachable states. Table index 0 is reserved for DEAD.
    let mut index: FxHashMap<LazyStateID, u32> = FxHashMap::default();
    let mut order: Vec<LazyStateID> = vec![start];
    index.insert(start, 1);
    let mut rows: Vec<u32> = vec![0; width * 2];
    let mut accepting = vec![false, lazy!(is_match(&mut cache, start))];
    let mut i = 0;
    while i < order.len() {
        if i % POLL_EVERY_STATES == 0 {
            poll()?;
        }
        let sid = order[i];
        for (c, &b) in firsts.iter().enumerate() {
            let next = lazy!(dfa.next_state(&mut cache, sid, b));
            if next.is_quit() {
                return Ok(Err(LexerErrorKind::Unsupported(
                    UNICODE_WORD_BOUNDARY.into(),
                )));
            }
            let target = if next.is_dead() {
                0
            } else if let Some(&t) = index.get(&next) {
                t
            } else {
                let t = order.len() as u32 + 1;
                // Checked before the state's transitions are allocated.
                if t as usize >= max_states {
                    return Ok(Err(over_state_limit(states_limit)));
                }
                let accepts = lazy!(is_match(&mut cache, next));
                index.insert(next, t);
                order.push(next);
                rows.resize(rows.len() + width, 0);
                accepting.push(accepts);
                t
            };
            rows[(i + 1) * width + c] = target;
        }
        i += 1;
    }
    let by_class = ClassRows {
        rows,
        width,
        column,
    };
    Ok(finish_table(&by_class, &accepting, order.len()))
}

/// Longest literal [`build_literal`] builds (bytes): far below what any size limit
/// of at least [`LITERAL_MIN_LIMIT_BYTES`] could refuse.
const MAX_LITERAL_BYTES: usize = 256;
/// Smallest NFA and determinization memory limits under which [`build_literal`]
/// builds: a literal of [`MAX_LITERAL_BYTES`] needs a small fraction of this in
/// regex-automata, so under such limits its build could not fail where ours succeeds.
const LITERAL_MIN_LIMIT_BYTES: usize = 4 << 20;

/// The table of a terminal whose regex is one literal (a JSON Schema's property names
/// and keywords, Lark's `"…"`), built as a chain of states without regex-automata;
/// `None` for any other regex (or a literal too long, or limits too small, to be sure
/// regex-automata would have built it too), which [`build_terminal`] then builds.
///
/// The same table [`build_terminal`] makes, state for state: the chain is what
/// determinizing a literal gives, and both go through [`finish_table`], whose
/// minimization numbers states independently of the byte classes it was given. A
/// schema has hundreds of such terminals (`kb_225`: 293), and each cost 25–45 µs of NFA
/// compilation and lazy-DFA set-up, against a microsecond or two here.
fn build_literal(
    regex: &str,
    limits: &LexerLimits,
    max_states: usize,
    states_limit: (&'static str, usize),
) -> Option<Result<(usize, ByteDfa), LexerErrorKind>> {
    if limits.nfa_bytes < LITERAL_MIN_LIMIT_BYTES
        || limits.determinize_bytes < LITERAL_MIN_LIMIT_BYTES
        || regex.len() > 4 * MAX_LITERAL_BYTES
    {
        return None;
    }
    // The syntax `build_terminal` compiles with.
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(true)
        .utf8(false)
        .build()
        .parse(regex)
        .ok()?;
    let regex_syntax::hir::HirKind::Literal(literal) = hir.kind() else {
        return None;
    };
    let bytes: &[u8] = &literal.0;
    if bytes.is_empty() || bytes.len() > MAX_LITERAL_BYTES {
        return None;
    }
    // Reachable states as the determinization counts them (and checks against the
    // limit, a new state at a time): the chain's `len + 1`, and one more that a byte
    // after the whole literal reaches, which reports the match one byte late and goes
    // nowhere (the minimization folds it into the dead state).
    let reachable = bytes.len() + 2;
    if reachable >= max_states {
        return Some(Err(over_state_limit(states_limit)));
    }
    let states = bytes.len() + 1;
    // A class per byte of the literal and one for all other bytes, numbered in the
    // order of their first bytes.
    let mut column = [u8::MAX; 256];
    let mut seen = [false; 256];
    for &b in bytes {
        seen[b as usize] = true;
    }
    let mut width = 0usize;
    let mut other = u8::MAX;
    for b in 0..256 {
        if seen[b] {
            column[b] = width as u8;
            width += 1;
        } else {
            if other == u8::MAX {
                other = width as u8;
                width += 1;
            }
            column[b] = other;
        }
    }
    // State 0 is dead, 1 the start; state i + 1 has read the first i bytes.
    let mut rows = vec![0u32; width * (states + 1)];
    for (i, &b) in bytes.iter().enumerate() {
        rows[(i + 1) * width + column[b as usize] as usize] = i as u32 + 2;
    }
    let mut accepting = vec![false; states + 1];
    accepting[states] = true;
    let by_class = ClassRows {
        rows,
        width,
        column,
    };
    Some(finish_table(&by_class, &accepting, reachable))
}

/// Whether `difference`, built as the lexer builds it, has the table `regex`
/// determinized has (the same language; both minimal, so the same number of states):
/// the check a front end's differences must pass, for tests and fuzzing. Neither
/// build goes through the cache. `Err` names what failed to build.
pub fn difference_is_regex(regex: &str, difference: &Difference) -> Result<bool, String> {
    let limits = LexerLimits::default();
    let per_terminal = (PER_TERMINAL, limits.terminal_states);
    let uncached = |regex: &str| {
        without_budget(|poll| {
            build_terminal(regex, &limits, limits.terminal_states, per_terminal, poll)
        })
        .map(|(_, dfa)| dfa)
        .map_err(|e| format!("{regex}: {e}"))
    };
    let by_regex = uncached(regex)?;
    let base = uncached(&difference.base)?;
    let by_difference = without_budget(|poll| {
        build_difference(
            &base,
            &difference.words,
            limits.terminal_states,
            per_terminal,
            poll,
        )
    })
    .map(|(_, dfa)| dfa)
    .map_err(|e| format!("difference: {e}"))?;
    Ok(by_regex.num_states() == by_difference.num_states()
        && same_language(&by_regex, &by_difference))
}

/// Whether two tables accept the same language: a search of their product for a pair
/// where one accepts and the other does not (or one is live and the other not).
fn same_language(a: &ByteDfa, b: &ByteDfa) -> bool {
    let start = (a.start, b.start);
    let mut seen: std::collections::HashSet<(u32, u32)> = std::collections::HashSet::from([start]);
    let mut todo = vec![start];
    while let Some((x, y)) = todo.pop() {
        if a.is_accepting(x) != b.is_accepting(y) || a.is_live(x) != b.is_live(y) {
            return false;
        }
        for byte in 0..=255u8 {
            let next = (a.next(x, byte), b.next(y, byte));
            if seen.insert(next) {
                todo.push(next);
            }
        }
    }
    true
}

/// Builds the table of `base`'s language minus `words` (a [`Difference`]): the states
/// are pairs of a `base` state and a node of the words' trie (or "off the trie"), walked
/// breadth first from the two starts and then minimized. Few pairs are reachable: one
/// per trie node, plus one per `base` state off the trie. Returns the number of pairs,
/// which the state limit is checked on as [`build_terminal`] checks its lazy DFA's.
fn build_difference<E>(
    base: &ByteDfa,
    words: &[Vec<u8>],
    max_states: usize,
    states_limit: (&'static str, usize),
    poll: &mut dyn FnMut() -> Result<(), E>,
) -> Result<Result<(usize, ByteDfa), LexerErrorKind>, E> {
    /// The words' trie: per node, its children by byte and whether a word ends there.
    struct Node {
        children: Vec<(u8, u32)>,
        word: bool,
    }
    const OFF: u32 = u32::MAX;
    let mut trie = vec![Node {
        children: Vec::new(),
        word: false,
    }];
    for w in words {
        let mut at = 0usize;
        for &b in w {
            at = match trie[at].children.iter().find(|c| c.0 == b) {
                Some(&(_, to)) => to as usize,
                None => {
                    let to = trie.len();
                    trie[at].children.push((b, to as u32));
                    trie.push(Node {
                        children: Vec::new(),
                        word: false,
                    });
                    to
                }
            };
        }
        trie[at].word = true;
    }
    // Table index 0 is reserved for DEAD, as in `build_terminal`.
    let start = (base.start, 0u32);
    let mut index: FxHashMap<(u32, u32), u32> = FxHashMap::default();
    let mut order = vec![start];
    index.insert(start, 1);
    let accepts = |(b, t): (u32, u32)| base.is_accepting(b) && (t == OFF || !trie[t as usize].word);
    let mut trans: Vec<u32> = vec![0; 256 * 2];
    let mut accepting = vec![false, accepts(start)];
    let mut i = 0;
    while i < order.len() {
        if i % POLL_EVERY_STATES == 0 {
            poll()?;
        }
        let (b, t) = order[i];
        for byte in 0..=255u8 {
            let nb = base.next(b, byte);
            if !base.is_live(nb) {
                continue;
            }
            let nt = if t == OFF {
                OFF
            } else {
                let children = &trie[t as usize].children;
                children.iter().find(|c| c.0 == byte).map_or(OFF, |c| c.1)
            };
            let next = (nb, nt);
            let target = match index.get(&next) {
                Some(&k) => k,
                None => {
                    let k = order.len() as u32 + 1;
                    if k as usize >= max_states {
                        return Ok(Err(over_state_limit(states_limit)));
                    }
                    index.insert(next, k);
                    order.push(next);
                    trans.extend_from_slice(&[0; 256]);
                    accepting.push(accepts(next));
                    k
                }
            };
            trans[(i + 1) * 256 + byte as usize] = target;
        }
        i += 1;
    }
    Ok(finish_table(
        &ClassRows::of(&trans),
        &accepting,
        order.len(),
    ))
}

/// The table of a breadth-first walk (state 0 DEAD, the start 1, `reachable` states
/// found) by byte class, minimized and widened to 256 bytes, with its number of
/// reachable states: an accepting start is the empty match, refused.
fn finish_table(
    by_class: &ClassRows,
    accepting: &[bool],
    reachable: usize,
) -> Result<(usize, ByteDfa), LexerErrorKind> {
    if accepting[1] {
        return Err(LexerErrorKind::EmptyMatch);
    }
    let width = by_class.width;
    let (mut rows, accepting, start) = minimize_rows(&by_class.rows, width, accepting, 1);
    let flags = fold_dead_states(&mut rows, width, &accepting);
    // A start state that cannot reach a match leaves an empty language; keep it as the
    // (non-live) start so callers see a terminal that never matches.
    let start = if flags[start as usize] & ByteDfa::LIVE != 0 {
        start
    } else {
        0
    };
    Ok((
        reachable,
        ByteDfa {
            start,
            trans: widen(&rows, width, &by_class.column),
            flags,
        },
    ))
}

/// Computes liveness (can reach an accepting state) and redirects every transition
/// into a non-live state to DEAD, so that "live" is "not DEAD"; `rows` has `width`
/// targets per state. Returns the states' [`ByteDfa`] flags.
fn fold_dead_states(rows: &mut [u32], width: usize, accepting: &[bool]) -> Vec<u8> {
    let mut live = accepting.to_vec();
    ReverseEdges::new(rows, width, |s| s != ByteDfa::DEAD)
        .spread_backwards(&mut live, &mut Vec::new());
    live[0] = false;
    for t in rows.iter_mut() {
        if !live[*t as usize] {
            *t = 0;
        }
    }
    (0..accepting.len())
        .map(|s| {
            (if accepting[s] { ByteDfa::ACCEPTING } else { 0 })
                | (if live[s] { ByteDfa::LIVE } else { 0 })
        })
        .collect()
}

fn build_error(regex: &str, e: &BuildError, limits: &LexerLimits) -> LexerErrorKind {
    let msg = e.to_string();
    // regex-automata (pinned exactly) says what went wrong only in the message: the
    // cache below the minimum one state needs (the NFA is that large) is the memory
    // limit, running out of lazy state ids is named as such.
    if msg.contains("cache capacity") {
        return LexerErrorKind::SizeLimit {
            what: DETERMINIZE_BYTES,
            limit: limits.determinize_bytes,
        };
    }
    if msg.contains("LazyStateID") {
        return LexerErrorKind::SizeLimit {
            what: "regex-automata lazy DFA state ids",
            limit: usize::MAX,
        };
    }
    if msg.starts_with("unsupported regex feature for DFAs") && msg.contains("word boundar") {
        return LexerErrorKind::Unsupported(UNICODE_WORD_BOUNDARY.into());
    }
    let source = std::error::Error::source(e)
        .map(|s| s.to_string())
        .unwrap_or_default();
    regex_error(regex, msg, source)
}

/// The error of a terminal's regex that does not compile to an NFA: its size limit,
/// or what [`regex_error`] makes of the message.
fn nfa_error(regex: &str, e: &thompson::BuildError) -> LexerErrorKind {
    if let Some(limit) = e.size_limit() {
        return LexerErrorKind::SizeLimit {
            what: "NFA size in bytes (nfa_size_limit)",
            limit,
        };
    }
    let source = std::error::Error::source(e)
        .map(|s| s.to_string())
        .unwrap_or_default();
    regex_error(regex, e.to_string(), source)
}

/// A regex error by its message: an unsupported feature named, else the syntax error.
fn regex_error(regex: &str, msg: String, source: String) -> LexerErrorKind {
    let full = if source.is_empty() {
        msg
    } else {
        format!("{msg}: {source}")
    };
    if regex.contains("(?=") || regex.contains("(?!") {
        LexerErrorKind::Unsupported("lookahead".into())
    } else if regex.contains("(?<=") || regex.contains("(?<!") {
        LexerErrorKind::Unsupported("lookbehind".into())
    } else if full.contains("backreference") {
        LexerErrorKind::Unsupported("backreference".into())
    } else {
        LexerErrorKind::Syntax(full)
    }
}

/// Compiles every terminal of a grammar, in terminal-id order, under the default
/// [`LexerLimits`].
pub fn compile_lexer(grammar: &Grammar) -> Result<Vec<ByteDfa>, LexerError> {
    compile_lexer_with(grammar, &LexerLimits::default())
}

/// [`compile_lexer`] with explicit limits. The tables of all terminals share
/// `limits.total_states`: each terminal may use what the ones before it left, so the
/// budget is checked before a state is added, never after the tables are built.
pub fn compile_lexer_with(
    grammar: &Grammar,
    limits: &LexerLimits,
) -> Result<Vec<ByteDfa>, LexerError> {
    compile_lexer_polled(grammar, limits, &|| Ok(()))
}

/// [`compile_lexer_with`] under a compile budget, checked before each terminal and
/// every few states of its determinization.
pub fn compile_lexer_within<E: From<LexerError> + From<BudgetError> + Send>(
    grammar: &Grammar,
    limits: &LexerLimits,
    deadline: &Deadline,
) -> Result<Vec<ByteDfa>, E> {
    compile_lexer_polled(grammar, limits, &|| Ok(deadline.check(Stage::Lexer)?))
}

/// Terminal `t` of `grammar` failed to compile: where it is defined and why.
fn terminal_error(grammar: &Grammar, t: &Terminal, kind: LexerErrorKind) -> LexerError {
    LexerError {
        source_name: grammar.source_name.clone(),
        location: t.defined_at.unwrap_or(Location { line: 1, col: 1 }),
        terminal: t.name.clone(),
        kind,
    }
}

/// A terminal's build: its reachable states and its table, or why it has none.
type Built = Result<(usize, ByteDfa), LexerErrorKind>;

/// The lexer stage, calling `poll` before each terminal and during its determinization.
///
/// Terminals are built on every core, each under the per-terminal limit alone, then
/// taken in terminal order against the shared budget: where a terminal had less than
/// the per-terminal limit left, its build is not the one the sequence of builds would
/// have made (a smaller cap names another limit and can stop first), so it is checked
/// on its reachable states, or built again under the cap it had, exactly as one build
/// after the other would. A large schema's few hundred terminals (`kb_225`: 383) took
/// a twentieth of its compile on one core.
fn compile_lexer_polled<E: From<LexerError> + Send>(
    grammar: &Grammar,
    limits: &LexerLimits,
    poll: &(dyn Fn() -> Result<(), E> + Sync),
) -> Result<Vec<ByteDfa>, E> {
    use rayon::prelude::*;
    let per_terminal = (PER_TERMINAL, limits.terminal_states);
    let build = |t: &Terminal, max_states: usize, named: (&'static str, usize)| {
        poll()?;
        compile_terminal_with(
            &t.regex,
            t.difference.as_ref(),
            limits,
            max_states,
            named,
            &mut || poll(),
        )
    };
    let built: Vec<Result<Built, E>> = grammar
        .terminals
        .par_iter()
        .with_max_len(1)
        .map(|t| build(t, limits.terminal_states, per_terminal))
        .collect();
    // States of the tables taken so far, each counting its own dead state (the merged
    // table shares one: a conservative count).
    let mut used = 0usize;
    let mut out = Vec::with_capacity(grammar.terminals.len());
    for (t, built) in grammar.terminals.iter().zip(built) {
        let left = limits.total_states.saturating_sub(used);
        let built = if left >= limits.terminal_states {
            built?
        } else {
            let budget = (BUDGET, limits.total_states);
            match built? {
                Ok((reachable, _)) if reachable >= left => Err(over_state_limit(budget)),
                Ok(within) => Ok(within),
                Err(_) => build(t, left, budget)?,
            }
        };
        let (_, dfa) = built.map_err(|kind| terminal_error(grammar, t, kind))?;
        used += dfa.num_states();
        out.push(dfa);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`build_terminal`] without a budget.
    fn build(
        regex: &str,
        l: &LexerLimits,
        max_states: usize,
        limit: (&'static str, usize),
    ) -> Result<(usize, ByteDfa), LexerErrorKind> {
        without_budget(|poll| build_terminal(regex, l, max_states, limit, poll))
    }

    /// [`compile_terminal_with`] without a budget.
    fn compile_with(
        regex: &str,
        l: &LexerLimits,
        max_states: usize,
        limit: (&'static str, usize),
    ) -> Result<ByteDfa, LexerErrorKind> {
        without_budget(|poll| compile_terminal_with(regex, None, l, max_states, limit, poll))
            .map(|(_, dfa)| dfa)
    }

    #[test]
    fn cached_terminals_are_the_built_ones_and_keep_the_state_limit() {
        let regex = "[a-z]{300}x";
        let l = LexerLimits::default();
        let limit = (PER_TERMINAL, 7);
        let (reachable, built) = build(regex, &l, l.terminal_states, limit).unwrap();
        assert!(reachable >= TerminalCache::MIN_STATES, "{reachable}");
        let first = compile_with(regex, &l, l.terminal_states, limit).unwrap();
        assert!(TerminalCache::get(&(regex.to_string(), l)).is_some());
        let hit = compile_with(regex, &l, l.terminal_states, limit).unwrap();
        assert_eq!(first, built);
        assert_eq!(hit, built);
        // A hit keeps the build's limit: the reachable states must stay below it.
        for max in [reachable, reachable + 1] {
            let fresh = build(regex, &l, max, limit).map(|_| ());
            let cached = compile_with(regex, &l, max, limit).map(|_| ());
            assert_eq!(cached, fresh, "limit {max}");
        }
        assert!(build(regex, &l, reachable, limit).is_err());
    }

    fn accepts(d: &ByteDfa, s: &[u8]) -> bool {
        d.is_accepting(d.run(s))
    }

    #[test]
    fn accepting_is_not_one_byte_late() {
        let d = compile_terminal("ab").unwrap();
        assert!(!accepts(&d, b"a"));
        assert!(accepts(&d, b"ab"));
        assert!(!accepts(&d, b"abb"));
        assert_eq!(d.run(b"abb"), ByteDfa::DEAD);
    }

    #[test]
    fn liveness_folds_states_that_cannot_match() {
        let d = compile_terminal("[0-9]+").unwrap();
        let s = d.run(b"12");
        assert!(d.is_accepting(s));
        assert!(d.extends(s, b'3'));
        assert!(!d.extends(s, b'x'));
        assert!(!d.extends(s, b' '));
        d.validate().unwrap();
    }

    #[test]
    fn unicode_classes_only_match_valid_utf8() {
        let d = compile_terminal(r"\w+").unwrap();
        assert!(accepts(&d, "héllo".as_bytes()));
        // The first byte of a two-byte sequence is live but not accepting.
        let s = d.run(&"é".as_bytes()[..1]);
        assert!(d.is_live(s) && !d.is_accepting(s));
        assert_eq!(d.run(&[0xff]), ByteDfa::DEAD);
    }

    #[test]
    fn byte_patterns_can_match_invalid_utf8() {
        let d = compile_terminal(r"(?-u:\xff)+").unwrap();
        assert!(accepts(&d, &[0xff, 0xff]));
    }

    #[test]
    fn empty_match_is_rejected() {
        assert_eq!(compile_terminal("a*"), Err(LexerErrorKind::EmptyMatch));
        assert_eq!(compile_terminal("(a|)"), Err(LexerErrorKind::EmptyMatch));
    }

    #[test]
    fn lookaround_is_named() {
        assert_eq!(
            compile_terminal("a(?=b)"),
            Err(LexerErrorKind::Unsupported("lookahead".into()))
        );
        assert_eq!(
            compile_terminal("(?<!b)a"),
            Err(LexerErrorKind::Unsupported("lookbehind".into()))
        );
    }

    #[test]
    fn alternation_keeps_every_branch() {
        let d = compile_terminal("a|ab").unwrap();
        assert!(accepts(&d, b"a") && accepts(&d, b"ab"));
        let d = compile_terminal("a{1,3}|a{4}").unwrap();
        assert!(accepts(&d, b"aaaa") && !accepts(&d, b"aaaaa"));
        let d = compile_terminal("<|<=").unwrap();
        assert!(d.extends(d.run(b"<"), b'='));
    }

    #[test]
    fn a_huge_nfa_is_a_named_limit_not_an_oom() {
        // 10⁹ NFA states once the repetitions are expanded.
        match compile_terminal("(?:(?:a{1000}){1000}){1000}") {
            Err(LexerErrorKind::SizeLimit { what, limit }) => {
                assert!(what.contains("NFA"), "{what}");
                assert_eq!(limit, NFA_SIZE_LIMIT);
            }
            other => panic!("expected the NFA size limit, got {other:?}"),
        }
    }

    #[test]
    fn regex_automata_limits_are_named() {
        let tiny = |f: fn(&mut LexerLimits)| {
            let mut l = LexerLimits::default();
            f(&mut l);
            compile_with("[a-z]{12}", &l, l.terminal_states, (PER_TERMINAL, 0)).map(|_| ())
        };
        match tiny(|l| l.determinize_bytes = 64) {
            Err(LexerErrorKind::SizeLimit { what, limit: 64 }) => {
                assert!(what.contains("determinization"), "{what}")
            }
            other => panic!("expected the determinization limit, got {other:?}"),
        }
        match tiny(|l| l.nfa_bytes = 100) {
            Err(LexerErrorKind::SizeLimit { what, limit: 100 }) => {
                assert!(what.contains("NFA"), "{what}")
            }
            other => panic!("expected the NFA size limit, got {other:?}"),
        }
    }

    /// The determinization memory runs out in the middle of the walk (a cache above the
    /// minimum the lazy DFA is built with, below what 300 states need): the same named
    /// limit as a cache below that minimum.
    #[test]
    fn a_determinization_that_fills_its_memory_is_a_named_limit() {
        let regex = "[a-z]{300}x";
        let nfa = thompson::NFA::new(regex).unwrap();
        let minimum = Config::new().get_minimum_cache_capacity(&nfa).unwrap();
        let l = LexerLimits {
            determinize_bytes: minimum + 1024,
            ..LexerLimits::default()
        };
        match build(regex, &l, l.terminal_states, (PER_TERMINAL, 0)) {
            Err(LexerErrorKind::SizeLimit { what, limit }) => {
                assert_eq!((what, limit), (DETERMINIZE_BYTES, minimum + 1024))
            }
            other => panic!("expected the determinization limit, got {other:?}"),
        }
        assert!(build(regex, &LexerLimits::default(), 1000, (PER_TERMINAL, 0)).is_ok());
    }

    /// The compile budget is polled while one terminal is determinized, so a time limit
    /// or a cancel stops a determinization in progress (the dense builder ran one to its
    /// size limit, seconds, before anything could be checked).
    #[test]
    fn the_budget_is_polled_during_a_determinization() {
        // Thousands of states: the twelfth byte from the end must be `a`.
        let regex = "[ab]*a[ab]{11}";
        let l = LexerLimits::default();
        let limit = (PER_TERMINAL, l.terminal_states);
        let mut polls = 0;
        let stopped = build_terminal(regex, &l, l.terminal_states, limit, &mut || {
            polls += 1;
            if polls == 5 {
                Err("stop")
            } else {
                Ok(())
            }
        });
        assert_eq!(stopped.map(|_| ()), Err("stop"));
        assert_eq!(polls, 5);
        // Unstopped, the walk goes on well past the fifth poll.
        let (reachable, _) = build(regex, &l, l.terminal_states, limit).unwrap();
        assert!(reachable > 8 * POLL_EVERY_STATES, "{reachable}");
    }

    #[test]
    fn too_many_states_in_one_terminal_is_a_named_limit() {
        // 2^17 states: the eighteenth byte from the end must be `a`.
        match compile_terminal("[ab]*a[ab]{16}").map(|_| ()) {
            Err(LexerErrorKind::SizeLimit { what, limit }) => {
                assert_eq!((what, limit), (PER_TERMINAL, MAX_TERMINAL_STATES))
            }
            other => panic!("expected the per-terminal state limit, got {other:?}"),
        }
    }

    fn grammar_of(regexes: &[&str]) -> Grammar {
        Grammar {
            source_name: "g.lark".into(),
            terminals: regexes
                .iter()
                .enumerate()
                .map(|(i, r)| stackmask_formats::Terminal {
                    name: format!("T{i}"),
                    regex: r.to_string(),
                    lazy: false,
                    priority: 0,
                    defined_at: Some(Location {
                        line: i as u32 + 1,
                        col: 1,
                    }),
                    difference: None,
                })
                .collect(),
            nonterminals: vec![],
            rules: vec![],
            start: 0,
            ignore: vec![],
            allow_initial_skip: false,
        }
    }

    /// A determinization that blows up stops at the state limit, named, not at
    /// regex-automata's DFA bytes: "contains `U` then 40 name characters" must track
    /// every `U` of the last 40 bytes (2^40 subsets), and with the default 64 MB of DFA it
    /// ran for 23 s (release) with 65,536 states allowed, and no time limit can stop it.
    #[test]
    fn a_determinization_blow_up_stops_at_the_state_limit() {
        let limits = LexerLimits {
            terminal_states: 2_000,
            ..LexerLimits::default()
        };
        let blow_up = grammar_of(&["(?s:.)*U[a-zA-Z0-9_-]{40}(?s:.)*"]);
        let e = compile_lexer_with(&blow_up, &limits).unwrap_err();
        assert_eq!(
            e.kind,
            LexerErrorKind::SizeLimit {
                what: PER_TERMINAL,
                limit: 2_000
            }
        );
    }

    #[test]
    fn the_lexer_table_budget_spans_all_terminals() {
        // Each `x{10}` table has 12 states (dead, start, 10 more); 30 fit two of them.
        let limits = LexerLimits {
            terminal_states: 20,
            total_states: 30,
            ..LexerLimits::default()
        };
        let two = grammar_of(&["a{10}", "b{10}"]);
        assert_eq!(compile_lexer_with(&two, &limits).unwrap().len(), 2);
        let three = grammar_of(&["a{10}", "b{10}", "c{10}"]);
        let e = compile_lexer_with(&three, &limits).unwrap_err();
        assert_eq!(e.terminal, "T2");
        assert_eq!(
            e.kind,
            LexerErrorKind::SizeLimit {
                what: BUDGET,
                limit: 30
            }
        );
        assert!(e.to_string().starts_with("g.lark:3:1: terminal T2:"), "{e}");
        assert!(e.to_string().contains("lexer table budget"), "{e}");
        // One terminal over its own limit names that limit instead.
        let e = compile_lexer_with(&grammar_of(&["a{30}"]), &limits).unwrap_err();
        assert_eq!(
            e.kind,
            LexerErrorKind::SizeLimit {
                what: PER_TERMINAL,
                limit: 20
            }
        );
    }

    /// Terminals built in parallel and then taken against the shared budget give what
    /// building them one after the other, each under what the ones before left, gives:
    /// the same tables, or the same first error (which terminal, which limit). Random
    /// lists of counted terminals (some past the per-terminal limit, one with a syntax
    /// error, one a word difference) under random limits, so that the budget runs out
    /// before, at and after the terminals that fail on their own.
    #[test]
    fn parallel_terminals_take_the_budget_as_one_after_the_other() {
        let sequential = |g: &Grammar, limits: &LexerLimits| -> Result<Vec<ByteDfa>, LexerError> {
            let mut used = 0usize;
            let mut out = Vec::new();
            for t in &g.terminals {
                let left = limits.total_states.saturating_sub(used);
                let (max_states, named) = if left < limits.terminal_states {
                    (left, (BUDGET, limits.total_states))
                } else {
                    (
                        limits.terminal_states,
                        (PER_TERMINAL, limits.terminal_states),
                    )
                };
                let built = without_budget(|poll| {
                    compile_terminal_with(
                        &t.regex,
                        t.difference.as_ref(),
                        limits,
                        max_states,
                        named,
                        poll,
                    )
                });
                let (_, dfa) = built.map_err(|kind| terminal_error(g, t, kind))?;
                used += dfa.num_states();
                out.push(dfa);
            }
            Ok(out)
        };
        let pool = [
            "a{3}",
            "b{7}",
            "[ab]{5}",
            "c{12}",
            "(d|e){2,9}",
            "f+g{4}",
            "[0-9]{1,6}",
            "x(",
            "h{20}",
        ];
        let mut rng = crate::test_rng::XorShift(0x1e8e_2024);
        let (mut budget_errors, mut oks) = (0, 0);
        for case in 0..300 {
            let n = 1 + rng.below(6) as usize;
            let regexes: Vec<&str> = (0..n)
                .map(|_| pool[rng.below(pool.len() as u64) as usize])
                .collect();
            let mut g = grammar_of(&regexes);
            if rng.below(4) == 0 {
                // A word difference: the base built under the same cap, then the words
                // taken out.
                let t = &mut g.terminals[0];
                t.difference = Some(Difference {
                    base: "[a-c]{1,8}".into(),
                    words: vec![b"ab".to_vec(), b"abc".to_vec()],
                });
                // Its regex (built only where the base fails) and cache key.
                t.regex = "(?:[a-c]{1,8})".into();
            }
            let limits = LexerLimits {
                terminal_states: 4 + rng.below(20) as usize,
                total_states: 4 + rng.below(60) as usize,
                ..LexerLimits::default()
            };
            let expected = sequential(&g, &limits);
            let got = compile_lexer_with(&g, &limits);
            match (&expected, &got) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "case {case}: {regexes:?} {limits:?}");
                    oks += 1;
                }
                (Err(a), Err(b)) => {
                    assert_eq!(
                        a.to_string(),
                        b.to_string(),
                        "case {case}: {regexes:?} {limits:?}"
                    );
                    if a.to_string().contains("lexer table budget") {
                        budget_errors += 1;
                    }
                }
                _ => panic!("case {case}: {regexes:?} {limits:?}: {expected:?} vs {got:?}"),
            }
        }
        // Both outcomes, and the budget among the errors, were exercised.
        assert!(
            oks > 20 && budget_errors > 20,
            "{oks} compiled, {budget_errors} over the budget"
        );
    }

    #[test]
    fn unicode_word_boundary_is_named_with_the_ascii_alternative() {
        match compile_terminal(r"\bfoo\b") {
            Err(LexerErrorKind::Unsupported(msg)) => {
                assert!(msg.contains("Unicode word boundary"), "{msg}");
                assert!(msg.contains("(?-u:\\b)"), "{msg}");
            }
            other => panic!("expected the Unicode word boundary error, got {other:?}"),
        }
        assert!(compile_terminal(r"(?-u:\b)foo").is_ok());
    }

    /// A literal's chain table is the table its regex determinizes to, state for
    /// state: random literals of repeated, multi-byte, non-UTF-8 and regex-special
    /// bytes, up to the longest the chain builds, and the state limit met at the same
    /// length. Anything but one literal is left to the determinization.
    #[test]
    fn literal_chains_are_the_determinized_tables() {
        let l = LexerLimits::default();
        let limit = (PER_TERMINAL, l.terminal_states);
        let pool: &[u8] = b"aab\"\\.*()[]{}|?+^$ -\x00\x7f\xc3\xa9\xff";
        let mut rng = crate::test_rng::XorShift(0x1234_5678_9abc_def1);
        let mut built = 0;
        for case in 0..600 {
            let len = match case {
                0 => MAX_LITERAL_BYTES,
                1 => MAX_LITERAL_BYTES + 1,
                _ => 1 + rng.below(40) as usize,
            };
            let bytes: Vec<u8> = (0..len)
                .map(|_| pool[rng.below(pool.len() as u64) as usize])
                .collect();
            // Each byte written as `(?-u:\xNN)` or, for printable ASCII, escaped.
            let regex: String = bytes
                .iter()
                .map(|&b| {
                    if b.is_ascii_graphic() || b == b' ' {
                        regex_syntax::escape(&(b as char).to_string())
                    } else {
                        format!("(?-u:\\x{b:02X})")
                    }
                })
                .collect();
            let chain = build_literal(&regex, &l, l.terminal_states, limit);
            if len > MAX_LITERAL_BYTES {
                assert!(chain.is_none(), "{regex}");
                continue;
            }
            let chain = chain.unwrap_or_else(|| panic!("{regex}: not one literal"));
            let summary = |r: &Result<(usize, ByteDfa), LexerErrorKind>| match r {
                Ok((n, d)) => format!("{n} reachable, {} states", d.num_states()),
                Err(e) => e.to_string(),
            };
            let determinized = build(&regex, &l, l.terminal_states, limit);
            assert!(
                chain == determinized,
                "{len} bytes: {} against {}",
                summary(&chain),
                summary(&determinized)
            );
            // State limits about the chain's length: refused, or built, alike.
            for tight in len..len + 4 {
                assert!(
                    build_literal(&regex, &l, tight, ("tight", tight)).expect("a literal")
                        == build(&regex, &l, tight, ("tight", tight)),
                    "{len} bytes, at most {tight} states"
                );
            }
            built += 1;
        }
        assert!(built > 500);
        for not_literal in ["a|b", "ab*", "(?i:ab)", "[a]b", "", "a(?:)"] {
            assert!(
                build_literal(not_literal, &l, l.terminal_states, limit).is_none()
                    || regex_syntax::parse(not_literal)
                        .is_ok_and(|h| matches!(h.kind(), regex_syntax::hir::HirKind::Literal(_))),
                "{not_literal}"
            );
        }
        assert!(build_literal("ab*", &l, l.terminal_states, limit).is_none());
        assert!(build_literal("", &l, l.terminal_states, limit).is_none());
    }

    #[test]
    fn case_insensitive_literal() {
        let d = compile_terminal("(?i:select)").unwrap();
        assert!(accepts(&d, b"SeLeCt"));
        assert!(!d.extends(d.run(b"select"), b'x'));
    }

    /// A property-name terminal built as a difference (the string terminal minus the
    /// keys' texts) has the table its regex (an alternation over the keys' trie) has:
    /// random key sets with quotes, backslashes, multi-byte characters, keys that are
    /// prefixes of others and the empty key, over every character and over `[a-c"]`.
    #[test]
    fn differences_build_the_automaton_of_their_regex() {
        use crate::frontend::json_schema::string_lang::{
            every_char, none_of_difference, none_of_within, string_terminal,
        };
        use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};
        let chars = ['a', 'b', 'c', '"', '\\', 'é', '😀'];
        let abc = ClassUnicode::new([
            ClassUnicodeRange::new('a', 'c'),
            ClassUnicodeRange::new('"', '"'),
        ]);
        let mut rng = crate::test_rng::XorShift(0x6469_6666);
        for case in 0..60 {
            let keys: Vec<String> = (0..rng.below(12))
                .map(|_| {
                    (0..rng.below(5))
                        .map(|_| chars[rng.below(chars.len() as u64) as usize])
                        .collect()
                })
                .collect();
            let alphabet = if case % 3 == 2 {
                abc.clone()
            } else {
                every_char()
            };
            let regex = string_terminal(&none_of_within(&keys, &alphabet)).unwrap();
            let d = none_of_difference(&keys, &alphabet).expect("no control characters");
            assert_eq!(
                difference_is_regex(&regex, &d),
                Ok(true),
                "keys {keys:?}, alphabet {alphabet:?}"
            );
        }
        // A wrong difference is found: a key left out of the words.
        let keys = vec!["ab".to_string(), "b".to_string()];
        let regex = string_terminal(&none_of_within(&keys, &every_char())).unwrap();
        let mut d = none_of_difference(&keys, &every_char()).unwrap();
        d.words.pop();
        assert_eq!(difference_is_regex(&regex, &d), Ok(false));
        // A control character has several spellings: no difference.
        assert!(none_of_difference(&["a\n".to_string()], &every_char()).is_none());
    }

    /// The lexer takes a terminal's difference when it has one, and its state limit
    /// still holds.
    #[test]
    fn a_terminal_with_a_difference_is_built_from_it_within_the_state_limit() {
        use crate::frontend::json_schema::string_lang::{
            every_char, none_of, none_of_difference, string_terminal,
        };
        let keys: Vec<String> = (0..300).map(|i| format!("key{i}")).collect();
        let mut g = grammar_of(&[&string_terminal(&none_of(&keys)).unwrap()]);
        g.terminals[0].difference = none_of_difference(&keys, &every_char());
        let d = &compile_lexer(&g).unwrap()[0];
        assert!(accepts(d, b"\"key300\"") && accepts(d, b"\"ke\""));
        assert!(!accepts(d, b"\"key299\"") && !accepts(d, b"\"key0\""));
        assert!(!accepts(d, b"\"key\\\""));
        let limits = LexerLimits {
            terminal_states: 500,
            ..LexerLimits::default()
        };
        let e = compile_lexer_with(&g, &limits).unwrap_err();
        assert_eq!(
            e.kind,
            LexerErrorKind::SizeLimit {
                what: PER_TERMINAL,
                limit: 500
            }
        );
    }
}
