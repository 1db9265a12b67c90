//! The docs run: every ` ```sh ` block of `docs/api.md`, and of the README's
//! `## A five-minute tour`, is run in order against a live instance (one per file), and every
//! `curl` line must answer the status its trailing `# -> NNN` comment states (2xx when it has
//! none). The README's `## Command line` block is `host-manager --help` word for word.
//!
//! A file's blocks run, in order, as one `bash` script with `set -euo pipefail` and `PORT`
//! exported, so a line may capture an id into a variable that later lines and blocks use.
//! A `curl` line is run as `check NNN 'FILE:LINE' curl ...`:
//! `check` adds `-o FILE -w '%{http_code}'`, prints the body on stdout (so `$(...)` and
//! pipes see it) and fails the script when the status differs.

use std::path::Path;
use std::process::Command;

use crate::support::{Service, BIN};

/// Shell prelude: `check STATUS WHERE CURL_ARGS...`. STATUS is a glob (`201`, `2??`).
const PRELUDE: &str = r#"set -euo pipefail
check() {
  local want=$1 where=$2 out got
  shift 2
  out=$(mktemp)
  got=$("$@" -o "$out" -w '%{http_code}') || { echo "$where: curl failed" >&2; return 1; }
  cat "$out"
  rm -f "$out"
  # shellcheck disable=SC2254
  case "$got" in
    $want) ;;
    *) echo "$where: expected status $want, got $got" >&2; return 1 ;;
  esac
}
"#;

/// One line of a README example, continuation lines joined; `line` is 1-based.
struct Example {
    line: usize,
    text: String,
}

/// The ` ```sh ` blocks of a document, in order: all of them when `section` is `None`, else
/// those under the `## ` heading named `section`.
fn sh_blocks(text: &str, section: Option<&str>) -> Vec<Vec<Example>> {
    let mut blocks = Vec::new();
    let mut in_api = section.is_none();
    let mut block: Option<Vec<Example>> = None;
    let mut pending: Option<Example> = None;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if let (None, Some(wanted), Some(heading)) = (&block, section, raw.strip_prefix("## ")) {
            in_api = heading.trim() == wanted;
            continue;
        }
        if !in_api {
            continue;
        }
        match (&mut block, raw.trim_end()) {
            (None, "```sh") => block = Some(Vec::new()),
            (Some(_), "```") => blocks.push(block.take().unwrap_or_default()),
            (Some(lines), text) => {
                let (text, continues) = match text.strip_suffix('\\') {
                    Some(head) => (head, true),
                    None => (text, false),
                };
                let example = match pending.take() {
                    Some(mut started) => {
                        started.text.push(' ');
                        started.text.push_str(text.trim_start());
                        started
                    }
                    None => Example {
                        line,
                        text: text.to_owned(),
                    },
                };
                if continues {
                    pending = Some(example);
                } else {
                    lines.push(example);
                }
            }
            (None, _) => {}
        }
    }
    blocks
}

/// The expected status of a line: the number after `# -> `, else any 2xx.
fn expected_status(text: &str) -> String {
    text.rsplit_once("# -> ")
        .and_then(|(_, tail)| tail.get(..3))
        .filter(|code| code.bytes().all(|byte| byte.is_ascii_digit()))
        .map_or_else(|| "2??".to_owned(), str::to_owned)
}

/// A line as the test runs it: its `curl` wrapped in `check`; `file` names it in failures.
fn checked(file: &str, example: &Example) -> String {
    match example.text.find("curl ") {
        Some(at) if !example.text.trim_start().starts_with('#') => format!(
            "{}check '{}' '{file}:{}' {}",
            &example.text[..at],
            expected_status(&example.text),
            example.line,
            &example.text[at..]
        ),
        _ => example.text.clone(),
    }
}

/// A file of the repository, by its path from the top.
fn doc(file: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap()
}

/// The script of `file`'s examples (see `sh_blocks`) and its number of `curl` lines.
fn script(file: &str, section: Option<&str>) -> (String, usize) {
    let mut script = PRELUDE.to_owned();
    let mut curls = 0;
    for block in sh_blocks(&doc(file), section) {
        for example in block {
            if example.text.contains("curl ") {
                curls += 1;
            }
            script.push_str(&checked(file, &example));
            script.push('\n');
        }
    }
    (script, curls)
}

#[test]
fn every_curl_example_of_the_api_reference_answers_the_status_it_states() {
    let (script, curls) = script("docs/api.md", None);
    assert!(curls >= 40, "only {curls} curl examples found:\n{script}");
    run_examples("api", &script);
}

#[test]
fn every_curl_line_of_the_readme_tour_answers_the_status_it_states() {
    let (script, curls) = script("README.md", Some("A five-minute tour"));
    assert!(
        curls >= 10,
        "only {curls} curl lines found in the tour:\n{script}"
    );
    run_examples("tour", &script);
}

