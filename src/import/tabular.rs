//! The two CSV formats (docs/import-formats.md, "Our CSV" and "Termius CSV template"): the
//! `csv` reader of what `GET /api/export/csv` writes, the `termius-csv` reader of Termius's
//! import template, and the writers of both exports. Header names are matched
//! case-insensitively in any order; a file without the required columns is not of the
//! format (`Unreadable`); a row that breaks a rule is an `invalid` host naming the column.
//!
//! Invariants: pure; never panics on any input; `read_csv(write_csv(rows))` gives the rows
//! back (a seeded property test checks it); a password leaves the reader only as a
//! `vault::Secret` and never appears in a reason or an unmapped entry.

use std::collections::{HashMap, HashSet};

use crate::import::csv;
use crate::import::source::{
    Catalogue, Jump, SourceAuth, SourceFile, SourceGroup, SourceHost, SourceSecret, Unreadable,
};
use crate::import::text::strip_bom;
use crate::vault::Secret;

/// Our header, in the order the export writes it.
pub const CSV_HEADER: [&str; 10] = [
    "name",
    "hostname",
    "port",
    "username",
    "auth",
    "password",
    "group_path",
    "tags",
    "notes",
    "proxy_jump",
];

/// Termius's import template header.
pub const TERMIUS_HEADER: [&str; 8] = [
    "Groups",
    "Label",
    "Tags",
    "Hostname/IP",
    "Protocol",
    "Port",
    "Username",
    "Password",
];

/// Folder nesting deeper than this is `invalid` (docs/import.md: readers cap nesting).
const MAX_DEPTH: usize = 64;

/// One host as the exports write it (effective values: inherited ones resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportRow<'a> {
    pub name: &'a str,
    pub hostname: &'a str,
    pub port: u16,
    pub username: &'a str,
    /// `password`, `key` or `agent`.
    pub auth: &'a str,
    /// Only with `?secrets=include`.
    pub password: Option<&'a str>,
    /// Folder names joined with `/`.
    pub group_path: &'a str,
    pub tags: &'a [String],
    pub notes: &'a str,
    /// The chain's hops as `user@host:port`, nearest first.
    pub proxy_jump: Vec<String>,
}

/// Our CSV: the header and one row per host, CRLF line ends.
pub fn write_csv(rows: &[ExportRow]) -> String {
    let mut out = String::new();
    csv::write_row(&mut out, &CSV_HEADER);
    for row in rows {
        let port = row.port.to_string();
        let tags = row.tags.join(";");
        let jumps = row.proxy_jump.join(",");
        let cells = [
            row.name,
            row.hostname,
            &port,
            row.username,
            row.auth,
            row.password.unwrap_or(""),
            row.group_path,
            &tags,
            row.notes,
            &jumps,
        ];
        csv::write_row(&mut out, &cells);
    }
    out
}

/// Termius's template: the header and one `ssh` row per host.
pub fn write_termius(rows: &[ExportRow]) -> String {
    let mut out = String::new();
    csv::write_row(&mut out, &TERMIUS_HEADER);
    for row in rows {
        let port = row.port.to_string();
        let tags = row.tags.join(",");
        let cells = [
            row.group_path,
            row.name,
            &tags,
            row.hostname,
            "ssh",
            &port,
            row.username,
            row.password.unwrap_or(""),
        ];
        csv::write_row(&mut out, &cells);
    }
    out
}

/// A file's rows with its header resolved to column indexes.
struct Table {
    columns: HashMap<String, usize>,
    /// Header cells that are not a field of the format, with their index.
    unknown: Vec<(usize, String)>,
    width: usize,
    /// Data rows with their line-ish number (1-based, the header is row 1).
    rows: Vec<(usize, Vec<String>)>,
}

impl Table {
    /// The cell of `column` in `row` (`""` when the column or the cell is absent).
    fn cell<'r>(&self, row: &'r [String], column: &str) -> &'r str {
        self.columns
            .get(column)
            .and_then(|&index| row.get(index))
            .map_or("", String::as_str)
    }

    /// `column X: not a field of ours` for each unknown column with a value in `row`, and
    /// cells beyond the header.
    fn unmapped(&self, row: &[String], format: &str) -> Vec<String> {
        let mut unmapped: Vec<String> = self
            .unknown
            .iter()
            .filter(|(index, _)| row.get(*index).is_some_and(|cell| !cell.is_empty()))
            .map(|(_, name)| format!("column {name}: not a field of {format}"))
            .collect();
        if row.iter().skip(self.width).any(|cell| !cell.is_empty()) {
            unmapped.push("cells beyond the header: not read".to_owned());
        }
        unmapped
    }
}

