//! The `securecrt` reader (docs/import-formats.md, "SecureCRT"): SecureCRT's XML export
//! (File > Export Settings), `<VanDyke version="3.0">` holding `<key name="Sessions">` with
//! folder keys and session keys, each session key holding its settings as
//! `<string name="...">`, `<dword name="...">` (decimal) and `<array name="...">` values, and
//! an optional top-level `<key name="Credentials">` of named username and password sets.
//!
//! Invariants: pure; a session's source id is its folder path and name joined with `/` (what
//! `Firewall Name` = `Session:<path>` names), so it is stable across exports; saved passwords
//! stay in their protected form; nesting is bounded by the XML reader's depth cap.

use std::collections::HashSet;

use crate::import::source::{
    Catalogue, Jump, SourceAuth, SourceFile, SourceGroup, SourceHost, SourceIdentity, SourceSecret,
    Unreadable,
};
use crate::import::xml::{self, Element};

/// The source-id prefix of a `Credentials` entry.
const CREDENTIAL: &str = "credential:";

pub fn read(files: &[SourceFile]) -> Result<Catalogue, Unreadable> {
    let mut catalogue = Catalogue::default();
    for (index, file) in files.iter().enumerate() {
        let unreadable = |reason: String| Unreadable {
            file: index,
            reason,
        };
        let root =
            xml::parse(&file.text).map_err(|reason| unreadable(format!("not XML: {reason}")))?;
        if root.local_name() != "VanDyke" {
            return Err(unreadable(
                "not a SecureCRT XML export (the root element is not VanDyke)".to_string(),
            ));
        }
        read_export(&root, &mut catalogue);
    }
    drop_unknown_references(&mut catalogue);
    Ok(catalogue)
}

fn read_export(root: &Element, catalogue: &mut Catalogue) {
    for key in keys(root) {
        match key.attribute("name") {
            Some("Credentials") => {
                for credential in keys(key) {
                    catalogue.identities.push(credential_of(credential));
                }
            }
            Some("Sessions") => read_sessions(key, catalogue),
            _ => {}
        }
    }
}

