//! Portable prompt patterns: the regular expressions an identity's keyboard-interactive
//! answer rules match server prompts with. The desktop app's regex engine is not ours to
//! choose (JavaScript, Rust's regex, RE2, PCRE), so the service accepts only a subset whose
//! meaning is the same in all of them and refuses the rest, naming the rule
//! (docs/identities-rules.md). Matching here is the service's own reading of that meaning.
//!
//! Invariants: no regex crate and no backtracking: a pattern is parsed into a tree, compiled
//! into a Thompson NFA of at most `MAX_STATES` states and run as a Pike VM (a set of states
//! per prompt character), so `is_match` costs at most prompt length × states, never
//! exponential time; recursion is bounded by `MAX_NESTING`; an `Invalid` names the rule and a
//! character position.

// The service only checks patterns (`parse`): the app matches prompts. The matcher is here so
// the tests can show what an accepted pattern means and the fuzzer can run it.
#![cfg_attr(not(test), allow(dead_code))]

use crate::model::validate::Invalid;

/// The field `Invalid` names.
pub const FIELD: &str = "prompt";
/// A pattern is 1 to 200 characters (Unicode scalar values).
pub const MAX_PATTERN_CHARS: usize = 200;
/// Groups nest at most this deep (it bounds the parser's recursion).
pub const MAX_NESTING: usize = 16;
/// The largest n or m of `{n}`, `{n,}` and `{n,m}`.
pub const MAX_REPEAT: u32 = 100;
/// Counted repetitions copy their operand, and nested ones multiply: the compiled program
/// holds at most this many states, which bounds `is_match` at 5,000 steps per character.
pub const MAX_STATES: usize = 5_000;

const CASELESS_FLAG: &str = "(?i)";

/// A checked, compiled pattern.
#[derive(Clone, Debug)]
pub struct PromptPattern {
    text: String,
    program: Vec<Inst>,
    caseless: bool,
}

