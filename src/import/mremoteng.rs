//! The `mremoteng` reader (docs/import-formats.md, "mRemoteNG"): `confCons.xml`, a root
//! `Connections` (often `mrng:Connections`) whose attributes name the password scheme, and
//! nested `<Node Type="Container|Connection">` elements carrying every setting as an
//! attribute, with an `Inherit<Field>="true"` beside each field a node takes from its
//! container instead.
//!
//! Inheritance is resolved here: a field inherited through several containers comes from the
//! first one up that does not inherit it. A container that gives its username and password
//! to connections becomes an identity (`container:<Id>`) that its group hands down; an
//! inherited port becomes the container's group default. A file saved with
//! `FullFileEncryption="true"` is one encrypted body, opened with the request's passphrase
//! or mRemoteNG's default password.
//!
//! Invariants: pure; a connection's source id is its `Id` (a GUID mRemoteNG keeps across
//! saves); saved passwords stay in their protected form; walks up the tree are bounded by the
//! XML reader's depth cap.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::import::reveal::MREMOTENG_DEFAULT_PASSWORD;
use crate::import::source::{
    Catalogue, Jump, SourceAuth, SourceFile, SourceGroup, SourceHost, SourceIdentity, SourceSecret,
    Unreadable,
};
use crate::import::xml::{self, Element};
use crate::vault::foreign::{self, DerivedKeys};
use crate::vault::Secret;

/// The source-id prefix of a container's identity.
const CONTAINER: &str = "container:";

pub fn read(files: &[SourceFile], passphrase: Option<&Secret>) -> Result<Catalogue, Unreadable> {
    let mut catalogue = Catalogue::default();
    for (index, file) in files.iter().enumerate() {
        read_file(&file.text, passphrase, &mut catalogue).map_err(|reason| Unreadable {
            file: index,
            reason,
        })?;
    }
    Ok(catalogue)
}

/// How the file's passwords are protected (its root's attributes).
struct Scheme {
    /// `None`: AES-GCM, which `vault::foreign::mremoteng` opens; else why not.
    unsupported: Option<String>,
    iterations: u32,
}

impl Scheme {
    fn of(root: &Element) -> Scheme {
        let iterations = root
            .attribute("KdfIterations")
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(1000);
        let unsupported = match (
            root.attribute("EncryptionEngine"),
            root.attribute("BlockCipherMode"),
        ) {
            (None, _) => Some(
                "saved with mRemoteNG's legacy scheme (before 1.76: AES-CBC with an MD5 key), \
                 which this import cannot open; save the file with a current mRemoteNG first"
                    .to_string(),
            ),
            (Some(engine), mode) if engine == "AES" && mode.unwrap_or("GCM") == "GCM" => None,
            (Some(engine), mode) => Some(format!(
                "saved with {}/{}, which this import cannot open (only AES/GCM)",
                token(engine),
                token(mode.unwrap_or_default())
            )),
        };
        Scheme {
            unsupported,
            iterations,
        }
    }

    fn secret(&self, base64: &str, unmapped: &mut Vec<String>) -> Option<SourceSecret> {
        match &self.unsupported {
            None => Some(SourceSecret::MRemoteNg {
                base64: base64.to_string(),
                iterations: self.iterations,
            }),
            Some(why) => {
                unmapped.push(format!("Password: {why}"));
                None
            }
        }
    }
}

/// A short structural token from the file for a reason: letters and digits only.
fn token(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .take(16)
        .collect()
}

fn read_file(
    text: &str,
    passphrase: Option<&Secret>,
    catalogue: &mut Catalogue,
) -> Result<(), String> {
    let root = xml::parse(text).map_err(|reason| format!("not XML: {reason}"))?;
    if root.local_name() != "Connections" {
        return Err("not an mRemoteNG confCons.xml (the root element is not Connections)".into());
    }
    let scheme = Scheme::of(&root);
    let full = root
        .attribute("FullFileEncryption")
        .is_some_and(|value| value.eq_ignore_ascii_case("true"));
    if full {
        let body = open_body(&root, &scheme, passphrase)?;
        Tree::of(&body).read(&scheme, catalogue);
    } else {
        Tree::of(&root).read(&scheme, catalogue);
    }
    Ok(())
}

