//! The `mobaxterm` reader (docs/import-formats.md, "MobaXterm"): a `.mxtsessions` export or
//! the portable edition's `MobaXterm.ini`. `[Bookmarks]` and `[Bookmarks_N]` sections each
//! hold one folder (`SubRep=`, backslash-nested) and its sessions, one per line:
//! `Name= #<icon>#<type>%<field 1>%<field 2>%...#<terminal settings>#<start mode>#<comment>#..`.
//! Type 0 is SSH and 7 SFTP (both become hosts); every other type is skipped with its name.
//! SSH field positions (after the type): 1 host, 2 port, 3 user, 5 X11, 7 command at login,
//! 8/9/10 the SSH gateways' hosts, ports and users (`__PIPE__` between gateways), 14 the
//! private key, 15 the gateways' keys, 19 to 22 a proxy, 26 a local proxy command, 34 agent
//! forwarding. A user written `[Name]` is a stored credential: an identity `cred:Name`.
//!
//! The installed edition's regedit export of `HKCU\Software\Mobatek\MobaXterm` is read as
//! the same sections (`C` is `[Credentials]`, `P` is `[Passwords]`).
//!
//! Invariants: pure; `Unreadable` only for a file without any `[Bookmarks...]` section;
//! fields are split before MobaXterm's `__NAME__` escapes are decoded; folder depth is
//! capped at `MAX_DEPTH`; no password is ever read (MobaXterm binds them to the Windows user).

use std::collections::HashSet;

use crate::import::ini::{self, Folders, Ini, Section};
use crate::import::reg;
use crate::import::source::{
    Catalogue, Jump, SourceAuth, SourceFile, SourceHost, SourceIdentity, SourceSecret, Unreadable,
};

/// Folder levels a session may sit under.
pub const MAX_DEPTH: usize = 64;

const ON: &str = "-1";
const PASSWORDS_NOTE: &str = "Password: MobaXterm saved passwords are bound to the Windows user";
/// Why such a password is `missing` (docs/import-formats.md, MobaXterm).
const PASSWORDS_REASON: &str =
    "MobaXterm keeps it bound to the Windows user; it cannot be opened here";

/// What the ini's other sections say about the sessions.
#[derive(Default)]
struct Context {
    /// `[Credentials]`: name, user name, whether a password is saved.
    credentials: Vec<(String, String, bool)>,
    /// `[Passwords]` entry names, `user@host` (any `proto22:` prefix dropped), ASCII
    /// lowercase.
    passwords: HashSet<String>,
}

pub fn read(files: &[SourceFile]) -> Result<Catalogue, Unreadable> {
    let mut catalogue = Catalogue::default();
    let mut folders = Folders::default();
    for (index, file) in files.iter().enumerate() {
        let ini = if reg::is_export(&file.text) {
            from_registry(&file.text)
        } else {
            ini::parse(&file.text)
        };
        if !ini
            .sections
            .iter()
            .any(|section| is_bookmarks(&section.name))
        {
            return Err(Unreadable {
                file: index,
                reason: "not a MobaXterm session file (no [Bookmarks] section)".into(),
            });
        }
        let context = context_of(&ini);
        for section in ini.sections.iter().filter(|s| is_bookmarks(&s.name)) {
            let folder: Vec<String> = section
                .get("SubRep")
                .unwrap_or("")
                .split('\\')
                .filter(|part| !part.is_empty())
                .map(unescape)
                .collect();
            for (name, value) in &section.entries {
                // A line without a name (`=...`) names nothing to report: left out.
                let bookkeeping =
                    name.eq_ignore_ascii_case("SubRep") || name.eq_ignore_ascii_case("ImgNum");
                if bookkeeping || name.is_empty() {
                    continue;
                }
                let host = host_of(name, value, &folder, &context, &mut catalogue.identities);
                folders.add(&mut catalogue.groups, &host.group_path);
                catalogue.hosts.push(host);
            }
        }
        add_unused_credentials(&context, &mut catalogue.identities);
    }
    Ok(catalogue)
}

