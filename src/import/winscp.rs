//! The `winscp` reader (docs/import-formats.md, "WinSCP"): `WinSCP.ini`, or a regedit export
//! of `HKEY_CURRENT_USER\Software\Martin Prikryl\WinSCP 2`. Each `[Sessions\<path>]` is a
//! site: the path is URL-encoded UTF-8 with `/` between folders; SCP and SFTP sites
//! (`FSProtocol` 0, 1, 2) are SSH hosts, FTP, WebDAV and S3 are skipped. Saved passwords stay
//! scrambled (`SourceSecret::WinScp`, keyed by user name + host name) until a reveal; with a
//! master password (`[Configuration\Security] UseMasterPassword=1`) they are not attached.
//!
//! Invariants: pure; `Unreadable` only for a file with no WinSCP section at all; a site
//! deeper than `MAX_DEPTH` folders is `invalid`; `Default Settings` is a template, not a site,
//! and is left out.

use crate::import::ini::{self, percent_decode, Folders, Section};
use crate::import::reg;
use crate::import::source::{
    Catalogue, Jump, SourceAuth, SourceFile, SourceHost, SourceSecret, Unreadable,
};

/// Folder levels a site may sit under.
pub const MAX_DEPTH: usize = 64;

/// The registry key WinSCP keeps its settings under (a `.reg` export of it is read too).
const REGISTRY_ROOT: &str = "\\Martin Prikryl\\WinSCP 2\\";

/// Section name prefixes only WinSCP writes.
const ROOTS: [&str; 5] = [
    "Sessions\\",
    "Configuration",
    "SshHostKeys",
    "CDCache",
    "Override",
];

/// One site as read: its decoded path and its values, decoded.
struct Site {
    path: Vec<String>,
    values: Vec<(String, String)>,
}

impl Site {
    fn get(&self, key: &str) -> Option<&str> {
        crate::import::value(&self.values, key)
    }

    fn flag(&self, key: &str) -> bool {
        self.get(key).is_some_and(|value| value != "0")
    }
}

pub fn read(files: &[SourceFile]) -> Result<Catalogue, Unreadable> {
    let mut catalogue = Catalogue::default();
    let mut folders = Folders::default();
    for (index, file) in files.iter().enumerate() {
        let (sections, master) = sections_of(&file.text).ok_or_else(|| Unreadable {
            file: index,
            reason: "not a WinSCP.ini or a regedit export of WinSCP's settings (no [Sessions\\...] or [Configuration\\...] section)".into(),
        })?;
        for site in sections {
            if let Some(host) = host_of(&site, master) {
                folders.add(&mut catalogue.groups, &host.group_path);
                catalogue.hosts.push(host);
            }
        }
    }
    Ok(catalogue)
}

/// The sites of one file and whether a master password guards its passwords; `None` when
/// the file is not WinSCP's.
fn sections_of(text: &str) -> Option<(Vec<Site>, bool)> {
    let raw: Vec<(String, Vec<(String, String)>)> = if reg::is_export(text) {
        let file = reg::parse(text).ok()?;
        file.keys
            .into_iter()
            .filter_map(|key| {
                let at = key.path.find(REGISTRY_ROOT)?;
                let name = key.path.get(at + REGISTRY_ROOT.len()..)?.to_string();
                let values = key
                    .values
                    .iter()
                    .filter_map(|(name, value)| Some((name.clone(), value.as_text()?)))
                    .collect();
                Some((name, values))
            })
            .collect()
    } else {
        let ini = ini::parse(text);
        ini.sections
            .into_iter()
            .map(|Section { name, entries }| {
                let values = entries
                    .into_iter()
                    .map(|(key, value)| (key, percent_decode(&value)))
                    .collect();
                (name, values)
            })
            .collect()
    };
    let known = raw.iter().any(|(name, _)| {
        ROOTS.iter().any(|root| {
            name.get(..root.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(root))
        })
    });
    if !known {
        return None;
    }
    let master = raw.iter().any(|(name, values)| {
        name.eq_ignore_ascii_case("Configuration\\Security")
            && values.iter().any(|(key, value)| {
                key.eq_ignore_ascii_case("UseMasterPassword")
                    && value.trim() != "0"
                    && !value.trim().is_empty()
            })
    });
    let sites = raw
        .into_iter()
        .filter_map(|(name, values)| {
            let path = name
                .get(..9)
                .filter(|head| head.eq_ignore_ascii_case("Sessions\\"))?;
            let rest = name.get(path.len()..)?;
            let path: Vec<String> = rest
                .split('/')
                .filter(|part| !part.is_empty())
                .map(percent_decode)
                .collect();
            Some(Site { path, values })
        })
        .collect();
    Some((sites, master))
}