/// Folders and sessions, depth first in document order, parents before children.
fn read_sessions(sessions: &Element, catalogue: &mut Catalogue) {
    let mut open: Vec<(Vec<String>, std::slice::Iter<'_, Element>)> =
        vec![(Vec::new(), sessions.children.iter())];
    while let Some((path, children)) = open.last_mut() {
        let Some(key) = children.next() else {
            open.pop();
            continue;
        };
        let name = key.attribute("name").unwrap_or_default().to_string();
        if key.local_name() != "key" || name == "__FolderData__" {
            continue;
        }
        if is_session(key) {
            catalogue.hosts.push(session(path, &name, key));
        } else {
            let mut child = path.clone();
            child.push(name);
            catalogue.groups.push(SourceGroup {
                path: child.clone(),
                ..SourceGroup::default()
            });
            open.push((child, key.children.iter()));
        }
    }
}

/// A session key says `Is Session` = 1, or holds settings (a folder holds only keys).
fn is_session(key: &Element) -> bool {
    value(key, "Is Session") == Some("1")
        || key
            .children
            .iter()
            .any(|child| child.local_name() != "key" && child.attribute("name").is_some())
}

fn session(path: &[String], name: &str, key: &Element) -> SourceHost {
    let mut host = SourceHost {
        source_id: join(path, name),
        name: name.to_string(),
        group_path: path.to_vec(),
        ..SourceHost::default()
    };
    if path.is_empty() && name == "Default" {
        host.skipped = Some("the Default session is SecureCRT's template for new sessions".into());
        return host;
    }
    let protocol = value(key, "Protocol Name").unwrap_or("SSH2");
    let port_field = match protocol.to_ascii_uppercase().as_str() {
        "SSH2" => "[SSH2] Port",
        "SSH1" => {
            host.unmapped
                .push("Protocol Name: SSH1 sessions connect with SSH-2 here".to_string());
            "[SSH1] Port"
        }
        _ => {
            host.skipped = Some(format!("protocol {} is not SSH", token(protocol)));
            return host;
        }
    };
    host.hostname = value(key, "Hostname").unwrap_or_default().to_string();
    if host.hostname.is_empty() {
        host.invalid = Some("hostname: is required".to_string());
    }
    if let Some(port) = value(key, port_field) {
        match port.parse::<u16>() {
            Ok(port) if port > 0 => host.port = Some(port),
            _ => host.invalid = Some("port: must be 1 to 65535".to_string()),
        }
    }
    host.username = value(key, "Username")
        .filter(|user| !user.is_empty())
        .map(str::to_string);
    if let Some(title) = value(key, "Credential Title").filter(|title| !title.is_empty()) {
        host.identity = Some(format!("{CREDENTIAL}{title}"));
    }
    host.auth = auth(key, &mut host.unmapped);
    host.jumps.extend(firewall(key, &mut host.unmapped));
    host.remote_command = value(key, "Remote Command")
        .filter(|command| !command.is_empty())
        .map(str::to_string);
    host.notes = array(key, "Description").join("\n");
    forwards(key, &mut host);
    unmapped_settings(key, &mut host.unmapped);
    host
}

/// A private key file always makes key auth (a saved password beside it is reported);
/// else a saved password makes password auth; else nothing is said.
fn auth(key: &Element, unmapped: &mut Vec<String>) -> SourceAuth {
    let password = password(key, unmapped);
    // `Use Global Public Key` other than 0: the global identity (SecureCRT's global options,
    // not in the export) is used, and a session's own file name is stale.
    let own_key = value(key, "Use Global Public Key").is_none_or(|global| global == "0");
    let identity = value(key, "Identity Filename V2")
        .or_else(|| value(key, "Identity Filename"))
        .filter(|path| own_key && !path.is_empty());
    match (identity, password) {
        (Some(path), password) => {
            if password.is_some() {
                unmapped.push(
                    "Password V2: the session also saves a password; it logs in with its key \
                     file here, so the password is not imported"
                        .to_string(),
                );
            }
            SourceAuth::Key {
                path: key_path(path).to_string(),
                passphrase: None,
            }
        }
        (None, Some(password)) => SourceAuth::Password(Some(password)),
        (None, None) => SourceAuth::Unspecified,
    }
}

/// `Identity Filename V2` ends with a format flag after `::` (`::rawkey`): the path is
/// before it.
fn key_path(text: &str) -> &str {
    match text.rsplit_once("::") {
        Some((path, flag)) if flag.chars().all(|c| c.is_ascii_alphanumeric()) => path,
        _ => text,
    }
}

/// `Password V2` (`02:`/`03:`), else the old `Password` (`u` + hex).
fn password(key: &Element, unmapped: &mut Vec<String>) -> Option<SourceSecret> {
    if let Some(text) = value(key, "Password V2").filter(|text| !text.is_empty()) {
        if text.starts_with("02:") || text.starts_with("03:") {
            return Some(SourceSecret::SecureCrtV2(text.to_string()));
        }
        unmapped.push("Password V2: a form this import does not know".to_string());
        return None;
    }
    let text = value(key, "Password").filter(|text| !text.is_empty())?;
    if text.starts_with('u') {
        return Some(SourceSecret::SecureCrtV1(text.to_string()));
    }
    unmapped.push("Password: a form this import does not know".to_string());
    None
}

/// `Firewall Name` = `Session:<path>`: that session is the jump host; `None` is none; any
/// other name is one of SecureCRT's global firewalls (SOCKS, HTTP...), not imported.
fn firewall(key: &Element, unmapped: &mut Vec<String>) -> Option<Jump> {
    let name = value(key, "Firewall Name").filter(|name| !name.is_empty() && *name != "None")?;
    match name.strip_prefix("Session:") {
        Some(path) => {
            let parts: Vec<&str> = path
                .split(['/', '\\'])
                .filter(|part| !part.is_empty())
                .collect();
            Some(Jump::Session(parts.join("/")))
        }
        None => {
            unmapped
                .push("Firewall Name: a SecureCRT firewall (proxy) is not imported".to_string());
            None
        }
    }
}

/// Settings that change how the session works and have no place here.
fn unmapped_settings(key: &Element, unmapped: &mut Vec<String>) {
    let switches = [
        ("Forward X11", "X11 forwarding is not imported"),
        (
            "Enable Agent Forwarding",
            "agent forwarding is not imported",
        ),
        ("Compression", "compression is not imported"),
        ("Use Login Script", "logon scripts are not imported"),
        ("Use Script File", "logon script files are not imported"),
    ];
    for (field, why) in switches {
        if value(key, field).is_some_and(|value| value != "0") {
            unmapped.push(format!("{field}: {why}"));
        }
    }
}

/// `Port Forward Table V2` and `Reverse Forward Table V2` entries as OpenSSH directives.
/// An entry is `name|[listen host,]listen port|target differs (1/0)|target host|target
/// port|[application|arguments]`; a target that does not differ is the far end itself
/// (`localhost` there); a local entry whose target host starts with `socks` is dynamic.
fn forwards(key: &Element, host: &mut SourceHost) {
    for (field, remote) in [
        ("Port Forward Table V2", false),
        ("Reverse Forward Table V2", true),
    ] {
        let mut unreadable = false;
        let mut application = false;
        for line in array(key, field)
            .iter()
            .map(|line| line.trim())
            .filter(|line| !line.is_empty())
        {
            match forward(line, remote) {
                Some((directive, launches)) => {
                    host.forwards.push(directive);
                    application |= launches;
                }
                None => unreadable = true,
            }
        }
        if unreadable {
            host.unmapped.push(format!(
                "{field}: an entry this import cannot read was left out"
            ));
        }
        if application {
            host.unmapped.push(format!(
                "{field}: the application a forward launches is not imported"
            ));
        }
    }
}

/// One forward-table entry: the directive, and whether it names an application to launch.
fn forward(line: &str, remote: bool) -> Option<(String, bool)> {
    let fields: Vec<&str> = line.split('|').collect();
    let [_, listen, differs, target, target_port, rest @ ..] = fields.as_slice() else {
        return None;
    };
    let (bind, port) = match listen.rsplit_once(',') {
        Some((bind, port)) => (bind.trim(), port),
        None => ("", *listen),
    };
    let port = port.trim().parse::<u16>().ok().filter(|port| *port > 0)?;
    let listen = match bind {
        "" => port.to_string(),
        bind if bind.contains(':') => format!("[{bind}]:{port}"),
        bind => format!("{bind}:{port}"),
    };
    let launches = rest
        .first()
        .is_some_and(|application| !application.trim().is_empty());
    let target = target.trim();
    if !remote && target.starts_with("socks") {
        return Some((format!("DynamicForward {listen}"), launches));
    }
    let target_port = target_port
        .trim()
        .parse::<u16>()
        .ok()
        .filter(|port| *port > 0)?;
    let target = match (differs.trim(), target) {
        ("1", target) if !target.is_empty() => target,
        ("0", _) => "localhost",
        _ => return None,
    };
    let target = match target.contains(':') {
        true => format!("[{target}]:{target_port}"),
        false => format!("{target}:{target_port}"),
    };
    let keyword = if remote {
        "RemoteForward"
    } else {
        "LocalForward"
    };
    Some((format!("{keyword} {listen} {target}"), launches))
}

fn credential_of(key: &Element) -> SourceIdentity {
    let name = key.attribute("name").unwrap_or_default().to_string();
    let mut identity = SourceIdentity {
        source_id: format!("{CREDENTIAL}{name}"),
        username: value(key, "Username")
            .filter(|user| !user.is_empty())
            .map(str::to_string),
        ..SourceIdentity::default()
    };
    identity.password = password(key, &mut identity.unmapped);
    identity.name = name;
    identity
}

/// A jump or credential naming something the export does not hold is dropped and reported.
fn drop_unknown_references(catalogue: &mut Catalogue) {
    let sessions: HashSet<String> = catalogue
        .hosts
        .iter()
        .filter(|host| host.skipped.is_none() && host.invalid.is_none())
        .map(|host| host.source_id.clone())
        .collect();
    let credentials: HashSet<String> = catalogue
        .identities
        .iter()
        .map(|identity| identity.source_id.clone())
        .collect();
    for host in &mut catalogue.hosts {
        let before = host.jumps.len();
        host.jumps.retain(|jump| match jump {
            Jump::Session(id) => sessions.contains(id),
            Jump::Address { .. } => true,
        });
        if host.jumps.len() < before {
            host.unmapped.push(
                "Firewall Name: the session it names is not an SSH session this import can \
                 create"
                    .to_string(),
            );
        }
        if host
            .identity
            .as_ref()
            .is_some_and(|id| !credentials.contains(id))
        {
            host.identity = None;
            host.unmapped
                .push("Credential Title: no credential of that name in the export".to_string());
        }
    }
}

/// A short structural token from the file for a reason (`Telnet/SSL`).
fn token(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | ' '))
        .take(24)
        .collect()
}