/// Parses `file` as a CSV whose header has `required` and may have `known` columns.
fn table(
    index: usize,
    file: &SourceFile,
    known: &[&str],
    required: &[&str],
) -> Result<Table, Unreadable> {
    let unreadable = |reason: String| Unreadable {
        file: index,
        reason,
    };
    let mut rows = csv::read(strip_bom(&file.text))
        .map_err(unreadable)?
        .into_iter();
    let header = rows
        .next()
        .ok_or_else(|| unreadable("no header row".to_owned()))?;
    let mut columns = HashMap::new();
    let mut unknown = Vec::new();
    for (at, name) in header.iter().enumerate() {
        let lower = name.trim().to_ascii_lowercase();
        match known
            .iter()
            .find(|field| field.eq_ignore_ascii_case(&lower))
        {
            Some(field) => {
                if columns.insert(field.to_ascii_lowercase(), at).is_some() {
                    return Err(unreadable(format!("the header names {field} twice")));
                }
            }
            None => unknown.push((at, short(name.trim()))),
        }
    }
    let missing: Vec<&str> = required
        .iter()
        .filter(|field| !columns.contains_key(&field.to_ascii_lowercase()))
        .copied()
        .collect();
    if !missing.is_empty() {
        return Err(unreadable(format!(
            "the header lacks {} (expected {})",
            missing.join(", "),
            known.join(",")
        )));
    }
    let rows = rows
        .enumerate()
        .filter(|(_, row)| row.iter().any(|cell| !cell.is_empty()))
        .map(|(at, row)| (at + 2, row))
        .collect();
    Ok(Table {
        columns,
        unknown,
        width: header.len(),
        rows,
    })
}

/// A header cell as a reason may quote it: a short structural token, at most 40 chars.
fn short(name: &str) -> String {
    name.chars().take(40).collect()
}

/// Folder names of a `/`-joined path (empty names dropped), or why not.
fn group_path(text: &str, column: &str) -> Result<Vec<String>, String> {
    let path: Vec<String> = text
        .split('/')
        .filter(|name| !name.trim().is_empty())
        .map(str::to_owned)
        .collect();
    if path.len() > MAX_DEPTH {
        return Err(format!("{column}: nested deeper than {MAX_DEPTH} folders"));
    }
    Ok(path)
}

/// A port cell: empty is `None`; else 1 to 65535.
fn port(text: &str, column: &str) -> Result<Option<u16>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(Some(port)),
        _ => Err(format!("{column}: must be a number from 1 to 65535")),
    }
}

/// A host name cell: an IPv6 address in brackets (`[2001:db8::7]`, as URLs and our own
/// hops write it) loses them, since a host name is the bare address.
fn host_name(text: &str) -> String {
    match text
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
    {
        Some(address) if address.contains(':') => address.to_owned(),
        _ => text.to_owned(),
    }
}

fn optional(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

/// The source id of a session: its folder path and name joined with `/`.
fn source_id(path: &[String], name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{}/{name}", path.join("/"))
    }
}

/// A catalogue being filled: folders and source ids seen so far, for constant-time checks.
#[derive(Default)]
pub struct Builder {
    pub catalogue: Catalogue,
    paths: HashSet<Vec<String>>,
    ids: HashSet<String>,
}

impl Builder {
    /// Adds `path` and its parents to the folders once each, parents first.
    pub fn add_groups(&mut self, path: &[String]) {
        for depth in 1..=path.len() {
            let prefix = path.get(..depth).unwrap_or_default();
            if self.paths.insert(prefix.to_vec()) {
                self.catalogue.groups.push(SourceGroup {
                    path: prefix.to_vec(),
                    ..SourceGroup::default()
                });
            }
        }
    }

    /// Adds `host`, marked invalid when its source id is already taken.
    pub fn push_unique(&mut self, mut host: SourceHost) {
        if !self.ids.insert(host.source_id.clone()) && host.invalid.is_none() {
            host.invalid = Some("name: another row has the same group path and name".to_owned());
        }
        self.catalogue.hosts.push(host);
    }
}