/// The host a site becomes; `None` for `Default Settings` and a site without a name.
fn host_of(site: &Site, master: bool) -> Option<SourceHost> {
    let (name, folders) = site.path.split_last()?;
    if folders.is_empty() && name == "Default Settings" {
        return None;
    }
    let mut host = SourceHost {
        source_id: site.path.join("/"),
        name: name.clone(),
        group_path: folders.to_vec(),
        hostname: site.get("HostName").unwrap_or("").trim().to_string(),
        notes: site.get("Note").unwrap_or("").to_string(),
        ..SourceHost::default()
    };
    if folders.len() > MAX_DEPTH {
        host.group_path.truncate(MAX_DEPTH);
        host.invalid = Some(format!("group_path: deeper than {MAX_DEPTH} folders"));
        return Some(host);
    }
    if site.flag("IsWorkspace") {
        host.skipped = Some("a workspace's saved tab, not a site".into());
        return Some(host);
    }
    if let Some(protocol) = non_ssh_protocol(site.get("FSProtocol")) {
        host.skipped = Some(format!("protocol {protocol} is not SSH"));
        return Some(host);
    }
    if host.hostname.is_empty() {
        host.invalid = Some("hostname: is required".into());
        return Some(host);
    }
    read_port(site.get("PortNumber"), &mut host);
    host.username = site.get("UserName").map(str::to_string);
    read_auth(site, master, &mut host);
    read_tunnel(site, master, &mut host);
    read_unmapped(site, &mut host);
    Some(host)
}

/// The name of a non-SSH `FSProtocol`, `None` for SCP and SFTP (absent: WinSCP's default,
/// SFTP).
fn non_ssh_protocol(value: Option<&str>) -> Option<String> {
    match value.map(str::trim) {
        None | Some("0" | "1" | "2") => None,
        Some("5") => Some("FTP".into()),
        Some("6") => Some("WebDAV".into()),
        Some("7") => Some("S3".into()),
        Some(other) => Some(format!(
            "FSProtocol {}",
            other.chars().take(8).collect::<String>()
        )),
    }
}

fn read_port(value: Option<&str>, host: &mut SourceHost) {
    match value.map(|text| text.trim().parse::<u16>()) {
        None => {}
        Some(Ok(port)) if port > 0 => host.port = Some(port),
        Some(_) => host.invalid = Some("port: must be a number from 1 to 65535".into()),
    }
}

const MASTER_NOTE: &str = "Password: WinSCP master password in use; not decoded";
/// Why such a password is `missing`.
const MASTER_REASON: &str = "WinSCP keeps it under its master password, which is not decoded";

fn read_auth(site: &Site, master: bool, host: &mut SourceHost) {
    let password = site.get("Password").map(|hex| SourceSecret::WinScp {
        hex: hex.to_string(),
        key: format!(
            "{}{}",
            site.get("UserName").unwrap_or(""),
            site.get("HostName").unwrap_or("")
        ),
    });
    if let Some(path) = site.get("PublicKeyFile") {
        host.auth = SourceAuth::Key {
            path: path.to_string(),
            passphrase: None,
        };
        if password.is_some() {
            host.unmapped
                .push("Password: a saved password beside a key file is not imported".into());
        }
    } else if let Some(password) = password {
        if master {
            host.auth = SourceAuth::Password(Some(SourceSecret::Unavailable(MASTER_REASON)));
            host.unmapped.push(MASTER_NOTE.into());
        } else {
            host.auth = SourceAuth::Password(Some(password));
        }
    }
    host.certificate_file = site.get("DetachedCertificate").map(str::to_string);
}

