//! The `putty` reader (docs/import-formats.md, "PuTTY and KiTTY"): a regedit export of
//! `...\SimonTatham\PuTTY\Sessions` (or KiTTY's `...\9bis.com\KiTTY\Sessions`), or the files
//! of `~/.putty/sessions/` (one `Key=Value` file per session, named by the escaped session
//! name). Session names are `%XX`-escaped (decoded here); `HostName` may carry `user@`;
//! `Protocol` other than `ssh` is skipped; `PortForwardings` and `Environment` are PuTTY's
//! `key=value,...` lists with `\` escapes; `ProxyMethod` 6, 7 and 8 are an SSH jump, through
//! a saved session when `ProxyHost` names one (compared case-insensitively).
//!
//! Invariants: pure; `Unreadable` only for a file that is neither a regedit export nor a
//! session file; `Default Settings` is PuTTY's template, not a host, and is left out; the
//! source id is the decoded session name; no secret's value reaches `unmapped` or a reason.

use std::collections::HashMap;

use crate::import::ini::{percent_decode, Folders};
use crate::import::reg;
use crate::import::source::{
    Catalogue, Jump, SourceAuth, SourceFile, SourceHost, SourceSecret, Unreadable,
};
use crate::vault::Secret;

/// A saved session: its decoded name and its values as text, later values replacing
/// earlier ones (a regedit export may list a key twice).
struct Session {
    name: String,
    values: Vec<(String, String)>,
}

impl Session {
    /// A value, `None` when absent or empty.
    fn get(&self, key: &str) -> Option<&str> {
        crate::import::value(&self.values, key)
    }

    /// A numeric value other than 0 (PuTTY's booleans and intervals).
    fn on(&self, key: &str) -> bool {
        self.get(key).is_some_and(|value| value.trim() != "0")
    }
}

pub fn read(files: &[SourceFile]) -> Result<Catalogue, Unreadable> {
    let mut sessions = Sessions::default();
    for (index, file) in files.iter().enumerate() {
        if reg::is_export(&file.text) {
            let export = reg::parse(&file.text).map_err(|reason| Unreadable {
                file: index,
                reason: reason.into(),
            })?;
            for key in export.keys {
                let Some(escaped) = session_key_name(&key.path) else {
                    continue;
                };
                let values = key
                    .values
                    .iter()
                    .filter_map(|(name, value)| Some((name.clone(), value.as_text()?)))
                    .collect();
                sessions.merge(percent_decode(escaped), values);
            }
        } else {
            let values = session_file(&file.text).ok_or_else(|| Unreadable {
                file: index,
                reason: "neither a regedit export nor a PuTTY session file (Key=Value lines)"
                    .into(),
            })?;
            let escaped = file.name.rsplit(['/', '\\']).next().unwrap_or("");
            sessions.merge(percent_decode(escaped), values);
        }
    }
    let mut catalogue = Catalogue::default();
    let mut folders = Folders::default();
    for session in &sessions.list {
        if session.name == "Default Settings" || session.name.is_empty() {
            continue;
        }
        let host = host_of(session, &sessions);
        folders.add(&mut catalogue.groups, &host.group_path);
        catalogue.hosts.push(host);
    }
    Ok(catalogue)
}

/// The escaped session name of a key path `...\PuTTY\Sessions\<name>` (or KiTTY's); `None`
/// for other keys, the `Sessions` key itself and deeper subkeys.
fn session_key_name(path: &str) -> Option<&str> {
    let parts: Vec<&str> = path.split('\\').collect();
    let at = parts.windows(2).position(|pair| {
        (pair[0].eq_ignore_ascii_case("PuTTY") || pair[0].eq_ignore_ascii_case("KiTTY"))
            && pair[1].eq_ignore_ascii_case("Sessions")
    })?;
    match parts.get(at + 2..)? {
        [name] if !name.is_empty() => Some(name),
        _ => None,
    }
}

/// A Unix session file's `Key=Value` lines; `None` when a non-blank line is not one.
fn session_file(text: &str) -> Option<Vec<(String, String)>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut values = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let (key, value) = line.split_once('=')?;
        let well_formed = !key.is_empty()
            && key
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-');
        if !well_formed {
            return None;
        }
        values.push((key.to_string(), value.to_string()));
    }
    Some(values)
}

/// The sessions read so far, in the order first seen, found by name.
#[derive(Default)]
struct Sessions {
    list: Vec<Session>,
    /// ASCII-lowercased name to index in `list`.
    by_name: HashMap<String, usize>,
}

