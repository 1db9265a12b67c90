//! The `remmina` reader (docs/import-formats.md, "Remmina"): one `.remmina` keyfile per
//! profile (`[remmina]` group), plus `remmina.pref` (`[remmina_pref]` `secret=`), the key of
//! the profiles' saved passwords, which goes to `Catalogue::source_key`. SSH and SFTP
//! profiles are SSH sessions; every other protocol is skipped. A profile's source id is its
//! file name without `.remmina` (Remmina names files once, by timestamp or template, and keeps
//! the name, so it is stable across copies).
//!
//! Three generations of keys are read: before 1.2.0-rcgit.4 (2015) `ssh_auth` 2 meant an
//! automatic public key, from then on it means the agent (3 is the automatic public key);
//! before 1.4 (2020) an SSH profile's user and password were `ssh_username`/`ssh_password`
//! and its tunnel `ssh_enabled`/`ssh_server`, since then `username`/`password` and
//! `ssh_tunnel_*`. How a file's generation is told is `auth_generation`'s doc.
//!
//! Invariants: pure; never panics on any input; group nesting is capped at 64 levels; a
//! saved password leaves the reader only in its protected form (`SourceSecret::Remmina`),
//! never in a reason or an unmapped entry.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::import::source::{
    Catalogue, Jump, SourceAuth, SourceFile, SourceHost, SourceSecret, Unreadable,
};
use crate::import::tabular::{split_host_port, Builder};
use crate::import::text::strip_bom;
use crate::vault::Secret;

/// Folder nesting deeper than this is `invalid`.
const MAX_DEPTH: usize = 64;

/// Keys every profile saved by Remmina's editor since 1.2.0-rcgit.4 has (written even when
/// empty), or that later versions added: their presence means the new `ssh_auth` meaning.
const NEW_AUTH_MARKERS: [&str; 11] = [
    "precommand",
    "postcommand",
    "disablepasswordstoring",
    "ssh_passphrase",
    "ssh_password",
    "ssh_color_scheme",
    "ssh_proxycommand",
    "ssh_kex_algorithms",
    "ssh_stricthostkeycheck",
    "ssh_compression",
    "ssh_tunnel_enabled",
];

/// Settings that change how the connection works and are not imported, with why, reported
/// only when set (non-empty, and not `0` for the check boxes).
const UNMAPPED_TEXT: [(&str, &str); 9] = [
    ("ssh_proxycommand", "a proxy command is not imported"),
    (
        "ssh_kex_algorithms",
        "key exchange algorithms are not imported",
    ),
    ("ssh_ciphers", "cipher choices are not imported"),
    ("ssh_hostkeytypes", "host key type choices are not imported"),
    (
        "run_line",
        "a line typed into the shell after login is not imported",
    ),
    (
        "precommand",
        "a local command run before connecting is not imported",
    ),
    (
        "postcommand",
        "a local command run after disconnecting is not imported",
    ),
    (
        "ssh_tunnel_proxycommand",
        "the jump's proxy command is not imported",
    ),
    (
        "ssh_tunnel_privatekey",
        "the jump's key file is not imported (import the key)",
    ),
];

const UNMAPPED_CHECKS: [(&str, &str); 6] = [
    ("ssh_forward_x11", "X11 forwarding is not imported"),
    ("ssh_compression", "compression is not imported"),
    (
        "ssh_stricthostkeycheck",
        "strict host key checking is this service's own rule",
    ),
    ("ssh_allow_ssh_rsa", "allowing ssh-rsa keys is not imported"),
    ("sshlogenabled", "session logging is not imported"),
    ("sshsavesession", "session logging is not imported"),
];

/// One group's keys and values (unescaped; a later key wins), borrowed from the text.
type Settings<'a> = HashMap<&'a str, Cow<'a, str>>;

/// One keyfile's groups by name.
type KeyFile<'a> = HashMap<&'a str, Settings<'a>>;