/// A jump hop `[user@]host[:port]` (`[v6]:port` bracketed), or why not.
pub fn parse_hop(hop: &str) -> Result<Jump, String> {
    let (username, address) = match hop.rsplit_once('@') {
        Some((user, rest)) if !user.is_empty() => (Some(user.to_owned()), rest),
        Some((_, rest)) => (None, rest),
        None => (None, hop),
    };
    let (hostname, port) = split_host_port(address)?;
    if hostname.is_empty() {
        return Err("a hop has no host name".to_owned());
    }
    Ok(Jump::Address {
        hostname,
        port,
        username,
        password: None,
    })
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; a bare IPv6 address (two colons or more) is
/// a host name without a port.
pub fn split_host_port(address: &str) -> Result<(String, Option<u16>), String> {
    let bad_port = || "the port must be a number from 1 to 65535".to_owned();
    let parse = |text: &str| match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(Some(port)),
        _ => Err(bad_port()),
    };
    if let Some(rest) = address.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| "an opening [ has no closing ]".to_owned())?;
        return match after {
            "" => Ok((host.to_owned(), None)),
            _ => match after.strip_prefix(':') {
                Some(text) => Ok((host.to_owned(), parse(text)?)),
                None => Err("text after the closing ]".to_owned()),
            },
        };
    }
    match address.split_once(':') {
        Some((host, text)) if !text.contains(':') => Ok((host.to_owned(), parse(text)?)),
        _ => Ok((address.to_owned(), None)),
    }
}

/// Reads our CSV (`GET /api/export/csv`'s header; `name` and `hostname` required).
pub fn read_csv(files: &[SourceFile]) -> Result<Catalogue, Unreadable> {
    let mut builder = Builder::default();
    let mut tables = Vec::new();
    for (index, file) in files.iter().enumerate() {
        tables.push(table(index, file, &CSV_HEADER, &["name", "hostname"])?);
    }
    // Hop names that are another row's name, with that row's source id (a name two rows
    // share is not a session reference: the hop is read as an address).
    let mut by_name: HashMap<String, Option<String>> = HashMap::new();
    for table in &tables {
        for (_, row) in &table.rows {
            let name = row_name(table, row);
            let id = group_path(table.cell(row, "group_path"), "group_path")
                .map(|path| source_id(&path, &name))
                .ok();
            by_name
                .entry(name)
                .and_modify(|seen| *seen = None)
                .or_insert(id);
        }
    }
    for table in &tables {
        for (_, row) in &table.rows {
            let host = csv_host(table, row, &by_name, &mut builder);
            builder.push_unique(host);
        }
    }
    Ok(builder.catalogue)
}

/// A row's name: the `name` cell, else its host name.
fn row_name(table: &Table, row: &[String]) -> String {
    match table.cell(row, "name") {
        "" => table.cell(row, "hostname").to_owned(),
        name => name.to_owned(),
    }
}

/// One row of our CSV as a host.
fn csv_host(
    table: &Table,
    row: &[String],
    by_name: &HashMap<String, Option<String>>,
    builder: &mut Builder,
) -> SourceHost {
    let name = row_name(table, row);
    let mut host = SourceHost {
        name: name.clone(),
        hostname: host_name(table.cell(row, "hostname")),
        username: optional(table.cell(row, "username")),
        notes: table.cell(row, "notes").to_owned(),
        tags: split_list(table.cell(row, "tags"), ';'),
        unmapped: table.unmapped(row, "ours"),
        ..SourceHost::default()
    };
    match group_path(table.cell(row, "group_path"), "group_path") {
        Ok(path) => {
            builder.add_groups(&path);
            host.source_id = source_id(&path, &name);
            host.group_path = path;
        }
        Err(reason) => {
            host.source_id = name.clone();
            host.invalid = Some(reason);
        }
    }
    if let Err(reason) = csv_fields(table, row, by_name, &mut host) {
        host.invalid.get_or_insert(reason);
    }
    if host.hostname.is_empty() {
        host.invalid
            .get_or_insert("hostname: is required".to_owned());
    }
    host
}