impl Sessions {
    /// Adds `values` to the session named `name` (compared case-insensitively, as registry
    /// key names are), or a new one.
    fn merge(&mut self, name: String, values: Vec<(String, String)>) {
        let folded = name.to_ascii_lowercase();
        let at = match self.by_name.get(&folded) {
            Some(at) => *at,
            None => {
                self.list.push(Session {
                    name,
                    values: Vec::new(),
                });
                self.by_name.insert(folded, self.list.len() - 1);
                self.list.len() - 1
            }
        };
        let Some(session) = self.list.get_mut(at) else {
            return;
        };
        for (key, value) in values {
            match session
                .values
                .iter_mut()
                .find(|(k, _)| k.eq_ignore_ascii_case(&key))
            {
                Some(slot) => slot.1 = value,
                None => session.values.push((key, value)),
            }
        }
    }

    /// The name of the saved session `name` designates (case-insensitively; names that
    /// differ only by case were merged when read).
    fn named(&self, name: &str) -> Option<&str> {
        let at = self.by_name.get(&name.to_ascii_lowercase())?;
        self.list.get(*at).map(|session| session.name.as_str())
    }
}

/// The host `session` becomes; `sessions` are all of them, for jump references.
fn host_of(session: &Session, sessions: &Sessions) -> SourceHost {
    let mut host = SourceHost {
        source_id: session.name.clone(),
        name: session.name.clone(),
        ..SourceHost::default()
    };
    if let Some(folder) = session.get("Folder").filter(|f| *f != "Default") {
        host.group_path = vec![folder.to_string()];
    }
    let protocol = session.get("Protocol").unwrap_or("ssh");
    if !protocol.eq_ignore_ascii_case("ssh") {
        let shown: String = protocol.chars().take(16).collect();
        host.skipped = Some(format!("protocol {shown} is not SSH"));
        return host;
    }
    let (user, hostname) = match session.get("HostName").map(str::trim) {
        Some(text) => match text.rsplit_once('@') {
            Some((user, hostname)) => (Some(user).filter(|u| !u.is_empty()), hostname),
            None => (None, text),
        },
        None => (None, ""),
    };
    if hostname.is_empty() {
        host.invalid = Some("hostname: is required".into());
        return host;
    }
    host.hostname = hostname.to_string();
    host.username = user.or(session.get("UserName")).map(str::to_string);
    match session
        .get("PortNumber")
        .map(|port| port.trim().parse::<u16>())
    {
        None => {}
        Some(Ok(port)) if port > 0 => host.port = Some(port),
        Some(_) => host.invalid = Some("port: must be a number from 1 to 65535".into()),
    }
    if let Some(path) = session.get("PublicKeyFile") {
        host.auth = SourceAuth::Key {
            path: path.to_string(),
            passphrase: None,
        };
    }
    host.certificate_file = session.get("DetachedCertificate").map(str::to_string);
    host.remote_command = session.get("RemoteCommand").map(str::to_string);
    read_forwards(session, &mut host);
    for (name, value) in list(session.get("Environment").unwrap_or("")) {
        if !name.is_empty() {
            host.environment.push((name, value));
        }
    }
    read_proxy(session, sessions, &mut host);
    read_unmapped(session, &mut host);
    host
}

/// PuTTY's stored list `key=value,key=value` (`\` escapes `=`, `,` and `\`; an item
/// without `=` has an empty value; a tab separates key and value in old exports).
fn list(text: &str) -> Vec<(String, String)> {
    let mut items = Vec::new();
    let mut chars = text.chars();
    let mut key = String::new();
    let mut value: Option<String> = None;
    loop {
        let ch = chars.next();
        match ch {
            None | Some(',') => {
                let done = std::mem::take(&mut key);
                let value = value.take().unwrap_or_default();
                if !done.is_empty() || !value.is_empty() {
                    items.push(split_tab(done, value));
                }
                if ch.is_none() {
                    return items;
                }
            }
            Some('=') if value.is_none() => value = Some(String::new()),
            Some(other) => {
                let other = if other == '\\' {
                    chars.next().unwrap_or('\\')
                } else {
                    other
                };
                match value.as_mut() {
                    Some(value) => value.push(other),
                    None => key.push(other),
                }
            }
        }
    }
}

/// An item read as a key only, holding a tab: the old `NAME\tvalue` form.
fn split_tab(key: String, value: String) -> (String, String) {
    if value.is_empty() {
        if let Some((name, rest)) = key.split_once('\t') {
            return (name.to_string(), rest.to_string());
        }
    }
    (key, value)
}