fn read_tunnel(site: &Site, master: bool, host: &mut SourceHost) {
    if !site.flag("Tunnel") {
        return;
    }
    let Some(hostname) = site.get("TunnelHostName").map(str::trim) else {
        host.unmapped
            .push("Tunnel: a tunnel without a host name is not imported".into());
        return;
    };
    let username = site.get("TunnelUserName").map(str::to_string);
    let port = match site
        .get("TunnelPortNumber")
        .map(|text| text.trim().parse::<u16>())
    {
        None => None,
        Some(Ok(port)) if port > 0 => Some(port),
        Some(_) => {
            host.unmapped
                .push("TunnelPortNumber: not a port; the jump uses 22".into());
            None
        }
    };
    let password = match site.get("TunnelPassword") {
        Some(_) if master => {
            host.unmapped
                .push("TunnelPassword: WinSCP master password in use; not decoded".into());
            None
        }
        Some(hex) => Some(Box::new(SourceSecret::WinScp {
            hex: hex.to_string(),
            key: format!("{}{hostname}", username.as_deref().unwrap_or("")),
        })),
        None => None,
    };
    if let Some(path) = site.get("TunnelPublicKeyFile") {
        host.unmapped.push(format!(
            "TunnelPublicKeyFile: the jump host's key file {path} is not imported"
        ));
    }
    host.jumps.push(Jump::Address {
        hostname: hostname.to_string(),
        port,
        username,
        password,
    });
}