impl PromptPattern {
    /// Checks `text` against the portable subset and compiles it.
    pub fn parse(text: &str) -> Result<PromptPattern, Invalid> {
        let chars: Vec<char> = text.chars().collect();
        if chars.is_empty() {
            return Err(Invalid::new(FIELD, "must not be empty"));
        }
        if chars.len() > MAX_PATTERN_CHARS {
            let rule = format!("must be at most {MAX_PATTERN_CHARS} characters");
            return Err(Invalid::new(FIELD, rule));
        }
        if let Some(at) = chars.iter().position(|&c| u32::from(c) > 0xFFFF) {
            return Err(refusal(
                at,
                "characters beyond U+FFFF (emoji, ...) are refused: JavaScript without the u \
                 flag reads each as two",
            ));
        }
        let caseless = text.starts_with(CASELESS_FLAG);
        let start = if caseless { CASELESS_FLAG.len() } else { 0 };
        if start == chars.len() {
            return Err(Invalid::new(FIELD, "must hold a pattern after (?i)"));
        }
        let mut parser = Parser {
            chars: &chars,
            pos: start,
            depth: 0,
        };
        let tree = parser.alternation()?;
        if parser.pos < chars.len() {
            return Err(refusal(parser.pos, "')' has no matching '('"));
        }
        if size(&tree).saturating_add(1) > MAX_STATES {
            let rule = format!(
                "expands to more than {MAX_STATES} states (counted repetitions multiply: nest \
                 fewer or smaller ones)"
            );
            return Err(Invalid::new(FIELD, rule));
        }
        let mut program = Vec::new();
        compile(&tree, &mut program);
        program.push(Inst::Match);
        Ok(PromptPattern {
            text: text.to_owned(),
            program,
            caseless,
        })
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the pattern matches anywhere in `prompt` (unanchored unless `^` or `$` says
    /// otherwise), as JavaScript's `RegExp.test` and Rust's `is_match` answer. Linear in the
    /// prompt's length.
    pub fn is_match(&self, prompt: &str) -> bool {
        let mut current = States::new(self.program.len());
        let mut next = States::new(self.program.len());
        let mut stack = Vec::new();
        let mut chars = prompt.chars().peekable();
        let mut at_start = true;
        loop {
            let at_end = chars.peek().is_none();
            // A search: a new thread starts at every position.
            if self.add(&mut current, &mut stack, 0, at_start, at_end) {
                return true;
            }
            let Some(c) = chars.next() else {
                return false;
            };
            let next_at_end = chars.peek().is_none();
            next.clear();
            for &pc in &current.list {
                if self.consumes(pc, c)
                    && self.add(&mut next, &mut stack, pc + 1, false, next_at_end)
                {
                    return true;
                }
            }
            std::mem::swap(&mut current, &mut next);
            at_start = false;
        }
    }

    /// Adds `pc` and every state reachable from it without a character to `states`; true
    /// when that reaches `Match`.
    fn add(
        &self,
        states: &mut States,
        stack: &mut Vec<usize>,
        pc: usize,
        at_start: bool,
        at_end: bool,
    ) -> bool {
        stack.clear();
        stack.push(pc);
        while let Some(pc) = stack.pop() {
            if !states.insert(pc) {
                continue;
            }
            match self.program[pc] {
                Inst::Match => return true,
                Inst::Jump(to) => stack.push(to),
                Inst::Split(first, second) => {
                    stack.push(second);
                    stack.push(first);
                }
                Inst::Start if at_start => stack.push(pc + 1),
                Inst::End if at_end => stack.push(pc + 1),
                Inst::Start | Inst::End => {}
                Inst::Char(_) | Inst::Any | Inst::Class(_) => states.list.push(pc),
            }
        }
        false
    }

    fn consumes(&self, pc: usize, c: char) -> bool {
        match &self.program[pc] {
            Inst::Char(expected) => {
                *expected == c
                    || (self.caseless
                        && (lower(*expected) == lower(c) || upper(*expected) == upper(c)))
            }
            Inst::Any => c != '\n',
            Inst::Class(class) => class.matches(c, self.caseless),
            _ => false,
        }
    }
}

/// A set of NFA states: the consuming ones in insertion order, and a mark per state
/// (epsilon ones too) that `clear` drops at once by moving to a new generation.
struct States {
    list: Vec<usize>,
    marks: Vec<u64>,
    generation: u64,
}

impl States {
    fn new(size: usize) -> States {
        States {
            list: Vec::with_capacity(size),
            marks: vec![0; size],
            generation: 1,
        }
    }

    /// Marks `pc`; false when it was marked already.
    fn insert(&mut self, pc: usize) -> bool {
        let fresh = self.marks[pc] != self.generation;
        self.marks[pc] = self.generation;
        fresh
    }

    fn clear(&mut self) {
        self.list.clear();
        self.generation += 1;
    }
}

fn refusal(at: usize, rule: &str) -> Invalid {
    Invalid::new(FIELD, format!("{rule} (at character {})", at + 1))
}

/// The parsed tree.
#[derive(Clone, Debug)]
enum Node {
    Char(char),
    Any,
    Class(Class),
    Start,
    End,
    Concat(Vec<Node>),
    Alternation(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

/// A bracket class, or one of `\d \D \w \W \s \S` alone.
#[derive(Clone, Debug)]
struct Class {
    negated: bool,
    items: Vec<Item>,
}

#[derive(Clone, Copy, Debug)]
enum Item {
    Range(char, char),
    /// `\d`, `\w` or `\s`, negated for `\D`, `\W`, `\S`.
    Perl(Perl, bool),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Perl {
    Digit,
    Word,
    Space,
}

impl Perl {
    /// ASCII only, as JavaScript, PCRE and RE2 read them by default (docs/identities-rules.md
    /// says where engines differ).
    fn contains(self, c: char) -> bool {
        match self {
            Perl::Digit => c.is_ascii_digit(),
            Perl::Word => c.is_ascii_alphanumeric() || c == '_',
            Perl::Space => matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}'),
        }
    }
}

impl Item {
    fn contains(self, c: char) -> bool {
        match self {
            Item::Range(first, last) => (first..=last).contains(&c),
            Item::Perl(perl, negated) => perl.contains(c) != negated,
        }
    }
}

impl Class {
    fn matches(&self, c: char, caseless: bool) -> bool {
        let hit = |c: char| self.items.iter().any(|item| item.contains(c));
        let found =
            hit(c) || (caseless && (hit(lower(c)) || hit(upper(c)) || hit(lower(upper(c)))));
        found != self.negated
    }
}

/// The simple (one-character) lower case of `c`, or `c` itself when its lower case is
/// several characters or would turn a non-ASCII character into an ASCII one (the Kelvin
/// sign is no `k`, as in JavaScript).
fn lower(c: char) -> char {
    simple(c, c.to_lowercase())
}

fn upper(c: char) -> char {
    simple(c, c.to_uppercase())
}

fn simple(c: char, mut mapped: impl Iterator<Item = char>) -> char {
    match (mapped.next(), mapped.next()) {
        (Some(one), None) if c.is_ascii() || !one.is_ascii() => one,
        _ => c,
    }
}

/// One thing a class holds before ranges are formed.
enum ClassAtom {
    Char(char),
    Perl(Perl, bool),
}

struct Parser<'a> {
    chars: &'a [char],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn alternation(&mut self) -> Result<Node, Invalid> {
        let mut branches = vec![self.concat()?];
        while self.peek() == Some('|') {
            self.pos += 1;
            branches.push(self.concat()?);
        }
        Ok(match branches.len() {
            1 => branches.swap_remove(0),
            _ => Node::Alternation(branches),
        })
    }

    fn concat(&mut self) -> Result<Node, Invalid> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            items.push(self.quantified(atom)?);
        }
        Ok(Node::Concat(items))
    }