/// `PortForwardings` as OpenSSH directives: `[4|6]L[bind:]port=host:port`, `R...`,
/// `D[bind:]port`.
fn read_forwards(session: &Session, host: &mut SourceHost) {
    for (key, target) in list(session.get("PortForwardings").unwrap_or("")) {
        let (family, rest) = match key.strip_prefix(['4', '6']) {
            Some(rest) => (key.get(..1), rest),
            None => (None, key.as_str()),
        };
        let mut chars = rest.chars();
        let kind = chars.next();
        let listen = chars.as_str();
        let directive = match kind {
            _ if listen.is_empty() => None,
            Some('L') if !target.is_empty() => Some(format!("LocalForward {listen} {target}")),
            Some('R') if !target.is_empty() => Some(format!("RemoteForward {listen} {target}")),
            Some('D') => Some(format!("DynamicForward {listen}")),
            _ => None,
        };
        match directive {
            Some(directive) => {
                host.forwards.push(directive);
                if let Some(family) = family {
                    host.unmapped.push(format!(
                        "PortForwardings: the IPv{family}-only choice of {rest} is not imported"
                    ));
                }
            }
            None => {
                let shown: String = key.chars().take(32).collect();
                host.unmapped.push(format!(
                    "PortForwardings: the entry {shown} is not understood"
                ));
            }
        }
    }
}

/// `ProxyMethod`: 6, 7, 8 an SSH jump (a saved session when `ProxyHost` names one, else an
/// address); 1 to 5 a proxy this service has no place for.
fn read_proxy(session: &Session, sessions: &Sessions, host: &mut SourceHost) {
    let method = session.get("ProxyMethod").unwrap_or("0").trim();
    let proxy = session.get("ProxyHost").unwrap_or("").trim();
    let port = session.get("ProxyPort").unwrap_or("").trim();
    let kind = match method {
        "0" => return,
        "6" | "7" | "8" => None,
        "1" => Some("SOCKS 4 proxy"),
        "2" => Some("SOCKS 5 proxy"),
        "3" => Some("HTTP proxy"),
        "4" => Some("Telnet proxy"),
        "5" => Some("local proxy command"),
        _ => Some("proxy of an unknown method"),
    };
    if let Some(kind) = kind {
        let at = if proxy.is_empty() || method == "5" {
            String::new()
        } else {
            format!(" {proxy}:{port}")
        };
        host.unmapped
            .push(format!("ProxyMethod: {kind}{at} is not imported"));
        return;
    }
    if proxy.is_empty() {
        host.unmapped
            .push("ProxyMethod: an SSH jump without a ProxyHost is not imported".into());
        return;
    }
    if let Some(saved) = sessions.named(proxy) {
        host.jumps.push(Jump::Session(saved.to_string()));
        return;
    }
    let (user, hostname) = match proxy.rsplit_once('@') {
        Some((user, hostname)) => (Some(user).filter(|u| !u.is_empty()), hostname),
        None => (None, proxy),
    };
    let username = session.get("ProxyUsername").or(user).map(str::to_string);
    let password = session.get("ProxyPassword").map(|password| {
        Box::new(SourceSecret::Plain(Secret::new(
            password.as_bytes().to_vec(),
        )))
    });
    host.jumps.push(Jump::Address {
        hostname: hostname.to_string(),
        port: port.parse::<u16>().ok().filter(|port| *port > 0),
        username,
        password,
    });
}

