//! CSV as RFC 4180 describes it (docs/import-formats.md, "CSV (RFC 4180)"): the reader of
//! the `csv` and `termius-csv` imports and the writer of their exports. Cells are separated
//! by `,`; a quoted cell may hold `,`, CR, LF and doubled quotes; lines end with CR, LF or
//! CRLF; a last empty line is no row. The writer quotes a cell holding `,` `"` CR or LF or
//! starting or ending with a space, doubles its quotes, and ends lines with CRLF.
//!
//! Invariants: never panics on any input; an error names a line, never a cell's text.

/// The rows of `text`, each a list of cells. An unterminated quote is an error naming the
/// line where the quoted cell began.
pub fn read(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut rows = Vec::new();
    let mut row: Vec<String> = Vec::new();
    let mut cell = String::new();
    let mut chars = text.chars().peekable();
    let mut line = 1usize;
    // Whether anything (a cell separator or a character) was seen on the current row.
    let mut row_started = false;
    while let Some(ch) = chars.next() {
        match ch {
            '"' if cell.is_empty() => {
                let began = line;
                read_quoted(&mut chars, &mut cell, &mut line)
                    .ok_or_else(|| format!("line {began}: a quoted cell is not closed"))?;
                // Text after the closing quote up to the separator belongs to the cell
                // (lenient, as spreadsheets write it).
                row_started = true;
            }
            ',' => {
                row.push(std::mem::take(&mut cell));
                row_started = true;
            }
            '\r' | '\n' => {
                if ch == '\r' && chars.peek() == Some(&'\n') {
                    chars.next();
                }
                line += 1;
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
                row_started = false;
            }
            _ => {
                cell.push(ch);
                row_started = true;
            }
        }
    }
    if row_started || !cell.is_empty() {
        row.push(cell);
        rows.push(row);
    }
    Ok(rows)
}

/// Reads a quoted cell's content after its opening quote into `cell`, up to and including
/// the closing quote; `None` when the text ends first.
fn read_quoted(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    cell: &mut String,
    line: &mut usize,
) -> Option<()> {
    loop {
        let ch = chars.next()?;
        match ch {
            '"' if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            '"' => return Some(()),
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    *line += 1;
                }
                cell.push(ch);
            }
            '\n' => {
                *line += 1;
                cell.push(ch);
            }
            _ => cell.push(ch),
        }
    }
}

/// Appends one row of `cells` to `out`, ending with CRLF.
pub fn write_row(out: &mut String, cells: &[&str]) {
    for (index, cell) in cells.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        if needs_quotes(cell) {
            out.push('"');
            out.push_str(&cell.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(cell);
        }
    }
    out.push_str("\r\n");
}

fn needs_quotes(cell: &str) -> bool {
    cell.contains([',', '"', '\r', '\n']) || cell.starts_with(' ') || cell.ends_with(' ')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::panic;

    use super::*;

    fn rows(text: &str) -> Vec<Vec<String>> {
        read(text).unwrap()
    }

    #[test]
    fn plain_cells_split_on_commas_and_lines_on_lf_crlf_or_cr() {
        let expected = vec![vec!["a", "b", ""], vec!["c", "d", "e"], vec!["f", "", "g"]];
        for text in [
            "a,b,\nc,d,e\nf,,g",
            "a,b,\r\nc,d,e\r\nf,,g\r\n",
            "a,b,\rc,d,e\rf,,g\r",
        ] {
            assert_eq!(rows(text), expected, "{text:?}");
        }
    }

    #[test]
    fn a_quoted_cell_holds_commas_doubled_quotes_and_line_ends() {
        let text = "name,notes\r\n\"web, 1\",\"say \"\"hi\"\"\r\nsecond line\"\r\n";
        assert_eq!(
            rows(text),
            vec![
                vec!["name", "notes"],
                vec!["web, 1", "say \"hi\"\r\nsecond line"]
            ]
        );
    }

    #[test]
    fn a_quoted_empty_cell_is_empty_and_a_quote_inside_an_unquoted_cell_is_kept() {
        assert_eq!(rows("\"\",a\"b"), vec![vec!["", "a\"b"]]);
    }

    #[test]
    fn a_trailing_empty_line_is_no_row_but_an_empty_line_inside_is_one() {
        assert_eq!(rows("a\n"), vec![vec!["a"]]);
        assert_eq!(rows("a\n\nb"), vec![vec!["a"], vec![""], vec!["b"]]);
        assert_eq!(rows(""), Vec::<Vec<String>>::new());
    }

    #[test]
    fn an_unterminated_quote_is_an_error_naming_the_line_it_began_on() {
        let err = read("a,b\nc,\"secret value\nd").unwrap_err();
        assert!(err.contains("line 2"), "{err}");
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn the_writer_quotes_only_what_needs_it_and_ends_lines_with_crlf() {
        let mut out = String::new();
        write_row(
            &mut out,
            &[
                "plain",
                "a,b",
                "say \"hi\"",
                "two\nlines",
                " lead",
                "trail ",
                "=1+1",
            ],
        );
        assert_eq!(
            out,
            "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\" lead\",\"trail \",=1+1\r\n"
        );
    }

    #[test]
    fn what_the_writer_writes_reads_back_cell_for_cell() {
        let cells = ["", "a,b", "\"", "x\r\ny", " s ", "\r", "é€"];
        let mut out = String::new();
        write_row(&mut out, &cells);
        write_row(&mut out, &["next"]);
        assert_eq!(rows(&out), vec![cells.to_vec(), vec!["next"]]);
    }

    #[test]
    fn csv_read_never_panics_on_seeded_random_input() {
        let (iterations, seed) = crate::fuzz::settings("csv read", 0xC5F0_0001);
        let mut rng = crate::fuzz::Rng::new(seed);
        let pieces = [
            "\"", ",", "\r", "\n", "\r\n", "a", "\"\"", "é", " ", "\u{feff}",
        ];
        for iteration in 0..iterations {
            let mut text = String::new();
            for _ in 0..rng.below(24) {
                text.push_str(rng.pick::<&str>(&pieces));
            }
            let outcome = panic::catch_unwind(|| read(&text));
            assert!(outcome.is_ok(), "panic on input #{iteration}: {text:?}");
        }
    }
}