/// Reads the `.remmina` profiles and `remmina.pref` among `files`.
pub fn read(files: &[SourceFile]) -> Result<Catalogue, Unreadable> {
    let mut builder = Builder::default();
    for (index, file) in files.iter().enumerate() {
        let keyfile = parse_keyfile(strip_bom(&file.text));
        let unreadable = |reason: &str| Unreadable {
            file: index,
            reason: reason.to_owned(),
        };
        if let Some(pref) = keyfile.get("remmina_pref") {
            if let Some(secret) = pref
                .get("secret")
                .map(|s| s.trim())
                .filter(|s| !s.is_empty())
            {
                builder.catalogue.source_key = Some(Secret::new(secret.as_bytes().to_vec()));
            }
            continue;
        }
        if base_name(&file.name) == "remmina.pref" {
            return Err(unreadable("remmina.pref has no [remmina_pref] group"));
        }
        let profile = keyfile
            .get("remmina")
            .ok_or_else(|| unreadable("no [remmina] group: not a Remmina profile"))?;
        let host = profile_host(&source_id(&file.name, index), profile);
        builder.add_groups(&host.group_path);
        builder.catalogue.hosts.push(host);
    }
    Ok(builder.catalogue)
}

/// The file name without its folders and its `.remmina` extension (`file <n>` if nothing
/// is left).
fn source_id(name: &str, index: usize) -> String {
    let base = base_name(name);
    let id = base.strip_suffix(".remmina").unwrap_or(base);
    if id.is_empty() {
        format!("file {index}")
    } else {
        id.to_owned()
    }
}

fn base_name(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

/// A GLib keyfile: `[group]` lines, `key=value` lines, `#` comments; values unescaped as
/// GLib does (`\s` `\n` `\t` `\r` `\\`); localized keys (`name[fr]`) are left out.
fn parse_keyfile(text: &str) -> KeyFile<'_> {
    let mut groups = KeyFile::new();
    let mut current: Option<&str> = None;
    for line in text.lines() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            current = rest.trim_end().strip_suffix(']');
            if let Some(name) = current {
                groups.entry(name).or_default();
            }
            continue;
        }
        let (Some(group), Some((key, value))) = (current, line.split_once('=')) else {
            continue;
        };
        let key = key.trim();
        if key.contains('[') {
            continue;
        }
        if let Some(entries) = groups.get_mut(group) {
            entries.insert(key, unescape(value.trim_start()));
        }
    }
    groups
}