    fn atom(&mut self) -> Result<Node, Invalid> {
        let at = self.pos;
        let Some(c) = self.peek() else {
            return Ok(Node::Concat(Vec::new()));
        };
        self.pos += 1;
        match c {
            '(' => self.group(at),
            '[' => Ok(Node::Class(self.class(at)?)),
            '\\' => Ok(match self.escape(at, false)? {
                ClassAtom::Char(c) => Node::Char(c),
                ClassAtom::Perl(perl, negated) => Node::Class(Class {
                    negated: false,
                    items: vec![Item::Perl(perl, negated)],
                }),
            }),
            '.' => Ok(Node::Any),
            '^' => Ok(Node::Start),
            '$' => Ok(Node::End),
            '*' | '+' | '?' => Err(refusal(at, NOTHING_TO_REPEAT)),
            '{' => Err(refusal(
                at,
                "'{' must start {n}, {n,} or {n,m} after a character, class or group, or be \
                 escaped as \\{",
            )),
            '}' => Err(refusal(at, "a lone '}' must be escaped as \\}")),
            ']' => Err(refusal(at, "a lone ']' must be escaped as \\]")),
            c => Ok(Node::Char(c)),
        }
    }

    /// After `(`: a group, `(?:` group, or one of the refused `(?` forms.
    fn group(&mut self, at: usize) -> Result<Node, Invalid> {
        if self.depth == MAX_NESTING {
            let rule = format!("groups may nest at most {MAX_NESTING} deep");
            return Err(refusal(at, &rule));
        }
        if self.peek() == Some('?') {
            let rule = match (self.peek_at(1), self.peek_at(2)) {
                (Some(':'), _) => None,
                (Some('=' | '!'), _) => Some("lookahead (?= (?! is refused"),
                (Some('<'), Some('=' | '!')) => Some("lookbehind (?<= (?<! is refused"),
                (Some('<' | 'P' | '\''), _) => Some("named groups are refused: use ( or (?:"),
                _ => Some(
                    "inline flags and other (? forms are refused; only a leading (?i) is portable",
                ),
            };
            if let Some(rule) = rule {
                return Err(refusal(at, rule));
            }
            self.pos += 2;
        }
        self.depth += 1;
        let inner = self.alternation()?;
        self.depth -= 1;
        if self.peek() != Some(')') {
            return Err(refusal(at, "'(' has no matching ')'"));
        }
        self.pos += 1;
        Ok(inner)
    }