/// The installed edition's registry export (`HKCU\Software\Mobatek\MobaXterm`) as the
/// portable edition's sections: each key's last name is a section (`C` holds the
/// credentials, `P` the passwords), its values the entries.
fn from_registry(text: &str) -> Ini {
    let mut ini = Ini::default();
    let Ok(export) = reg::parse(text) else {
        return ini;
    };
    for key in export.keys {
        let Some(at) = key.path.find("\\Mobatek\\MobaXterm\\") else {
            continue;
        };
        let name = key
            .path
            .get(at..)
            .and_then(|rest| rest.rsplit('\\').next())
            .unwrap_or("");
        let name = match name {
            "C" => "Credentials",
            "P" => "Passwords",
            other => other,
        };
        let entries = key
            .values
            .iter()
            .filter_map(|(value_name, value)| Some((value_name.clone(), value.as_text()?)))
            .collect();
        ini.sections.push(Section {
            name: name.to_string(),
            entries,
        });
    }
    ini
}

/// `Bookmarks` or `Bookmarks_<digits>`.
fn is_bookmarks(name: &str) -> bool {
    let Some(head) = name
        .get(..9)
        .filter(|head| head.eq_ignore_ascii_case("Bookmarks"))
    else {
        return false;
    };
    match name
        .get(head.len()..)
        .and_then(|rest| rest.strip_prefix('_'))
    {
        None => name.len() == head.len(),
        Some(number) => !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()),
    }
}

fn context_of(ini: &Ini) -> Context {
    let mut context = Context::default();
    if let Some(section) = ini.section("Credentials") {
        for (name, value) in &section.entries {
            let (user, password) = value.split_once(':').unwrap_or((value, ""));
            context
                .credentials
                .push((name.clone(), user.to_string(), !password.is_empty()));
        }
    }
    if let Some(section) = ini.section("Passwords") {
        for (name, _) in &section.entries {
            let bare = match name.split_once(':') {
                Some((_, rest)) => rest,
                None => name,
            };
            context.passwords.insert(bare.to_ascii_lowercase());
        }
    }
    context
}

/// MobaXterm's escapes of characters that mean something in its lines.
pub fn unescape(text: &str) -> String {
    const ESCAPES: [(&str, &str); 8] = [
        ("__PTVIRG__", ";"),
        ("__DBLQUO__", "\""),
        ("__QUOTE__", "'"),
        ("__PIPE__", "|"),
        ("__DIEZE__", "#"),
        ("__PERCENT__", "%"),
        ("__EQUAL__", "="),
        ("__DBLDOT__", ":"),
    ];
    let mut out = text.to_string();
    if out.contains("__") {
        for (token, ch) in ESCAPES {
            out = out.replace(token, ch);
        }
    }
    out
}

/// The names of the session types that are not SSH.
fn type_name(kind: &str) -> String {
    let name = match kind {
        "1" => "Telnet",
        "2" => "Rsh",
        "3" => "XDMCP",
        "4" => "RDP",
        "5" => "VNC",
        "6" => "FTP",
        "8" => "Serial",
        "9" => "File",
        "10" => "Shell",
        "11" => "Browser",
        "12" => "Mosh",
        "13" => "S3",
        "14" => "WSL",
        other => return format!("type {}", other.chars().take(8).collect::<String>()),
    };
    name.to_string()
}

fn host_of(
    name: &str,
    value: &str,
    folder: &[String],
    context: &Context,
    identities: &mut Vec<SourceIdentity>,
) -> SourceHost {
    let name = unescape(name);
    let source_id = match folder.is_empty() {
        true => name.clone(),
        false => format!("{}/{name}", folder.join("/")),
    };
    let parts: Vec<&str> = value.split('#').collect();
    let mut host = SourceHost {
        source_id,
        name,
        group_path: folder.iter().take(MAX_DEPTH).cloned().collect(),
        notes: parts
            .get(5)
            .map_or(String::new(), |note| unescape(note.trim())),
        ..SourceHost::default()
    };
    if folder.len() > MAX_DEPTH {
        host.invalid = Some(format!("group_path: deeper than {MAX_DEPTH} folders"));
        return host;
    }
    let Some(settings) = parts.get(2) else {
        host.invalid = Some("session: not a MobaXterm session line".into());
        return host;
    };
    let fields: Vec<&str> = settings.split('%').collect();
    let (key_at, ssh) = match field(&fields, 0) {
        "0" => (14, true),
        "7" => (9, false),
        other => {
            host.skipped = Some(format!("protocol {} is not SSH", type_name(other)));
            return host;
        }
    };
    host.hostname = unescape(field(&fields, 1));
    if host.hostname.is_empty() {
        host.invalid = Some("hostname: is required".into());
        return host;
    }
    match field(&fields, 2) {
        "" => {}
        port => match port.parse::<u16>() {
            Ok(port) if port > 0 => host.port = Some(port),
            _ => host.invalid = Some("port: must be a number from 1 to 65535".into()),
        },
    }
    read_user(&unescape(field(&fields, 3)), context, &mut host, identities);
    if !field(&fields, key_at).is_empty() {
        host.auth = SourceAuth::Key {
            path: unescape(field(&fields, key_at)),
            passphrase: None,
        };
    }
    if ssh {
        read_ssh(&fields, &mut host);
    } else {
        read_sftp(&fields, &mut host);
    }
    host
}

