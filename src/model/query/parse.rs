//! The query text to a `Query` (docs/query.md, "Grammar"): terms split by whitespace, an
//! optional leading `-`, a bare or quoted word or a `key:value,value` term.
//!
//! Invariants: reads the text once, left to right, and never panics; a refusal's column is
//! 1-based, in characters, within `1..=chars + 1`, and points at the faulty token (the first
//! character past the limit for a too-long query or too many terms or alternatives).

use crate::model::query::value::{self, key_named, quoted, suggest, KeyName};
use crate::model::query::{
    Predicate, Query, QueryError, Term, MAX_ALTERNATIVES, MAX_CHARS, MAX_TERMS,
};

/// Parses a query text (docs/query.md); an empty or blank text is the empty query.
pub fn parse(text: &str) -> Result<Query, QueryError> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() > MAX_CHARS {
        return Err(fault(
            MAX_CHARS + 1,
            format!("the query is longer than {MAX_CHARS} characters"),
            format!("a query holds at most {MAX_CHARS} characters"),
        ));
    }
    if let Some(at) = chars.iter().position(|c| *c == '\0') {
        return Err(fault(at + 1, "a NUL character".into(), "remove it".into()));
    }
    let mut reader = Reader { chars, at: 0 };
    let mut terms = Vec::new();
    loop {
        reader.skip_blanks();
        if reader.done() {
            return Ok(Query { terms });
        }
        if terms.len() == MAX_TERMS {
            return Err(fault(
                reader.column(),
                format!("more than {MAX_TERMS} terms"),
                format!("a query holds at most {MAX_TERMS} terms"),
            ));
        }
        terms.push(reader.term()?);
    }
}

fn fault(column: usize, message: String, hint: String) -> QueryError {
    QueryError {
        column,
        message,
        hint,
    }
}

/// The query's characters and the position read next.
struct Reader {
    chars: Vec<char>,
    at: usize,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn done(&self) -> bool {
        self.at >= self.chars.len()
    }

    /// The 1-based column of the next character.
    fn column(&self) -> usize {
        self.at + 1
    }

    /// At the end or at whitespace: where a term ends.
    fn at_term_end(&self) -> bool {
        self.peek().is_none_or(char::is_whitespace)
    }

    fn skip_blanks(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
    }

    /// One term, from its first character (its `-`, when negated).
    fn term(&mut self) -> Result<Term, QueryError> {
        let column = self.column();
        let negated = self.peek() == Some('-');
        if negated {
            self.at += 1;
            if self.at_term_end() {
                return Err(fault(
                    column,
                    "a `-` with no term after it".into(),
                    "write the term right after the `-`, as in -tag:legacy".into(),
                ));
            }
        }
        let alternatives = match self.key()? {
            Some(key) => self.values(key)?,
            None => vec![self.word()?],
        };
        Ok(Term {
            negated,
            column,
            alternatives,
        })
    }

    /// The key of a `key:` term (ASCII letters, then `:`), read past its colon; `None`
    /// (nothing read) for a word.
    fn key(&mut self) -> Result<Option<KeyName>, QueryError> {
        let rest = &self.chars[self.at..];
        let letters = rest.iter().take_while(|c| c.is_ascii_alphabetic()).count();
        if letters == 0 || rest.get(letters) != Some(&':') {
            return Ok(None);
        }
        let name: String = rest[..letters].iter().collect();
        let Some(key) = key_named(&name) else {
            let hint = match suggest(&name) {
                Some(known) => format!("did you mean `{known}`?"),
                None => "the keys are tag, group, host, user, port, identity, key, via, has, \
                         is, used, created and notes; quote a word holding a colon (\"a:b\")"
                    .into(),
            };
            return Err(fault(
                self.column(),
                format!("unknown key {}", quoted(&name)),
                hint,
            ));
        };
        self.at += letters + 1;
        Ok(Some(key))
    }

    /// A bare or quoted word: a `Predicate::Word`.
    fn word(&mut self) -> Result<Predicate, QueryError> {
        let column = self.column();
        let text = if self.peek() == Some('"') {
            let text = self.quoted()?;
            if !self.at_term_end() {
                return Err(fault(
                    self.column(),
                    "a closing quote must end the term".into(),
                    "put a space after the closing quote".into(),
                ));
            }
            text
        } else {
            self.bare(false)?
        };
        if text.is_empty() {
            return Err(fault(
                column,
                "an empty word".into(),
                "put the words to find between the quotes".into(),
            ));
        }
        Ok(Predicate::Word(text.to_lowercase()))
    }

    /// The comma-separated values of `key`, each checked.
    fn values(&mut self, key: KeyName) -> Result<Vec<Predicate>, QueryError> {
        let mut alternatives = Vec::new();
        loop {
            let column = self.column();
            if alternatives.len() == MAX_ALTERNATIVES {
                return Err(fault(
                    column,
                    format!("more than {MAX_ALTERNATIVES} values for `{}:`", key.name()),
                    format!("a term holds at most {MAX_ALTERNATIVES} values"),
                ));
            }
            let text = if self.peek() == Some('"') {
                let text = self.quoted()?;
                if !self.at_term_end() && self.peek() != Some(',') {
                    return Err(fault(
                        self.column(),
                        "a closing quote must end the value".into(),
                        "put a comma or a space after the closing quote".into(),
                    ));
                }
                text
            } else {
                self.bare(true)?
            };
            let checked = value::predicate(key, &text);
            alternatives
                .push(checked.map_err(|message| fault(column, message, key.expects().into()))?);
            if self.peek() != Some(',') {
                return Ok(alternatives);
            }
            self.at += 1;
        }
    }

    /// Characters up to whitespace (or a comma, in a value); a quote among them is refused.
    fn bare(&mut self, in_value: bool) -> Result<String, QueryError> {
        let mut text = String::new();
        while let Some(c) = self.peek() {
            if c.is_whitespace() || (in_value && c == ',') {
                break;
            }
            if c == '"' {
                return Err(fault(
                    self.column(),
                    "a quote inside a word".into(),
                    "quote the whole word or value: \"web 1\"".into(),
                ));
            }
            text.push(c);
            self.at += 1;
        }
        Ok(text)
    }

    /// A quoted text from its opening quote, read past its closing one: `\"` is a quote and
    /// `\\` a backslash; any other backslash is itself.
    fn quoted(&mut self) -> Result<String, QueryError> {
        let column = self.column();
        self.at += 1;
        let mut text = String::new();
        loop {
            match (self.peek(), self.chars.get(self.at + 1)) {
                (None, _) => {
                    return Err(fault(
                        column,
                        "a quote that is never closed".into(),
                        "close it with \"; write \\\" for a quote inside".into(),
                    ));
                }
                (Some('\\'), Some(next @ ('"' | '\\'))) => {
                    text.push(*next);
                    self.at += 2;
                }
                (Some('"'), _) => {
                    self.at += 1;
                    return Ok(text);
                }
                (Some(c), _) => {
                    text.push(c);
                    self.at += 1;
                }
            }
        }
    }
}
