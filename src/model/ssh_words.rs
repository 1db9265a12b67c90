//! The words of ssh_config(5) lines as `ssh` reads them: its blanks, a line's keyword and the
//! rest, and the rest's arguments (quotes and escapes); and the quoting of one argument so
//! that `ssh` reads it back. Shared by the config parser (`ssh_config`), the export, the
//! forward and environment lines and the rule on kept directives (`interop`), below all.

/// True for the characters OpenSSH's config reader takes as blanks: C's `isspace` in the C
/// locale (space, tab, CR, LF, vertical tab, form feed). Unicode spaces (no-break space,
/// U+2028, ...) are not blanks to `ssh`: they are part of a word, so they are here too.
pub fn is_config_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n' | '\x0b' | '\x0c')
}

/// The keyword and the rest: the keyword ends at a blank or `=`; one `=` may separate
/// it from the arguments, with blanks on either side (ssh_config(5)).
pub fn split_keyword(line: &str) -> (&str, &str) {
    let end = line
        .find(|c: char| is_config_blank(c) || c == '=')
        .unwrap_or(line.len());
    let (keyword, rest) = line.split_at(end);
    let rest = rest.trim_start_matches(is_config_blank);
    let rest = rest.strip_prefix('=').unwrap_or(rest);
    (keyword, rest)
}

/// Arguments as OpenSSH's `argv_split` reads them: whitespace-separated, `"` or `'`
/// quotes group, a backslash escapes a quote, a backslash or (unquoted) a space, and an
/// unquoted `#` at the start of an argument ends the line.
pub fn split_args(text: &str) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut index = 0;
    loop {
        while index < chars.len() && is_config_blank(chars[index]) {
            index += 1;
        }
        if index >= chars.len() || chars[index] == '#' {
            return Ok(args);
        }
        let mut arg = String::new();
        let mut quote: Option<char> = None;
        while index < chars.len() {
            let c = chars[index];
            let next = chars.get(index + 1).copied();
            match (c, quote) {
                ('\\', _)
                    if matches!(next, Some('\'' | '"' | '\\'))
                        || (quote.is_none() && next == Some(' ')) =>
                {
                    arg.extend(next);
                    index += 1;
                }
                (c, None) if is_config_blank(c) => break,
                ('"' | '\'', None) => quote = Some(c),
                (c, Some(open)) if c == open => quote = None,
                (c, _) => arg.push(c),
            }
            index += 1;
        }
        if quote.is_some() {
            return Err("a quote is not closed".into());
        }
        args.push(arg);
    }
}

/// One argument written so that `split_args` (and `ssh`) reads it back as `text`: as is when
/// it is not empty and holds no blank (any whitespace), quote, backslash or `#`; else
/// double-quoted with `"` and `\` escaped. A line break would still end the config line:
/// callers keep values on one line.
pub fn quote_arg(text: &str) -> String {
    let plain = !text.is_empty()
        && !text
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\' | '#'));
    if plain {
        return text.to_owned();
    }
    let mut out = String::from("\"");
    for c in text.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::model::ssh_words::{quote_arg, split_args};

    #[test]
    fn quote_arg_wraps_values_with_spaces_and_escapes_quotes() {
        assert_eq!(quote_arg("root"), "root");
        assert_eq!(quote_arg("john doe"), "\"john doe\"");
        assert_eq!(quote_arg("a\"b"), "\"a\\\"b\"");
        assert_eq!(quote_arg(""), "\"\"");
        assert_eq!(quote_arg("#x"), "\"#x\"");
        for text in ["a \"b\\", "", "#x", "it's", "a\tb", "\\", "x\\ y"] {
            assert_eq!(split_args(&quote_arg(text)).unwrap(), vec![text]);
        }
    }

    #[test]
    fn args_split_like_openssh() {
        assert_eq!(
            split_args(r#"a "b c" 'd e' f\ g"#).unwrap(),
            vec!["a", "b c", "d e", "f g"]
        );
        assert_eq!(split_args(r#""say \"hi\"""#).unwrap(), vec![r#"say "hi""#]);
        assert_eq!(split_args("a #rest").unwrap(), vec!["a"]);
        assert!(split_args("\"open").is_err());
    }
}