/// Field 3: a user name, or `[Name]` naming a stored credential.
fn read_user(
    user: &str,
    context: &Context,
    host: &mut SourceHost,
    identities: &mut Vec<SourceIdentity>,
) {
    let credential = user
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .map(|inner| inner.strip_prefix(':').unwrap_or(inner));
    let user_at = match credential {
        Some(name) if !name.is_empty() => {
            let source_id = format!("cred:{name}");
            host.identity = Some(source_id.clone());
            let known = context.credentials.iter().find(|(cred, ..)| cred == name);
            if !identities
                .iter()
                .any(|identity| identity.source_id == source_id)
            {
                identities.push(identity_of(name, known));
            }
            known.map(|(_, user, _)| user.clone())
        }
        _ if user.is_empty() => None,
        _ => {
            host.username = Some(user.to_string());
            Some(user.to_string())
        }
    };
    if let Some(user) = user_at {
        let wanted = format!("{user}@{}", host.hostname).to_ascii_lowercase();
        if context.passwords.contains(&wanted) {
            host.unmapped.push(PASSWORDS_NOTE.into());
            if matches!(host.auth, SourceAuth::Unspecified) {
                let unavailable = SourceSecret::Unavailable(PASSWORDS_REASON);
                host.auth = SourceAuth::Password(Some(unavailable));
            }
        }
    }
}

fn identity_of(name: &str, known: Option<&(String, String, bool)>) -> SourceIdentity {
    let mut identity = SourceIdentity {
        source_id: format!("cred:{name}"),
        name: name.to_string(),
        ..SourceIdentity::default()
    };
    if let Some((_, user, has_password)) = known {
        identity.username = Some(user.clone()).filter(|user| !user.is_empty());
        if *has_password {
            identity.unmapped.push(PASSWORDS_NOTE.into());
            identity.password = Some(SourceSecret::Unavailable(PASSWORDS_REASON));
        }
    }
    identity
}

/// Credentials `[Credentials]` lists that no session named: identities too.
fn add_unused_credentials(context: &Context, identities: &mut Vec<SourceIdentity>) {
    for known in &context.credentials {
        let source_id = format!("cred:{}", known.0);
        if !identities
            .iter()
            .any(|identity| identity.source_id == source_id)
        {
            identities.push(identity_of(&known.0, Some(known)));
        }
    }
}

/// One `%`-separated field, trimmed (`""` past the end).
fn field<'a>(fields: &[&'a str], at: usize) -> &'a str {
    fields.get(at).map_or("", |field| field.trim())
}

/// The SSH session's fields past the user.
fn read_ssh(fields: &[&str], host: &mut SourceHost) {
    let command = unescape(field(fields, 7));
    if !command.is_empty() {
        host.remote_command = Some(command);
    }
    read_gateways(fields, host);
    if field(fields, 5) == ON {
        host.unmapped
            .push("X11 forwarding (field 5): X11 forwarding is not imported".into());
    }
    if !matches!(field(fields, 13), "" | "0") {
        host.unmapped
            .push("Remote environment (field 13): a desktop session is not imported".into());
    }
    if field(fields, 34) == ON {
        host.unmapped
            .push("Agent forwarding (field 34): agent forwarding is not imported".into());
    }
    read_proxy(fields, 19, &SSH_PROXIES, host);
    if !field(fields, 26).is_empty() {
        host.unmapped
            .push("Local proxy command (field 26): a proxy command is not imported".into());
    }
}

