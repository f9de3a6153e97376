//! Lexeme bodies: the part of a Terminal DWA walk that stays inside one lexeme, walked
//! once per vocabulary and shared by every grammar compiled for it.
//!
//! Building a Terminal DWA walks the token trie from a lexer boundary (stage
//! `terminal_dwa`). Inside a wide lexeme — a JSON string, a name, a comment — nearly
//! every token stays inside it, so the walk visits most of the trie's 400k nodes, at
//! every such boundary of every grammar: the bulk of a small JSON Schema's compile.
//! Yet while one lexeme is in progress and does not end, what the walk sees depends
//! only on that lexeme's automaton from its current state, not on the grammar: JSON
//! Schemas repeat the same string automaton in schema after schema, under different
//! terminal numbers and state numbers.
//!
//! So the automaton reachable from a state is put in a canonical form ([`BodyTable`]:
//! states numbered breadth-first, per byte "the lexeme ends here", "it dies" or "it
//! goes on to state n"), interned, and the walk of a trie subtree under it is kept
//! ([`BodyWalk`]): the tokens that end inside the lexeme, and the *exits*, the trie
//! nodes whose byte ends it. A grammar's walk takes the tokens as they are and goes on
//! from the exits only, where its own terminals start.

use crate::wide_children::WideChildren;
use rustc_hash::FxHashMap;
use stackmask_formats::{TokenTrie, TrieRef};
use std::sync::{Arc, Mutex};

/// The automaton of one lexeme from one state, in canonical form: state 0 is the start,
/// states are numbered in breadth-first order over the bytes, and row `s` says per byte
/// [`BodyTable::END`], [`BodyTable::DEAD`], [`BodyTable::CUT`] or the next state.
///
/// Rows are kept as maximal runs of bytes with one code (as [`ByteRuns`]), one row
/// after the other: a form is made at every boundary of every grammar and interned, so
/// it is hashed and compared more often than walked, and most forms of a schema are
/// its own (a property name's rest), walked over a few subtrees only; a name's rest
/// with a JSON string after it is 40 states, 40 KB as 256 codes a state, a few hundred
/// bytes as runs. A step scans its row's runs: a handful (go on, the closing quote, the
/// escape, the bytes refused).
///
/// Only the first [`BodyTable::MAX_DEPTH`] bytes are kept: a state first reached after
/// that many is [`BodyTable::CUT`]. Tokens are short, so this rarely loses anything, and
/// it makes a counted lexeme's bodies one: `[0-9a-z_-]{1,255}` has a state per count
/// left, each the start of its own automaton, yet from every count above the depth the
/// first 48 bytes look the same (a property-name pattern's 207 plain trie walks became
/// one shared walk). A walk hands a node where a token reaches the cut to its caller
/// as it does an exit ([`BodyWalk::exits`]), with the state before it: the caller steps
/// the lexeme from there and walks that subtree itself.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BodyTable {
    /// Every row's runs `(last, code)`, in state order; a row's last run ends at 255.
    runs: Box<[(u8, u32)]>,
    /// Where each row starts in `runs`.
    rows: Box<[u32]>,
}

impl BodyTable {
    /// The byte ends the lexeme (it may end before the byte, and greedy lexing ends it).
    pub const END: u32 = u32::MAX;
    /// The lexeme cannot go on with the byte, nor end before it.
    pub const DEAD: u32 = u32::MAX - 1;
    /// The lexeme goes on with the byte, past the depth the table keeps.
    pub const CUT: u32 = u32::MAX - 2;
    /// Bytes of the lexeme a table keeps (see [`BodyTable`]): below
    /// [`BodyTable::MAX_STATES`], so that a counted lexeme's chain of states leaves room
    /// for its others (a closing quote's). Few tokens run longer inside one lexeme.
    pub const MAX_DEPTH: u32 = 48;
    /// Largest automaton put in canonical form: bodies are the wide, simple lexemes;
    /// a many-state automaton (a `date-time`) is cheaper to walk than to compare.
    pub const MAX_STATES: usize = 64;
    /// Largest canonical form of a wide state (see [`BodyTable::MIN_WIDTH`]) of a lexeme
    /// of more than [`BodyTable::MAX_STATES`] states: a counted lexeme, whose states
    /// within the depth are a chain of counts times the states of a character in
    /// progress. Such bodies are few per grammar, and each spares a walk of most of
    /// the trie. (Narrow states keep [`BodyTable::MAX_STATES`]: their walks are cheap,
    /// and given this limit too, one MaskBench schema's compile went from 3 to 34 ms.)
    pub const MAX_COUNTED_STATES: usize = 512;
    /// Fewest bytes a lexeme must go on with (or end before) from a state of a lexeme
    /// with [`BodyTable::MANY_STATES`] for its body to be worth a canonical form: there
    /// bodies pay off on wide lexemes only, whose walks visit most of the trie.
    pub const MIN_WIDTH: usize = 32;
    /// Lexeme automata past this many states have bodies only where they are wide.
    pub const MANY_STATES: u32 = 256;

    /// The canonical form of the automaton reachable from `start` within
    /// [`BodyTable::MAX_DEPTH`] bytes, where `step(s, b)` is [`BodyTable::END`],
    /// [`BodyTable::DEAD`] or the next state (any numbering), with the original state
    /// of each canonical one; `None` past [`BodyTable::MAX_STATES`], or on reaching a
    /// state `too_big` says has no canonical form (what it reaches, `start` mostly
    /// reaches too: giving up early only costs the shortcut).
    pub fn canonical(
        start: u32,
        step: impl Fn(u32, u8) -> u32,
        too_big: impl Fn(u32) -> bool,
    ) -> Option<(BodyTable, Vec<u32>)> {
        Self::canonical_of_runs(
            start,
            |s| ByteRuns::of(|b| step(s, b)),
            too_big,
            Self::MAX_STATES,
        )
    }