/// The decrypted inner XML of a `FullFileEncryption="true"` file, under a bare root.
fn open_body(
    root: &Element,
    scheme: &Scheme,
    passphrase: Option<&Secret>,
) -> Result<Element, String> {
    if let Some(why) = &scheme.unsupported {
        return Err(format!("FullFileEncryption: the file is {why}"));
    }
    let password = passphrase.map_or(MREMOTENG_DEFAULT_PASSWORD, Secret::expose);
    let mut keys = DerivedKeys::default();
    let plain = foreign::mremoteng::open(root.text.trim(), scheme.iterations, password, &mut keys)
        .ok_or(match passphrase {
            Some(_) => "FullFileEncryption: the file could not be opened with the given passphrase",
            None => {
                "FullFileEncryption: the file could not be opened with mRemoteNG's default \
                 password; send its password as passphrase"
            }
        })?;
    let inner = std::str::from_utf8(&plain)
        .map_err(|_| "FullFileEncryption: the opened body is not UTF-8 text".to_string())?;
    xml::parse(&format!("<Connections>{inner}</Connections>"))
        .map_err(|reason| format!("FullFileEncryption: the opened body is not XML: {reason}"))
}

/// The source id of a connection without `Id`: its folder path and name joined with `/`.
fn path_id(path: &[String], name: &str) -> String {
    let mut parts = path.to_vec();
    parts.push(name.to_string());
    match parts.join("/") {
        id if id.is_empty() => "/".to_string(),
        id => id,
    }
}

/// A tunnel through a connection that is not imported (not SSH, or invalid) is dropped and
/// reported.
fn drop_unusable_tunnels(hosts: &mut [SourceHost]) {
    let usable: HashSet<String> = hosts
        .iter()
        .filter(|host| host.skipped.is_none() && host.invalid.is_none())
        .map(|host| host.source_id.clone())
        .collect();
    for host in hosts.iter_mut() {
        let before = host.jumps.len();
        host.jumps
            .retain(|jump| matches!(jump, Jump::Session(id) if usable.contains(id)));
        if host.jumps.len() < before {
            host.unmapped.push(
                "SSHTunnelConnectionName: the connection it names is not an SSH connection \
                 this import can create"
                    .to_string(),
            );
        }
    }
}

/// Where an SSH connection's username and password come from.
#[derive(Clone, Copy, Default)]
struct Inherited {
    /// The connection's node.
    at: usize,
    /// The container that gives it a non-empty username / password.
    username_from: Option<usize>,
    password_from: Option<usize>,
    /// It has a non-empty one of its own.
    own_username: bool,
    own_password: bool,
}

/// One `Node`, with its container and folder path.
struct Node<'a> {
    element: &'a Element,
    parent: Option<usize>,
    /// Container names from the top, this node's own name last when it is a container.
    path: Vec<String>,
    container: bool,
}

impl<'a> Node<'a> {
    fn get(&self, field: &str) -> &'a str {
        self.element.attribute(field).unwrap_or_default()
    }
}

/// The file's nodes in document order, parents before children.
struct Tree<'a> {
    nodes: Vec<Node<'a>>,
}