/// The SFTP session's fields past the user (its key is field 9, read by the caller).
fn read_sftp(fields: &[&str], host: &mut SourceHost) {
    let folder = unescape(field(fields, 6));
    if !folder.is_empty() {
        host.unmapped.push(format!(
            "Remote startup folder (field 6): the start directory {folder} is not imported"
        ));
    }
    read_proxy(fields, 10, &SFTP_PROXIES, host);
}

/// Fields 8, 9, 10 (and 15): the gateways, `__PIPE__` between them, nearest first.
fn read_gateways(fields: &[&str], host: &mut SourceHost) {
    let list = |at: usize| -> Vec<String> {
        field(fields, at)
            .split("__PIPE__")
            .map(|part| unescape(part.trim()))
            .collect()
    };
    let (hosts, ports, users) = (list(8), list(9), list(10));
    for (at, hostname) in hosts.iter().enumerate() {
        if hostname.is_empty() {
            continue;
        }
        let port = ports
            .get(at)
            .and_then(|port| port.parse::<u16>().ok())
            .filter(|p| *p > 0);
        let username = users.get(at).filter(|user| !user.is_empty()).cloned();
        host.jumps.push(Jump::Address {
            hostname: hostname.clone(),
            port,
            username,
            password: None,
        });
    }
    if !field(fields, 15).is_empty() && !host.jumps.is_empty() {
        host.unmapped.push(format!(
            "SSH gateway private key (field 15): the gateway's key file {} is not imported",
            unescape(field(fields, 15)).replace('|', ", ")
        ));
    }
}

/// The SSH session's proxy types (field 19), from 1.
const SSH_PROXIES: [&str; 5] = ["SOCKS4", "SOCKS5", "HTTP", "Telnet", "local"];
/// The SFTP session's proxy types (field 10), from 1.
const SFTP_PROXIES: [&str; 8] = [
    "SOCKS4",
    "SOCKS4 with authentication",
    "SOCKS5",
    "SOCKS5 with authentication",
    "web",
    "web (basic authentication)",
    "web (digest authentication)",
    "web (NTLM authentication)",
];