    /// [`BodyTable::canonical`] over each state's step as [`ByteRuns`]. Each state of a
    /// chain (a property-name trie's: `"cl`, `"cli`, …) reaches the rest of the chain,
    /// so its canonical form visits those states again: stepped byte by byte, that was
    /// 13% of a names-heavy schema compile's samples. Callers keep each state's runs and
    /// step it once; a run of bytes with one target is translated once. `None` past
    /// `max_states` states ([`BodyTable::MAX_STATES`] but for bodies that are worth
    /// more).
    pub fn canonical_of_runs<R: AsRef<[(u8, u32)]>>(
        start: u32,
        runs: impl Fn(u32) -> R,
        too_big: impl Fn(u32) -> bool,
        max_states: usize,
    ) -> Option<(BodyTable, Vec<u32>)> {
        let mut states = vec![start];
        // Per canonical state: the bytes that first reach it (breadth first: the fewest).
        let mut depth = vec![0u32];
        let mut index: FxHashMap<u32, u32> = FxHashMap::default();
        index.insert(start, 0);
        let mut table: Vec<(u8, u32)> = Vec::new();
        let mut rows: Vec<u32> = Vec::new();
        let mut i = 0;
        while i < states.len() {
            let s = states[i];
            let row = runs(s);
            let row_start = table.len();
            rows.push(row_start as u32);
            for &(last, next) in row.as_ref() {
                let code = match next {
                    Self::END | Self::DEAD | Self::CUT => next,
                    next if depth[i] + 1 >= Self::MAX_DEPTH && !index.contains_key(&next) => {
                        Self::CUT
                    }
                    next => {
                        let fresh = states.len() as u32;
                        let code = *index.entry(next).or_insert(fresh);
                        if code == fresh {
                            states.push(next);
                            depth.push(depth[i] + 1);
                            if too_big(next) {
                                return None;
                            }
                        }
                        code
                    }
                };
                // Two states may both become a cut: one run, so that equal tables
                // have equal runs.
                let in_row = table.len() > row_start;
                match table.last_mut() {
                    Some((l, c)) if in_row && *c == code => *l = last,
                    _ => table.push((last, code)),
                }
            }
            debug_assert_eq!(
                table.last().map(|r| r.0),
                Some(255),
                "runs cover every byte"
            );
            if states.len() > max_states {
                return None;
            }
            i += 1;
        }
        Some((
            BodyTable {
                runs: table.into_boxed_slice(),
                rows: rows.into_boxed_slice(),
            },
            states,
        ))
    }

    /// Its number of states.
    pub fn num_states(&self) -> usize {
        self.rows.len()
    }

    /// Whether some state steps some byte to `code`.
    pub fn has_code(&self, code: u32) -> bool {
        self.runs.iter().any(|r| r.1 == code)
    }

    /// State `s`'s runs.
    fn row(&self, s: u32) -> &[(u8, u32)] {
        let end = self
            .rows
            .get(s as usize + 1)
            .map_or(self.runs.len(), |&e| e as usize);
        &self.runs[self.rows[s as usize] as usize..end]
    }

    /// The states other than the start that loop on some byte and cannot lead back to
    /// the start: where a lexeme settles into a loop it leaves only to end (a string's
    /// content after a property name's declared prefixes). The table from such a state
    /// is often a table of its own, walked for other lexemes too.
    fn loop_entries(&self) -> Vec<u32> {
        let n = self.num_states();
        let mut seen = vec![false; n];
        let mut stack = Vec::new();
        (1..n as u32)
            .filter(|&s| self.row(s).iter().any(|&(_, next)| next == s))
            .filter(|&s| {
                seen.iter_mut().for_each(|x| *x = false);
                stack.clear();
                stack.push(s);
                while let Some(r) = stack.pop() {
                    for &(_, next) in self.row(r) {
                        if (next as usize) < n && !std::mem::replace(&mut seen[next as usize], true)
                        {
                            stack.push(next);
                        }
                    }
                }
                !seen[0]
            })
            .collect()
    }

    /// State `s`'s code for byte `b`.
    #[inline]
    fn step(&self, s: u32, b: u8) -> u32 {
        let row = &self.runs[self.rows[s as usize] as usize..];
        // Rows end at byte 255, so the scan stops within the row.
        row.iter().find(|r| r.0 >= b).map_or(Self::DEAD, |r| r.1)
    }
}

/// One state's byte step as runs: `(last, code)` steps every byte from the previous
/// run's `last + 1` (0 for the first) through `last` to `code` ([`BodyTable::END`],
/// [`BodyTable::DEAD`] or a state). Lexeme automata have few distinct targets per state
/// (a string's: go on, the closing quote, the escape, the bytes it refuses), so a row is
/// a handful of runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteRuns(pub Box<[(u8, u32)]>);

impl ByteRuns {
    /// The runs of `step` over every byte.
    pub fn of(step: impl Fn(u8) -> u32) -> Self {
        let mut runs: Vec<(u8, u32)> = Vec::new();
        for b in 0..=255u8 {
            let code = step(b);
            match runs.last_mut() {
                Some((last, c)) if *c == code => *last = b,
                _ => runs.push((b, code)),
            }
        }
        ByteRuns(runs.into_boxed_slice())
    }