fn join(path: &[String], name: &str) -> String {
    let mut parts = path.to_vec();
    parts.push(name.to_string());
    parts.join("/")
}

/// The child keys (`<key name="...">`).
fn keys(element: &Element) -> impl Iterator<Item = &Element> {
    element.children_named("key")
}

/// A `<string>` or `<dword>` setting's text, trimmed.
fn value<'a>(key: &'a Element, name: &str) -> Option<&'a str> {
    key.children
        .iter()
        .find(|child| {
            matches!(child.local_name(), "string" | "dword")
                && child.attribute("name") == Some(name)
        })
        .map(|child| child.text.trim())
}

/// An `<array>` setting's `<string>` lines.
fn array<'a>(key: &'a Element, name: &str) -> Vec<&'a str> {
    key.children
        .iter()
        .find(|child| child.local_name() == "array" && child.attribute("name") == Some(name))
        .map(|array| {
            array
                .children_named("string")
                .map(|line| line.text.as_str())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::panic;

    use super::*;

    fn sample(name: &str) -> String {
        crate::import::sample_text(&format!("securecrt/{name}"))
    }

    fn read_text(text: &str) -> Result<Catalogue, Unreadable> {
        read(&[SourceFile {
            name: "export.xml".to_string(),
            text: text.to_string(),
        }])
    }

    fn host<'a>(catalogue: &'a Catalogue, id: &str) -> &'a SourceHost {
        catalogue
            .hosts
            .iter()
            .find(|host| host.source_id == id)
            .unwrap_or_else(|| panic!("no host {id}"))
    }

    fn scheme(auth: &SourceAuth) -> &'static str {
        match auth {
            SourceAuth::Password(Some(secret)) => secret.scheme(),
            SourceAuth::Password(None) => "password",
            SourceAuth::Key { .. } => "key",
            SourceAuth::Agent => "agent",
            SourceAuth::Unspecified => "unspecified",
        }
    }

    #[test]
    fn the_sample_export_gives_its_folders_in_order_and_every_session() {
        let catalogue = read_text(&sample("sessions.xml")).unwrap();
        let groups: Vec<String> = catalogue.groups.iter().map(|g| g.path.join("/")).collect();
        assert_eq!(groups, ["Prod", "Prod/Web", "Prod/DB", "Lab"]);
        let ids: Vec<&str> = catalogue
            .hosts
            .iter()
            .map(|h| h.source_id.as_str())
            .collect();
        assert_eq!(
            ids,
            [
                "Default",
                "Prod/bastion",
                "Prod/Web/web 1",
                "Prod/Web/web 2",
                "Prod/DB/db-main",
                "Prod/DB/db-admin",
                "Lab/old-box",
                "Lab/switch",
                "Lab/console",
                "Lab/no-host",
                "Lab/compressed",
                "top & level",
            ]
        );
        let web = host(&catalogue, "Prod/Web/web 1");
        assert_eq!(web.name, "web 1");
        assert_eq!(web.group_path, ["Prod", "Web"]);
        assert_eq!((web.hostname.as_str(), web.port), ("10.0.1.11", Some(22)));
        assert_eq!(web.username.as_deref(), Some("deploy"));
        assert_eq!(web.notes, "Front web server\nbehind the bastion");
        assert_eq!(
            host(&catalogue, "top & level").group_path,
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_firewall_naming_a_session_is_a_jump_to_that_session_and_other_firewalls_are_unmapped() {
        let catalogue = read_text(&sample("sessions.xml")).unwrap();
        let web = host(&catalogue, "Prod/Web/web 2");
        assert!(matches!(&web.jumps[..], [Jump::Session(id)] if id == "Prod/bastion"));
        let db = host(&catalogue, "Prod/DB/db-main");
        assert!(db.jumps.is_empty());
        assert!(db
            .unmapped
            .iter()
            .any(|line| line.starts_with("Firewall Name:")));
        let missing = sample("sessions.xml").replace("Session:Prod/bastion", "Session:Prod\\gone");
        let catalogue = read_text(&missing).unwrap();
        let web = host(&catalogue, "Prod/Web/web 2");
        assert!(web.jumps.is_empty());
        let why = "Firewall Name: the session it names is not an SSH session this import can \
                   create";
        assert!(web.unmapped.contains(&why.to_string()));
        for target in ["Lab/switch", "Lab/no-host"] {
            let text = sample("sessions.xml").replace("Prod/bastion<", &format!("{target}<"));
            let catalogue = read_text(&text).unwrap();
            let web = host(&catalogue, "Prod/Web/web 2");
            assert!(web.jumps.is_empty(), "{target}");
            assert!(web.unmapped.contains(&why.to_string()), "{target}");
        }
    }

    #[test]
    fn saved_passwords_keep_their_protected_form_and_a_key_file_wins_over_a_password() {
        let catalogue = read_text(&sample("sessions.xml")).unwrap();
        assert_eq!(
            scheme(&host(&catalogue, "Prod/bastion").auth),
            "securecrt-v2"
        );
        assert_eq!(
            scheme(&host(&catalogue, "Prod/DB/db-main").auth),
            "securecrt-v2"
        );
        assert_eq!(
            scheme(&host(&catalogue, "Lab/old-box").auth),
            "securecrt-v1"
        );
        assert_eq!(scheme(&host(&catalogue, "top & level").auth), "unspecified");
        match &host(&catalogue, "Prod/Web/web 1").auth {
            SourceAuth::Key { path, .. } => assert_eq!(path, "C:\\Users\\ann\\.ssh\\id_ed25519"),
            other => panic!("{other:?}"),
        }
        let both = sample("sessions.xml").replace(
            "<string name=\"SSH2 Authentications V2\">publickey,password</string>",
            "<string name=\"Password V2\">02:00</string>",
        );
        let catalogue = read_text(&both).unwrap();
        let web = host(&catalogue, "Prod/Web/web 1");
        assert_eq!(scheme(&web.auth), "key");
        assert!(web
            .unmapped
            .iter()
            .any(|line| line.starts_with("Password V2:")));
    }

    #[test]
    fn a_credential_becomes_an_identity_that_sessions_naming_it_use() {
        let catalogue = read_text(&sample("sessions.xml")).unwrap();
        let [identity] = &catalogue.identities[..] else {
            panic!()
        };
        assert_eq!(identity.source_id, "credential:admin-cred");
        assert_eq!(identity.name, "admin-cred");
        assert_eq!(identity.username.as_deref(), Some("admin"));
        assert_eq!(identity.password.as_ref().unwrap().scheme(), "securecrt-v2");
        let admin = host(&catalogue, "Prod/DB/db-admin");
        assert_eq!(admin.identity.as_deref(), Some("credential:admin-cred"));
        assert_eq!(admin.username, None);
        let unknown = sample("sessions.xml").replace(">admin-cred</string>", ">other</string>");
        let admin = read_text(&unknown).unwrap();
        let admin = host(&admin, "Prod/DB/db-admin");
        assert_eq!(admin.identity, None);
        assert!(admin
            .unmapped
            .iter()
            .any(|line| line.starts_with("Credential Title:")));
    }

    #[test]
    fn non_ssh_sessions_and_the_default_template_are_skipped_and_a_hostless_one_is_invalid() {
        let catalogue = read_text(&sample("sessions.xml")).unwrap();
        let skipped = |id: &str| host(&catalogue, id).skipped.clone();
        assert_eq!(
            skipped("Lab/switch").as_deref(),
            Some("protocol Telnet is not SSH")
        );
        assert_eq!(
            skipped("Lab/console").as_deref(),
            Some("protocol Serial is not SSH")
        );
        assert!(skipped("Default").is_some());
        assert_eq!(skipped("Lab/old-box"), None);
        assert_eq!(
            host(&catalogue, "Lab/no-host").invalid.as_deref(),
            Some("hostname: is required")
        );
        assert_eq!(host(&catalogue, "Lab/compressed").port, Some(65535));
        for port in ["0", "65536", "x"] {
            let broken = sample("sessions.xml").replace(">65535<", &format!(">{port}<"));
            let catalogue = read_text(&broken).unwrap();
            assert_eq!(
                host(&catalogue, "Lab/compressed").invalid.as_deref(),
                Some("port: must be 1 to 65535")
            );
        }
    }

    #[test]
    fn settings_that_change_the_connection_are_unmapped_and_defaults_are_not() {
        let catalogue = read_text(&sample("sessions.xml")).unwrap();
        let web1 = &host(&catalogue, "Prod/Web/web 1").unmapped;
        assert_eq!(
            web1,
            &[
                "Forward X11: X11 forwarding is not imported",
                "Enable Agent Forwarding: agent forwarding is not imported",
            ]
        );
        let web2 = host(&catalogue, "Prod/Web/web 2");
        assert_eq!(web2.remote_command.as_deref(), Some("tmux new -A -s main"));
        assert_eq!(
            web2.unmapped,
            ["Port Forward Table V2: the application a forward launches is not imported"]
        );
        let compressed = &host(&catalogue, "Lab/compressed").unmapped;
        assert_eq!(
            compressed,
            &[
                "Port Forward Table V2: an entry this import cannot read was left out",
                "Compression: compression is not imported",
            ]
        );
        let admin = &host(&catalogue, "Prod/DB/db-admin").unmapped;
        assert_eq!(admin, &["Use Login Script: logon scripts are not imported"]);
        assert!(host(&catalogue, "top & level").unmapped.is_empty());
        assert!(host(&catalogue, "Prod/bastion").unmapped.is_empty());
    }

    #[test]
    fn forward_tables_become_openssh_forward_directives() {
        let catalogue = read_text(&sample("sessions.xml")).unwrap();
        assert_eq!(
            host(&catalogue, "Prod/Web/web 2").forwards,
            [
                "LocalForward 127.0.0.1:3128 webproxy.corp:3128",
                "LocalForward 5432 localhost:5432",
                "DynamicForward 1080",
                "LocalForward 127.0.0.2:3390 MSLOGIN01:3389",
                "RemoteForward 9000 localhost:22",
            ]
        );
        assert_eq!(
            forward("v6|::1,8080|1|fe80::1|80||", false),
            Some(("LocalForward [::1]:8080 [fe80::1]:80".to_string(), false))
        );
        for broken in [
            "x|0|0||22||",
            "x|65536|0||22||",
            "x|22|1||22||",
            "x|22|2|h|22||",
            "x|22|1|h|0||",
            "x|22|1|h",
            "",
        ] {
            assert_eq!(forward(broken, false), None, "{broken}");
        }
        assert_eq!(
            forward("x|22|0|socks,|0||", true),
            None,
            "no remote dynamic form"
        );
    }

    #[test]
    fn a_key_file_counts_only_when_the_session_does_not_use_the_global_key() {
        let catalogue = read_text(&sample("sessions.xml")).unwrap();
        assert!(matches!(
            host(&catalogue, "Prod/Web/web 1").auth,
            SourceAuth::Key { .. }
        ));
        // Identity Filename V2 is set but Use Global Public Key is 1 (the default).
        assert!(matches!(
            host(&catalogue, "Lab/compressed").auth,
            SourceAuth::Unspecified
        ));
    }

    #[test]
    fn a_file_that_is_not_a_securecrt_export_is_unreadable_and_an_empty_one_is_not() {
        for (text, reason) in [
            ("[Sessions]\nHostName=x", "not XML"),
            ("<mrng:Connections/>", "not a SecureCRT XML export"),
        ] {
            let error = read_text(text).unwrap_err();
            assert_eq!(error.file, 0);
            assert!(error.reason.starts_with(reason), "{}", error.reason);
        }
        let empty = read_text("<VanDyke version=\"3.0\"><key name=\"Sessions\"/></VanDyke>");
        assert!(empty.unwrap().hosts.is_empty());
        let second = read(&[
            SourceFile {
                name: "a.xml".into(),
                text: sample("passphrase.xml"),
            },
            SourceFile {
                name: "b.xml".into(),
                text: "nope".into(),
            },
        ]);
        assert_eq!(second.unwrap_err().file, 1);
    }

    /// A small export with every structure the reader knows, one element per line (the
    /// sample file is too long to mutate a million times in seconds).
    const FUZZ_EXPORT: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<VanDyke version="3.0">
<key name="Credentials">
<key name="c"><string name="Username">u</string>
<string name="Password V2">02:00</string></key>
</key>
<key name="Sessions">
<key name="Default"><string name="Protocol Name">SSH2</string></key>
<key name="F">
<key name="__FolderData__"><dword name="Is Expanded">1</dword></key>
<key name="j"><string name="Hostname">j</string>
<dword name="[SSH2] Port">22</dword>
<string name="Password">u00</string></key>
<key name="G">
<key name="s"><string name="Protocol Name">SSH2</string>
<string name="Hostname">h</string>
<string name="Firewall Name">Session:F/j</string>
<string name="Credential Title">c</string>
<string name="Identity Filename V2">k::rawkey</string>
<dword name="Forward X11">1</dword>
<array name="Port Forward Table V2"><string>x</string></array>
<array name="Description"><string>d</string></array></key>
</key>
<key name="t"><string name="Protocol Name">Telnet</string></key>
</key>
</key>
</VanDyke>"#;

    #[test]
    fn read_never_panics_on_seeded_random_input() {
        let (iterations, seed) = crate::fuzz::settings("securecrt reader", 0x5EC0_0001);
        let lines: Vec<String> = FUZZ_EXPORT.lines().map(str::to_string).collect();
        let tokens = [
            "<key name=\"x\">",
            "</key>",
            "<string name=\"Hostname\">",
            "</string>",
            "<dword name=\"[SSH2] Port\">",
            "</dword>",
            "Session:",
            "Session:Prod/bastion",
            "<array name=\"Description\">",
            "</array>",
            "__FolderData__",
            "02:",
            "u",
            "::",
            "<key name=\"Credentials\">",
            "Default",
            "&amp;",
            "\u{feff}",
        ];
        let mut rng = crate::fuzz::Rng::new(seed);
        for iteration in 0..iterations {
            let mut mutated = lines.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(mutated.len());
                match rng.below(5) {
                    0 => drop(mutated.remove(at)),
                    1 => mutated.insert(at, mutated[at].clone()),
                    2 => mutated.insert(at, rng.pick::<&str>(&tokens).to_string()),
                    3 => mutated.truncate(at),
                    _ => {
                        let line = &mut mutated[at];
                        let cut = rng.below(line.len() + 1);
                        if line.is_char_boundary(cut) {
                            line.truncate(cut);
                        }
                    }
                }
                if mutated.is_empty() {
                    break;
                }
            }
            let text = mutated.join("\n");
            let outcome = panic::catch_unwind(|| read_text(&text));
            match outcome {
                Err(_) => panic!("panic on input #{iteration}: {text:?}"),
                Ok(Ok(catalogue)) => {
                    assert!(catalogue
                        .hosts
                        .iter()
                        .all(|host| !host.source_id.is_empty() || host.name.is_empty()));
                }
                Ok(Err(error)) => assert_eq!(error.file, 0),
            }
        }
    }
}