/// Choices that change the connection and have no place here (only when set).
fn read_unmapped(session: &Session, host: &mut SourceHost) {
    const FLAGS: [(&str, &str); 9] = [
        ("AgentFwd", "agent forwarding is not imported"),
        ("X11Forward", "X11 forwarding is not imported"),
        ("Compression", "compression is not imported"),
        ("GssapiFwd", "GSSAPI credential delegation is not imported"),
        ("TCPKeepalives", "TCP keepalives are not imported"),
        ("SshNoShell", "not starting a shell is not imported"),
        (
            "LocalPortAcceptAll",
            "local forwards accepting other hosts is not imported",
        ),
        (
            "RemotePortAcceptAll",
            "remote forwards accepting other hosts is not imported",
        ),
        (
            "UserNameFromEnvironment",
            "using the local user name is not imported",
        ),
    ];
    for (key, why) in FLAGS {
        if session.on(key) {
            host.unmapped.push(format!("{key}: {why}"));
        }
    }
    for key in ["PingIntervalSecs", "PingInterval"] {
        if session.on(key) {
            host.unmapped
                .push(format!("{key}: keepalives are not imported"));
            break;
        }
    }
    if session
        .get("TryAgent")
        .is_some_and(|value| value.trim() == "0")
    {
        host.unmapped
            .push("TryAgent: not trying the SSH agent is not imported".into());
    }
    if session.get("Password").is_some() {
        host.unmapped
            .push("Password: KiTTY's saved password is not decoded".into());
    }
    if session.get("Autocommand").is_some() {
        host.unmapped
            .push("Autocommand: KiTTY's automatic command is not imported".into());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::import::reveal::Revealer;

    fn bytes(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/tests/samples/import/putty/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(path).unwrap()
    }

    /// `sessions.reg` as the lead's decoder hands it over: UTF-16LE, the mark dropped.
    pub(super) fn utf16_export() -> SourceFile {
        let raw = bytes("sessions.reg");
        let units: Vec<u16> = raw[2..]
            .chunks_exact(2)
            .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
            .collect();
        SourceFile {
            name: "sessions.reg".into(),
            text: String::from_utf16(&units).unwrap(),
        }
    }

    fn unix_files() -> Vec<SourceFile> {
        [
            "bastion",
            "web%20server",
            "db%20%5C%20prod",
            "Caf%C3%A9%20%2A",
            "Default%20Settings",
        ]
        .iter()
        .map(|name| SourceFile {
            name: format!("sessions/{name}"),
            text: String::from_utf8(bytes(&format!("unix/{name}"))).unwrap(),
        })
        .collect()
    }

    fn host<'a>(catalogue: &'a Catalogue, source_id: &str) -> &'a SourceHost {
        catalogue
            .hosts
            .iter()
            .find(|host| host.source_id == source_id)
            .unwrap_or_else(|| panic!("no host {source_id}"))
    }

    #[test]
    fn putty_reg_sessions_have_decoded_names_and_default_settings_is_left_out() {
        let catalogue = read(&[utf16_export()]).unwrap();
        let ids: Vec<&str> = catalogue
            .hosts
            .iter()
            .map(|h| h.source_id.as_str())
            .collect();
        assert_eq!(
            ids,
            [
                "bastion",
                "web server",
                "db \\ prod",
                "router",
                "serial console",
                "socks via",
                "Café *",
                "empty host",
                ".dotted",
            ]
        );
        assert!(catalogue.groups.is_empty(), "PuTTY has no folders");
        assert_eq!(host(&catalogue, "Café *").username.as_deref(), Some("josé"));
    }

    #[test]
    fn putty_hostname_user_at_host_wins_over_username_and_port_is_a_dword() {
        let catalogue = read(&[utf16_export()]).unwrap();
        let web = host(&catalogue, "web server");
        assert_eq!(web.hostname, "web.example.com");
        assert_eq!(web.username.as_deref(), Some("deploy"));
        assert_eq!(web.port, Some(2222));
        let bastion = host(&catalogue, "bastion");
        assert_eq!(
            (bastion.username.as_deref(), bastion.port),
            (Some("ops"), Some(22))
        );
        assert!(
            matches!(&bastion.auth, SourceAuth::Key { path, .. } if path == "C:\\Users\\me\\.ssh\\ops.ppk")
        );
        assert_eq!(
            bastion.unmapped,
            ["AgentFwd: agent forwarding is not imported"]
        );
    }

    #[test]
    fn putty_forwards_environment_command_and_certificate_are_mapped() {
        let catalogue = read(&[utf16_export()]).unwrap();
        let web = host(&catalogue, "web server");
        assert_eq!(
            web.forwards,
            [
                "LocalForward 8080 localhost:80",
                "RemoteForward 2222 localhost:22",
                "DynamicForward 1080",
                "LocalForward 127.0.0.1:9000 db.internal:5432",
            ]
        );
        let env: Vec<(&str, &str)> = web
            .environment
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            env,
            [("LANG", "en_US.UTF-8"), ("EDITOR", "vim"), ("EQ", "a=b,c")]
        );
        assert_eq!(web.remote_command.as_deref(), Some("tmux new -A -s main"));
        assert_eq!(
            web.certificate_file.as_deref(),
            Some("C:\\Users\\me\\.ssh\\web-cert.pub")
        );
        assert_eq!(
            web.unmapped,
            [
                "PortForwardings: the IPv4-only choice of L127.0.0.1:9000 is not imported",
                "X11Forward: X11 forwarding is not imported",
                "Compression: compression is not imported",
            ]
        );
        let dotted = host(&catalogue, ".dotted");
        assert_eq!(
            dotted.remote_command.as_deref(),
            Some("echo \"quoted\" C:\\tmp")
        );
        assert_eq!(
            dotted.unmapped,
            ["PingIntervalSecs: keepalives are not imported"]
        );
    }

    #[test]
    fn putty_proxy_host_naming_a_saved_session_is_that_session_else_an_address() {
        let catalogue = read(&[utf16_export()]).unwrap();
        let web = host(&catalogue, "web server");
        assert!(matches!(&web.jumps[..], [Jump::Session(id)] if id == "bastion"));
        let db = host(&catalogue, "db \\ prod");
        let (hostname, port, username, password) = crate::import::only_address_jump(db);
        assert_eq!(
            (hostname, port, username),
            ("jump.example.com", Some(2022), Some("jumper"))
        );
        let password = password.unwrap();
        assert!(matches!(password, SourceSecret::Plain(_)));
        let opened = Revealer::new(None, None).reveal(password).unwrap();
        assert_eq!(opened.expose(), b"Jump-Secret-1");
        assert!(
            !format!("{db:?}").contains("Jump-Secret-1"),
            "Debug never shows it"
        );
        let socks = host(&catalogue, "socks via");
        assert!(socks.jumps.is_empty());
        assert_eq!(
            socks.unmapped,
            ["ProxyMethod: SOCKS 5 proxy socks.example.com:1080 is not imported"]
        );
    }

    #[test]
    fn putty_non_ssh_protocols_are_skipped_and_a_missing_host_is_invalid() {
        let catalogue = read(&[utf16_export()]).unwrap();
        assert_eq!(
            host(&catalogue, "router").skipped.as_deref(),
            Some("protocol telnet is not SSH")
        );
        assert_eq!(
            host(&catalogue, "serial console").skipped.as_deref(),
            Some("protocol serial is not SSH")
        );
        assert_eq!(
            host(&catalogue, "empty host").invalid.as_deref(),
            Some("hostname: is required")
        );
        assert_eq!(host(&catalogue, "bastion").skipped, None);
    }

    #[test]
    fn putty_regedit4_in_windows_1252_names_decode_the_ansi_escape() {
        let raw = bytes("regedit4.reg");
        let text = encoding_rs::WINDOWS_1252
            .decode_without_bom_handling(&raw)
            .0
            .into_owned();
        let catalogue = read(&[SourceFile {
            name: "old.reg".into(),
            text,
        }])
        .unwrap();
        let cafe = host(&catalogue, "Café *");
        assert_eq!(cafe.username.as_deref(), Some("josé"));
        assert_eq!(catalogue.hosts.len(), 9);
    }

    #[test]
    fn putty_unix_session_files_are_named_by_their_escaped_file_name() {
        let catalogue = read(&unix_files()).unwrap();
        let ids: Vec<&str> = catalogue
            .hosts
            .iter()
            .map(|h| h.source_id.as_str())
            .collect();
        assert_eq!(ids, ["bastion", "web server", "db \\ prod", "Café *"]);
        let web = host(&catalogue, "web server");
        assert!(matches!(&web.jumps[..], [Jump::Session(id)] if id == "bastion"));
        assert_eq!(web.port, Some(2222));
        assert_eq!(web.forwards.len(), 4);
    }

    #[test]
    fn putty_proxy_session_match_is_case_insensitive_and_names_differing_by_case_merge() {
        let file = |name: &str, text: &str| SourceFile {
            name: name.into(),
            text: text.into(),
        };
        let catalogue = read(&[
            file("Jump", "HostName=upper\n"),
            file("jump", "HostName=lower\n"),
            file("a", "HostName=a\nProxyMethod=6\nProxyHost=JUMP\n"),
        ])
        .unwrap();
        // Two names differing by case merge (the registry compares key names so).
        assert_eq!(catalogue.hosts.len(), 2);
        assert!(matches!(&host(&catalogue, "a").jumps[..], [Jump::Session(id)] if id == "Jump"));
        let other = read(&[file(
            "a",
            "HostName=a\nProxyMethod=7\nProxyHost=u@jump.example.com\nProxyPort=22\n",
        )])
        .unwrap();
        assert!(matches!(
            &other.hosts[0].jumps[..],
            [Jump::Address { hostname, username: Some(user), port: Some(22), password: None }]
                if hostname == "jump.example.com" && user == "u"
        ));
    }

    #[test]
    fn putty_port_edges() {
        let port = |value: &str| {
            let text = format!("HostName=h\nPortNumber={value}\n");
            let catalogue = read(&[SourceFile {
                name: "s".into(),
                text,
            }])
            .unwrap();
            let host = catalogue.hosts.into_iter().next().unwrap();
            (host.port, host.invalid.is_some())
        };
        assert_eq!(port("1"), (Some(1), false));
        assert_eq!(port("65535"), (Some(65535), false));
        assert_eq!(port("0"), (None, true));
        assert_eq!(port("65536"), (None, true));
    }

    #[test]
    fn putty_list_reads_escapes_valueless_items_and_old_tab_form() {
        let items = list("A=1,B,C=x\\,y\\=z\\\\,,OLD\tv");
        let items: Vec<(&str, &str)> = items
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            items,
            [("A", "1"), ("B", ""), ("C", "x,y=z\\"), ("OLD", "v")]
        );
        assert!(list("").is_empty());
        assert_eq!(
            list("\\").len(),
            1,
            "a trailing backslash is kept, no panic"
        );
    }

    #[test]
    fn putty_kitty_folder_is_one_level_and_its_password_is_unmapped() {
        let text = "Windows Registry Editor Version 5.00\r\n\r\n\
            [HKEY_CURRENT_USER\\Software\\9bis.com\\KiTTY\\Sessions\\k1]\r\n\
            \"HostName\"=\"k.example.com\"\r\n\"Folder\"=\"Prod\"\r\n\"Password\"=\"0123abcd\"\r\n\
            [HKEY_CURRENT_USER\\Software\\9bis.com\\KiTTY\\Sessions\\k2]\r\n\
            \"HostName\"=\"k2.example.com\"\r\n\"Folder\"=\"Default\"\r\n";
        let catalogue = read(&[SourceFile {
            name: "kitty.reg".into(),
            text: text.into(),
        }])
        .unwrap();
        assert_eq!(catalogue.hosts[0].group_path, ["Prod"]);
        assert_eq!(
            catalogue.hosts[0].unmapped,
            ["Password: KiTTY's saved password is not decoded"]
        );
        assert!(
            catalogue.hosts[1].group_path.is_empty(),
            "Default is no folder"
        );
        assert_eq!(catalogue.groups.len(), 1);
    }

    #[test]
    fn putty_refuses_a_file_of_another_format_and_reads_a_reg_of_other_keys_as_empty() {
        let file = |text: &str| SourceFile {
            name: "f".into(),
            text: text.into(),
        };
        let err = read(&[file("HostName=a\n"), file("[Bookmarks]\nSubRep=\n")]).unwrap_err();
        assert_eq!(err.file, 1);
        assert!(read(&[file("just some words")]).is_err());
        let empty = read(&[file(
            "REGEDIT4\n\n[HKEY_CURRENT_USER\\Software\\Other]\n\"a\"=\"b\"\n",
        )])
        .unwrap();
        assert!(empty.hosts.is_empty());
    }

    /// Fuzz: the reader never panics on mutated exports and session files, and every
    /// host it returns has a source id.
    #[test]
    fn putty_read_never_panics_on_seeded_random_input() {
        let (iterations, seed) = crate::fuzz::settings("putty reader", 0x9077_7001);
        let mut rng = crate::fuzz::Rng::new(seed);
        let mut samples = vec![utf16_export().text];
        samples.extend(unix_files().into_iter().map(|file| file.text));
        let tokens = [
            "[",
            "]",
            "\\",
            "\"",
            "=",
            "@=",
            "dword:",
            "hex:",
            "hex(2):",
            "\\\r\n",
            ",",
            "%",
            "%2",
            "%E9",
            "@",
            "\t",
            "L",
            "R",
            "D",
            "4L",
            "6R",
            ":",
            "=-",
            "[-",
            "REGEDIT4\n",
            "\n",
        ];
        for iteration in 0..iterations {
            let text = crate::import::ini::fuzzing::mutate(&mut rng, &samples, &tokens);
            let name = crate::import::ini::fuzzing::mutate(&mut rng, &["a%2".to_string()], &tokens);
            let outcome = std::panic::catch_unwind(|| {
                if let Ok(catalogue) = read(&[SourceFile {
                    name,
                    text: text.clone(),
                }]) {
                    assert!(catalogue
                        .hosts
                        .iter()
                        .all(|host| !host.source_id.is_empty()));
                }
            });
            assert!(outcome.is_ok(), "panic on input #{iteration}: {text:?}");
        }
    }
}
