//! The README's API section runs: every ` ```sh ` block between `## API` and the next `## `
//! heading is run in order against one live instance, and every `curl` line must answer
//! the status its trailing `# -> NNN` comment states (2xx when it has none). The
//! `## Command line` block is `host-manager --help` word for word.
//!
//! All blocks run, in order, as one `bash` script with `set -euo pipefail` and `PORT`
//! exported, so a line may capture an id into a variable that later lines and blocks use.
//! A `curl` line is run as `check NNN 'README.md:LINE' curl ...`:
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

/// The ` ```sh ` blocks of the `## API` section, in order.
fn api_blocks(readme: &str) -> Vec<Vec<Example>> {
    let mut blocks = Vec::new();
    let mut in_api = false;
    let mut block: Option<Vec<Example>> = None;
    let mut pending: Option<Example> = None;
    for (index, raw) in readme.lines().enumerate() {
        let line = index + 1;
        if block.is_none() && raw.starts_with("## ") {
            in_api = raw.trim() == "## API";
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

/// A line as the test runs it: its `curl` wrapped in `check`.
fn checked(example: &Example) -> String {
    match example.text.find("curl ") {
        Some(at) if !example.text.trim_start().starts_with('#') => format!(
            "{}check '{}' 'README.md:{}' {}",
            &example.text[..at],
            expected_status(&example.text),
            example.line,
            &example.text[at..]
        ),
        _ => example.text.clone(),
    }
}

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    std::fs::read_to_string(path).unwrap()
}

fn script(readme: &str) -> (String, usize) {
    let mut script = PRELUDE.to_owned();
    let mut curls = 0;
    for block in api_blocks(readme) {
        for example in block {
            if example.text.contains("curl ") {
                curls += 1;
            }
            script.push_str(&checked(&example));
            script.push('\n');
        }
    }
    (script, curls)
}

#[test]
fn every_curl_example_of_the_api_section_answers_the_status_it_states() {
    let (script, curls) = script(&readme());
    assert!(curls >= 40, "only {curls} curl examples found:\n{script}");
    let service = Service::start("readme");
    let work = crate::support::fresh_dir("readme-work");
    let output = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&work)
        .env("PORT", service.port.to_string())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "a README example failed:\n{}\n--- stdout:\n{}\n--- script:\n{script}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
}

/// (METHOD, path with `{id}` as `$`) of every operation of the OpenAPI document.
fn documented_operations() -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api/openapi.json");
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut operations = Vec::new();
    for (template, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if matches!(method.as_str(), "get" | "put" | "post" | "delete" | "patch") {
                operations.push((method.to_uppercase(), template.replace("{id}", "$")));
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
    let (script, _) = script(&readme());
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
    let readme = readme();
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