/// The row's port, auth, password and jumps into `host`, or the first rule broken.
fn csv_fields(
    table: &Table,
    row: &[String],
    by_name: &HashMap<String, Option<String>>,
    host: &mut SourceHost,
) -> Result<(), String> {
    host.port = port(table.cell(row, "port"), "port")?;
    let password = table.cell(row, "password");
    let secret = || {
        Some(SourceSecret::Plain(Secret::new(
            password.as_bytes().to_vec(),
        )))
    };
    let auth = table.cell(row, "auth").trim().to_ascii_lowercase();
    host.auth = match (auth.as_str(), password.is_empty()) {
        ("", true) => SourceAuth::Unspecified,
        ("password", true) => SourceAuth::Password(None),
        ("" | "password", false) => SourceAuth::Password(secret()),
        ("key", _) => SourceAuth::Key {
            path: String::new(),
            passphrase: None,
        },
        ("agent", _) => SourceAuth::Agent,
        _ => return Err("auth: must be password, key, agent or empty".to_owned()),
    };
    if !password.is_empty() && matches!(host.auth, SourceAuth::Key { .. } | SourceAuth::Agent) {
        host.unmapped
            .push(format!("password: not used with {auth} auth, not imported"));
    }
    for (at, hop) in table.cell(row, "proxy_jump").split(',').enumerate() {
        let hop = hop.trim();
        if hop.is_empty() {
            continue;
        }
        let jump = match by_name.get(hop) {
            Some(Some(id)) if *id != host.source_id => Jump::Session(id.clone()),
            _ => parse_hop(hop).map_err(|why| format!("proxy_jump: hop {}: {why}", at + 1))?,
        };
        host.jumps.push(jump);
    }
    Ok(())
}