    /// How many bytes do not step to [`BodyTable::DEAD`].
    pub fn width(&self) -> usize {
        run_lengths(&self.0)
            .filter(|&(_, code)| code != BodyTable::DEAD)
            .map(|(len, _)| len)
            .sum()
    }
}

/// Runs as `(bytes, code)`: how many bytes each covers.
fn run_lengths(runs: &[(u8, u32)]) -> impl Iterator<Item = (usize, u32)> + '_ {
    let mut from = 0usize;
    runs.iter().map(move |&(last, code)| {
        let len = last as usize + 1 - from;
        from = last as usize + 1;
        (len, code)
    })
}

impl AsRef<[(u8, u32)]> for ByteRuns {
    fn as_ref(&self) -> &[(u8, u32)] {
        &self.0
    }
}

/// The walk of one trie subtree inside one lexeme: its root node's byte has been read
/// and the lexeme is in the table's start state there.
#[derive(Debug, Default)]
pub struct BodyWalk {
    /// The tokens that end inside the lexeme, as ascending, non-adjacent ranges of
    /// positions in the trie's `token_ids`.
    pub tokens: Vec<(u32, u32)>,
    /// The trie nodes where the walk leaves the table, in trie order, each with the
    /// canonical state the lexeme was in before that node's byte: the byte ends the
    /// lexeme, or goes on in it past the depth the table keeps ([`BodyTable::CUT`]).
    /// Their subtrees are not walked: what follows an end depends on the grammar, and
    /// what follows a cut on the lexeme's state, which the table no longer tells apart.
    /// (A counted lexeme's cut table is shared by every count above its depth, and
    /// under a wide first byte some long token, a run of 64 spaces or dashes, reaches
    /// the cut: stopping the whole walk there, as walks once did, sent that first
    /// byte's whole subtree to the thread-by-thread walk at every count — 103 of the
    /// root walks of a `[a-zA-Z0-9_-]{162}` pattern's bodies reach a cut.)
    pub exits: Vec<(u32, u32)>,
}

impl BodyWalk {
    /// Walks the subtree of trie node `root` under `table` (interned as `own`, if it
    /// is). Where the lexeme enters a state from which the table is another interned
    /// table (`subs`, see [`PreparedTrie::subs`]) at a node with a large subtree, that
    /// subtree's walk comes from `prepared`'s store, under that table.
    fn new(
        prepared: &PreparedTrie,
        root: usize,
        table: &BodyTable,
        own: Option<u32>,
        subs: &[Option<Sub>],
    ) -> Self {
        let trie = prepared.trie.view();
        let mut walk = BodyWalk::default();
        let base = trie.nodes[root].depth as usize;
        // states[d]: the canonical state d bytes below the root.
        let mut states: Vec<u32> = vec![0];
        walk.add_tokens(trie, root);
        let end = trie.subtree_end(root);
        let mut i = root + 1;
        while i < end {
            let node = &trie.nodes[i];
            let d = node.depth as usize - base;
            let before = states[d - 1];
            match table.step(before, node.byte) {
                BodyTable::END | BodyTable::CUT => {
                    walk.exits.push((i as u32, before));
                    i = trie.subtree_end(i);
                }
                BodyTable::DEAD => i = trie.subtree_end(i),
                next => {
                    let sub = subs.get(next as usize).and_then(Option::as_ref);
                    match sub {
                        Some(sub)
                            if Some(sub.id) != own
                                && node.subtree_size as usize >= prepared.splice_min_nodes =>
                        {
                            let inner = prepared.walk_id(i, sub.id);
                            for &range in &inner.tokens {
                                walk.add_range(range);
                            }
                            walk.exits.extend(
                                (inner.exits.iter()).map(|&(n, s)| (n, sub.states[s as usize])),
                            );
                            i = trie.subtree_end(i);
                        }
                        _ => {
                            states.truncate(d);
                            states.push(next);
                            walk.add_tokens(trie, i);
                            i += 1;
                        }
                    }
                }
            }
        }
        walk
    }

    fn add_tokens(&mut self, trie: TrieRef<'_>, node: usize) {
        let n = &trie.nodes[node];
        if n.num_tokens > 0 {
            self.add_range((n.first_token, n.first_token + n.num_tokens));
        }
    }

    /// Adds token positions `range`, joined to the last range where they meet.
    fn add_range(&mut self, range: (u32, u32)) {
        match self.tokens.last_mut() {
            Some(last) if last.1 == range.0 => last.1 = range.1,
            _ => self.tokens.push(range),
        }
    }

    /// Its size in bytes, for the store's budget.
    fn bytes(&self) -> usize {
        8 * (self.tokens.len() + self.exits.len()) + 64
    }
}

/// A token trie with the lexeme bodies walked over it so far, many-state lexemes'
/// walk classes, and its wide nodes indexed: what every grammar compiled for one
/// vocabulary shares. The walks are pure functions of the trie and a [`BodyTable`], and
/// the classes of the trie and a lexeme's own automaton, so a grammar's Terminal DWAs
/// do not depend on what is kept.
pub struct PreparedTrie {
    /// Shareable with the runtime's `SharedVocab` made from the same build.
    trie: Arc<TokenTrie>,
    /// Its wide nodes' children by byte.
    wide: WideChildren,
    store: Mutex<Store>,
    /// Fewest trie nodes under a node for a walk to take that subtree's walk under
    /// another table from the store ([`PreparedTrie::SPLICE_MIN_NODES`]).
    splice_min_nodes: usize,
    /// Many-state lexemes' walk classes, by their automata: see
    /// [`PreparedTrie::walk_classes`].
    walk_classes: Kept<Arc<[u32]>>,
    /// Large token classes' mask words, by their ranges: see
    /// [`PreparedTrie::class_words`].
    class_words: Kept<ClassRanges>,
}