/// Runs `script` against a fresh service, failing with what the script printed.
fn run_examples(name: &str, script: &str) {
    let service = Service::start(name);
    let work = crate::support::fresh_dir(&format!("{name}-work"));
    let output = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(&work)
        .env("PORT", service.port.to_string())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "a documented example failed:\n{}\n--- stdout:\n{}\n--- script:\n{script}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
}

/// (METHOD, path with `{id}` and `{sub}` as `$`) of every operation of the OpenAPI document.
fn documented_operations() -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api/openapi.json");
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut operations = Vec::new();
    for (template, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if matches!(method.as_str(), "get" | "put" | "post" | "delete" | "patch") {
                let shape = template.replace("{id}", "$").replace("{sub}", "$");
                operations.push((method.to_uppercase(), shape));
            }
        }
    }
    operations
}

/// (METHOD, path with every `$VAR` segment as `$`) of a curl line.
fn curl_operation(line: &str) -> Option<(String, String)> {
    let method = match line.split_once(" -X ") {
        Some((_, rest)) => rest.split_whitespace().next().unwrap_or(""),
        None => "GET",
    };
    let (_, rest) = line.split_once("http://localhost:$PORT")?;
    let path: String = rest
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '?')
        .collect();
    let shape: Vec<&str> = path
        .split('/')
        .map(|segment| {
            if segment.starts_with('$') {
                "$"
            } else {
                segment
            }
        })
        .collect();
    Some((method.to_owned(), shape.join("/")))
}

#[test]
fn every_documented_endpoint_has_a_curl_example() {
    let (script, _) = script("docs/api.md", None);
    let examples: Vec<(String, String)> = script
        .lines()
        .filter(|line| line.contains("curl "))
        .filter_map(curl_operation)
        .collect();
    let operations = documented_operations();
    assert!(operations.len() >= 26, "{operations:?}");
    for operation in operations {
        assert!(
            examples.contains(&operation),
            "the README's examples have no curl line for {} {}",
            operation.0,
            operation.1
        );
    }
}

/// The ` ```text ` block right under `## Command line`.
fn command_line_block(readme: &str) -> &str {
    let opening = "## Command line\n\n```text\n";
    let start = readme
        .find(opening)
        .expect("a Command line section with a text block")
        + opening.len();
    let length = readme[start..].find("```\n").expect("the block ends");
    &readme[start..start + length]
}

#[test]
fn the_command_line_section_is_the_help_text_word_for_word() {
    let output = Command::new(BIN).arg("--help").output().unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    let readme = doc("README.md");
    let block = command_line_block(&readme);
    let differing = help
        .lines()
        .zip(block.lines())
        .position(|(help, readme)| help != readme);
    assert_eq!(
        (differing, help.lines().count()),
        (None, block.lines().count()),
        "README's Command line block differs from --help (first differing line, then the \
         line counts):\n--help:\n{help}\nREADME:\n{block}"
    );
    assert_eq!(block, help);
}

/// The error codes `docs/api.md`'s "Error codes" table lists, in backquotes in its rows.
fn documented_error_codes() -> std::collections::BTreeSet<String> {
    let api = doc("docs/api.md");
    let start = api.find("## Error codes").expect("an Error codes section");
    let table = &api[start..];
    let end = table[3..].find("\n## ").map_or(table.len(), |at| at + 3);
    table[..end]
        .lines()
        .filter(|line| line.starts_with("| 4") || line.starts_with("| 5"))
        .flat_map(|line| {
            let codes = line.split('|').nth(2).unwrap_or("").to_owned();
            codes
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The codes the service answers: those of `ApiError::code` (handlers, `src/error.rs`) and
/// `HttpError::code` (the HTTP layer: framing, limits, gate, routing, `src/http/error.rs`),
/// read from their `match`es.
fn error_codes_of_the_code() -> std::collections::BTreeSet<String> {
    let mut codes = std::collections::BTreeSet::new();
    for file in ["src/error.rs", "src/http/error.rs"] {
        let source = doc(file);
        let start = source.find("pub fn code(&self)").expect("a code function");
        let body = &source[start..];
        let body = &body[..body.find("\n    }\n").expect("its end")];
        let found: Vec<String> = body
            .lines()
            .filter_map(|line| line.split("=> \"").nth(1))
            .filter_map(|rest| rest.split('"').next())
            .map(str::to_owned)
            .collect();
        assert!(found.len() >= 10, "{file}: {found:?}");
        codes.extend(found);
    }
    codes
}

#[test]
fn the_error_code_table_of_the_api_reference_lists_exactly_the_codes_the_service_answers() {
    let code = error_codes_of_the_code();
    assert!(code.len() >= 30, "{code:?}");
    assert_eq!(documented_error_codes(), code);
}