/// Choices that change the connection and have no place here.
fn read_unmapped(site: &Site, host: &mut SourceHost) {
    let flags: [(&str, &str); 4] = [
        ("Compression", "compression is not imported"),
        ("AgentFwd", "agent forwarding is not imported"),
        ("X11Forward", "X11 forwarding is not imported"),
        ("SshNoUserAuth", "skipping authentication is not imported"),
    ];
    for (key, why) in flags {
        if site.flag(key) {
            host.unmapped.push(format!("{key}: {why}"));
        }
    }
    if let Some(method) = site.get("ProxyMethod").filter(|method| *method != "0") {
        let kind = match method {
            "1" => "SOCKS4".to_string(),
            "2" => "SOCKS5".to_string(),
            "3" => "HTTP".to_string(),
            "4" => "Telnet".to_string(),
            "5" => "local command".to_string(),
            other => format!("method {}", other.chars().take(8).collect::<String>()),
        };
        let at = match (site.get("ProxyHost"), site.get("ProxyPort")) {
            (Some(proxy), Some(port)) => format!(" via {proxy}:{port}"),
            (Some(proxy), None) => format!(" via {proxy}"),
            _ => String::new(),
        };
        host.unmapped
            .push(format!("ProxyMethod: {kind} proxy{at} is not imported"));
    }
    if let Some(directory) = site.get("RemoteDirectory") {
        host.unmapped.push(format!(
            "RemoteDirectory: the start directory {directory} is not imported"
        ));
    }
    if site
        .get("TunnelLocalPortNumber")
        .is_some_and(|port| port != "0")
    {
        host.unmapped
            .push("TunnelLocalPortNumber: a fixed local tunnel port is not imported".into());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::import::reveal::Revealer;

    fn sample(name: &str) -> SourceFile {
        SourceFile {
            name: name.into(),
            text: crate::import::sample_text(&format!("winscp/{name}")),
        }
    }

    fn host<'a>(catalogue: &'a Catalogue, source_id: &str) -> &'a SourceHost {
        catalogue
            .hosts
            .iter()
            .find(|host| host.source_id == source_id)
            .unwrap_or_else(|| panic!("no host {source_id}"))
    }

    fn revealed(secret: &SourceSecret) -> String {
        let mut revealer = Revealer::new(None, None);
        let opened = revealer.reveal(secret).unwrap();
        opened.expose_str().unwrap().to_string()
    }

    #[test]
    fn winscp_sites_become_hosts_with_folders_from_the_decoded_path() {
        let catalogue = read(&[sample("WinSCP.ini")]).unwrap();
        let ids: Vec<&str> = catalogue
            .hosts
            .iter()
            .map(|h| h.source_id.as_str())
            .collect();
        assert_eq!(
            ids,
            [
                "Prod/Web/web 1",
                "Prod/Web/web 2",
                "Prod/DB/db-primary",
                "Prod/DB/db-replica",
                "Staging/ftp files",
                "Staging/webdav",
                "Staging/s3 bucket",
                "Staging/app",
                "Café/服务器",
                "Staging/renamed",
                "no host",
                "Workspace/0000",
            ],
            "Default Settings is a template, not a site"
        );
        let web = host(&catalogue, "Prod/Web/web 1");
        assert_eq!(web.name, "web 1");
        assert_eq!(web.group_path, ["Prod", "Web"]);
        assert_eq!(web.hostname, "web1.example.com");
        assert_eq!(web.port, Some(2222));
        assert_eq!(web.username.as_deref(), Some("deploy"));
        assert_eq!(web.notes, "front web, ask ops", "values are URL-decoded");
        assert!(web
            .unmapped
            .iter()
            .any(|u| u.starts_with("RemoteDirectory:")));
        let paths: Vec<String> = catalogue.groups.iter().map(|g| g.path.join("/")).collect();
        assert_eq!(
            paths,
            [
                "Prod",
                "Prod/Web",
                "Prod/DB",
                "Staging",
                "Café",
                "Workspace"
            ]
        );
        let cafe = host(&catalogue, "Café/服务器");
        assert_eq!(cafe.name, "服务器");
        assert_eq!(cafe.port, None, "no PortNumber: not given");
    }

    #[test]
    fn winscp_saved_password_is_scrambled_with_user_and_host_and_opens() {
        let catalogue = read(&[sample("WinSCP.ini")]).unwrap();
        let SourceAuth::Password(Some(secret)) = &host(&catalogue, "Prod/Web/web 1").auth else {
            panic!("password auth expected");
        };
        assert!(
            matches!(secret, SourceSecret::WinScp { key, .. } if key == "deployweb1.example.com")
        );
        assert_eq!(revealed(secret), "Web1-Pa55");
        let SourceAuth::Password(Some(secret)) = &host(&catalogue, "Café/服务器").auth else {
            panic!("password auth expected");
        };
        assert_eq!(
            revealed(secret),
            "café-secret",
            "UTF-8 user name in the key"
        );
    }

    #[test]
    fn winscp_key_file_and_certificate_are_kept_as_paths_and_flags_are_unmapped() {
        let catalogue = read(&[sample("WinSCP.ini")]).unwrap();
        let web2 = host(&catalogue, "Prod/Web/web 2");
        assert!(
            matches!(&web2.auth, SourceAuth::Key { path, .. } if path == "C:\\Users\\me\\.ssh\\web.ppk")
        );
        assert_eq!(
            web2.certificate_file.as_deref(),
            Some("C:\\Users\\me\\.ssh\\web-cert.pub")
        );
        assert!(web2
            .unmapped
            .contains(&"Compression: compression is not imported".to_string()));
        assert!(web2
            .unmapped
            .contains(&"AgentFwd: agent forwarding is not imported".to_string()));
    }

    #[test]
    fn winscp_tunnel_is_a_jump_address_with_its_own_scrambled_password() {
        let catalogue = read(&[sample("WinSCP.ini")]).unwrap();
        let db = host(&catalogue, "Prod/DB/db-primary");
        let (hostname, port, username, password) = crate::import::only_address_jump(db);
        assert_eq!(
            (hostname, port, username),
            ("bastion.example.com", Some(2022), Some("jump"))
        );
        let password = password.unwrap();
        assert_eq!(revealed(password), "Jump!pass");
        assert!(db.unmapped.is_empty(), "{:?}", db.unmapped);
        let replica = host(&catalogue, "Prod/DB/db-replica");
        assert!(matches!(
            &replica.jumps[..],
            [Jump::Address { password: None, .. }]
        ));
        assert!(replica
            .unmapped
            .iter()
            .any(|u| u.starts_with("TunnelPublicKeyFile:") && u.contains("C:\\keys\\jump.ppk")));
        assert!(replica.unmapped.contains(
            &"ProxyMethod: SOCKS5 proxy via socks.example.com:1080 is not imported".to_string()
        ));
    }

    #[test]
    fn winscp_ftp_webdav_s3_and_workspaces_are_skipped_scp_and_sftp_are_hosts() {
        let catalogue = read(&[sample("WinSCP.ini")]).unwrap();
        let skipped = |id: &str| host(&catalogue, id).skipped.clone();
        assert_eq!(
            skipped("Staging/ftp files").as_deref(),
            Some("protocol FTP is not SSH")
        );
        assert_eq!(
            skipped("Staging/webdav").as_deref(),
            Some("protocol WebDAV is not SSH")
        );
        assert_eq!(
            skipped("Staging/s3 bucket").as_deref(),
            Some("protocol S3 is not SSH")
        );
        assert!(skipped("Workspace/0000").is_some());
        assert_eq!(skipped("Prod/DB/db-primary"), None, "FSProtocol 0 (SCP)");
        assert_eq!(
            skipped("Prod/Web/web 2"),
            None,
            "FSProtocol 1 (SFTP, SCP fallback)"
        );
        assert_eq!(skipped("Staging/app"), None, "no FSProtocol: SFTP");
        assert_eq!(
            host(&catalogue, "no host").invalid.as_deref(),
            Some("hostname: is required")
        );
    }

    #[test]
    fn winscp_master_password_leaves_passwords_unattached_and_says_so() {
        let catalogue = read(&[sample("WinSCP-master.ini")]).unwrap();
        let locked = host(&catalogue, "locked");
        assert!(matches!(
            locked.auth,
            SourceAuth::Password(Some(SourceSecret::Unavailable(MASTER_REASON)))
        ));
        assert_eq!(locked.unmapped, [MASTER_NOTE]);
    }

    #[test]
    fn winscp_port_edges_and_depth_cap() {
        let text = |port: &str| format!("[Sessions\\a]\nHostName=h\nPortNumber={port}\n");
        let port = |value: &str| {
            let catalogue = read(&[SourceFile {
                name: "x".into(),
                text: text(value),
            }])
            .unwrap();
            let host = catalogue.hosts.into_iter().next().unwrap();
            (host.port, host.invalid.is_some())
        };
        assert_eq!(port("1"), (Some(1), false));
        assert_eq!(port("65535"), (Some(65535), false));
        assert_eq!(port("0"), (None, true));
        assert_eq!(port("65536"), (None, true));
        let deep = |levels: usize| {
            let path = vec!["f"; levels].join("/");
            let text = format!("[Sessions\\{path}/s]\nHostName=h\n");
            let catalogue = read(&[SourceFile {
                name: "x".into(),
                text,
            }])
            .unwrap();
            catalogue.hosts.into_iter().next().unwrap().invalid
        };
        assert_eq!(deep(MAX_DEPTH), None);
        assert!(deep(MAX_DEPTH + 1).is_some());
    }

    #[test]
    fn winscp_registry_export_is_read_like_the_ini() {
        let text = "Windows Registry Editor Version 5.00\r\n\r\n\
            [HKEY_CURRENT_USER\\Software\\Martin Prikryl\\WinSCP 2\\Sessions\\Ops/bastion%20a]\r\n\
            \"HostName\"=\"bastion.example.com\"\r\n\"PortNumber\"=dword:00000016\r\n\
            \"UserName\"=\"ops\"\r\n\"PublicKeyFile\"=\"C:\\\\k\\\\ops.ppk\"\r\n";
        let catalogue = read(&[SourceFile {
            name: "winscp.reg".into(),
            text: text.into(),
        }])
        .unwrap();
        let host = host(&catalogue, "Ops/bastion a");
        assert_eq!(host.port, Some(22));
        assert!(matches!(&host.auth, SourceAuth::Key { path, .. } if path == "C:\\k\\ops.ppk"));
    }

    #[test]
    fn winscp_refuses_a_file_with_no_winscp_section_and_accepts_one_without_sites() {
        let file = |text: &str| SourceFile {
            name: "f".into(),
            text: text.into(),
        };
        let err = read(&[file("[Other]\nx=1\n")]).unwrap_err();
        assert_eq!(err.file, 0);
        assert!(read(&[file("hello")]).is_err());
        let catalogue = read(&[file("[Configuration\\Interface]\nTheme=Dark\n")]).unwrap();
        assert!(catalogue.hosts.is_empty());
    }

    /// Fuzz: the reader never panics on mutated WinSCP.ini files and registry exports, and
    /// every host it returns has a source id.
    #[test]
    fn winscp_read_never_panics_on_seeded_random_input() {
        let (iterations, seed) = crate::fuzz::settings("winscp reader", 0x3C9_0001);
        let mut rng = crate::fuzz::Rng::new(seed);
        let samples = vec![
            sample("WinSCP.ini").text,
            sample("WinSCP-master.ini").text,
            "Windows Registry Editor Version 5.00\r\n\r\n[HKEY_CURRENT_USER\\Software\\Martin Prikryl\\WinSCP 2\\Sessions\\a/b]\r\n\"HostName\"=\"h\"\r\n\"PortNumber\"=dword:00000016\r\n".to_string(),
        ];
        let tokens = [
            "[",
            "]",
            "[Sessions\\",
            "/",
            "//",
            "%",
            "%2",
            "%C3",
            "%FF",
            "=",
            "\\",
            "\n",
            ";",
            "Tunnel=1\n",
            "FSProtocol=5\n",
            "PortNumber=",
            "UseMasterPassword=1\n",
            "[Configuration\\Security]\n",
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
                }
            });
            assert!(outcome.is_ok(), "panic on input #{iteration}: {text:?}");
        }
    }
}
