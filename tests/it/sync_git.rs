//! Sync with git as the transport (docs/sync.md): a bare repository and two clones, each
//! service's sync folder being its clone. After `sync/now` a device commits and pushes; the
//! other pulls, then syncs. Each device writes only its own bundle, so pulls never conflict
//! in git, and a concurrent edit ends as a conflict the merge reports.
//!
//! git runs with `GIT_CONFIG_NOSYSTEM=1` and `HOME` in a test dir, so no user or system
//! configuration reaches it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::support::{fresh_dir, Service};
use crate::sync::{assert_same_catalogue, device, enable, sync_now};

/// A bare repository and two clones of it, with the home dir git runs under.
struct Remote {
    home: PathBuf,
    a: PathBuf,
    b: PathBuf,
}

/// Whether `git` runs here; the tests skip with a message when it does not.
fn git_missing() -> bool {
    let missing = Command::new("git").arg("--version").output().is_err();
    if missing {
        eprintln!("SKIPPED: `git` is not installed, so sync through git is not tested");
    }
    missing
}

/// Runs `git args` in `dir` and asserts it succeeded.
fn git(home: &Path, dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn remote(name: &str) -> Remote {
    let base = fresh_dir(name);
    let home = base.join("home");
    let bare = base.join("remote.git");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&bare).unwrap();
    git(&home, &bare, &["init", "-q", "--bare"]);
    let bare_url = bare.to_str().unwrap();
    git(&home, &base, &["clone", "-q", bare_url, "a"]);
    git(&home, &base, &["clone", "-q", bare_url, "b"]);
    Remote {
        a: base.join("a"),
        b: base.join("b"),
        home,
    }
}

impl Remote {
    /// Commits everything in `clone` and pushes it.
    fn publish(&self, clone: &Path) {
        git(&self.home, clone, &["add", "-A"]);
        git(
            &self.home,
            clone,
            &["commit", "-q", "--allow-empty", "-m", "sync"],
        );
        git(&self.home, clone, &["push", "-q", "origin", "HEAD:main"]);
    }

    /// Pulls what the other clone pushed (a merge; never a conflict: each device writes its
    /// own file).
    fn pull(&self, clone: &Path) {
        git(
            &self.home,
            clone,
            &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
        );
    }

    /// `sync/now` on `service`, then commit and push its clone: the merge report.
    fn sync_and_push(&self, service: &Service, clone: &Path) -> Value {
        let report = sync_now(service);
        self.publish(clone);
        report
    }

    /// Pull into `clone`, then `sync/now` on `service`: the merge report.
    fn pull_and_sync(&self, service: &Service, clone: &Path) -> Value {
        self.pull(clone);
        sync_now(service)
    }
}

/// Two devices syncing through `remote`, both enabled and each having merged the other.
fn devices(name: &str, remote: &Remote) -> (Service, Service) {
    let a = device(&format!("{name}-a"), None);
    let b = device(&format!("{name}-b"), None);
    enable(&a, &remote.a);
    remote.publish(&remote.a);
    remote.pull(&remote.b);
    enable(&b, &remote.b);
    remote.publish(&remote.b);
    remote.pull_and_sync(&a, &remote.a);
    (a, b)
}

fn lists(report: &Value, list: &str, id: &str) -> bool {
    report[list]
        .as_array()
        .unwrap_or_else(|| panic!("report without {list}: {report}"))
        .iter()
        .any(|entry| entry["kind"] == "host" && entry["id"] == id)
}

#[test]
fn creates_edits_and_deletes_travel_through_a_git_remote_both_ways() {
    if git_missing() {
        return;
    }
    let remote = remote("sync-git");
    let (a, b) = devices("sync-git", &remote);

    let web = a.new_host("web");
    let gone = a.new_host("gone");
    remote.sync_and_push(&a, &remote.a);
    let report = remote.pull_and_sync(&b, &remote.b);
    assert!(
        lists(&report, "added", &web) && lists(&report, "added", &gone),
        "{report}"
    );
    assert_same_catalogue(&a, &b);

    a.put(
        &format!("/api/hosts/{web}"),
        &json!({"hostname": "edited.example.com"}),
    )
    .expect(200);
    a.delete(&format!("/api/hosts/{gone}")).expect(204);
    remote.sync_and_push(&a, &remote.a);
    let report = remote.pull_and_sync(&b, &remote.b);
    assert!(lists(&report, "updated", &web), "{report}");
    assert!(lists(&report, "deleted", &gone), "{report}");
    assert_eq!(
        b.get(&format!("/api/hosts/{web}")).expect(200)["hostname"],
        "edited.example.com"
    );
    b.get(&format!("/api/hosts/{gone}"))
        .assert_error(404, "HOST_NOT_FOUND");

    // And back from B to A.
    let from_b = b.new_host("from-b");
    b.put(
        &format!("/api/hosts/{web}"),
        &json!({"notes": "b was here"}),
    )
    .expect(200);
    remote.sync_and_push(&b, &remote.b);
    let report = remote.pull_and_sync(&a, &remote.a);
    assert!(lists(&report, "added", &from_b), "{report}");
    assert!(lists(&report, "updated", &web), "{report}");
    assert_eq!(
        a.get(&format!("/api/hosts/{web}")).expect(200)["notes"],
        "b was here"
    );
    assert_same_catalogue(&a, &b);
}

#[test]
fn a_concurrent_edit_through_git_pulls_cleanly_and_ends_as_a_reported_conflict() {
    if git_missing() {
        return;
    }
    let remote = remote("sync-git-conflict");
    let (a, b) = devices("sync-git-conflict", &remote);
    let host = a.new_host("contested");
    remote.sync_and_push(&a, &remote.a);
    remote.pull_and_sync(&b, &remote.b);

    a.put(
        &format!("/api/hosts/{host}"),
        &json!({"hostname": "from-a.example.com"}),
    )
    .expect(200);
    b.put(
        &format!("/api/hosts/{host}"),
        &json!({"hostname": "from-b.example.com"}),
    )
    .expect(200);
    // Both commit and push their own file; B pushes second, so its pull merges A's commit.
    remote.sync_and_push(&a, &remote.a);
    sync_now(&b);
    git(&remote.home, &remote.b, &["add", "-A"]);
    git(&remote.home, &remote.b, &["commit", "-q", "-m", "b"]);
    let report = remote.pull_and_sync(&b, &remote.b);
    remote.publish(&remote.b);
    remote.pull_and_sync(&a, &remote.a);

    let conflicts: Vec<&Value> = report["conflicts"]
        .as_array()
        .unwrap_or_else(|| panic!("no conflicts in the report: {report}"))
        .iter()
        .filter(|conflict| conflict["id"] == host.as_str() && conflict["field"] == "hostname")
        .collect();
    assert_eq!(
        conflicts.len(),
        1,
        "B's merge reports the conflict: {report}"
    );
    let winner = b.get(&format!("/api/hosts/{host}")).expect(200)["hostname"].clone();
    assert_eq!(conflicts[0]["winner"]["value"], winner, "{}", conflicts[0]);
    let loser = conflicts[0]["loser"]["value"].clone();
    let mut both = [winner, loser];
    both.sort_by_key(|value| value.to_string());
    assert_eq!(
        both,
        [json!("from-a.example.com"), json!("from-b.example.com")]
    );
    let listed = b.get("/api/sync/conflicts").expect(200)["conflicts"].clone();
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|conflict| conflict["id"] == host.as_str() && conflict["field"] == "hostname"),
        "{listed}"
    );
    assert_same_catalogue(&a, &b);
}