impl<'a> Tree<'a> {
    fn of(root: &'a Element) -> Tree<'a> {
        let mut nodes: Vec<Node<'a>> = Vec::new();
        let mut open: Vec<(Option<usize>, std::slice::Iter<'a, Element>)> =
            vec![(None, root.children.iter())];
        while let Some((parent, children)) = open.last_mut() {
            let parent = *parent;
            let Some(element) = children.next() else {
                open.pop();
                continue;
            };
            if element.local_name() != "Node" {
                continue;
            }
            let container = element.attribute("Type") == Some("Container");
            let mut path = parent.map(|at| nodes[at].path.clone()).unwrap_or_default();
            if container {
                path.push(element.attribute("Name").unwrap_or_default().to_string());
            }
            nodes.push(Node {
                element,
                parent,
                path,
                container,
            });
            if container {
                open.push((Some(nodes.len() - 1), element.children.iter()));
            }
        }
        Tree { nodes }
    }

    /// The node `field` comes from for node `at` (itself, or the first container up that
    /// does not inherit it; `None` past the top, where mRemoteNG's defaults are empty).
    fn provider(&self, at: usize, inherit: &str) -> Option<usize> {
        let mut current = at;
        for _ in 0..=self.nodes.len() {
            let node = self.nodes.get(current)?;
            let inherits = node
                .element
                .attribute(inherit)
                .is_some_and(|value| value.eq_ignore_ascii_case("true"));
            if !inherits {
                return Some(current);
            }
            current = node.parent?;
        }
        None
    }

    /// The value of `field` for node `at`, inheritance resolved (`""` when none).
    fn value(&self, at: usize, field: &str) -> &'a str {
        let inherit = match field {
            "Descr" => "InheritDescription".to_string(),
            _ => format!("Inherit{field}"),
        };
        self.provider(at, &inherit)
            .and_then(|provider| self.nodes.get(provider))
            .map_or("", |node| node.get(field))
    }

    fn read(&self, scheme: &Scheme, catalogue: &mut Catalogue) {
        let mut groups: HashMap<usize, SourceGroup> = HashMap::new();
        let mut ids: HashSet<String> = HashSet::new();
        let mut hosts = Vec::new();
        let mut links = Vec::new();
        for (at, node) in self.nodes.iter().enumerate() {
            if node.container {
                let group = SourceGroup {
                    path: node.path.clone(),
                    ..SourceGroup::default()
                };
                groups.insert(at, group);
                continue;
            }
            let (mut host, link) = self.host(at, scheme, &mut groups);
            if !ids.insert(host.source_id.clone()) {
                host.invalid = Some("Id: used by another connection in the file".to_string());
            }
            if let Some(link) = link.filter(|_| host.invalid.is_none()) {
                links.push((hosts.len(), link));
            }
            hosts.push(host);
        }
        drop_unusable_tunnels(&mut hosts);
        let identities = self.hand_down(&links, &mut hosts, &mut groups);
        for at in &identities {
            catalogue.identities.push(self.identity(*at, scheme));
        }
        let mut groups: Vec<(usize, SourceGroup)> = groups.into_iter().collect();
        groups.sort_by_key(|(at, _)| *at);
        catalogue
            .groups
            .extend(groups.into_iter().map(|(_, group)| group));
        catalogue.hosts.extend(hosts);
    }

    fn host(
        &self,
        at: usize,
        scheme: &Scheme,
        groups: &mut HashMap<usize, SourceGroup>,
    ) -> (SourceHost, Option<Inherited>) {
        let node = &self.nodes[at];
        let name = node.get("Name").to_string();
        let id = node.get("Id").trim();
        let mut host = SourceHost {
            source_id: match id.is_empty() {
                true => path_id(&node.path, &name),
                false => id.to_string(),
            },
            name,
            group_path: node.path.clone(),
            ..SourceHost::default()
        };
        let protocol = self.value(at, "Protocol");
        match protocol {
            "SSH2" => {}
            "SSH1" => host
                .unmapped
                .push("Protocol: SSH1 connections connect with SSH-2 here".to_string()),
            _ => {
                host.skipped = Some(format!("protocol {} is not SSH", token(protocol)));
                return (host, None);
            }
        }
        host.hostname = node.get("Hostname").trim().to_string();
        if host.hostname.is_empty() {
            host.invalid = Some("hostname: is required".to_string());
        }
        self.port(at, &mut host, groups);
        let link = self.credentials(at, scheme, &mut host);
        self.tunnel(at, &mut host);
        host.notes = self.value(at, "Descr").to_string();
        self.unmapped(at, &mut host.unmapped);
        (host, Some(link))
    }

    fn port(&self, at: usize, host: &mut SourceHost, groups: &mut HashMap<usize, SourceGroup>) {
        let provider = self.provider(at, "InheritPort");
        let Some(node) = provider.and_then(|provider| self.nodes.get(provider)) else {
            return;
        };
        let port = node
            .get("Port")
            .trim()
            .parse::<u16>()
            .ok()
            .filter(|port| *port > 0);
        match (provider == Some(at), port) {
            (true, Some(port)) => host.port = Some(port),
            (true, None) => host.invalid = Some("port: must be 1 to 65535".to_string()),
            (false, port) => {
                if let Some(group) = provider.and_then(|provider| groups.get_mut(&provider)) {
                    group.port = port;
                }
            }
        }
    }

    /// The connection's own username and password; which containers give the ones it
    /// inherits (`hand_down` places those).
    fn credentials(&self, at: usize, scheme: &Scheme, host: &mut SourceHost) -> Inherited {
        let mut link = Inherited {
            at,
            ..Inherited::default()
        };
        let user_from = self.provider(at, "InheritUsername");
        let username = user_from.map_or("", |provider| self.nodes[provider].get("Username"));
        if user_from == Some(at) {
            host.username = Some(username.to_string()).filter(|user| !user.is_empty());
            link.own_username = host.username.is_some();
        } else if !username.is_empty() {
            link.username_from = user_from;
        }
        let password_from = self.provider(at, "InheritPassword");
        let password = password_from.map_or("", |provider| self.nodes[provider].get("Password"));
        if password.is_empty() {
            return link;
        }
        if password_from == Some(at) {
            host.auth = SourceAuth::Password(scheme.secret(password, &mut host.unmapped));
            link.own_password = true;
        } else {
            link.password_from = password_from;
            if scheme.unsupported.is_some() {
                let _ = scheme.secret(password, &mut host.unmapped);
            }
        }
        link
    }

    /// Places inherited credentials: a giving container's group hands them down (its
    /// identity, its username) unless a connection below it that has none would then get
    /// them too, where mRemoteNG gave it nothing; then the connections that inherit them
    /// name the identity (or carry the username) themselves. Returns the containers that
    /// become identities, in file order.
    fn hand_down(
        &self,
        links: &[(usize, Inherited)],
        hosts: &mut [SourceHost],
        groups: &mut HashMap<usize, SourceGroup>,
    ) -> BTreeSet<usize> {
        let identities: BTreeSet<usize> = links
            .iter()
            .filter_map(|(_, link)| link.password_from)
            .collect();
        for &container in &identities {
            let id = self.identity_id(container);
            let from = |link: &Inherited| (link.password_from, link.own_password);
            if self.hands_down_safely(container, links, from) {
                if let Some(group) = groups.get_mut(&container) {
                    group.identity = Some(id);
                }
                continue;
            }
            for (index, link) in links {
                if link.password_from == Some(container) {
                    if let Some(host) = hosts.get_mut(*index) {
                        host.identity = Some(id.clone());
                    }
                }
            }
        }
        let givers: BTreeSet<usize> = links
            .iter()
            .filter_map(|(_, link)| link.username_from)
            .collect();
        for container in givers {
            let username = self.nodes[container].get("Username").to_string();
            let from = |link: &Inherited| (link.username_from, link.own_username);
            if self.hands_down_safely(container, links, from) {
                if let Some(group) = groups.get_mut(&container) {
                    group.username = Some(username);
                }
                continue;
            }
            for (index, link) in links {
                if link.username_from == Some(container) {
                    if let Some(host) = hosts.get_mut(*index) {
                        host.username = Some(username.clone());
                    }
                }
            }
        }
        identities
    }

    /// Whether every connection below `container` either takes the value from it (or from a
    /// container between), or has its own: then the group can hand it down.
    fn hands_down_safely(
        &self,
        container: usize,
        links: &[(usize, Inherited)],
        from: impl Fn(&Inherited) -> (Option<usize>, bool),
    ) -> bool {
        links.iter().all(|(_, link)| {
            let (giver, own) = from(link);
            own || !self.is_below(link.at, container)
                || giver.is_some_and(|giver| giver == container || self.is_below(giver, container))
        })
    }

    /// Whether node `at` sits somewhere inside container `container`.
    fn is_below(&self, at: usize, container: usize) -> bool {
        let mut current = self.nodes.get(at).and_then(|node| node.parent);
        for _ in 0..self.nodes.len() {
            match current {
                Some(parent) if parent == container => return true,
                Some(parent) => current = self.nodes.get(parent).and_then(|node| node.parent),
                None => return false,
            }
        }
        false
    }

    fn identity_id(&self, at: usize) -> String {
        format!("{CONTAINER}{}", self.nodes[at].get("Id").trim())
    }

    fn identity(&self, at: usize, scheme: &Scheme) -> SourceIdentity {
        let node = &self.nodes[at];
        let mut identity = SourceIdentity {
            source_id: self.identity_id(at),
            name: node.get("Name").to_string(),
            username: Some(self.value(at, "Username").to_string()).filter(|user| !user.is_empty()),
            ..SourceIdentity::default()
        };
        identity.password = scheme.secret(node.get("Password"), &mut identity.unmapped);
        identity
    }

    /// `SSHTunnelConnectionName`: the connection of that name is the jump host.
    fn tunnel(&self, at: usize, host: &mut SourceHost) {
        let name = self.value(at, "SSHTunnelConnectionName");
        if name.is_empty() {
            return;
        }
        let target = self
            .nodes
            .iter()
            .enumerate()
            .find(|(_, node)| !node.container && node.get("Name") == name);
        match target {
            Some((found, _)) if found == at => host
                .unmapped
                .push("SSHTunnelConnectionName: names the connection itself".to_string()),
            Some((_, node)) => {
                let id = node.get("Id").trim();
                host.jumps.push(Jump::Session(match id.is_empty() {
                    true => path_id(&node.path, name),
                    false => id.to_string(),
                }));
            }
            None => host.unmapped.push(
                "SSHTunnelConnectionName: no connection of that name in the file".to_string(),
            ),
        }
    }

    /// Fields that change how the connection works and have no place here.
    fn unmapped(&self, at: usize, unmapped: &mut Vec<String>) {
        let value = |field: &str| self.value(at, field).trim();
        if !value("Domain").is_empty() {
            unmapped.push("Domain: a Windows domain is not used by SSH".to_string());
        }
        let putty = value("PuttySession");
        if !putty.is_empty() && putty != "Default Settings" {
            unmapped.push(
                "PuttySession: the PuTTY saved session's settings are not imported (import \
                 them with the putty format)"
                    .to_string(),
            );
        }
        let texts = [
            (
                "SSHOptions",
                "extra PuTTY command-line options are not imported",
            ),
            (
                "OpeningCommand",
                "mRemoteNG types it into the terminal after login; not imported",
            ),
            ("UserField", "the user field is not imported"),
            ("PreExtApp", "external tools are not imported"),
            ("PostExtApp", "external tools are not imported"),
            ("EC2InstanceId", "AWS EC2 addressing is not imported"),
        ];
        for (field, why) in texts {
            if !value(field).is_empty() {
                unmapped.push(format!("{field}: {why}"));
            }
        }
        for field in ["ExternalCredentialProvider", "ExternalAddressProvider"] {
            if !matches!(value(field), "" | "None") {
                unmapped.push(format!("{field}: external providers are not imported"));
            }
        }
        if value("Favorite").eq_ignore_ascii_case("true") {
            unmapped.push("Favorite: favourites are not imported".to_string());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::panic;

    use super::*;
    use crate::import::reveal::Revealer;

    fn sample(name: &str) -> String {
        crate::import::sample_text(&format!("mremoteng/{name}"))
    }

    fn read_text(text: &str, passphrase: Option<&str>) -> Result<Catalogue, Unreadable> {
        let passphrase = passphrase.map(|text| Secret::new(text.as_bytes().to_vec()));
        let files = [SourceFile {
            name: "confCons.xml".to_string(),
            text: text.to_string(),
        }];
        read(&files, passphrase.as_ref())
    }

    fn host<'a>(catalogue: &'a Catalogue, id: &str) -> &'a SourceHost {
        catalogue
            .hosts
            .iter()
            .find(|host| host.source_id == id)
            .unwrap_or_else(|| panic!("no host {id}"))
    }

    fn revealed(secret: &SourceSecret, passphrase: Option<&str>) -> Option<String> {
        let passphrase = passphrase.map(|text| Secret::new(text.as_bytes().to_vec()));
        let mut revealer = Revealer::new(passphrase.as_ref(), None);
        let secret = revealer.reveal(secret).ok()?;
        Some(secret.expose_str().unwrap().to_string())
    }

    fn password(auth: &SourceAuth) -> &SourceSecret {
        match auth {
            SourceAuth::Password(Some(secret)) => secret,
            other => panic!("{other:?}"),
        }
    }

    const WEB1: &str = "1e1e1e1e-0000-4000-8000-000000000011";
    const WEB2: &str = "1e1e1e1e-0000-4000-8000-000000000012";
    const BASTION: &str = "4f6c2a8e-1b2d-4c3e-9f10-aabbccddee01";
    const DB: &str = "1e1e1e1e-0000-4000-8000-000000000021";
    const PROD: &str = "container:0c0c0c0c-0000-4000-8000-000000000001";

    #[test]
    fn the_sample_gives_containers_as_groups_and_connections_by_their_id() {
        let catalogue = read_text(&sample("confCons.xml"), None).unwrap();
        let groups: Vec<String> = catalogue.groups.iter().map(|g| g.path.join("/")).collect();
        assert_eq!(groups, ["Prod", "Prod/Web", "Lab"]);
        assert_eq!(catalogue.hosts.len(), 12);
        let web = host(&catalogue, WEB1);
        assert_eq!(web.name, "web 1");
        assert_eq!(web.group_path, ["Prod", "Web"]);
        assert_eq!(web.hostname, "10.0.1.11");
        assert_eq!(web.notes, "Front web server & cache");
        let top = host(&catalogue, "1e1e1e1e-0000-4000-8000-000000000041");
        assert_eq!((top.port, top.group_path.len()), (Some(2200), 0));
        assert_eq!(top.username.as_deref(), Some("ann"));
    }

    #[test]
    fn a_connection_inheriting_its_containers_credentials_uses_the_containers_identity() {
        let catalogue = read_text(&sample("confCons.xml"), None).unwrap();
        let [identity] = &catalogue.identities[..] else {
            panic!()
        };
        assert_eq!(identity.source_id, PROD);
        assert_eq!(identity.name, "Prod");
        assert_eq!(identity.username.as_deref(), Some("admin"));
        let secret = identity.password.as_ref().unwrap();
        assert_eq!(revealed(secret, None).as_deref(), Some("Pr0d-admin!"));
        // web 1 inherits from Web, which inherits from Prod: two levels up.
        let prod = &catalogue.groups[0];
        assert_eq!(prod.identity.as_deref(), Some(PROD));
        assert_eq!(prod.username.as_deref(), Some("admin"));
        let web_group = &catalogue.groups[1];
        assert_eq!(
            (web_group.identity.as_deref(), web_group.username.as_deref()),
            (None, None)
        );
        for id in [WEB1, WEB2] {
            let web = host(&catalogue, id);
            assert_eq!(web.username, None);
            assert!(matches!(web.auth, SourceAuth::Unspecified));
        }
        let bastion = host(&catalogue, BASTION);
        assert_eq!(bastion.username.as_deref(), Some("jump"));
        assert_eq!(
            revealed(password(&bastion.auth), None).as_deref(),
            Some("b4stion")
        );
    }

    #[test]
    fn a_container_hands_its_credentials_to_its_group_only_when_no_connection_below_lacks_them() {
        let text = sample("confCons.xml");
        let prod = text.find("<Node Name=\"Prod\"").unwrap();
        let line_end = prod + text[prod..].find("\r\n").unwrap();
        let plain = "\r\n<Node Name=\"plain\" Type=\"Connection\" Id=\"p1\" Protocol=\"SSH2\" \
                     Hostname=\"plain.example.com\" Port=\"22\" />";
        let text = format!("{}{plain}{}", &text[..line_end], &text[line_end..]);
        let catalogue = read_text(&text, None).unwrap();
        // `plain` has no username or password in mRemoteNG: the Prod group must not give it
        // Prod's, so the inheriting connections name them themselves.
        let prod = &catalogue.groups[0];
        assert_eq!(
            (prod.identity.as_deref(), prod.username.as_deref()),
            (None, None)
        );
        for id in [WEB1, WEB2] {
            let web = host(&catalogue, id);
            assert_eq!(web.identity.as_deref(), Some(PROD), "{id}");
            assert_eq!(web.username.as_deref(), Some("admin"), "{id}");
        }
        let plain = host(&catalogue, "p1");
        assert_eq!(
            (plain.identity.as_deref(), plain.username.as_deref()),
            (None, None)
        );
        assert_eq!(catalogue.identities.len(), 1);
        // With its own username and password it takes nothing from the group: safe again.
        let own = text.replace("Id=\"p1\"", "Id=\"p1\" Username=\"u\" Password=\"eA==\"");
        let catalogue = read_text(&own, None).unwrap();
        assert_eq!(catalogue.groups[0].identity.as_deref(), Some(PROD));
        assert_eq!(catalogue.groups[0].username.as_deref(), Some("admin"));
    }

    #[test]
    fn an_inherited_port_becomes_the_providing_containers_group_default() {
        let catalogue = read_text(&sample("confCons.xml"), None).unwrap();
        assert_eq!(host(&catalogue, WEB2).port, None);
        assert_eq!(catalogue.groups[0].port, Some(2222));
        assert_eq!(host(&catalogue, WEB1).port, Some(22));
        assert_eq!(catalogue.groups[1].port, None);
    }

    #[test]
    fn a_tunnel_names_a_connection_that_becomes_the_jump_host() {
        let catalogue = read_text(&sample("confCons.xml"), None).unwrap();
        assert!(matches!(&host(&catalogue, WEB1).jumps[..], [Jump::Session(id)] if id == BASTION));
        let lost = host(&catalogue, "1e1e1e1e-0000-4000-8000-000000000036");
        assert!(lost.jumps.is_empty());
        assert!(lost.unmapped.contains(
            &"SSHTunnelConnectionName: no connection of that name in the file".to_string()
        ));
        assert!(lost
            .unmapped
            .contains(&"Favorite: favourites are not imported".to_string()));
    }

    #[test]
    fn a_tunnel_through_a_connection_that_is_not_imported_is_dropped_and_reported() {
        for (target, why) in [("web-rdp", "RDP"), ("no-host", "invalid")] {
            let text = sample("confCons.xml").replace(
                "SSHTunnelConnectionName=\"bastion\"",
                &format!("SSHTunnelConnectionName=\"{target}\""),
            );
            let catalogue = read_text(&text, None).unwrap();
            let web = host(&catalogue, WEB1);
            assert!(web.jumps.is_empty(), "{why}");
            assert!(web.unmapped.contains(
                &"SSHTunnelConnectionName: the connection it names is not an SSH connection \
                  this import can create"
                    .to_string()
            ));
        }
    }

    #[test]
    fn non_ssh_protocols_are_skipped_and_a_hostless_connection_is_invalid() {
        let catalogue = read_text(&sample("confCons.xml"), None).unwrap();
        let skipped = |id: &str| host(&catalogue, id).skipped.clone();
        assert_eq!(
            skipped("1e1e1e1e-0000-4000-8000-000000000013").as_deref(),
            Some("protocol RDP is not SSH")
        );
        assert_eq!(
            skipped("1e1e1e1e-0000-4000-8000-000000000032").as_deref(),
            Some("protocol VNC is not SSH")
        );
        assert_eq!(
            skipped("1e1e1e1e-0000-4000-8000-000000000033").as_deref(),
            Some("protocol HTTPS is not SSH")
        );
        assert_eq!(
            skipped("1e1e1e1e-0000-4000-8000-000000000034").as_deref(),
            Some("protocol Telnet is not SSH")
        );
        let old = host(&catalogue, "1e1e1e1e-0000-4000-8000-000000000031");
        assert_eq!(old.skipped, None);
        assert_eq!(
            old.unmapped,
            ["Protocol: SSH1 connections connect with SSH-2 here"]
        );
        let hostless = host(&catalogue, "1e1e1e1e-0000-4000-8000-000000000035");
        assert_eq!(hostless.invalid.as_deref(), Some("hostname: is required"));
    }

    #[test]
    fn settings_that_change_the_connection_are_unmapped_and_defaults_are_not() {
        let catalogue = read_text(&sample("confCons.xml"), None).unwrap();
        let db = host(&catalogue, DB);
        assert_eq!(
            db.unmapped,
            [
                "Domain: a Windows domain is not used by SSH",
                "PuttySession: the PuTTY saved session's settings are not imported (import \
                 them with the putty format)",
                "SSHOptions: extra PuTTY command-line options are not imported",
            ]
        );
        assert_eq!(
            revealed(password(&db.auth), None).as_deref(),
            Some("Db-pa55 wörd")
        );
        assert_eq!(
            host(&catalogue, WEB2).unmapped,
            ["OpeningCommand: mRemoteNG types it into the terminal after login; not imported"]
        );
        assert!(host(&catalogue, BASTION).unmapped.is_empty());
    }

    #[test]
    fn a_custom_password_opens_only_with_the_passphrase() {
        let catalogue = read_text(&sample("custom-password.xml"), None).unwrap();
        let corp = host(&catalogue, "1e1e1e1e-0000-4000-8000-0000000000c2");
        let secret = password(&corp.auth);
        assert_eq!(revealed(secret, None), None);
        assert_eq!(
            revealed(secret, Some("Corp pa55 ünïcode€")).as_deref(),
            Some("s3cret-corp")
        );
        assert_eq!(revealed(secret, Some("Corp pa55")), None);
    }

    #[test]
    fn a_fully_encrypted_file_opens_with_the_default_password_and_a_wrong_one_is_unreadable() {
        let catalogue = read_text(&sample("full-file.xml"), None).unwrap();
        let hidden = host(&catalogue, "1e1e1e1e-0000-4000-8000-0000000000f2");
        assert_eq!(hidden.group_path, ["Hidden"]);
        assert_eq!(
            revealed(password(&hidden.auth), None).as_deref(),
            Some("fu11-file")
        );
        let error = read_text(&sample("full-file.xml"), Some("wrong")).unwrap_err();
        assert_eq!(
            error.reason,
            "FullFileEncryption: the file could not be opened with the given passphrase"
        );
        let broken = sample("full-file.xml").replace(
            "FullFileEncryption=\"true\" Protected=\"",
            "FullFileEncryption=\"true\" Protected=\"x",
        );
        assert!(read_text(&broken, None).is_ok());
        let text = sample("full-file.xml");
        let body = text.split("\r\n").nth(2).unwrap();
        let cut = text.replace(body, &format!("AAAA{}", &body[4..]));
        let error = read_text(&cut, None).unwrap_err();
        assert!(
            error.reason.contains("default password"),
            "{}",
            error.reason
        );
    }

    #[test]
    fn a_legacy_file_reports_its_passwords_unmapped() {
        let catalogue = read_text(&sample("legacy.xml"), None).unwrap();
        let legacy = host(&catalogue, "1e1e1e1e-0000-4000-8000-0000000000a1");
        assert!(matches!(legacy.auth, SourceAuth::Password(None)));
        assert!(legacy.unmapped[0].starts_with("Password: saved with mRemoteNG's legacy scheme"));
        let other = sample("confCons.xml")
            .replace("EncryptionEngine=\"AES\"", "EncryptionEngine=\"Serpent\"");
        let catalogue = read_text(&other, None).unwrap();
        let db = host(&catalogue, DB);
        assert!(db
            .unmapped
            .iter()
            .any(|line| line.starts_with("Password: saved with Serpent/GCM")));
    }

    #[test]
    fn a_file_that_is_not_confcons_is_unreadable_and_an_empty_one_is_not() {
        for (text, reason) in [
            ("Name;Id;Hostname\nweb;1;h", "not XML"),
            (
                "<VanDyke version=\"3.0\"/>",
                "not an mRemoteNG confCons.xml",
            ),
        ] {
            let error = read_text(text, None).unwrap_err();
            assert!(error.reason.starts_with(reason), "{}", error.reason);
        }
        let empty = read_text(
            "<mrng:Connections xmlns:mrng=\"http://mremoteng.org\"/>",
            None,
        );
        assert!(empty.unwrap().hosts.is_empty());
    }

    #[test]
    fn a_duplicated_id_makes_the_second_connection_invalid() {
        let text = sample("confCons.xml").replace("000000000041", "000000000021");
        let catalogue = read_text(&text, None).unwrap();
        let both: Vec<_> = catalogue
            .hosts
            .iter()
            .filter(|host| host.source_id == DB)
            .collect();
        assert_eq!(both.len(), 2);
        assert_eq!(both[0].invalid, None);
        assert_eq!(
            both[1].invalid.as_deref(),
            Some("Id: used by another connection in the file")
        );
    }

    /// A small file with every structure the reader knows (the sample file is too long to
    /// mutate a million times in seconds).
    const FUZZ_CONFCONS: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<mrng:Connections xmlns:mrng="http://mremoteng.org" EncryptionEngine="AES" BlockCipherMode="GCM" KdfIterations="1000" FullFileEncryption="false">
<Node Name="P" Type="Container" Id="c1" Username="a" Password="x" Protocol="SSH2" Port="2222">
<Node Name="W" Type="Container" Id="c2" InheritUsername="true" InheritPassword="true" InheritPort="true">
<Node Name="w" Type="Connection" Id="n1" Protocol="SSH2" Hostname="h" InheritUsername="true" InheritPassword="true" InheritPort="true" InheritDescription="true" SSHTunnelConnectionName="b" Domain="d" PuttySession="x" />
</Node>
<Node Name="b" Type="Connection" Id="n2" Protocol="SSH2" Hostname="b" Port="22" Password="y" InheritProtocol="true" Favorite="true" />
<Node Name="r" Type="Connection" Id="n3" Protocol="RDP" Hostname="r" />
</Node>
</mrng:Connections>"#;

    #[test]
    fn read_never_panics_on_seeded_random_input() {
        let (iterations, seed) = crate::fuzz::settings("mremoteng reader", 0x3E3E_0002);
        let nodes: Vec<&str> = FUZZ_CONFCONS.split("<Node ").collect();
        let tokens = [
            "Type=\"Container\" ",
            "Type=\"Connection\" ",
            "InheritPassword=\"true\" ",
            "InheritUsername=\"true\" ",
            "InheritPort=\"true\" ",
            "InheritProtocol=\"true\" ",
            "SSHTunnelConnectionName=\"bastion\" ",
            "Port=\"x\" ",
            "</Node>",
            "/>",
            ">",
            "Protocol=\"SSH2\" ",
            "Id=\"\" ",
            "\"",
            "&amp;",
        ];
        let mut rng = crate::fuzz::Rng::new(seed);
        for iteration in 0..iterations {
            let mut pieces: Vec<String> = nodes.iter().map(|piece| piece.to_string()).collect();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(pieces.len());
                match rng.below(4) {
                    0 if pieces.len() > 1 => drop(pieces.remove(at)),
                    1 => pieces.insert(at, pieces[at].clone()),
                    2 => pieces[at].insert_str(0, rng.pick::<&str>(&tokens)),
                    _ => {
                        let cut = rng.below(pieces[at].len() + 1);
                        if pieces[at].is_char_boundary(cut) {
                            pieces[at].truncate(cut);
                        }
                    }
                }
            }
            let mutated = pieces.join("<Node ");
            let outcome = panic::catch_unwind(|| read_text(&mutated, None));
            match outcome {
                Err(_) => panic!("panic on input #{iteration}: {mutated:?}"),
                Ok(Ok(catalogue)) => {
                    assert!(catalogue
                        .hosts
                        .iter()
                        .all(|host| !host.source_id.is_empty()));
                }
                Ok(Err(error)) => assert_eq!(error.file, 0),
            }
        }
    }
}