/// A token class as the ascending `start..end` ranges of trie positions of its tokens.
pub(crate) type ClassRanges = Box<[(u32, u32)]>;

/// Results of a pure function of their key and the trie (walk classes of an automaton,
/// mask words of a class), kept for the next grammar under a byte budget; past it they
/// are made and dropped, so what is kept never changes a result.
struct Kept<K> {
    kept: Mutex<KeptMap<K>>,
    budget: usize,
}

/// The map a [`Kept`] guards, and the bytes of its keys and values.
struct KeptMap<K> {
    map: FxHashMap<K, Arc<[u32]>>,
    bytes: usize,
}

impl<K: std::hash::Hash + Eq> Kept<K> {
    fn new(budget: usize) -> Self {
        Kept {
            kept: Mutex::new(KeptMap {
                map: FxHashMap::default(),
                bytes: 0,
            }),
            budget,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, KeptMap<K>> {
        // An update counts its bytes and inserts, neither of which can leave the map
        // unusable, so a poisoned lock still guards a consistent map.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value kept for `key`, if any.
    fn get<Q>(&self, key: &Q) -> Option<Arc<[u32]>>
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized,
    {
        self.lock().map.get(key).cloned()
    }

    /// Keeps `value` for `key` (`bytes` of both) if the budget has room and no value is
    /// kept for it yet (two workers may make the same value at once: the second keeps
    /// nothing).
    fn keep(&self, key: K, value: &Arc<[u32]>, bytes: usize) {
        let mut kept = self.lock();
        if kept.bytes + bytes <= self.budget && !kept.map.contains_key(&key) {
            kept.bytes += bytes;
            kept.map.insert(key, value.clone());
        }
    }

    /// How many values are kept.
    fn len(&self) -> usize {
        self.lock().map.len()
    }
}

/// Where a table, from one of its states, is another interned table: that table's id
/// and, per its state, the state of the first table it stands for.
#[derive(Debug)]
struct Sub {
    id: u32,
    states: Box<[u32]>,
}

/// A body table as [`PreparedTrie::intern`] returns it.
#[derive(Clone, Debug)]
pub struct Interned {
    /// Its id in the store, if it was kept.
    id: Option<u32>,
    /// The table.
    table: Arc<BodyTable>,
}

/// Interned body tables and the walks kept.
#[derive(Default)]
struct Store {
    ids: FxHashMap<BodyTable, u32>,
    tables: Vec<Arc<BodyTable>>,
    walks: FxHashMap<(u32, u32), Arc<BodyWalk>>,
    /// Per table id, once walked: per state, the table it is from there, if interned
    /// ([`PreparedTrie::subs`]).
    subs: FxHashMap<u32, Arc<[Option<Sub>]>>,
    bytes: usize,
}

impl PreparedTrie {
    /// Bytes of tables and walks kept per vocabulary (a JSON string body over a 200k
    /// vocabulary is about 0.3 MB); past it, walks are made and dropped.
    pub const MAX_BYTES: usize = 256 << 20;

    /// Fewest nodes in a subtree for a walk to take it from another table's walk
    /// ([`PreparedTrie::subs`]): a small subtree is cheaper to walk than to look up
    /// and copy, and its walk would be one more kept.
    pub const SPLICE_MIN_NODES: usize = 64;

    /// Prepares `trie` (nothing is walked yet).
    pub fn new(trie: impl Into<Arc<TokenTrie>>) -> Self {
        let trie = trie.into();
        PreparedTrie {
            wide: WideChildren::new(trie.view()),
            trie,
            store: Mutex::default(),
            splice_min_nodes: Self::SPLICE_MIN_NODES,
            walk_classes: Kept::new(Self::MAX_WALK_CLASS_BYTES),
            class_words: Kept::new(Self::MAX_CLASS_WORDS_BYTES),
        }
    }

    /// [`PreparedTrie::new`] taking subtrees from other tables' walks down to
    /// `min_nodes` nodes, so that small tries exercise it.
    #[cfg(test)]
    fn with_splice_min_nodes(trie: TokenTrie, min_nodes: usize) -> Self {
        PreparedTrie {
            splice_min_nodes: min_nodes,
            ..PreparedTrie::new(trie)
        }
    }

    /// The trie's wide nodes' children by byte.
    pub fn wide_children(&self) -> &WideChildren {
        &self.wide
    }

    /// The trie.
    pub fn trie(&self) -> &TokenTrie {
        &self.trie
    }

    /// The trie, the walks dropped (copied if it is shared).
    pub fn into_trie(self) -> TokenTrie {
        Arc::try_unwrap(self.trie).unwrap_or_else(|shared| (*shared).clone())
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        // Every update is one insert, so a poisoned lock still guards a consistent store.
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `table`, interned: with its id, or without one once the store is full (its
    /// walks are then made and dropped).
    pub fn intern(&self, table: BodyTable) -> Interned {
        let mut store = self.store();
        if let Some(&id) = store.ids.get(&table) {
            return Interned {
                id: Some(id),
                table: store.tables[id as usize].clone(),
            };
        }
        let table = Arc::new(table);
        // Kept twice: as the map's key and for the walks.
        let bytes = 2 * (8 * table.runs.len() + 4 * table.rows.len());
        if store.bytes + bytes > Self::MAX_BYTES {
            return Interned { id: None, table };
        }
        store.bytes += bytes;
        let id = store.tables.len() as u32;
        store.tables.push(table.clone());
        store.ids.insert((*table).clone(), id);
        Interned {
            id: Some(id),
            table,
        }
    }

    /// The walk of trie node `root`'s subtree under `body`: kept, or made now (and
    /// kept while the store has room).
    pub fn walk(&self, root: usize, body: &Interned) -> Arc<BodyWalk> {
        match body.id {
            Some(id) => self.walk_id(root, id),
            None => Arc::new(BodyWalk::new(self, root, &body.table, None, &[])),
        }
    }

    /// [`PreparedTrie::walk`] under interned table `id`.
    fn walk_id(&self, root: usize, id: u32) -> Arc<BodyWalk> {
        let table = {
            let store = self.store();
            if let Some(w) = store.walks.get(&(root as u32, id)) {
                return w.clone();
            }
            store.tables[id as usize].clone()
        };
        let subs = self.subs(id, &table);
        let walk = Arc::new(BodyWalk::new(self, root, &table, Some(id), &subs));
        let mut store = self.store();
        if store.bytes + walk.bytes() <= Self::MAX_BYTES {
            store.bytes += walk.bytes();
            store.walks.insert((root as u32, id), walk.clone());
        }
        walk
    }

    /// Per state of interned table `id`: the interned table it is from there, for the
    /// states where it settles into a loop ([`BodyTable::loop_entries`]). A property name's body is
    /// its declared names' prefixes, then a JSON string's content: from where no
    /// declared name goes on, its walk is the string's, kept at every wide node, and a
    /// new name body need not walk those subtrees again (they were most of the trie
    /// walked for a schema's names). Worked out once per table; a table interned later
    /// is not looked for (walks are the same either way).
    fn subs(&self, id: u32, table: &BodyTable) -> Arc<[Option<Sub>]> {
        if let Some(subs) = self.store().subs.get(&id) {
            return subs.clone();
        }
        let mut subs: Vec<Option<Sub>> = Vec::new();
        for s in table.loop_entries() {
            let Some((sub, states)) =
                BodyTable::canonical_of_runs(s, |r| table.row(r), |_| false, usize::MAX)
            else {
                continue;
            };
            if let Some(&sub_id) = self.store().ids.get(&sub) {
                subs.resize_with(s as usize + 1, || None);
                subs[s as usize] = Some(Sub {
                    id: sub_id,
                    states: states.into_boxed_slice(),
                });
            }
        }
        let subs: Arc<[Option<Sub>]> = subs.into();
        // Kept within the store's budget, like the walks (past it, worked out again).
        let bytes = 16 * subs.len()
            + (subs.iter().flatten())
                .map(|sub| 4 * sub.states.len())
                .sum::<usize>();
        let mut store = self.store();
        if store.bytes + bytes <= Self::MAX_BYTES {
            store.bytes += bytes;
            store.subs.insert(id, subs.clone());
        }
        subs
    }

    /// How many body tables and walks are kept (for tests and diagnostics).
    pub fn kept(&self) -> (usize, usize) {
        let store = self.store();
        (store.tables.len(), store.walks.len())
    }

    /// Bytes of walk classes kept per vocabulary (a `date-time`'s are 0.9 MB of
    /// automaton and 44 KB of classes).
    pub const MAX_WALK_CLASS_BYTES: usize = 64 << 20;

    /// The walk classes of the lexeme automaton `automaton` (a pure function of it and
    /// this trie, `make`): kept, or made now and kept while there is room. A schema's
    /// `date-time` is the same 11,000-state automaton in every schema that has one, and
    /// its classes took 19–36 ms each time (the trie walked for how far tokens reach
    /// into it, then a refinement round per byte of that).
    pub(crate) fn walk_classes(
        &self,
        automaton: Arc<[u32]>,
        make: impl FnOnce(&[u32]) -> Vec<u32>,
    ) -> Arc<[u32]> {
        if let Some(classes) = self.walk_classes.get(&automaton) {
            return classes;
        }
        let classes: Arc<[u32]> = make(&automaton).into();
        let bytes = 4 * (automaton.len() + classes.len());
        self.walk_classes.keep(automaton, &classes, bytes);
        classes
    }

    /// How many lexemes' walk classes are kept (for tests).
    pub fn walk_classes_kept(&self) -> usize {
        self.walk_classes.len()
    }

    /// Bytes of class mask words kept per vocabulary (25 KB a class for a 200k
    /// vocabulary).
    pub const MAX_CLASS_WORDS_BYTES: usize = 64 << 20;

    /// The mask words (`words` of them, bit `t` for token id `t`) of the tokens at trie
    /// positions `ranges` (ascending `start..end` pairs): kept, or expanded now and
    /// kept while there is room (one length of mask per class: another length is
    /// expanded each time, never kept). A JSON string's content tokens, a number's, a
    /// `date-time`'s are the same large classes in schema after schema, and expanding
    /// one sets a bit per token at a scattered position (the trie's order is not the
    /// ids'): 65,000 tokens on average in a MaskBench schema's sets.
    pub(crate) fn class_words(&self, ranges: &[(u32, u32)], words: usize) -> Arc<[u32]> {
        if let Some(kept) = self.class_words.get(ranges) {
            if kept.len() == words {
                return kept;
            }
        }
        let mut dense = vec![0u32; words];
        for &(a, b) in ranges {
            for &t in &self.trie.token_ids[a as usize..b as usize] {
                dense[t as usize / 32] |= 1 << (t % 32);
            }
        }
        let dense: Arc<[u32]> = dense.into();
        let bytes = 4 * words + 8 * ranges.len();
        self.class_words.keep(ranges.into(), &dense, bytes);
        dense
    }

    /// How many classes' mask words are kept (for tests).
    pub fn class_words_kept(&self) -> usize {
        self.class_words.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::XorShift;
    use stackmask_formats::{TokenKind, Vocabulary};

    /// A random automaton over bytes `a`..`d` with `n` states (numbered from 100 up, so
    /// that canonical numbers differ from the originals): per state and byte END, DEAD
    /// or a state; any other byte is DEAD.
    fn random_automaton(rng: &mut XorShift, n: u32) -> Vec<[u32; 4]> {
        (0..n)
            .map(|_| {
                std::array::from_fn(|_| match rng.below(5) {
                    0 => BodyTable::END,
                    1 => BodyTable::DEAD,
                    _ => 100 + rng.below(n as u64) as u32,
                })
            })
            .collect()
    }

    fn step_of(a: &[[u32; 4]]) -> impl Fn(u32, u8) -> u32 + '_ {
        |s, b| match b {
            b'a'..=b'd' => a[(s - 100) as usize][(b - b'a') as usize],
            _ => BodyTable::DEAD,
        }
    }

    #[test]
    fn renumbered_automata_have_one_canonical_form() {
        let mut rng = XorShift(0x0b0d_1e5a);
        for _ in 0..200 {
            let n = 1 + rng.below(8) as u32;
            let a = random_automaton(&mut rng, n);
            // The same automaton with its states permuted (a rotation).
            let shift = rng.below(n as u64) as u32;
            let to_b = |s: u32| 100 + (s - 100 + shift) % n;
            let mut b = a.clone();
            for (s, row) in a.iter().enumerate() {
                b[(to_b(100 + s as u32) - 100) as usize] = row.map(|x| match x {
                    BodyTable::END | BodyTable::DEAD => x,
                    x => to_b(x),
                });
            }
            let start = 100 + rng.below(n as u64) as u32;
            let (ta, sa) = BodyTable::canonical(start, step_of(&a), |_| false).unwrap();
            let (tb, sb) = BodyTable::canonical(to_b(start), step_of(&b), |_| false).unwrap();
            assert_eq!(ta, tb);
            // Each canonical state stands for corresponding original states.
            assert_eq!(sa.iter().map(|&s| to_b(s)).collect::<Vec<_>>(), sb);
            assert_eq!(sa[0], start);
        }
    }

    #[test]
    fn the_canonical_table_steps_as_the_automaton_does() {
        let mut rng = XorShift(0x5eed_0b1e);
        for _ in 0..300 {
            let n = 1 + rng.below(10) as u32;
            let a = random_automaton(&mut rng, n);
            let step = step_of(&a);
            let start = 100 + rng.below(n as u64) as u32;
            let (table, states) = BodyTable::canonical(start, &step, |_| false).unwrap();
            assert_eq!(table.num_states(), states.len());
            for (i, &orig) in states.iter().enumerate() {
                for b in 0..=255u8 {
                    match (step(orig, b), table.step(i as u32, b)) {
                        (want @ (BodyTable::END | BodyTable::DEAD), got) => assert_eq!(got, want),
                        (want, got) => assert_eq!(states[got as usize], want, "byte {b}"),
                    }
                }
            }
        }
    }

    #[test]
    fn byte_runs_cover_every_byte_once() {
        let mut rng = XorShift(0x0b17_e5e5);
        for _ in 0..200 {
            let cuts: Vec<u8> = (0..rng.below(6)).map(|_| rng.below(256) as u8).collect();
            let step = |b: u8| match cuts.iter().filter(|&&c| c <= b).count() % 3 {
                0 => BodyTable::DEAD,
                k => k as u32,
            };
            let runs = ByteRuns::of(step);
            let mut from = 0usize;
            for (k, &(last, code)) in runs.0.iter().enumerate() {
                assert!(last as usize >= from, "runs ascend");
                assert!((from..=last as usize).all(|b| step(b as u8) == code));
                if k > 0 {
                    assert_ne!(runs.0[k - 1].1, code, "neighbouring runs differ");
                }
                from = last as usize + 1;
            }
            assert_eq!(from, 256);
            let live = (0..=255u8).filter(|&b| step(b) != BodyTable::DEAD).count();
            assert_eq!(runs.width(), live);
        }
    }

    #[test]
    fn automata_past_the_limit_have_no_canonical_form() {
        // A binary tree of `n` states: 'a' and 'b' go down, shallow enough to be kept
        // whole.
        let tree = |n: u32| {
            BodyTable::canonical(
                0,
                move |s, b| match b {
                    b'a' if 2 * s + 1 < n => 2 * s + 1,
                    b'b' if 2 * s + 2 < n => 2 * s + 2,
                    _ => BodyTable::DEAD,
                },
                |_| false,
            )
        };
        assert!(tree(BodyTable::MAX_STATES as u32).is_some());
        assert!(tree(BodyTable::MAX_STATES as u32 + 1).is_none());
    }

    /// A counted lexeme `[abc]{0,left}` then `q`, its states numbered from `first`.
    fn counter(left: u32, first: u32) -> (BodyTable, Vec<u32>) {
        BodyTable::canonical(
            first,
            move |s, b| match b {
                b'a'..=b'c' if s < first + left => s + 1,
                b'q' => BodyTable::END,
                _ => BodyTable::DEAD,
            },
            |_| false,
        )
        .expect("a chain is kept up to the depth")
    }

    /// Past the depth, bytes to different states and bytes to one state are the same
    /// cut: the two chains below differ only there, so their tables are equal, runs
    /// and all (interning compares the runs).
    #[test]
    fn cuts_to_different_states_are_one_run() {
        let chain = |split: bool| {
            let depth = BodyTable::MAX_DEPTH;
            BodyTable::canonical(
                0,
                move |s, b| match b {
                    b'b' if s + 1 == depth && split => 1000,
                    b'a' | b'b' if s < depth => s + 1,
                    b'q' => BodyTable::END,
                    _ => BodyTable::DEAD,
                },
                |_| false,
            )
            .unwrap()
            .0
        };
        assert!(chain(true).has_code(BodyTable::CUT));
        let (split, joined) = (chain(true), chain(false));
        for s in 0..split.num_states() as u32 {
            for b in 0..=255u8 {
                assert_eq!(split.step(s, b), joined.step(s, b));
            }
        }
        assert_eq!(split, joined);
    }

    #[test]
    fn deep_counts_share_one_table_and_walks_hand_the_cut_over_as_an_exit() {
        let depth = BodyTable::MAX_DEPTH;
        let (deep, states) = counter(3 * depth, 1000);
        assert_eq!(states.len() as u32, depth);
        assert_eq!(states[1], 1001);
        assert!(deep.has_code(BodyTable::CUT));
        // Every count from the depth up has the same table; below it, each its own.
        assert_eq!(counter(depth, 5).0, deep);
        assert_eq!(counter(depth + 1, 7).0, deep);
        assert_ne!(counter(depth - 2, 0).0, deep);
        assert!(!counter(depth - 2, 0).0.has_code(BodyTable::CUT));

        // Tokens: short runs under 'b', and one run under 'a' past the depth.
        let long: Vec<u8> = std::iter::repeat_n(b'a', depth as usize + 6).collect();
        let mut entries: Vec<Option<(Vec<u8>, TokenKind)>> = vec![Some((long, TokenKind::Normal))];
        for t in [&b"a"[..], b"ab", b"b", b"bc", b"bcq", b"bq", b"bqa", b"bd"] {
            entries.push(Some((t.to_vec(), TokenKind::Normal)));
        }
        let vocab = Vocabulary::from_entries("counted", entries, 0);
        let prepared = PreparedTrie::new(crate::vocab::build_trie(&vocab));
        let interned = prepared.intern(deep.clone());
        let t = prepared.trie().view();
        let root_of = |byte: u8| {
            let mut c = 1;
            while t.nodes[c].byte != byte {
                c = t.subtree_end(c);
            }
            c
        };
        // Under 'a': "a" inside, and the long run leaves the table at its byte past
        // the depth, from the last state the table keeps.
        let a = prepared.walk(root_of(b'a'), &interned);
        let naive = naive_walk(prepared.trie(), root_of(b'a'), &deep);
        assert_eq!((&a.tokens, &a.exits), (&naive.tokens, &naive.exits));
        let &[(cut, before)] = a.exits.as_slice() else {
            panic!("one cut: {:?}", a.exits)
        };
        assert_eq!(t.nodes[cut as usize].depth as u32, depth + 1);
        assert_eq!(before, depth - 1);
        assert_eq!(deep.step(before, b'a'), BodyTable::CUT);
        let b = prepared.walk(root_of(b'b'), &interned);
        let naive = naive_walk(prepared.trie(), root_of(b'b'), &deep);
        assert_eq!((&b.tokens, &b.exits), (&naive.tokens, &naive.exits));
        // "b", "bc" inside; exits at the `q` of "bcq" and "bq".
        assert_eq!(b.exits.len(), 2);
    }

    /// A trie over `tokens` random tokens of 1 to `max_len` bytes from `abcde`.
    fn random_trie(rng: &mut XorShift, tokens: usize, max_len: u64) -> TokenTrie {
        let entries: Vec<Option<(Vec<u8>, TokenKind)>> = (0..tokens)
            .map(|_| {
                let len = 1 + rng.below(max_len) as usize;
                let token = (0..len).map(|_| b"abcde"[rng.below(5) as usize]).collect();
                Some((token, TokenKind::Normal))
            })
            .collect();
        crate::vocab::build_trie(&Vocabulary::from_entries("random", entries, 0))
    }

    /// Every first byte's walk under `interned` (`table`) is the byte-by-byte walk, and
    /// kept: asked again, the same walk comes back.
    fn assert_walks_are_naive(
        prepared: &PreparedTrie,
        interned: &Interned,
        table: &BodyTable,
        case: usize,
    ) {
        let t = prepared.trie().view();
        let mut root = 1;
        while root < t.nodes.len() {
            let walk = prepared.walk(root, interned);
            let naive = naive_walk(prepared.trie(), root, table);
            assert_eq!(walk.tokens, naive.tokens, "case {case} root {root}");
            assert_eq!(walk.exits, naive.exits, "case {case} root {root}");
            assert!(Arc::ptr_eq(&walk, &prepared.walk(root, interned)));
            root = t.subtree_end(root);
        }
    }

    /// The walk of a subtree, byte by byte from each token's own path: the tokens whose
    /// every byte after the root's goes on, and the nodes whose byte ends the lexeme or
    /// goes on past the table's depth after a path that went on.
    fn naive_walk(trie: &TokenTrie, root: usize, table: &BodyTable) -> BodyWalk {
        let t = trie.view();
        let base = t.nodes[root].depth as usize;
        let mut walk = BodyWalk::default();
        let mut path: Vec<u8> = Vec::new();
        for i in root..t.subtree_end(root) {
            let d = t.nodes[i].depth as usize - base;
            path.truncate(d);
            path.push(t.nodes[i].byte);
            let mut state = 0;
            let mut fate = None;
            for (k, &b) in path.iter().enumerate().skip(1) {
                match table.step(state, b) {
                    BodyTable::END | BodyTable::CUT => {
                        fate = Some((k == d).then_some((i as u32, state)));
                        break;
                    }
                    BodyTable::DEAD => {
                        fate = Some(None);
                        break;
                    }
                    next => state = next,
                }
            }
            match fate {
                None => walk.add_tokens(t, i),
                Some(Some(exit)) => walk.exits.push(exit),
                Some(None) => {}
            }
        }
        walk
    }

    #[test]
    fn walks_equal_the_byte_by_byte_walk_and_are_kept_per_table() {
        let mut rng = XorShift(0x7e57_b0d1);
        for case in 0..60 {
            let prepared = PreparedTrie::new(random_trie(&mut rng, 40, 5));
            let n = 1 + rng.below(6) as u32;
            let a = random_automaton(&mut rng, n);
            let (table, _) = BodyTable::canonical(100, step_of(&a), |_| false).unwrap();
            let interned = prepared.intern(table.clone());
            assert_walks_are_naive(&prepared, &interned, &table, case);
            // An equal table is the same entry.
            assert_eq!(prepared.intern(table).id, interned.id);
            assert_eq!(prepared.kept().0, 1);
        }
    }

    /// A walk that takes subtrees from the walks of the tables its loops are (every
    /// node, in these small tries) equals the byte-by-byte walk; and it does take
    /// some. Planted bugs this catches: an exit's state not mapped back, a sub-walk's
    /// tokens dropped.
    #[test]
    fn walks_through_other_tables_equal_the_byte_by_byte_walk() {
        let mut rng = XorShift(0x5b1c_0e55);
        let mut spliced = 0;
        for case in 0..200 {
            let prepared = PreparedTrie::with_splice_min_nodes(random_trie(&mut rng, 60, 7), 1);
            let n = 2 + rng.below(6) as u32;
            let a = random_automaton(&mut rng, n);
            // Every state's own table interned first, so that loops find theirs.
            for s in (0..n).rev() {
                if let Some((t, _)) = BodyTable::canonical(100 + s, step_of(&a), |_| false) {
                    prepared.intern(t);
                }
            }
            let (table, _) = BodyTable::canonical(100, step_of(&a), |_| false).unwrap();
            let interned = prepared.intern(table.clone());
            assert_walks_are_naive(&prepared, &interned, &table, case);
            let t = prepared.trie().view();
            let roots = t.nodes.iter().filter(|n| n.depth == 1).count();
            spliced += prepared.kept().1 - roots;
        }
        assert!(spliced > 100, "walks taken from other tables: {spliced}");
    }

    /// A class's mask words have the bit of every token id at its trie positions and no
    /// other; asked again they come back kept (the same words), for the same number of
    /// words only; past the byte budget they are made and not kept.
    #[test]
    fn class_words_are_the_tokens_of_the_ranges_and_kept_within_budget() {
        let mut rng = XorShift(0x00c1_a55e);
        let trie = random_trie(&mut rng, 3_000, 6);
        let n = trie.token_ids.len() as u32;
        let words = (n as usize).div_ceil(32) + 1;
        let prepared = PreparedTrie::new(trie);
        let token_ids = prepared.trie().token_ids.clone();
        for case in 0..200 {
            let mut cuts: Vec<u32> = (0..2 * (1 + rng.below(20)))
                .map(|_| rng.below(n as u64 + 1) as u32)
                .collect();
            cuts.sort_unstable();
            let ranges: Vec<(u32, u32)> = cuts.chunks(2).map(|c| (c[0], c[1])).collect();
            let mut naive = vec![0u32; words];
            for &(a, b) in &ranges {
                for &t in &token_ids[a as usize..b as usize] {
                    naive[t as usize / 32] |= 1 << (t % 32);
                }
            }
            let made = prepared.class_words(&ranges, words);
            assert_eq!(&made[..], &naive[..], "case {case}: {ranges:?}");
            let again = prepared.class_words(&ranges, words);
            assert!(Arc::ptr_eq(&made, &again), "case {case}: not kept");
            // The same class for a longer mask: its own words, not the kept ones.
            let longer = prepared.class_words(&ranges, words + 1);
            assert_eq!(&longer[..words], &naive[..], "case {case}");
            assert_eq!(longer.len(), words + 1, "case {case}");
        }
        let kept = prepared.class_words_kept();
        assert!(kept > 150, "{kept} classes kept");
        // Over the budget: made, right, and not kept.
        prepared.class_words.lock().bytes = PreparedTrie::MAX_CLASS_WORDS_BYTES;
        let ranges = [(0, n / 3), (n / 2, n)];
        let made = prepared.class_words(&ranges, words);
        assert_eq!(prepared.class_words_kept(), kept);
        let again = prepared.class_words(&ranges, words);
        assert_eq!(made, again);
        assert!(!Arc::ptr_eq(&made, &again));
    }
}