/// Cells of a list (`;` for our tags, `,` for Termius's), trimmed, empty ones dropped.
fn split_list(text: &str, separator: char) -> Vec<String> {
    text.split(separator)
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Reads Termius's import template (`Label` and `Hostname/IP` required).
pub fn read_termius(files: &[SourceFile]) -> Result<Catalogue, Unreadable> {
    let mut builder = Builder::default();
    let required = ["Label", "Hostname/IP"];
    for (index, file) in files.iter().enumerate() {
        let table = table(index, file, &TERMIUS_HEADER, &required)?;
        for (_, row) in &table.rows {
            let host = termius_host(&table, row, &mut builder);
            builder.push_unique(host);
        }
    }
    Ok(builder.catalogue)
}

/// One row of the Termius template as a host.
fn termius_host(table: &Table, row: &[String], builder: &mut Builder) -> SourceHost {
    let hostname = host_name(table.cell(row, "hostname/ip"));
    let name = match table.cell(row, "label") {
        "" => hostname.clone(),
        label => label.to_owned(),
    };
    let password = table.cell(row, "password");
    let mut host = SourceHost {
        name: name.clone(),
        hostname,
        username: optional(table.cell(row, "username")),
        tags: split_list(table.cell(row, "tags"), ','),
        unmapped: table.unmapped(row, "the template"),
        ..SourceHost::default()
    };
    if !password.is_empty() {
        let secret = SourceSecret::Plain(Secret::new(password.as_bytes().to_vec()));
        host.auth = SourceAuth::Password(Some(secret));
    }
    match group_path(table.cell(row, "groups"), "Groups") {
        Ok(path) => {
            builder.add_groups(&path);
            host.source_id = source_id(&path, &name);
            host.group_path = path;
        }
        Err(reason) => {
            host.source_id = name;
            host.invalid = Some(reason);
        }
    }
    let protocol = table.cell(row, "protocol").trim();
    if !protocol.is_empty() && !protocol.eq_ignore_ascii_case("ssh") {
        let shown: String = protocol.chars().take(20).collect();
        host.skipped = Some(format!("protocol {shown} is not SSH"));
        return host;
    }
    match port(table.cell(row, "port"), "Port") {
        Ok(port) => host.port = port,
        Err(reason) => {
            host.invalid.get_or_insert(reason);
        }
    }
    if host.hostname.is_empty() {
        host.invalid
            .get_or_insert("hostname: is required".to_owned());
    }
    host
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::borrow::Cow;
    use std::panic;

    use super::*;

    const OURS: &str = include_str!("../../tests/samples/import/csv/hosts.csv");
    const TERMIUS: &str = include_str!("../../tests/samples/import/termius-csv/hosts.csv");

    fn files(text: &str) -> Vec<SourceFile> {
        vec![SourceFile {
            name: "hosts.csv".to_owned(),
            text: text.to_owned(),
        }]
    }

    fn ours(text: &str) -> Catalogue {
        read_csv(&files(text)).unwrap()
    }

    fn host<'c>(catalogue: &'c Catalogue, id: &str) -> &'c SourceHost {
        catalogue
            .hosts
            .iter()
            .find(|host| host.source_id == id)
            .unwrap_or_else(|| panic!("no host {id} in {catalogue:#?}"))
    }

    fn plain(secret: &SourceSecret) -> &[u8] {
        match secret {
            SourceSecret::Plain(secret) => secret.expose(),
            other => panic!("not plain: {other:?}"),
        }
    }

    fn password(host: &SourceHost) -> Option<&[u8]> {
        match &host.auth {
            SourceAuth::Password(secret) => secret.as_ref().map(plain),
            other => panic!("not password auth: {other:?}"),
        }
    }

    fn address(jump: &Jump) -> (String, Option<u16>, Option<String>) {
        match jump {
            Jump::Address {
                hostname,
                port,
                username,
                ..
            } => (hostname.clone(), *port, username.clone()),
            Jump::Session(id) => panic!("a session jump {id}"),
        }
    }

    #[test]
    fn our_sample_reads_every_row_with_its_folders_parents_first() {
        let catalogue = ours(OURS);
        assert_eq!(catalogue.hosts.len(), 11);
        let paths: Vec<String> = catalogue.groups.iter().map(|g| g.path.join("/")).collect();
        assert_eq!(
            paths,
            [
                "Prod",
                "Prod/Web",
                "Prod/DB",
                "Lab",
                "Lab/CI",
                "Lab/CI/Runners",
                "Office"
            ]
        );
        let web = host(&catalogue, "Prod/Web/web 1");
        assert_eq!(
            (web.name.as_str(), web.hostname.as_str(), web.port),
            ("web 1", "web1.example.com", Some(22))
        );
        assert_eq!(web.username.as_deref(), Some("deploy"));
        assert_eq!(web.group_path, ["Prod", "Web"]);
        assert_eq!(web.tags, ["web", "nginx"]);
        assert_eq!(
            web.notes,
            "Front web server.\r\nPatched monthly, on Tuesdays."
        );
        assert_eq!(password(web), Some(&b"s3cr3t-web"[..]));
        assert!(web.invalid.is_none() && web.skipped.is_none() && web.unmapped.is_empty());
    }

    #[test]
    fn a_hop_naming_another_row_is_that_session_and_others_are_addresses() {
        let catalogue = ours(OURS);
        let web = host(&catalogue, "Prod/Web/web 1");
        assert!(matches!(&web.jumps[..], [Jump::Session(id)] if id == "Prod/bastion"));
        let db = host(&catalogue, "Prod/DB/db 1");
        let hops: Vec<_> = db.jumps.iter().map(address).collect();
        assert_eq!(
            hops,
            [
                (
                    "bastion.example.com".to_owned(),
                    Some(2022),
                    Some("jump".to_owned())
                ),
                (
                    "2001:db8::1".to_owned(),
                    Some(2200),
                    Some("admin".to_owned())
                ),
            ]
        );
    }

    #[test]
    fn a_hop_naming_two_rows_is_read_as_an_address() {
        let text =
            "name,hostname,group_path,proxy_jump\ngw,a.example,A,\ngw,b.example,B,\nweb,w,,gw\n";
        let catalogue = ours(text);
        assert_eq!(address(&host(&catalogue, "web").jumps[0]).0, "gw");
    }

    #[test]
    fn auth_cells_map_to_password_key_agent_or_unspecified() {
        let catalogue = ours(OURS);
        assert!(matches!(
            host(&catalogue, "Prod/bastion").auth,
            SourceAuth::Key { .. }
        ));
        assert!(matches!(
            host(&catalogue, "Prod/Web/web 2").auth,
            SourceAuth::Agent
        ));
        assert_eq!(password(host(&catalogue, "Prod/DB/db 1")), None);
        // No auth cell but a password: password auth with it.
        assert_eq!(
            password(host(&catalogue, "Prod/DB/db 2")),
            Some("pässwörd €".as_bytes())
        );
        assert!(matches!(
            host(&catalogue, "Office/printer").auth,
            SourceAuth::Unspecified
        ));
        let bad = host(&catalogue, "Lab/bad auth");
        assert_eq!(
            bad.invalid.as_deref(),
            Some("auth: must be password, key, agent or empty")
        );
    }

    #[test]
    fn a_password_beside_key_or_agent_auth_is_named_in_unmapped_without_its_value() {
        let catalogue = ours("name,hostname,auth,password\nweb,w,agent,hunter2\n");
        let web = host(&catalogue, "web");
        assert!(matches!(web.auth, SourceAuth::Agent));
        assert_eq!(
            web.unmapped,
            ["password: not used with agent auth, not imported"]
        );
        assert!(!format!("{catalogue:?}").contains("hunter2"));
    }

    #[test]
    fn ipv6_host_names_are_read_bare_with_or_without_brackets() {
        let catalogue = ours(OURS);
        assert_eq!(host(&catalogue, "Prod/DB/db 1").hostname, "2001:db8::5");
        assert_eq!(host(&catalogue, "router").hostname, "2001:db8::7");
        let kept = ours("name,hostname\nx,[not-v6]\n");
        assert_eq!(
            host(&kept, "x").hostname,
            "[not-v6]",
            "only an IPv6 address loses brackets"
        );
    }

    #[test]
    fn a_row_without_a_host_name_or_with_a_bad_port_is_invalid_naming_the_column() {
        let catalogue = ours(OURS);
        let none = host(&catalogue, "Lab/no host");
        assert_eq!(none.invalid.as_deref(), Some("hostname: is required"));
        let bad = host(&catalogue, "Lab/bad port");
        assert_eq!(
            bad.invalid.as_deref(),
            Some("port: must be a number from 1 to 65535")
        );
    }

    #[test]
    fn ports_from_1_to_65535_are_read_and_0_or_65536_are_invalid() {
        let text = "name,hostname,port\na,h,1\nb,h,65535\nc,h,0\nd,h,65536\ne,h,\n";
        let catalogue = ours(text);
        assert_eq!(host(&catalogue, "a").port, Some(1));
        assert_eq!(host(&catalogue, "b").port, Some(65535));
        assert!(host(&catalogue, "c").invalid.is_some());
        assert!(host(&catalogue, "d").invalid.is_some());
        assert_eq!(host(&catalogue, "e").port, None);
    }

    #[test]
    fn header_names_match_in_any_case_and_order_and_unknown_columns_are_unmapped() {
        let text = "\u{feff}HostName,Colour,NAME,Port\nweb.example,red,web,2222\nw2,,w2,\n";
        let catalogue = ours(text);
        let web = host(&catalogue, "web");
        assert_eq!(
            (web.hostname.as_str(), web.port),
            ("web.example", Some(2222))
        );
        assert_eq!(web.unmapped, ["column Colour: not a field of ours"]);
        assert!(
            host(&catalogue, "w2").unmapped.is_empty(),
            "an empty unknown cell is no choice"
        );
    }

    #[test]
    fn a_file_without_the_required_columns_is_unreadable_and_a_header_alone_is_empty() {
        for text in [
            "",
            "Groups,Label,Hostname/IP\n",
            "<?xml version=\"1.0\"?>\n<a/>",
            "name,port\n",
        ] {
            let err = read_csv(&files(text)).unwrap_err();
            assert_eq!(err.file, 0, "{text:?}");
        }
        let err = read_csv(&files("name,hostname,hostname\n")).unwrap_err();
        assert!(err.reason.contains("twice"), "{}", err.reason);
        assert!(ours("name,hostname\r\n").hosts.is_empty());
        let err = read_csv(&files("name,hostname\n\"open,secret")).unwrap_err();
        assert!(!err.reason.contains("secret"));
    }

    #[test]
    fn a_second_file_that_is_not_of_the_format_is_named_by_its_index() {
        let mut both = files(OURS);
        both.extend(files("hello"));
        assert_eq!(read_csv(&both).unwrap_err().file, 1);
    }

    #[test]
    fn the_same_group_and_name_twice_makes_the_second_row_invalid() {
        let catalogue = ours("name,hostname,group_path\nweb,a,G\nweb,b,G\nweb,c,H\n");
        assert!(catalogue.hosts[0].invalid.is_none());
        assert!(catalogue.hosts[1]
            .invalid
            .as_deref()
            .is_some_and(|r| r.starts_with("name:")));
        assert!(catalogue.hosts[2].invalid.is_none());
    }

    #[test]
    fn folder_nesting_of_64_is_read_and_65_is_invalid() {
        let deep = |depth: usize| vec!["f"; depth].join("/");
        let text = format!(
            "name,hostname,group_path\na,h,{}\nb,h,{}\n",
            deep(64),
            deep(65)
        );
        let catalogue = ours(&text);
        assert_eq!(catalogue.hosts[0].group_path.len(), 64);
        assert!(catalogue.hosts[0].invalid.is_none());
        assert!(catalogue.hosts[1]
            .invalid
            .as_deref()
            .is_some_and(|r| r.contains("64")));
    }

    #[test]
    fn termius_sample_reads_groups_tags_passwords_and_skips_other_protocols() {
        let catalogue = read_termius(&files(TERMIUS)).unwrap();
        assert_eq!(catalogue.hosts.len(), 9);
        let web = host(&catalogue, "Prod/Web/web 1");
        assert_eq!(web.tags, ["web", "nginx"]);
        assert_eq!(password(web), Some(&b"s3cr3t-web"[..]));
        let db = host(&catalogue, "Prod/DB/db 1");
        assert_eq!(
            (db.port, db.tags.clone()),
            (Some(5432), vec!["db".to_owned(), "postgres".to_owned()])
        );
        // An empty Protocol cell is SSH.
        let web2 = host(&catalogue, "Prod/Web/web 2");
        assert!(web2.skipped.is_none() && matches!(web2.auth, SourceAuth::Unspecified));
        let telnet = host(&catalogue, "Office/old switch");
        assert_eq!(
            telnet.skipped.as_deref(),
            Some("protocol telnet is not SSH")
        );
        assert_eq!(
            host(&catalogue, "Lab/Deep/Nested/no host")
                .invalid
                .as_deref(),
            Some("hostname: is required")
        );
        let bad = host(&catalogue, "Lab/bad port");
        assert_eq!(
            bad.invalid.as_deref(),
            Some("Port: must be a number from 1 to 65535")
        );
        assert_eq!(host(&catalogue, "router").group_path, Vec::<String>::new());
    }

    #[test]
    fn termius_requires_its_template_header() {
        let err = read_termius(&files("name,hostname\nweb,w\n")).unwrap_err();
        assert!(err.reason.contains("Label"), "{}", err.reason);
        let catalogue = read_termius(&files("label,HOSTNAME/IP\nweb,w\n")).unwrap();
        assert_eq!(host(&catalogue, "web").hostname, "w");
    }

    #[test]
    fn the_termius_export_reads_back_with_the_termius_reader() {
        let tags = vec!["a".to_owned(), "b c".to_owned()];
        let row = ExportRow {
            name: "web, 1",
            hostname: "w.example",
            port: 2222,
            username: "deploy",
            auth: "password",
            password: Some("p\"w"),
            group_path: "Prod/Web",
            tags: &tags,
            notes: "",
            proxy_jump: Vec::new(),
        };
        let text = write_termius(&[row]);
        assert!(
            text.starts_with("Groups,Label,Tags,Hostname/IP,Protocol,Port,Username,Password\r\n")
        );
        let catalogue = read_termius(&files(&text)).unwrap();
        let web = host(&catalogue, "Prod/Web/web, 1");
        assert_eq!((web.port, web.tags.clone()), (Some(2222), tags));
        assert_eq!(password(web), Some(&b"p\"w"[..]));
    }

    /// A random cell from pieces that exercise quoting (no `/` in folder names, no `;` in
    /// tags, no edge spaces in tags: those are the format's separators).
    fn cell(rng: &mut crate::fuzz::Rng, pieces: &[&str]) -> String {
        (0..1 + rng.below(3)).map(|_| *rng.pick(pieces)).collect()
    }

    #[test]
    fn our_csv_export_reads_back_as_the_same_rows_for_seeded_random_rows() {
        let (iterations, seed) = crate::fuzz::settings("csv round trip", 0xC5F0_0002);
        let mut rng = crate::fuzz::Rng::new(seed);
        let text = ["a", "Zé", " ", ",", "\"", "\r\n", "\n", "x y", "€", "=1"];
        let word = ["a", "b", "Zé", "x-y", "1", "€"];
        for _ in 0..iterations.div_ceil(50) {
            let names: Vec<String> = (0..1 + rng.below(6))
                .map(|i| format!("{}{i}", cell(&mut rng, &text)))
                .collect();
            let strings: Vec<[String; 5]> = names
                .iter()
                .map(|_| {
                    let depth = rng.below(4);
                    let group = (0..depth)
                        .map(|_| cell(&mut rng, &word))
                        .collect::<Vec<_>>()
                        .join("/");
                    [
                        cell(&mut rng, &word),
                        cell(&mut rng, &word),
                        cell(&mut rng, &text),
                        group,
                        cell(&mut rng, &text),
                    ]
                })
                .collect();
            let tags: Vec<Vec<String>> = names
                .iter()
                .map(|_| (0..rng.below(3)).map(|_| cell(&mut rng, &word)).collect())
                .collect();
            let rows: Vec<ExportRow> = names
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    let [hostname, username, password, group, notes] = &strings[i];
                    let auth = *rng.pick(&["password", "key", "agent"]);
                    let hops = (0..rng.below(3))
                        .map(|h| format!("u{h}@{hostname}{h}.example:{}", 1 + h))
                        .collect();
                    ExportRow {
                        name,
                        hostname,
                        port: 1 + rng.below(65535) as u16,
                        username,
                        auth,
                        password: (auth == "password").then_some(password.as_str()),
                        group_path: group,
                        tags: &tags[i],
                        notes,
                        proxy_jump: hops,
                    }
                })
                .collect();
            let text = write_csv(&rows);
            let catalogue = ours(&text);
            assert_eq!(catalogue.hosts.len(), rows.len(), "{text:?}");
            for (row, host) in rows.iter().zip(&catalogue.hosts) {
                assert_eq!(back(host, row.auth), *row, "{text:?}");
            }
        }
    }

    /// A read host as the row it was written from (`auth` picks the spelling of key auth,
    /// which has no cell of its own).
    fn back<'h>(host: &'h SourceHost, auth: &'h str) -> ExportRow<'h> {
        let password = match &host.auth {
            SourceAuth::Password(Some(secret)) => std::str::from_utf8(plain(secret)).ok(),
            _ => None,
        };
        let auth = match &host.auth {
            SourceAuth::Password(_) => "password",
            SourceAuth::Key { .. } => "key",
            SourceAuth::Agent => "agent",
            SourceAuth::Unspecified => auth,
        };
        let hops = host
            .jumps
            .iter()
            .map(|jump| {
                let (hostname, port, username) = address(jump);
                format!(
                    "{}@{hostname}:{}",
                    username.unwrap_or_default(),
                    port.unwrap_or(0)
                )
            })
            .collect();
        ExportRow {
            name: &host.name,
            hostname: &host.hostname,
            port: host.port.unwrap_or(0),
            username: host.username.as_deref().unwrap_or(""),
            auth,
            password,
            group_path: Box::leak(host.group_path.join("/").into_boxed_str()),
            tags: &host.tags,
            notes: &host.notes,
            proxy_jump: hops,
        }
    }

    /// One random edit of a sample's lines: a flipped byte, a cut, a duplicated or removed
    /// line, a structural token.
    fn mutate(rng: &mut crate::fuzz::Rng, text: &str) -> String {
        let mut lines: Vec<Cow<str>> = text.split('\n').map(Cow::Borrowed).collect();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(lines.len());
            match rng.below(5) {
                0 => lines.insert(at, lines.get(at).cloned().unwrap_or(Cow::Borrowed(""))),
                1 if lines.len() > 1 => {
                    lines.remove(at);
                }
                2 => {
                    if let Some(line) = lines.get_mut(at) {
                        let cut = rng.below(line.len() + 1);
                        *line = Cow::Owned(line.chars().take(cut).collect());
                    }
                }
                _ => {
                    let token = *rng.pick(&[
                        "\"", ",", "\r", "/", ";", "@", ":", "[", "]", "0", "65536", "\u{feff}",
                        "é",
                    ]);
                    if let Some(line) = lines.get_mut(at) {
                        let mut chars: Vec<char> = line.chars().collect();
                        chars.insert(
                            rng.below(chars.len() + 1),
                            token.chars().next().unwrap_or(','),
                        );
                        *line = Cow::Owned(chars.into_iter().collect());
                    }
                }
            }
        }
        lines.join("\n")
    }

    #[test]
    fn csv_readers_never_panic_on_seeded_random_input() {
        let (iterations, seed) = crate::fuzz::settings("csv and termius-csv readers", 0xC5F0_0003);
        let mut rng = crate::fuzz::Rng::new(seed);
        for iteration in 0..iterations {
            let ours_text = rng.below(2) == 0;
            let text = mutate(&mut rng, if ours_text { OURS } else { TERMIUS });
            let outcome = panic::catch_unwind(|| {
                let read = if ours_text {
                    read_csv(&files(&text))
                } else {
                    read_termius(&files(&text))
                };
                if let Ok(catalogue) = read {
                    for host in &catalogue.hosts {
                        assert!(
                            !host.source_id.is_empty()
                                || host.invalid.is_some()
                                || host.name.is_empty()
                        );
                    }
                }
            });
            assert!(outcome.is_ok(), "panic on input #{iteration}: {text:?}");
        }
    }
}