/// A proxy's type at `at` (0: none), its host and port after it.
fn read_proxy(fields: &[&str], at: usize, names: &[&str], host: &mut SourceHost) {
    let kind = field(fields, at);
    if matches!(kind, "" | "0") {
        return;
    }
    let name = kind
        .parse::<usize>()
        .ok()
        .and_then(|number| names.get(number.checked_sub(1)?))
        .map_or_else(
            || format!("type {}", kind.chars().take(4).collect::<String>()),
            |name| name.to_string(),
        );
    let proxy = unescape(field(fields, at + 1));
    let port = field(fields, at + 2);
    host.unmapped.push(format!(
        "Proxy (field {at}): a {name} proxy at {proxy}:{port} is not imported"
    ));
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample(name: &str, encoding: &'static encoding_rs::Encoding) -> SourceFile {
        let bytes = crate::import::sample_bytes(&format!("mobaxterm/{name}"));
        let (text, _, broken) = encoding.decode(&bytes);
        assert!(!broken);
        SourceFile {
            name: name.into(),
            text: text.into_owned(),
        }
    }

    fn sessions() -> Catalogue {
        read(&[sample("sessions.mxtsessions", encoding_rs::WINDOWS_1252)]).unwrap()
    }

    fn host<'a>(catalogue: &'a Catalogue, source_id: &str) -> &'a SourceHost {
        catalogue
            .hosts
            .iter()
            .find(|host| host.source_id == source_id)
            .unwrap_or_else(|| panic!("no host {source_id}"))
    }

    #[test]
    fn mobaxterm_sessions_sit_in_backslash_nested_folders() {
        let catalogue = sessions();
        assert_eq!(catalogue.hosts.len(), 14);
        let paths: Vec<String> = catalogue.groups.iter().map(|g| g.path.join("/")).collect();
        assert_eq!(
            paths,
            [
                "Prod",
                "Prod/DB",
                "Staging",
                "Staging/Web",
                "Staging/Web/Old",
                "Café"
            ]
        );
        let old = host(&catalogue, "Staging/Web/Old/old web");
        assert_eq!(old.group_path, ["Staging", "Web", "Old"]);
        assert_eq!(host(&catalogue, "bastion").group_path, Vec::<String>::new());
    }

    #[test]
    fn mobaxterm_user_is_field_3_after_host_and_port() {
        let catalogue = sessions();
        let web = host(&catalogue, "Prod/web 1");
        assert_eq!(web.hostname, "web1.example.com");
        assert_eq!(web.port, Some(2222));
        assert_eq!(web.username.as_deref(), Some("deploy"));
        assert_eq!(web.notes, "front web#1", "the comment, unescaped");
        assert_eq!(
            web.remote_command.as_deref(),
            Some("tail -f /var/log/syslog; echo done"),
            "field 7, __PTVIRG__ is ;"
        );
    }

    #[test]
    fn mobaxterm_gateways_are_a_jump_chain_in_order() {
        let catalogue = sessions();
        let web = host(&catalogue, "Prod/web 1");
        assert!(matches!(
            &web.jumps[..],
            [Jump::Address { hostname, port: Some(22), username: Some(user), password: None }]
                if hostname == "bastion.example.com" && user == "ops"
        ));
        let db = host(&catalogue, "Prod/DB/db primary");
        let hops: Vec<(String, Option<u16>, Option<String>)> = db
            .jumps
            .iter()
            .map(|jump| match jump {
                Jump::Address {
                    hostname,
                    port,
                    username,
                    ..
                } => (hostname.clone(), *port, username.clone()),
                Jump::Session(id) => (id.clone(), None, None),
            })
            .collect();
        assert_eq!(
            hops,
            [
                ("gw1.example.com".into(), Some(22), Some("alice".into())),
                ("gw2.example.com".into(), Some(2022), Some("bob".into())),
            ]
        );
        assert!(db
            .unmapped
            .iter()
            .any(|u| u.contains("_CurrentDrive_:\\keys\\gw1.ppk")));
        assert!(
            host(&catalogue, "bastion").jumps.is_empty(),
            "an empty gateway host is no jump"
        );
    }

    #[test]
    fn mobaxterm_key_path_keeps_its_placeholders() {
        let catalogue = sessions();
        let key = |id: &str| match &host(&catalogue, id).auth {
            SourceAuth::Key { path, .. } => path.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(key("bastion"), "_ProfileDir_\\.ssh\\ops.ppk");
        assert_eq!(key("Prod/DB/db primary"), "_CurrentDrive_:\\keys\\db.ppk");
        assert_eq!(
            key("Prod/DB/files"),
            "_ProfileDir_\\.ssh\\up.ppk",
            "SFTP: field 9"
        );
    }

    #[test]
    fn mobaxterm_credential_user_becomes_an_identity() {
        let catalogue = sessions();
        let db = host(&catalogue, "Prod/DB/db primary");
        assert_eq!(db.identity.as_deref(), Some("cred:dbcred"));
        assert_eq!(db.username, None);
        assert_eq!(catalogue.identities.len(), 1);
        assert_eq!(catalogue.identities[0].name, "dbcred");
        assert_eq!(
            catalogue.identities[0].username, None,
            "no [Credentials] in an export"
        );
    }

    #[test]
    fn mobaxterm_non_ssh_types_are_skipped_with_their_names_and_sftp_is_a_host() {
        let catalogue = sessions();
        let skipped = |id: &str| host(&catalogue, id).skipped.clone();
        assert_eq!(
            skipped("Prod/DB/db rdp").as_deref(),
            Some("protocol RDP is not SSH")
        );
        assert_eq!(
            skipped("Staging/Web/Old/vnc").as_deref(),
            Some("protocol VNC is not SSH")
        );
        assert_eq!(
            skipped("Staging/Web/Old/switch").as_deref(),
            Some("protocol Telnet is not SSH")
        );
        assert_eq!(
            skipped("Staging/Web/Old/console").as_deref(),
            Some("protocol Serial is not SSH")
        );
        assert_eq!(
            skipped("Staging/Web/Old/ubuntu").as_deref(),
            Some("protocol WSL is not SSH")
        );
        assert_eq!(
            skipped("local shell").as_deref(),
            Some("protocol Shell is not SSH")
        );
        let files = host(&catalogue, "Prod/DB/files");
        assert_eq!(files.skipped, None);
        assert_eq!(
            (files.hostname.as_str(), files.username.as_deref()),
            ("sftp.example.com", Some("upload"))
        );
        assert!(files.unmapped[0].starts_with("Remote startup folder (field 6):"));
        assert_eq!(
            host(&catalogue, "Café/no host").invalid.as_deref(),
            Some("hostname: is required")
        );
    }

    #[test]
    fn mobaxterm_choices_that_change_the_connection_are_unmapped() {
        let catalogue = sessions();
        assert_eq!(
            host(&catalogue, "bastion").unmapped,
            ["X11 forwarding (field 5): X11 forwarding is not imported"]
        );
        assert_eq!(
            host(&catalogue, "Prod/web 2").unmapped,
            ["Agent forwarding (field 34): agent forwarding is not imported"]
        );
        assert_eq!(
            host(&catalogue, "Staging/Web/Old/old web").unmapped,
            ["Proxy (field 19): a SOCKS5 proxy at socks.example.com:1080 is not imported"]
        );
        let cafe = host(&catalogue, "Café/café host");
        assert_eq!(cafe.username.as_deref(), Some("josé"));
        assert_eq!(cafe.unmapped.len(), 2, "{:?}", cafe.unmapped);
    }

    #[test]
    fn mobaxterm_ini_credentials_give_the_username_and_passwords_are_unmapped() {
        let catalogue = read(&[sample("MobaXterm.ini", encoding_rs::WINDOWS_1252)]).unwrap();
        assert_eq!(catalogue.hosts.len(), 7);
        let ids: Vec<(&str, Option<&str>)> = catalogue
            .identities
            .iter()
            .map(|i| (i.source_id.as_str(), i.username.as_deref()))
            .collect();
        assert_eq!(
            ids,
            [
                ("cred:dbcred", Some("postgres")),
                ("cred:spare", Some("backup"))
            ]
        );
        assert_eq!(catalogue.identities[0].unmapped, [PASSWORDS_NOTE]);
        assert!(
            catalogue.identities[1].unmapped.is_empty(),
            "no saved password"
        );
        assert!(host(&catalogue, "Prod/web 1")
            .unmapped
            .contains(&PASSWORDS_NOTE.to_string()));
        assert!(!host(&catalogue, "Prod/web 2")
            .unmapped
            .contains(&PASSWORDS_NOTE.to_string()));
    }

    #[test]
    fn mobaxterm_gbk_names_read_once_decoded() {
        let catalogue = read(&[sample("gbk.mxtsessions", encoding_rs::GBK)]).unwrap();
        let ids: Vec<&str> = catalogue
            .hosts
            .iter()
            .map(|h| h.source_id.as_str())
            .collect();
        assert_eq!(ids, ["生产/数据库/服务器一", "生产/数据库/服务器二"]);
        assert_eq!(catalogue.hosts[1].username.as_deref(), Some("管理员"));
    }

    #[test]
    fn mobaxterm_port_edges_depth_cap_and_section_names() {
        let one = |line: &str| {
            let text = format!("[Bookmarks]\nSubRep=\n{line}\n");
            read(&[SourceFile {
                name: "m".into(),
                text,
            }])
            .unwrap()
            .hosts
            .remove(0)
        };
        assert_eq!(one("a= #109#0%h%1%u").port, Some(1));
        assert_eq!(one("a= #109#0%h%65535%u").port, Some(65535));
        assert!(one("a= #109#0%h%0%u").invalid.is_some());
        assert!(one("a= #109#0%h%65536%u").invalid.is_some());
        assert_eq!(one("a= #109#0%h%%u").port, None);
        assert!(one("a=not a session").invalid.is_some());
        let deep = |levels: usize| {
            let text = format!(
                "[Bookmarks_1]\nSubRep={}\na= #109#0%h%22%u\n",
                vec!["f"; levels].join("\\")
            );
            read(&[SourceFile {
                name: "m".into(),
                text,
            }])
            .unwrap()
            .hosts
            .remove(0)
            .invalid
        };
        assert_eq!(deep(MAX_DEPTH), None);
        assert!(deep(MAX_DEPTH + 1).is_some());
        assert!(is_bookmarks("bookmarks_12") && is_bookmarks("Bookmarks"));
        assert!(
            !is_bookmarks("Bookmarks_")
                && !is_bookmarks("Bookmarks_x")
                && !is_bookmarks("Bookmark")
        );
    }

    #[test]
    fn mobaxterm_a_line_without_a_name_is_left_out() {
        let text = "[Bookmarks]\nSubRep=\n= #109#0%h%22%u\nb= #109#0%h%22%u\n";
        let catalogue = read(&[SourceFile {
            name: "m".into(),
            text: text.into(),
        }])
        .unwrap();
        let ids: Vec<&str> = catalogue
            .hosts
            .iter()
            .map(|h| h.source_id.as_str())
            .collect();
        assert_eq!(ids, ["b"]);
    }

    #[test]
    fn mobaxterm_installed_edition_registry_export_reads_like_the_ini() {
        let text = "Windows Registry Editor Version 5.00\r\n\r\n\
            [HKEY_CURRENT_USER\\Software\\Mobatek\\MobaXterm\\Bookmarks_1]\r\n\
            \"SubRep\"=\"Prod\\\\DB\"\r\n\"ImgNum\"=dword:00000029\r\n\
            \"db\"=\" #109#0%db.example.com%22%[dbcred]%%0%-1\"\r\n\
            [HKEY_CURRENT_USER\\Software\\Mobatek\\MobaXterm\\C]\r\n\
            \"dbcred\"=\"postgres:c2VjcmV0\"\r\n";
        let catalogue = read(&[SourceFile {
            name: "moba.reg".into(),
            text: text.into(),
        }])
        .unwrap();
        assert_eq!(catalogue.hosts[0].source_id, "Prod/DB/db");
        assert_eq!(
            catalogue.identities[0].username.as_deref(),
            Some("postgres")
        );
        assert_eq!(catalogue.identities[0].unmapped, [PASSWORDS_NOTE]);
    }

    #[test]
    fn mobaxterm_refuses_a_file_without_bookmarks() {
        let file = |text: &str| SourceFile {
            name: "f".into(),
            text: text.into(),
        };
        assert_eq!(read(&[file("[Misc]\nx=1\n")]).unwrap_err().file, 0);
        assert!(read(&[file("HostName=web\n")]).is_err());
        assert!(read(&[file("[Bookmarks]\nSubRep=\nImgNum=42\n")])
            .unwrap()
            .hosts
            .is_empty());
    }

    /// Fuzz: the reader never panics on mutated session files, and every host it returns
    /// has a source id.
    #[test]
    fn mobaxterm_read_never_panics_on_seeded_random_input() {
        let (iterations, seed) = crate::fuzz::settings("mobaxterm reader", 0x3067_0001);
        let mut rng = crate::fuzz::Rng::new(seed);
        let samples = vec![
            sample("sessions.mxtsessions", encoding_rs::WINDOWS_1252).text,
            sample("MobaXterm.ini", encoding_rs::WINDOWS_1252).text,
            sample("gbk.mxtsessions", encoding_rs::GBK).text,
            "Windows Registry Editor Version 5.00\r\n\r\n\
             [HKEY_CURRENT_USER\\Software\\Mobatek\\MobaXterm\\Bookmarks_1]\r\n\
             \"SubRep\"=\"A\\\\B\"\r\n\"s\"=\" #109#0%h%22%[c]%%0\"\r\n\
             [HKEY_CURRENT_USER\\Software\\Mobatek\\MobaXterm\\C]\r\n\"c\"=\"u:x\"\r\n"
                .to_string(),
        ];
        let tokens = [
            "#",
            "%",
            "%%",
            "#109#0%",
            "#91#4%",
            "#140#7%",
            "[",
            "]",
            "[Bookmarks_9]\n",
            "SubRep=",
            "\\",
            "__PIPE__",
            "__PERCENT__",
            "__",
            "[cred]",
            "[:",
            ":",
            "=",
            "-1",
            "\n",
            "中",
        ];
        for iteration in 0..iterations {
            let text = crate::import::ini::fuzzing::mutate(&mut rng, &samples, &tokens);
            let outcome = std::panic::catch_unwind(|| {
                if let Ok(catalogue) = read(&[SourceFile {
                    name: "f".into(),
                    text: text.clone(),
                }]) {
                    assert!(catalogue
                        .hosts
                        .iter()
                        .all(|host| !host.source_id.is_empty()));
                    assert!(catalogue
                        .identities
                        .iter()
                        .all(|i| i.source_id.starts_with("cred:")));
                }
            });
            assert!(outcome.is_ok(), "panic on input #{iteration}: {text:?}");
        }
    }
}