    /// `atom` with the quantifier that follows it, if any.
    fn quantified(&mut self, atom: Node) -> Result<Node, Invalid> {
        let at = self.pos;
        let (min, max) = match self.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            Some('{') => match self.counted()? {
                Some((min, max, length)) => {
                    self.pos += length - 1;
                    (min, max)
                }
                // Not a quantifier: the next atom refuses the lone '{'.
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        self.pos += 1;
        if matches!(atom, Node::Start | Node::End) {
            return Err(refusal(at, "the anchors ^ and $ cannot be repeated"));
        }
        // A lazy quantifier matches the same prompts as its greedy twin.
        if self.peek() == Some('?') {
            self.pos += 1;
        }
        match self.peek() {
            Some('+') => Err(refusal(
                self.pos,
                "possessive quantifiers (*+ ++ ?+ {n,m}+) are refused",
            )),
            Some('*' | '?') => Err(refusal(self.pos, NOTHING_TO_REPEAT)),
            Some('{') if self.counted()?.is_some() => Err(refusal(self.pos, NOTHING_TO_REPEAT)),
            _ => Ok(Node::Repeat {
                node: Box::new(atom),
                min,
                max,
            }),
        }
    }

    /// At `{`: `Some((n, m, length in characters))` when `{n}`, `{n,}` or `{n,m}` follows,
    /// `None` when the text is no such quantifier.
    fn counted(&self) -> Result<Option<(u32, Option<u32>, usize)>, Invalid> {
        let rest = &self.chars[self.pos + 1..];
        let digits = |from: usize| {
            rest[from..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count()
        };
        let first = digits(0);
        if first == 0 {
            return Ok(None);
        }
        let (second, close) = match rest.get(first) {
            Some('}') => (None, first),
            Some(',') => {
                let count = digits(first + 1);
                (Some(count), first + 1 + count)
            }
            _ => return Ok(None),
        };
        if rest.get(close) != Some(&'}') {
            return Ok(None);
        }
        let number = |from: usize, count: usize| -> Result<u32, Invalid> {
            let text: String = rest[from..from + count].iter().collect();
            match text.parse::<u32>() {
                Ok(number) if number <= MAX_REPEAT => Ok(number),
                _ => {
                    let rule =
                        format!("counted repetitions {{n,m}} take n and m up to {MAX_REPEAT}");
                    Err(refusal(self.pos, &rule))
                }
            }
        };
        let min = number(0, first)?;
        let max = match second {
            None => Some(min),
            Some(0) => None,
            Some(count) => Some(number(first + 1, count)?),
        };
        if max.is_some_and(|max| max < min) {
            return Err(refusal(self.pos, "{n,m} needs n <= m"));
        }
        Ok(Some((min, max, close + 2)))
    }

    /// After `[`: the class up to its `]`.
    fn class(&mut self, at: usize) -> Result<Class, Invalid> {
        let negated = self.peek() == Some('^');
        if negated {
            self.pos += 1;
        }
        let mut items = Vec::new();
        loop {
            match self.peek() {
                None => return Err(refusal(at, "'[' has no matching ']'")),
                Some(']') if items.is_empty() => {
                    return Err(refusal(
                        self.pos,
                        "an empty class [] or [^] is refused (escape a ']' that opens a class \
                         as \\])",
                    ))
                }
                Some(']') => {
                    self.pos += 1;
                    return Ok(Class { negated, items });
                }
                Some(_) => items.push(self.class_item()?),
            }
        }
    }

    /// One character, range or `\d`-like escape in a class.
    fn class_item(&mut self) -> Result<Item, Invalid> {
        let first = self.class_atom()?;
        let dash = self.pos;
        if self.peek() != Some('-') || matches!(self.peek_at(1), Some(']') | None) {
            return Ok(match first {
                ClassAtom::Char(c) => Item::Range(c, c),
                ClassAtom::Perl(perl, negated) => Item::Perl(perl, negated),
            });
        }
        if self.peek_at(1) == Some('-') {
            return Err(refusal(dash, CLASS_SET_OPERATIONS));
        }
        self.pos += 1;
        match (first, self.class_atom()?) {
            (ClassAtom::Char(low), ClassAtom::Char(high)) if low <= high => {
                Ok(Item::Range(low, high))
            }
            (ClassAtom::Char(_), ClassAtom::Char(_)) => Err(refusal(
                dash,
                "a range's first character must not come after its last",
            )),
            _ => Err(refusal(
                dash,
                "a range's ends must be single characters, not \\d \\w \\s or their negations",
            )),
        }
    }

    fn class_atom(&mut self) -> Result<ClassAtom, Invalid> {
        let at = self.pos;
        let Some(c) = self.peek() else {
            return Err(refusal(at, "'[' has no matching ']'"));
        };
        self.pos += 1;
        match c {
            '\\' => self.escape(at, true),
            '[' => Err(refusal(
                at,
                "'[' inside a class is refused (nested and POSIX classes like [:alpha:] differ \
                 across engines): escape it as \\[",
            )),
            '&' | '~' | '-' if self.peek() == Some(c) => Err(refusal(at, CLASS_SET_OPERATIONS)),
            c => Ok(ClassAtom::Char(c)),
        }
    }

    /// After a backslash at `at`.
    fn escape(&mut self, at: usize, in_class: bool) -> Result<ClassAtom, Invalid> {
        let Some(c) = self.peek() else {
            return Err(refusal(at, "a pattern must not end with a lone backslash"));
        };
        self.pos += 1;
        let perl = |perl: Perl, negated: bool| Ok(ClassAtom::Perl(perl, negated));
        match c {
            '\\' | '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '^' | '$'
            | '/' => Ok(ClassAtom::Char(c)),
            '-' if in_class => Ok(ClassAtom::Char('-')),
            '-' => Err(refusal(
                at,
                "\\- is portable only inside a class (JavaScript's u flag refuses it \
                 elsewhere): write - alone",
            )),
            'd' | 'D' => perl(Perl::Digit, c == 'D'),
            'w' | 'W' => perl(Perl::Word, c == 'W'),
            's' | 'S' => perl(Perl::Space, c == 'S'),
            '1'..='9' => Err(refusal(at, "backreferences (\\1, ...) are refused")),
            'k' => Err(refusal(at, "named backreferences (\\k<name>) are refused")),
            'b' | 'B' => Err(refusal(
                at,
                "word boundaries \\b and \\B are refused (engines disagree on Unicode letters)",
            )),
            'p' | 'P' => Err(refusal(
                at,
                "Unicode properties \\p{..} and \\P{..} are refused",
            )),
            _ => Err(refusal(
                at,
                "unsupported escape: the portable ones are \\\\ \\. \\* \\+ \\? \\( \\) \\[ \\] \
                 \\{ \\} \\| \\^ \\$ \\/, \\- inside a class, and \\d \\D \\w \\W \\s \\S",
            )),
        }
    }
}

const NOTHING_TO_REPEAT: &str =
    "a quantifier (* + ? {n,m}) must follow a character, class or group, once";
const CLASS_SET_OPERATIONS: &str =
    "class set operations (&& -- ~~) are refused: escape the characters or reorder them";

/// The compiled program's exact size for `node` (without the final `Match`), saturating: checked before compiling, so a
/// refused pattern never allocates its expansion.
fn size(node: &Node) -> usize {
    match node {
        Node::Char(_) | Node::Any | Node::Class(_) | Node::Start | Node::End => 1,
        Node::Concat(items) => items.iter().map(size).fold(0, usize::saturating_add),
        // A split and a jump for each branch but the last.
        Node::Alternation(branches) => branches
            .iter()
            .map(|branch| size(branch).saturating_add(2))
            .fold(0, usize::saturating_add)
            .saturating_sub(2),
        Node::Repeat { node, min, max } => {
            let one = size(node);
            let required = one.saturating_mul(*min as usize);
            let optional = match max {
                None => one.saturating_add(2),
                Some(max) => one.saturating_add(1).saturating_mul((max - min) as usize),
            };
            required.saturating_add(optional)
        }
    }
}

/// One NFA state.
#[derive(Clone, Debug)]
enum Inst {
    Char(char),
    Any,
    Class(Class),
    Start,
    End,
    /// Both ways, without a character.
    Split(usize, usize),
    Jump(usize),
    Match,
}

/// Thompson's construction; counted repetitions are copies of their operand (`x{2,4}` is
/// `xx(x(x)?)?`).
fn compile(node: &Node, program: &mut Vec<Inst>) {
    match node {
        Node::Char(c) => program.push(Inst::Char(*c)),
        Node::Any => program.push(Inst::Any),
        Node::Class(class) => program.push(Inst::Class(class.clone())),
        Node::Start => program.push(Inst::Start),
        Node::End => program.push(Inst::End),
        Node::Concat(items) => items.iter().for_each(|item| compile(item, program)),
        Node::Alternation(branches) => {
            let mut jumps = Vec::new();
            for (index, branch) in branches.iter().enumerate() {
                if index + 1 == branches.len() {
                    compile(branch, program);
                    break;
                }
                let split = program.len();
                program.push(Inst::Split(0, 0));
                compile(branch, program);
                jumps.push(program.len());
                program.push(Inst::Jump(0));
                program[split] = Inst::Split(split + 1, program.len());
            }
            let end = program.len();
            for jump in jumps {
                program[jump] = Inst::Jump(end);
            }
        }
        Node::Repeat { node, min, max } => {
            for _ in 0..*min {
                compile(node, program);
            }
            let mut splits = Vec::new();
            match max {
                None => {
                    let split = program.len();
                    program.push(Inst::Split(0, 0));
                    compile(node, program);
                    program.push(Inst::Jump(split));
                    splits.push(split);
                }
                Some(max) => {
                    for _ in *min..*max {
                        splits.push(program.len());
                        program.push(Inst::Split(0, 0));
                        compile(node, program);
                    }
                }
            }
            let end = program.len();
            for split in splits {
                program[split] = Inst::Split(split + 1, end);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> PromptPattern {
        PromptPattern::parse(text).unwrap()
    }

    /// Asserts `text` matches every prompt of `yes` and none of `no`.
    fn check(text: &str, yes: &[&str], no: &[&str]) {
        let compiled = pattern(text);
        for prompt in yes {
            assert!(
                compiled.is_match(prompt),
                "{text:?} should match {prompt:?}"
            );
        }
        for prompt in no {
            assert!(
                !compiled.is_match(prompt),
                "{text:?} should not match {prompt:?}"
            );
        }
    }

    /// The rule `text` is refused with.
    fn refused(text: &str) -> String {
        let invalid = PromptPattern::parse(text).unwrap_err();
        assert_eq!(invalid.field, FIELD);
        invalid.rule
    }

    fn assert_refused(text: &str, part: &str) {
        let rule = refused(text);
        assert!(
            rule.contains(part),
            "{text:?} refused with {rule:?}, not {part:?}"
        );
    }

    #[test]
    fn literals_match_anywhere_in_the_prompt_as_given() {
        check(
            "Password:",
            &["Password: ", "user's Password:"],
            &["password: ", "Passwd:"],
        );
        check("code: ", &["Verification code: "], &["Verification code:"]);
        check("a/b-c#é", &["xa/b-c#éx"], &["a/b-c#e"]);
        assert_eq!(pattern("Password: ").as_str(), "Password: ");
    }

    #[test]
    fn dot_matches_any_character_but_a_newline() {
        check("a.c", &["abc", "a c", "aéc", "a\rc"], &["ac", "a\nc"]);
    }

    #[test]
    fn escapes_match_their_literal_character() {
        let cases = [
            ("\\\\", "\\"),
            ("\\.", "."),
            ("\\*", "*"),
            ("\\+", "+"),
            ("\\?", "?"),
            ("\\(", "("),
            ("\\)", ")"),
            ("\\[", "["),
            ("\\]", "]"),
            ("\\{", "{"),
            ("\\}", "}"),
            ("\\|", "|"),
            ("\\^", "^"),
            ("\\$", "$"),
            ("\\/", "/"),
            ("[\\-]", "-"),
        ];
        for (text, literal) in cases {
            check(text, &[literal], &["a", ""]);
        }
        check("1\\.5", &["1.5"], &["105"]);
    }

    #[test]
    fn perl_classes_are_ascii_digits_word_characters_and_spaces() {
        check("^\\d$", &["0", "9"], &["a", "\u{663}", ""]);
        check("^\\D$", &["a", "\u{663}"], &["5"]);
        check("^\\w$", &["a", "Z", "0", "_"], &["-", "é", " "]);
        check("^\\W$", &["-", "é"], &["a", "_"]);
        check(
            "^\\s$",
            &[" ", "\t", "\n", "\r", "\u{b}", "\u{c}"],
            &["a", "\u{a0}"],
        );
        check("^\\S$", &["a", "\u{a0}"], &[" "]);
        check("[\\d\\s]", &["1", " "], &["a"]);
        check("^[^\\d]$", &["a"], &["1"]);
        check("^[\\D]$", &["a"], &["1"]);
    }

    #[test]
    fn bracket_classes_hold_characters_ranges_and_negations() {
        check("^[abc]$", &["a", "c"], &["d", "ab", ""]);
        check("^[a-z0-9]$", &["q", "5"], &["Q", "-"]);
        check("^[^a-z]$", &["Q", "5", "\n"], &["q", ""]);
        check("^[-a]$", &["-", "a"], &["b"]);
        check("^[a-]$", &["-", "a"], &["b"]);
        check("^[a^]$", &["^", "a"], &["b"]);
        check("^[\\]\\[\\\\.]$", &["]", "[", "\\", "."], &["a"]);
        check("^[.*+?(){}|$]+$", &[".*+?(){}|$"], &["a"]);
    }

    #[test]
    fn groups_non_capturing_groups_and_alternation() {
        check("^(ab)+$", &["ab", "abab"], &["aba", ""]);
        check("^(?:ab)+$", &["ab", "abab"], &["aba"]);
        check(
            "^(Password|Passcode): $",
            &["Password: ", "Passcode: "],
            &["Pass: "],
        );
        check("cat|dog", &["hotdog", "cats"], &["cow"]);
        check("^(a|)$", &["a", ""], &["b"]);
        check("^()$", &[""], &["a"]);
        check("^a(b|c(d|e))f$", &["abf", "acdf", "acef"], &["acf", "adf"]);
    }

    #[test]
    fn quantifiers_star_plus_and_question_mark() {
        check("^ab*c$", &["ac", "abc", "abbbc"], &["abxc"]);
        check("^ab+c$", &["abc", "abbbc"], &["ac"]);
        check("^ab?c$", &["ac", "abc"], &["abbc"]);
    }

    #[test]
    fn counted_repetitions_match_their_bounds_exactly() {
        check("^a{3}$", &["aaa"], &["aa", "aaaa"]);
        check("^a{2,}$", &["aa", "aaaaaaa"], &["a"]);
        check("^a{2,4}$", &["aa", "aaa", "aaaa"], &["a", "aaaaa"]);
        check("^a{0}b$", &["b"], &["ab"]);
        check("^a{0,1}b$", &["b", "ab"], &["aab"]);
        check("^(ab){2}$", &["abab"], &["ab", "ababab"]);
        check(
            &format!("^a{{{MAX_REPEAT}}}$"),
            &[&"a".repeat(100)],
            &[&"a".repeat(99)],
        );
    }

    #[test]
    fn lazy_quantifiers_match_the_same_prompts_as_greedy_ones() {
        for (greedy, lazy) in [
            ("a*", "a*?"),
            ("a+", "a+?"),
            ("a?", "a??"),
            ("a{1,3}", "a{1,3}?"),
        ] {
            let (greedy, lazy) = (
                pattern(&format!("^x{greedy}y$")),
                pattern(&format!("^x{lazy}y$")),
            );
            for prompt in ["xy", "xay", "xaay", "xaaay", "xaaaay", "xby"] {
                assert_eq!(greedy.is_match(prompt), lazy.is_match(prompt), "{prompt}");
            }
        }
    }

    #[test]
    fn anchors_tie_the_match_to_the_start_or_the_end_of_the_whole_prompt() {
        check("^Password", &["Password: "], &["Old Password: "]);
        check(": $", &["Password: "], &["Password: \n", ": x"]);
        check("^$", &[""], &["a", "\n"]);
        check("a^b", &[], &["ab", "a^b"]);
        check("^a|b$", &["ax", "xb"], &["xa", "bx"]);
    }

    #[test]
    fn a_leading_case_insensitive_flag_folds_ascii_and_simple_unicode_case() {
        check("(?i)password:", &["PASSWORD:", "Password:"], &["passwort:"]);
        check("password:", &["password:"], &["Password:"]);
        check("(?i)^[a-c]$", &["B", "b"], &["D"]);
        check("(?i)^[^a-c]$", &["D"], &["B"]);
        check("(?i)^ÄΣ$", &["äσ", "ÄΣ"], &["ae"]);
        // Final sigma: its upper case is Σ, as JavaScript and Rust agree.
        check("(?i)^σ$", &["ς", "Σ"], &[]);
        check("(?i)^[σ]$", &["ς", "Σ"], &[]);
        // The Kelvin sign does not fold onto the ASCII k (JavaScript's rule).
        check("(?i)^k$", &["K", "k"], &["\u{212a}"]);
        check("(?i)^\\w$", &["A"], &["é"]);
    }

    #[test]
    fn patterns_are_one_to_two_hundred_characters() {
        assert_eq!(refused(""), "must not be empty");
        assert_eq!(refused("(?i)"), "must hold a pattern after (?i)");
        let at_bound = "a".repeat(MAX_PATTERN_CHARS);
        check(&at_bound, &[&at_bound], &[&"a".repeat(199)]);
        let over = "a".repeat(MAX_PATTERN_CHARS + 1);
        assert_eq!(refused(&over), "must be at most 200 characters");
        // Characters, not bytes.
        pattern(&"é".repeat(MAX_PATTERN_CHARS));
    }

    #[test]
    fn groups_nest_at_most_sixteen_deep() {
        let nested = |depth: usize| format!("{}a{}", "(".repeat(depth), ")".repeat(depth));
        check(&nested(MAX_NESTING), &["a"], &["b"]);
        assert_refused(&nested(MAX_NESTING + 1), "nest at most 16 deep");
    }

    #[test]
    fn constructs_outside_the_portable_subset_are_refused_naming_their_rule() {
        let cases = [
            ("(a)\\1", "backreferences"),
            ("\\k<x>", "named backreferences"),
            ("a(?=b)", "lookahead"),
            ("a(?!b)", "lookahead"),
            ("(?<=a)b", "lookbehind"),
            ("(?<!a)b", "lookbehind"),
            ("(?<name>a)", "named groups"),
            ("(?P<name>a)", "named groups"),
            ("(?'name'a)", "named groups"),
            ("\\bword", "word boundaries"),
            ("\\Bx", "word boundaries"),
            ("\\p{L}", "Unicode properties"),
            ("\\P{L}", "Unicode properties"),
            ("a*+", "possessive"),
            ("a++", "possessive"),
            ("a?+", "possessive"),
            ("a{2}+", "possessive"),
            ("a(?i)b", "only a leading (?i)"),
            ("(?i:a)", "only a leading (?i)"),
            ("(?m)^a", "only a leading (?i)"),
            ("(?s).", "only a leading (?i)"),
            ("\\n", "unsupported escape"),
            ("\\x41", "unsupported escape"),
            ("\\u0041", "unsupported escape"),
            ("\\0", "unsupported escape"),
            ("a\\-b", "portable only inside a class"),
            ("a\\", "lone backslash"),
            ("[[:alpha:]]", "POSIX classes"),
            ("[a[b]]", "nested"),
            ("[a&&b]", "class set operations"),
            ("[a--b]", "class set operations"),
            ("[a~~b]", "class set operations"),
            ("[]a]", "empty class"),
            ("[^]", "empty class"),
            ("[z-a]", "must not come after"),
            ("[\\d-z]", "single characters"),
            ("[a-\\w]", "single characters"),
            ("[abc", "no matching ']'"),
            ("(ab", "no matching ')'"),
            ("ab)", "no matching '('"),
            ("*a", "must follow"),
            ("a|+", "must follow"),
            ("(*)", "must follow"),
            ("a**", "must follow"),
            ("a{2}{3}", "must follow"),
            ("a???", "must follow"),
            ("^*", "anchors ^ and $ cannot be repeated"),
            ("a$+", "anchors ^ and $ cannot be repeated"),
            ("a{", "'{' must start"),
            ("a{,3}", "'{' must start"),
            ("a{1, 2}", "'{' must start"),
            ("{2}", "'{' must start"),
            ("a}", "lone '}'"),
            ("a]", "lone ']'"),
            ("a{101}", "up to 100"),
            ("a{1,101}", "up to 100"),
            ("a{99999999999}", "up to 100"),
            ("a{3,2}", "n <= m"),
            ("x😀", "beyond U+FFFF"),
            ("((a{100}){100}){100}", "more than 5000 states"),
        ];
        for (text, part) in cases {
            assert_refused(text, part);
        }
    }

    #[test]
    fn refusals_name_the_character_position() {
        assert_eq!(
            refused("ab\\1"),
            "backreferences (\\1, ...) are refused (at character 3)"
        );
        assert!(refused("(?i)a(?=b)").ends_with("(at character 6)"));
    }

    #[test]
    fn counted_repetitions_up_to_the_state_bound_compile() {
        check(
            "^(a{1,100}){2}$",
            &["aa", &"a".repeat(200)],
            &["a", &"a".repeat(201)],
        );
        check(
            "^((ab?){10}){10}$",
            &[&"ab".repeat(100), &"a".repeat(100)],
            &[&"a".repeat(99)],
        );
    }

    #[test]
    fn pathological_patterns_finish_on_long_prompts() {
        let prompt = "a".repeat(1000);
        assert!(!pattern("(a*)*b").is_match(&prompt));
        assert!(pattern("(a*)*b").is_match(&format!("{prompt}b")));
        assert!(!pattern("^(a|a)*$b").is_match(&prompt));
        assert!(!pattern("(a|aa)+c").is_match(&prompt));
        assert!(!pattern("^(a?){100}a{100}b").is_match(&prompt));
        assert!(pattern("^(a?){100}a{100}$").is_match(&"a".repeat(100)));
        assert!(!pattern("(()*)*b").is_match(&prompt));
    }

    /// A reference matcher: plain backtracking over the tree (exponential, fine for the
    /// short patterns and prompts of the property test below).
    fn reference(
        node: &Node,
        prompt: &[char],
        at: usize,
        caseless: bool,
        then: &mut dyn FnMut(usize) -> bool,
    ) -> bool {
        match node {
            Node::Char(c) => {
                prompt.get(at).is_some_and(|&p| {
                    p == *c || (caseless && (lower(p) == lower(*c) || upper(p) == upper(*c)))
                }) && then(at + 1)
            }
            Node::Any => prompt.get(at).is_some_and(|&p| p != '\n') && then(at + 1),
            Node::Class(class) => {
                prompt.get(at).is_some_and(|&p| class.matches(p, caseless)) && then(at + 1)
            }
            Node::Start => at == 0 && then(at),
            Node::End => at == prompt.len() && then(at),
            Node::Concat(items) => match items.split_first() {
                None => then(at),
                Some((first, rest)) => reference(first, prompt, at, caseless, &mut |next| {
                    reference(&Node::Concat(rest.to_vec()), prompt, next, caseless, then)
                }),
            },
            Node::Alternation(branches) => branches
                .iter()
                .any(|branch| reference(branch, prompt, at, caseless, then)),
            Node::Repeat { node, min, max } => {
                repeat(node, *min, *max, 0, prompt, at, caseless, then)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn repeat(
        node: &Node,
        min: u32,
        max: Option<u32>,
        count: u32,
        prompt: &[char],
        at: usize,
        caseless: bool,
        then: &mut dyn FnMut(usize) -> bool,
    ) -> bool {
        if count >= min && then(at) {
            return true;
        }
        if max.is_some_and(|max| count >= max) {
            return false;
        }
        reference(node, prompt, at, caseless, &mut |next| {
            // An empty iteration past the minimum adds nothing.
            (next != at || count < min)
                && repeat(node, min, max, count + 1, prompt, next, caseless, then)
        })
    }

    fn reference_is_match(text: &str, prompt: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let caseless = text.starts_with(CASELESS_FLAG);
        let mut parser = Parser {
            chars: &chars,
            pos: if caseless { CASELESS_FLAG.len() } else { 0 },
            depth: 0,
        };
        let tree = parser.alternation().unwrap();
        let prompt: Vec<char> = prompt.chars().collect();
        (0..=prompt.len()).any(|at| reference(&tree, &prompt, at, caseless, &mut |_| true))
    }

    /// The NFA answers as the backtracking reference does on seeded random patterns
    /// (`FUZZ_ITERATIONS` of them, each against a few random prompts).
    #[test]
    fn matcher_agrees_with_a_backtracking_reference_on_seeded_random_patterns() {
        let (iterations, seed) = crate::fuzz::settings("prompt pattern reference", 0x5EED_CAFE);
        let pieces = [
            "a", "b", "A", "é", ".", "^", "$", "|", "(", ")", "(?:", "*", "+", "?", "{2}", "{0,2}",
            "{1,}", "[ab]", "[^a]", "[a-c]", "\\d", "\\W", "\\s", "1", " ",
        ];
        let letters = ['a', 'b', 'A', 'B', 'é', 'É', '1', ' ', '\n', 'c'];
        let mut rng = crate::fuzz::Rng::new(seed);
        let mut compared = 0;
        for _ in 0..iterations {
            let mut text = String::from(*rng.pick(&["", "", "(?i)"]));
            for _ in 0..1 + rng.below(8) {
                text.push_str(rng.pick::<&str>(&pieces));
            }
            let Ok(compiled) = PromptPattern::parse(&text) else {
                continue;
            };
            compared += 1;
            let tree = Parser {
                chars: &text.chars().collect::<Vec<_>>(),
                pos: if text.starts_with(CASELESS_FLAG) {
                    4
                } else {
                    0
                },
                depth: 0,
            }
            .alternation()
            .unwrap();
            assert_eq!(compiled.program.len(), size(&tree) + 1, "{text:?}");
            for _ in 0..4 {
                let prompt: String = (0..rng.below(7)).map(|_| *rng.pick(&letters)).collect();
                let expected = reference_is_match(&text, &prompt);
                assert_eq!(
                    compiled.is_match(&prompt),
                    expected,
                    "{text:?} on {prompt:?}"
                );
            }
        }
        assert!(
            compared > iterations / 10,
            "only {compared} patterns parsed"
        );
    }
}