fn unescape(value: &str) -> Cow<'_, str> {
    if !value.contains('\\') {
        return Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(ch) = chars.next() {
        if ch != '\\' {
            out.push(ch);
            continue;
        }
        match chars.next() {
            Some('s') => out.push(' '),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    Cow::Owned(out)
}

/// A profile's settings with `""` for an absent key.
struct Profile<'a>(&'a Settings<'a>);

impl Profile<'_> {
    fn get(&self, key: &str) -> &str {
        self.0.get(key).map_or("", |value| value.as_ref())
    }

    fn has(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// A check box: set when its value is a number other than 0 (or `true`).
    fn checked(&self, key: &str) -> bool {
        let value = self.get(key).trim();
        value.eq_ignore_ascii_case("true") || value.parse::<i64>().is_ok_and(|n| n != 0)
    }

    /// The first non-empty of `keys`.
    fn first(&self, keys: &[&str]) -> &str {
        keys.iter()
            .map(|key| self.get(key))
            .find(|v| !v.is_empty())
            .unwrap_or("")
    }
}

/// One profile as a host (skipped when not SSH, invalid when it breaks a rule).
fn profile_host(source_id: &str, settings: &Settings<'_>) -> SourceHost {
    let profile = Profile(settings);
    let name = profile.first(&["name", "server"]);
    let mut host = SourceHost {
        source_id: source_id.to_owned(),
        name: if name.is_empty() {
            source_id.to_owned()
        } else {
            name.to_owned()
        },
        tags: split(profile.get("labels"), ','),
        notes: percent_decode(profile.get("notes_text")),
        ..SourceHost::default()
    };
    host.group_path = split(profile.get("group"), '/');
    if host.group_path.len() > MAX_DEPTH {
        host.group_path.truncate(MAX_DEPTH);
        host.invalid = Some(format!("group: nested deeper than {MAX_DEPTH} folders"));
    }
    let protocol = profile.get("protocol").trim();
    if !protocol.eq_ignore_ascii_case("SSH") && !protocol.eq_ignore_ascii_case("SFTP") {
        let shown: String = protocol.chars().take(20).collect();
        host.skipped = Some(match shown.as_str() {
            "" => "protocol not given (Remmina's default is RDP), not SSH".to_owned(),
            _ => format!("protocol {shown} is not SSH"),
        });
        return host;
    }
    let pre_1_4 = profile.has("ssh_enabled");
    let (user_keys, password_keys) = if pre_1_4 {
        (["ssh_username", "username"], ["ssh_password", "password"])
    } else {
        (["username", "ssh_username"], ["password", "ssh_password"])
    };
    host.username = Some(profile.first(&user_keys).to_owned()).filter(|u| !u.is_empty());
    if let Err(reason) = server(&profile, &mut host) {
        host.invalid.get_or_insert(reason);
    }
    let password = secret(
        profile.first(&password_keys),
        "password",
        &mut host.unmapped,
    );
    auth(&profile, password, &mut host);
    host.certificate_file = Some(profile.get("ssh_certfile").to_owned()).filter(|p| !p.is_empty());
    host.remote_command = Some(profile.get("exec").to_owned()).filter(|c| !c.trim().is_empty());
    if let Err(reason) = tunnel(&profile, pre_1_4, &mut host) {
        host.invalid.get_or_insert(reason);
    }
    unmapped(&profile, &mut host.unmapped);
    host
}

/// `server` (`host`, `host:port`, `[v6]:port`) into the host name and port.
fn server(profile: &Profile, host: &mut SourceHost) -> Result<(), String> {
    let server = profile.get("server").trim();
    let (hostname, port) = split_host_port(server).map_err(|why| format!("server: {why}"))?;
    host.hostname = hostname;
    host.port = port;
    if host.hostname.is_empty() {
        return Err("hostname: is required".to_owned());
    }
    Ok(())
}

/// A password setting's value in its protected form; `.` means the desktop keyring holds
/// it (named in `unmapped`), empty means none.
fn secret(value: &str, key: &str, unmapped: &mut Vec<String>) -> Option<SourceSecret> {
    match value.trim() {
        "" => None,
        "." => {
            unmapped.push(format!(
                "{key}: kept in the desktop keyring (libsecret), not in the file: not imported"
            ));
            None
        }
        base64 => Some(SourceSecret::Remmina(base64.to_owned())),
    }
}

/// Which meaning a profile's `ssh_auth` numbers have.
#[derive(Debug, PartialEq, Eq)]
enum AuthGeneration {
    /// Remmina before 1.2.0-rcgit.4: 0 password, 1 public key, 2 automatic public key.
    Old,
    /// Since: 0 password, 1 public key, 2 agent, 3 automatic public key, 4 GSSAPI,
    /// 5 keyboard-interactive.
    New,
}

/// A profile is of the old generation when it has none of the keys Remmina's editor writes
/// into every profile since the version that changed the numbers (`precommand`,
/// `postcommand` and `disablepasswordstoring` came in that same release, written even when
/// empty) nor any key added later, and its `ssh_auth` is a number the old versions knew.
fn auth_generation(profile: &Profile, value: i64) -> AuthGeneration {
    if value > 2 || NEW_AUTH_MARKERS.iter().any(|key| profile.has(key)) {
        AuthGeneration::New
    } else {
        AuthGeneration::Old
    }
}

/// `ssh_auth` (with the key file, its passphrase and the saved password) into `host.auth`.
fn auth(profile: &Profile, password: Option<SourceSecret>, host: &mut SourceHost) {
    let value = match profile.get("ssh_auth").trim() {
        "" => 0,
        text => text.parse::<i64>().unwrap_or(-1),
    };
    let generation = auth_generation(profile, value);
    let auto = "ssh_auth: automatic public key (the agent, then the default key files) is imported as agent auth";
    let mut password = password;
    host.auth = match (value, &generation) {
        (0, _) => SourceAuth::Password(password.take()),
        (1, _) => public_key(profile, host),
        (2, AuthGeneration::New) => SourceAuth::Agent,
        (2, AuthGeneration::Old) | (3, _) => {
            host.unmapped.push(auto.to_owned());
            SourceAuth::Agent
        }
        (4, _) => {
            host.unmapped
                .push("ssh_auth: GSSAPI (Kerberos) is not imported".to_owned());
            SourceAuth::Unspecified
        }
        (5, _) => {
            host.unmapped
                .push("ssh_auth: keyboard-interactive is imported as password auth".to_owned());
            SourceAuth::Password(password.take())
        }
        _ => {
            host.unmapped
                .push("ssh_auth: not a value Remmina writes, not imported".to_owned());
            SourceAuth::Unspecified
        }
    };
    if password.is_some() {
        host.unmapped
            .push("password: not used by this profile's auth, not imported".to_owned());
    }
}

/// Public-key auth: the key file (Remmina's default identity when none is chosen, which the
/// import cannot know: agent auth then, named in `unmapped`).
fn public_key(profile: &Profile, host: &mut SourceHost) -> SourceAuth {
    let path = profile.get("ssh_privatekey").trim();
    let passphrase = secret(
        profile.get("ssh_passphrase"),
        "ssh_passphrase",
        &mut host.unmapped,
    );
    if path.is_empty() {
        host.unmapped.push(
            "ssh_privatekey: none chosen (Remmina's default identity), imported as agent auth"
                .to_owned(),
        );
        return SourceAuth::Agent;
    }
    SourceAuth::Key {
        path: path.to_owned(),
        passphrase,
    }
}

/// The SSH tunnel of an SSH profile: its jump host.
fn tunnel(profile: &Profile, pre_1_4: bool, host: &mut SourceHost) -> Result<(), String> {
    if pre_1_4 {
        return old_tunnel(profile, host);
    }
    if !profile.checked("ssh_tunnel_enabled") {
        return Ok(());
    }
    let server = profile.get("ssh_tunnel_server").trim();
    if server.is_empty() {
        host.unmapped.push(
            "ssh_tunnel_enabled: a tunnel through the same server is not a jump, not imported"
                .to_owned(),
        );
        return Ok(());
    }
    let (hostname, port) =
        split_host_port(server).map_err(|why| format!("ssh_tunnel_server: {why}"))?;
    let username =
        Some(profile.get("ssh_tunnel_username").trim().to_owned()).filter(|u| !u.is_empty());
    let saved = secret(
        profile.get("ssh_tunnel_password"),
        "ssh_tunnel_password",
        &mut host.unmapped,
    );
    let password = match profile.get("ssh_tunnel_auth").trim() {
        "" | "0" => saved.map(Box::new),
        _ => {
            host.unmapped.push(
                "ssh_tunnel_auth: the jump logs in with a key or the agent; imported without a password"
                    .to_owned(),
            );
            None
        }
    };
    host.jumps.push(Jump::Address {
        hostname,
        port,
        username,
        password,
    });
    Ok(())
}

/// Before 1.4 an SSH profile's `ssh_server` was its own server unless `ssh_enabled` sent it
/// through another (`[user@]host[:port]`).
fn old_tunnel(profile: &Profile, host: &mut SourceHost) -> Result<(), String> {
    let server = profile.get("ssh_server").trim();
    if !profile.checked("ssh_enabled") || server.is_empty() {
        return Ok(());
    }
    let (username, address) = match server.rsplit_once('@') {
        Some((user, rest)) => (Some(user.to_owned()).filter(|u| !u.is_empty()), rest),
        None => (None, server),
    };
    let (hostname, port) = split_host_port(address).map_err(|why| format!("ssh_server: {why}"))?;
    if hostname.is_empty() || hostname == host.hostname {
        return Ok(());
    }
    host.jumps.push(Jump::Address {
        hostname,
        port,
        username,
        password: None,
    });
    Ok(())
}

/// Settings that change the connection and are set, each as `key: why`.
fn unmapped(profile: &Profile, unmapped: &mut Vec<String>) {
    for (key, why) in UNMAPPED_TEXT {
        if !profile.get(key).trim().is_empty() {
            unmapped.push(format!("{key}: {why}"));
        }
    }
    for (key, why) in UNMAPPED_CHECKS {
        if profile.checked(key) {
            unmapped.push(format!("{key}: {why}"));
        }
    }
    let charset = profile.get("ssh_charset").trim();
    if !charset.is_empty() && !charset.eq_ignore_ascii_case("UTF-8") {
        unmapped.push("ssh_charset: a terminal character set is not imported".to_owned());
    }
}

/// Items of a list cell, trimmed, empty ones dropped.
fn split(text: &str, separator: char) -> Vec<String> {
    text.split(separator)
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `notes_text` is URI-escaped by Remmina (`%0A` for a new line); a broken escape is kept
/// as written.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok());
        match (byte, hex.and_then(|pair| u8::from_str_radix(pair, 16).ok())) {
            (b'%', Some(value)) => {
                out.push(value);
                at += 3;
            }
            _ => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::panic;

    use super::*;
    use crate::vault::foreign;

    const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/samples/import/remmina");

    /// remmina.pref and every profile of the sample folder, in name order.
    fn sample_files() -> Vec<SourceFile> {
        let mut files = vec![SourceFile {
            name: "remmina.pref".to_owned(),
            text: std::fs::read_to_string(format!("{DIR}/remmina.pref")).unwrap(),
        }];
        let mut names: Vec<_> = std::fs::read_dir(format!("{DIR}/profiles"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        for name in names {
            let text = std::fs::read_to_string(format!("{DIR}/profiles/{name}")).unwrap();
            files.push(SourceFile { name, text });
        }
        files
    }

    fn sample() -> Catalogue {
        read(&sample_files()).unwrap()
    }

    fn one(text: &str) -> SourceHost {
        let files = [SourceFile {
            name: "1700000000000.remmina".to_owned(),
            text: text.to_owned(),
        }];
        read(&files).unwrap().hosts.pop().unwrap()
    }

    fn host<'c>(catalogue: &'c Catalogue, id: &str) -> &'c SourceHost {
        catalogue
            .hosts
            .iter()
            .find(|host| host.source_id == id)
            .unwrap_or_else(|| panic!("no host {id} in {catalogue:#?}"))
    }

    /// What a protected password opens to with the catalogue's pref secret.
    fn opened(catalogue: &Catalogue, secret: &SourceSecret) -> String {
        let SourceSecret::Remmina(base64) = secret else {
            panic!("not a Remmina secret: {secret:?}");
        };
        let key = catalogue.source_key.as_ref().unwrap();
        let value = foreign::remmina::reveal(base64, key.expose()).unwrap();
        String::from_utf8(value.expose().to_vec()).unwrap()
    }

    #[test]
    fn the_sample_folder_reads_every_profile_and_the_pref_secret() {
        let catalogue = sample();
        assert_eq!(catalogue.hosts.len(), 12);
        let key = catalogue.source_key.as_ref().unwrap();
        assert_eq!(
            key.expose(),
            b"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
        );
        let paths: Vec<String> = catalogue.groups.iter().map(|g| g.path.join("/")).collect();
        for path in [
            "Prod",
            "Prod/Web",
            "Prod/DB",
            "Office/Lab",
            "Lab/Deep/Nested",
            "Legacy/2014",
        ] {
            assert!(paths.contains(&path.to_owned()), "{path} in {paths:?}");
        }
        let parent = paths.iter().position(|p| p == "Prod").unwrap();
        let child = paths.iter().position(|p| p == "Prod/Web").unwrap();
        assert!(parent < child);
    }

    #[test]
    fn a_password_profile_keeps_its_protected_password_labels_and_notes() {
        let catalogue = sample();
        let web = host(&catalogue, "prod-web_ssh_web-1_web1-example-com");
        assert_eq!(
            (web.name.as_str(), web.hostname.as_str(), web.port),
            ("web 1", "web1.example.com", None)
        );
        assert_eq!(web.username.as_deref(), Some("deploy"));
        assert_eq!(web.group_path, ["Prod", "Web"]);
        assert_eq!(web.tags, ["web", "nginx"]);
        assert_eq!(web.notes, "Front web server.\nPatched monthly.");
        let SourceAuth::Password(Some(secret)) = &web.auth else {
            panic!("{:?}", web.auth);
        };
        assert_eq!(opened(&catalogue, secret), "s3cr3t-web");
        assert!(
            web.unmapped.is_empty(),
            "default settings are not reported: {:?}",
            web.unmapped
        );
    }

    #[test]
    fn a_public_key_profile_has_its_key_file_passphrase_and_certificate() {
        let catalogue = sample();
        let web = host(&catalogue, "prod-web_ssh_web-2_web2-example-com");
        assert_eq!(web.port, Some(2222));
        let SourceAuth::Key {
            path,
            passphrase: Some(passphrase),
        } = &web.auth
        else {
            panic!("{:?}", web.auth);
        };
        assert_eq!(path, "/home/ana/.ssh/id_ed25519");
        assert_eq!(opened(&catalogue, passphrase), "key passphrase");
        assert_eq!(
            web.certificate_file.as_deref(),
            Some("/home/ana/.ssh/id_ed25519-cert.pub")
        );
    }

    #[test]
    fn an_sftp_profile_is_an_ssh_session_and_keyboard_interactive_is_password_auth() {
        let catalogue = sample();
        let files = host(&catalogue, "prod-web_sftp_files_files-example-com");
        assert!(files.skipped.is_none());
        let SourceAuth::Password(Some(secret)) = &files.auth else {
            panic!("{:?}", files.auth);
        };
        assert_eq!(opened(&catalogue, secret), "12345678");
        assert_eq!(
            files.unmapped,
            ["ssh_auth: keyboard-interactive is imported as password auth"]
        );
    }

    #[test]
    fn the_ssh_tunnel_of_an_ssh_profile_is_its_jump_with_the_tunnel_password() {
        let catalogue = sample();
        let db = host(&catalogue, "prod-db_ssh_db-1_2001-db8--5");
        assert_eq!((db.hostname.as_str(), db.port), ("2001:db8::5", Some(2200)));
        assert!(matches!(db.auth, SourceAuth::Agent));
        assert_eq!(db.remote_command.as_deref(), Some("tmux new -A -s main"));
        let (hostname, port, username, password) = crate::import::only_address_jump(db);
        assert_eq!(
            (hostname, port, username),
            ("bastion.example.com", Some(2022), Some("jump"))
        );
        let password = password.unwrap();
        assert_eq!(opened(&catalogue, password), "pässwörd €");
        for key in ["ssh_compression:", "ssh_forward_x11:", "run_line:"] {
            assert!(
                db.unmapped.iter().any(|entry| entry.starts_with(key)),
                "{key} in {:?}",
                db.unmapped
            );
        }
    }

    #[test]
    fn gssapi_keyring_passwords_and_set_advanced_settings_are_unmapped() {
        let catalogue = sample();
        let db = host(&catalogue, "prod-db_ssh_db-2_db2-internal");
        assert!(matches!(db.auth, SourceAuth::Unspecified));
        let keys: Vec<&str> = db
            .unmapped
            .iter()
            .map(|e| e.split(':').next().unwrap())
            .collect();
        for key in [
            "password",
            "ssh_auth",
            "ssh_kex_algorithms",
            "ssh_ciphers",
            "ssh_proxycommand",
            "ssh_stricthostkeycheck",
        ] {
            assert!(keys.contains(&key), "{key} in {:?}", db.unmapped);
        }
        assert!(
            !db.unmapped.iter().any(|e| e.contains("nc -X")),
            "values are not echoed"
        );
    }

    #[test]
    fn other_protocols_are_skipped_with_their_name_and_folder() {
        let catalogue = sample();
        let rdp = host(&catalogue, "office_rdp_win-desktop_10-0-0-20");
        assert_eq!(rdp.skipped.as_deref(), Some("protocol RDP is not SSH"));
        assert_eq!(
            (rdp.name.as_str(), rdp.group_path.clone()),
            ("win desktop", vec!["Office".to_owned()])
        );
        let vnc = host(&catalogue, "office-lab_vnc_lab-screen_10-0-0-30");
        assert_eq!(vnc.skipped.as_deref(), Some("protocol VNC is not SSH"));
        let none = one("[remmina]\nname=x\nserver=h\n");
        assert!(none.skipped.unwrap().contains("RDP"));
    }

    #[test]
    fn an_ssh_profile_without_a_server_is_invalid_and_ipv6_servers_are_read() {
        let catalogue = sample();
        let none = host(&catalogue, "lab-deep-nested_ssh_no-host_");
        assert_eq!(none.invalid.as_deref(), Some("hostname: is required"));
        let router = host(&catalogue, "_ssh_router_2001-db8--7");
        assert_eq!(
            (router.hostname.as_str(), router.port),
            ("2001:db8::7", None)
        );
        assert!(router.group_path.is_empty());
        assert!(matches!(router.auth, SourceAuth::Password(None)));
        let bad = one("[remmina]\nprotocol=SSH\nserver=h:99999\n");
        assert!(bad.invalid.unwrap().starts_with("server:"));
    }

    #[test]
    fn ssh_auth_2_is_the_agent_in_a_profile_with_newer_keys() {
        // Remmina 1.3 (pre-1.4 layout with precommand): user and password from ssh_*.
        let catalogue = sample();
        let old = host(&catalogue, "1555595478523");
        assert!(matches!(old.auth, SourceAuth::Agent));
        assert_eq!(old.username.as_deref(), Some("ops"));
        assert!(
            !old.unmapped.iter().any(|e| e.starts_with("ssh_auth")),
            "{:?}",
            old.unmapped
        );
        assert!(old
            .unmapped
            .iter()
            .any(|e| e.starts_with("password: not used")));
    }

    #[test]
    fn ssh_auth_2_is_the_automatic_public_key_in_a_remmina_1_1_profile() {
        let catalogue = sample();
        let oldest = host(&catalogue, "1418041200000");
        assert!(matches!(oldest.auth, SourceAuth::Agent));
        assert_eq!(oldest.username.as_deref(), Some("admin"));
        assert_eq!(oldest.port, Some(2200));
        assert!(oldest
            .unmapped
            .iter()
            .any(|e| e.starts_with("ssh_auth: automatic public key")));
    }

    #[test]
    fn one_marker_key_or_a_value_above_2_makes_a_profile_new() {
        let base = "[remmina]\nprotocol=SSH\nserver=h\nssh_enabled=0\nssh_auth=2\n";
        let auto = |host: &SourceHost| {
            host.unmapped
                .iter()
                .any(|e| e.contains("automatic public key"))
        };
        assert!(auto(&one(base)), "no marker: old meaning");
        for marker in NEW_AUTH_MARKERS {
            assert!(
                !auto(&one(&format!("{base}{marker}=\n"))),
                "{marker} marks a new profile"
            );
        }
        let three = one("[remmina]\nprotocol=SSH\nserver=h\nssh_auth=3\n");
        assert!(
            auto(&three),
            "3 is the automatic public key in the new meaning"
        );
        let zero = one("[remmina]\nprotocol=SSH\nserver=h\nssh_auth=0\n");
        assert!(matches!(zero.auth, SourceAuth::Password(None)));
    }

    #[test]
    fn a_pre_1_4_tunnel_to_another_server_is_a_jump_and_to_the_same_one_is_not() {
        let base = "[remmina]\nprotocol=SSH\nserver=db.example:22\nssh_enabled=1\nprecommand=\n";
        let jumped = one(&format!("{base}ssh_server=ops@gw.example:2022\n"));
        let (hostname, port, username, _) = crate::import::only_address_jump(&jumped);
        assert_eq!(
            (hostname, port, username),
            ("gw.example", Some(2022), Some("ops"))
        );
        assert!(one(&format!("{base}ssh_server=db.example\n"))
            .jumps
            .is_empty());
        let off = base.replace("ssh_enabled=1", "ssh_enabled=0");
        assert!(one(&format!("{off}ssh_server=gw.example\n"))
            .jumps
            .is_empty());
    }

    #[test]
    fn a_tunnel_through_the_same_server_is_unmapped_not_a_jump() {
        let host =
            one("[remmina]\nprotocol=SSH\nserver=h\nssh_tunnel_enabled=1\nssh_tunnel_server=\n");
        assert!(host.jumps.is_empty());
        assert!(host
            .unmapped
            .iter()
            .any(|e| e.starts_with("ssh_tunnel_enabled:")));
    }

    #[test]
    fn keyfile_escapes_are_unescaped_and_localized_keys_ignored() {
        let host = one(
            "# saved\n[remmina]\nname=\\sweb\\\\1\\t\nname[fr]=toile\nprotocol=SSH\nserver=h\n",
        );
        assert_eq!(host.name, " web\\1\t");
    }

    #[test]
    fn files_that_are_not_remmina_files_are_unreadable_by_index() {
        let mut files = sample_files();
        files.push(SourceFile {
            name: "notes.txt".to_owned(),
            text: "hello=world\n".to_owned(),
        });
        let err = read(&files).unwrap_err();
        assert_eq!(err.file, files.len() - 1);
        let pref = [SourceFile {
            name: "x/remmina.pref".to_owned(),
            text: "[other]\n".to_owned(),
        }];
        assert_eq!(read(&pref).unwrap_err().file, 0);
        let empty_pref = [SourceFile {
            name: "remmina.pref".to_owned(),
            text: "[remmina_pref]\n".to_owned(),
        }];
        assert!(read(&empty_pref).unwrap().source_key.is_none());
    }

    #[test]
    fn group_nesting_of_64_is_read_and_65_is_invalid() {
        let deep = |depth: usize| vec!["g"; depth].join("/");
        let ok = one(&format!(
            "[remmina]\nprotocol=SSH\nserver=h\ngroup={}\n",
            deep(64)
        ));
        assert!(ok.invalid.is_none() && ok.group_path.len() == 64);
        let deeper = one(&format!(
            "[remmina]\nprotocol=SSH\nserver=h\ngroup={}\n",
            deep(65)
        ));
        assert!(deeper.invalid.unwrap().contains("64"));
    }

    #[test]
    fn no_secret_value_appears_in_debug_output() {
        let text = format!("{:?}", sample());
        for encrypted in ["s3cr3t", "AAECAwQF"] {
            assert!(!text.contains(encrypted), "{encrypted}");
        }
    }

    #[test]
    fn remmina_reader_never_panics_on_seeded_random_input() {
        let (iterations, seed) = crate::fuzz::settings("remmina reader", 0x4E33_0001);
        let mut rng = crate::fuzz::Rng::new(seed);
        let samples = sample_files();
        let tokens = [
            "[remmina]",
            "[remmina_pref]",
            "[",
            "]",
            "=",
            "\\",
            "\\s",
            "%",
            "%0",
            ":",
            "@",
            "[::1]",
            "/",
            ",",
            "ssh_auth=9",
            "ssh_enabled=1",
            "ssh_tunnel_enabled=1",
            "protocol=SSH",
            "\n",
            "é",
        ];
        for iteration in 0..iterations {
            let file = rng.pick(&samples);
            let mut lines: Vec<Cow<str>> = file.text.lines().map(Cow::Borrowed).collect();
            for _ in 0..1 + rng.below(6) {
                let at = rng.below(lines.len());
                match rng.below(4) {
                    0 => lines.insert(at, lines.get(at).cloned().unwrap_or(Cow::Borrowed(""))),
                    1 if !lines.is_empty() => {
                        lines.remove(at);
                    }
                    2 => {
                        if let Some(line) = lines.get_mut(at) {
                            let cut = rng.below(line.chars().count() + 1);
                            *line = Cow::Owned(line.chars().take(cut).collect());
                        }
                    }
                    _ => {
                        if let Some(line) = lines.get_mut(at) {
                            let mut chars: Vec<char> = line.chars().collect();
                            let token: &str = rng.pick::<&str>(&tokens);
                            let place = rng.below(chars.len() + 1);
                            chars.splice(place..place, token.chars());
                            *line = Cow::Owned(chars.into_iter().collect());
                        }
                    }
                }
            }
            let files = [SourceFile {
                name: file.name.clone(),
                text: lines.join("\n"),
            }];
            let outcome = panic::catch_unwind(|| {
                if let Ok(catalogue) = read(&files) {
                    assert!(catalogue
                        .hosts
                        .iter()
                        .all(|host| !host.source_id.is_empty()));
                }
            });
            assert!(
                outcome.is_ok(),
                "panic on input #{iteration}: {:?}",
                files[0].text
            );
        }
    }
}
